"""A dVRK-like PID position servo in dVRK joint space (the arm's control loop, 1.5 kHz).

tau^d = Kp (q_ref - q) + Kd (qd_ref - qd) + Ki integral(q_ref - q) + tau_ff,
clamped to the joints' torque limits; the commanded effort is what the dVRK
reports as the measured effort. Motor torques follow as tau^m = A^T tau^d.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PidGains:
    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    torque_limit: np.ndarray
    integral_limit: np.ndarray | None = None


class PidServo:
    def __init__(self, gains: PidGains, dof: int):
        self.g = gains
        self.integral = np.zeros(dof)
        self.effort = np.zeros(dof)

    def reset(self) -> None:
        self.integral[:] = 0.0

    def command(self, q, qd, q_ref, qd_ref, dt: float, feedforward=None) -> np.ndarray:
        error = q_ref - q
        self.integral += error * dt
        if self.g.integral_limit is not None:  # np.minimum/maximum: np.clip's wrapper costs more than the PID
            np.minimum(np.maximum(self.integral, -self.g.integral_limit, out=self.integral), self.g.integral_limit,
                       out=self.integral)
        tau = self.g.kp * error + self.g.kd * (qd_ref - qd) + self.g.ki * self.integral
        if feedforward is not None:
            tau += feedforward
        self.effort = np.minimum(np.maximum(tau, -self.g.torque_limit), self.g.torque_limit)
        return self.effort
