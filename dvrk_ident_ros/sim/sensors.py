"""What a simulated arm's sensors report, and what the arm publishes at one instant (ROS-free).

The encoders quantise the positions; the measured efforts carry the recordings' noise and are quantised like
the motor currents, in motor coordinates (:mod:`dvrk_ident_ros.sim.noise`); without noise levels all is exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.sim.noise import NoiseLevels, quantize


@dataclass(frozen=True)
class Sample:
    """What the arm publishes at one instant (dVRK joint space); all zeros when not ``valid``."""

    valid: bool
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray  # measured (noise, current quantisation)
    setpoint_position: np.ndarray
    setpoint_effort: np.ndarray  # the PID's command


class Sensors:
    """The encoders and the motor-current readings of one arm, at ``noise``'s levels (None: exact); the effort
    noise drawn from a generator seeded with ``seed``."""

    def __init__(self, model: ArmModel, noise: NoiseLevels | None, seed: int) -> None:
        self.model = model
        self.noise = noise
        self._rng = np.random.default_rng(seed)

    def read(self, q: np.ndarray, qd: np.ndarray, effort: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position (encoder-quantised), velocity, effort (noise, current-quantised in motor coordinates) of
        the true ``q``, ``qd`` and the applied ``effort``, dVRK joint space (copies)."""
        if self.noise is None:
            return q.copy(), qd.copy(), effort.copy()
        q_measured = quantize(q, self.noise.resolution)
        effort = effort + self._rng.normal(size=self.model.dof) * self.noise.effort_std
        if self.noise.effort_resolution is not None:
            tau_motor = quantize(self.model.motor_torque_from_dvrk(effort), self.noise.effort_resolution)
            effort = self.model.dvrk_torque_from_motor(tau_motor)
        return q_measured, qd.copy(), effort
