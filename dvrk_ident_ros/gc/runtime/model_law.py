"""Gravity compensation from an identified dynamic model (a dvrk_ident parameter file).

    tau^d = A^-T (g(q^m) + tau_known(q^m)),   q^m = A^-1 q^d

g holds gravity and the springs of the model, tau_known the MTM's cable
polynomial; friction is not compensated (the arm would run away). A
:class:`~dvrk_ident_ros.gc.runtime.compensation.Compensation`, as the MLSE law
(:class:`~dvrk_ident_ros.gc.runtime.law.CompensationLaw`) is, so the node uses either.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.registry import ArmSpec
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.estimators import compensation_kind
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.compiled import load_compiled


class ModelCompensation:
    kind = compensation_kind("model")

    def __init__(self, model: ArmModel, delta: np.ndarray, torque_limit: np.ndarray, source: str = "",
                 hold_residual: np.ndarray | None = None):
        self.model = model
        self.delta = np.asarray(delta, dtype=float)
        self.source = source
        # per dVRK joint, the RMS residual of the static holds the gravity was refitted to (None: not refitted)
        self.hold_residual = None if hold_residual is None else np.asarray(hold_residual, dtype=float)
        n = model.dof
        self.dof = n
        self._compiled = load_compiled(model)
        self._known = bool(model.description.known_torques)
        self._A_inv = model.A_inv.copy()
        self._limit = np.asarray(torque_limit, dtype=float)
        self.gravity = [0.0] * n
        self.disturbance = [0.0] * n
        self.alpha = [0.5] * n
        self.total = [0.0] * n
        self.saturated = [False] * n

    def scale_limits(self, factor: float) -> None:
        self._limit = factor * self._limit

    def clamp(self, torques) -> list[float]:
        """``torques`` within +-the torque limits (as :meth:`compute` clamps)."""
        return np.clip(np.asarray(torques, dtype=float), -self._limit, self._limit).tolist()

    def observe(self, q) -> None:
        """No state: nothing to follow."""

    def compute(self, q, qdot, scale: float = 1.0) -> list[float]:
        """Torques (N m, dVRK joint space) for the positions q (qdot unused: no friction term), clamped to the
        limits, then times ``scale`` (ramp-in, fade-out): 0 gives exactly 0 N m."""
        q_motor = self._A_inv @ np.asarray(q, dtype=float)
        if self._compiled is not None:
            g = self._compiled.gravity(q_motor) @ self.delta
        else:
            g = self.model.gravity(q_motor[None], self.delta)[0]
        known = self.model.known_torques(q_motor[None])[0] if self._known else 0.0 * g
        g_d = g @ self._A_inv
        k_d = known @ self._A_inv
        tau = g_d + k_d
        clipped = np.clip(tau, -self._limit, self._limit)
        self.gravity[:] = g_d.tolist()
        self.disturbance[:] = k_d.tolist()
        self.saturated[:] = (clipped != tau).tolist()
        self.total[:] = (scale * clipped).tolist()
        return self.total


def load_model_compensation(path: Path, arm: ArmSpec, torque_limit: np.ndarray | None = None) -> ModelCompensation:
    """The compensation of an identified parameter file of ``arm``'s family (one of its models), limited to
    ``torque_limit`` (default: the arm registry's ``compensation_torque_limit``)."""
    from dvrk_ident_ros.identify.pipeline import model_for
    from dvrk_ident_ros.identify.results import IdentificationResult

    result = IdentificationResult.load(path)
    if result.arm.lower() not in arm.models:
        raise DataError(f"{path}: parameters of a {result.arm}, not of an {arm.family}")
    if torque_limit is None:
        torque_limit = np.array(arm.compensation_torque_limit)
    if not result.standard:
        raise DataError(f"{path}: no standard parameters (identify with --method sdp for gravity compensation)")
    model = model_for(result)
    missing = [name for name in model.parameter_names if name not in result.standard]
    if missing:
        raise DataError(f"{path}: standard parameters missing: {', '.join(missing[:5])}"
                        + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    delta = np.array([float(result.standard[name]) for name in model.parameter_names])
    record = result.gravity_refit or {}
    residual = record.get("residual_rms_after") if isinstance(record, dict) else record
    if residual is not None:
        try:
            residual = np.asarray(residual, dtype=float)
        except (TypeError, ValueError):
            residual = np.full(0, np.nan)
        if residual.shape != (model.dof,) or not np.all(np.isfinite(residual)) or np.any(residual < 0):
            raise DataError(f"{path}: gravity_refit.residual_rms_after: expected {model.dof} numbers >= 0")
    return ModelCompensation(model, delta, torque_limit, str(path), residual)
