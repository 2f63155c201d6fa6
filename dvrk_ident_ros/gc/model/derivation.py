"""The gc file's gravity model derived from the MTM model of the physics core.

The core's gravity regressor (Lagrange, :mod:`dvrk_ident_ros.model`) is mapped
to dVRK joint space (tau^d = A^-T tau^m at q^m = A^-1 q^d). Its column space
contains the ten lumped gravity columns of the dVRK gc format exactly (the
two descriptions of the MTM agree); the core's space is larger only by the
wrist-roll link's off-axis centre of mass, which the format lumps into link 6.
From this follow (a) the check that the format's columns are the MTM's gravity
(:func:`format_in_core`), and (b) the format's ten parameters for any
identified set of the core's standard parameters (:func:`gc_gravity_from_standard`),
so a full SDP identification can drive the gc controller. The columns
themselves are generated symbolically from the core's MTM kinematics, one
first moment per column (:mod:`dvrk_ident_ros.gc.model.symbolic_gravity`); the
checks here stay independent of that derivation (numerical, on the core's
compiled model).
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.gc.model.regressor import gravity_regressor
from dvrk_ident_ros.model.arm_model import ArmModel

_SAMPLES = 200
_SEED = 2018


def core_gravity_dvrk(model: ArmModel, q_dvrk: np.ndarray) -> np.ndarray:
    """The core's gravity regressor in dVRK joint space (N x 7 x P)."""
    q_motor = model.motor_from_dvrk(np.atleast_2d(q_dvrk))
    Y = model.gravity_regressor(q_motor)
    return np.einsum("ij,njp->nip", np.linalg.inv(model.A).T, Y)


def _random_poses(n: int = _SAMPLES) -> np.ndarray:
    return np.random.default_rng(_SEED).uniform(-np.pi, np.pi, (n, 7))


def format_in_core(model: ArmModel) -> float:
    """Relative residual of expressing the format's gravity columns with the core's (0 if they agree)."""
    q = _random_poses()
    Y = core_gravity_dvrk(model, q).reshape(-1, len(model.layout))
    R = gravity_regressor(q).reshape(-1, 10)
    C, *_ = np.linalg.lstsq(Y, R, rcond=None)
    return float(np.linalg.norm(Y @ C - R) / np.linalg.norm(R))


def gc_gravity_from_standard(model: ArmModel, delta: np.ndarray) -> tuple[np.ndarray, float]:
    """The format's ten gravity parameters that best reproduce the core's gravity torques
    (joints 2-6) for standard parameters ``delta``; also the relative residual (the part
    the format cannot represent: the wrist roll's off-axis centre of mass, the springs)."""
    if model.description.arm != "mtm":
        raise SolverError(f"the gc format models the MTM, not the {model.description.arm}")
    q = _random_poses()
    tau = core_gravity_dvrk(model, q) @ np.asarray(delta, dtype=float)
    R = gravity_regressor(q)
    theta, *_ = np.linalg.lstsq(R[:, 1:6].reshape(-1, 10), tau[:, 1:6].reshape(-1), rcond=None)
    residual = R[:, 1:6].reshape(-1, 10) @ theta - tau[:, 1:6].reshape(-1)
    return theta, float(np.linalg.norm(residual) / max(float(np.linalg.norm(tau[:, 1:6])), 1e-300))
