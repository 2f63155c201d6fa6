"""The dVRK gravity-compensation model: tau = R(q) theta, R 7 x 40 (Lin 2019 section III; the gc file's
formulas are typed in once, in test/test_gc.py).

Columns 1-10: the lumped gravity parameters of links 2-6 (distal links lumped
into link 6), a function of the dVRK joint positions q (rad). They are not
typed in: :mod:`dvrk_ident_ros.gc.model.symbolic_gravity` derives them with sympy
from the MTM kinematics of the physics core (each column is the gravity column
of one first moment of the core, ``GC_COLUMNS``) and generates the code, cached
on disk; this module imports the generated functions. Columns 11-40: for joint
i = 1..6 the polynomial [1, q_i, q_i^2, q_i^3, q_i^4] on row i. Row 7 is zero.
``regressor`` is vectorised over samples; the compensation law evaluates the
gravity torques per sample without arrays (``gravity_torques``).
:mod:`dvrk_ident_ros.gc.model.derivation` checks the gravity columns against the
MTM model of the physics core.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.gc.model.symbolic_gravity import load_generated

G = 9.81
N_GRAVITY = 10
N_PARAMS = 40
POLY_ORDER = 4

_generated = load_generated()
_gravity_regressor = _generated.gravity_regressor
#: gravity_torques(q, theta, out, g=9.81): R_g(q) theta[:10] for one sample, written into ``out`` (7 floats),
#: no arrays, for the control loop; the generated function itself (no wrapper frame on the hot path).
gravity_torques = _generated.gravity_torques


def gravity_regressor(q: np.ndarray, g: float = G) -> np.ndarray:
    """R_g (N x 7 x 10) for dVRK joint positions q (N x 7); linear in g."""
    return _gravity_regressor(np.atleast_2d(np.asarray(q, dtype=float)), g)


def polynomial_regressor(q: np.ndarray) -> np.ndarray:
    """R_ext (N x 7 x 30): [1, q_i, ..., q_i^4] on row i for joints 1..6."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    R = np.zeros((q.shape[0], 7, 6 * (POLY_ORDER + 1)))
    for i in range(6):
        for p in range(POLY_ORDER + 1):
            R[:, i, 5 * i + p] = q[:, i] ** p
    return R


def regressor(q: np.ndarray, g: float = G) -> np.ndarray:
    """R (N x 7 x 40)."""
    return np.concatenate([gravity_regressor(q, g), polynomial_regressor(q)], axis=2)


def torques(q: np.ndarray, theta: np.ndarray, g: float = G) -> np.ndarray:
    """R(q) theta (N x 7)."""
    return regressor(q, g) @ np.asarray(theta, dtype=float)

