"""A simulated arm's physics made fast enough for real time (ROS-free).

:func:`tune_for_real_time` sets up an :class:`~dvrk_ident_ros.sim.physics.ArmPhysics`: the mass matrix M(q)
is reused while its estimated relative change stays under ``MASS_MATRIX_TOLERANCE`` (how fast M varies with
each joint estimated once, at ``MASS_SENSITIVITY_POSES`` poses), and the known torques (the cable polynomial,
identified inside the excitation limits) are held at those limits' edge beyond them, by a clamp whose
pseudo-inverse is computed once.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.safety import CommandChecker
from dvrk_ident_ros.sim.config import SimConfig
from dvrk_ident_ros.sim.physics import ArmPhysics

MASS_MATRIX_TOLERANCE = 3e-3  # M(q) is recomputed once it may have changed by this fraction (real-time speed)
MASS_SENSITIVITY_POSES = 8  # poses (home and random ones inside the limits) that estimate how M varies


class LimitClamp:
    """Motor position -> the nearest one inside a checker's limits (as ``CommandChecker.clamp_position``,
    with the pseudo-inverse computed once: it runs at every physics step); the last answer is reused
    for the same position (the physics and the built-in compensation ask twice per step)."""

    def __init__(self, model: ArmModel, checker: CommandChecker):
        self._model = model
        zero = checker.coordinates(np.zeros(model.dof))
        self._rows = np.array([checker.coordinates(e) - zero for e in np.eye(model.dof)]).T
        self._offset = zero
        self._lower, self._upper = checker.lower, checker.upper
        self._inner = (checker.lower + 1e-6, checker.upper - 1e-6)
        self._pinv = np.linalg.pinv(self._rows)
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    def __call__(self, q_motor: np.ndarray) -> np.ndarray:
        if self._last is not None and np.array_equal(self._last[0], q_motor):
            return self._last[1]
        q = self._model.dvrk_from_motor(q_motor)
        c = self._rows @ q + self._offset
        if np.all((c >= self._lower) & (c <= self._upper)):
            result = q_motor.copy()
        else:
            for _ in range(20):
                excess = np.clip(c, *self._inner) - c
                if not np.any(excess):
                    break
                q = q + self._pinv @ excess
                c = self._rows @ q + self._offset
            result = self._model.motor_from_dvrk(q)
        self._last = (q_motor.copy(), result)
        return result


def sensitivity_poses(config: SimConfig, checker: CommandChecker) -> np.ndarray:
    """Motor positions where M's dependence on each joint is estimated: home and random poses inside
    ``checker``'s limits (fixed seed: the same simulator every time)."""
    rng = np.random.default_rng(12345)
    poses = [checker.clamp_position(config.home)]
    span = np.where(config.prismatic, 0.1, 1.5)
    for _ in range(MASS_SENSITIVITY_POSES - 1):
        poses.append(checker.clamp_position(config.home + rng.uniform(-span, span)))
    return config.model.motor_from_dvrk(np.array(poses))


def tune_for_real_time(physics: ArmPhysics, config: SimConfig, variant: str | None,
                       checker: CommandChecker) -> None:
    """Set ``physics`` up for real time: the known torques' domain (the excitation limits of ``variant``), the
    mass matrix's tolerance and its sensitivities at poses inside ``checker``'s (the arm's) limits."""
    physics.known_torque_domain = LimitClamp(config.model, CommandChecker(config.model, variant))
    physics.mass_tolerance = MASS_MATRIX_TOLERANCE
    physics.mass_weights = physics.mass_sensitivity(sensitivity_poses(config, checker))
