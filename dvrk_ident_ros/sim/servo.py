"""A dVRK-like PID position servo in dVRK joint space (the arm's control loop, 1.5 kHz).

tau^d = clamp(Kp (q_ref - q) + Kd (qd_ref - qd) + Ki integral(q_ref - q)) + tau_ff:
the PID's output clamped to the joints' torque limits (the dVRK's pid_max_output), the
feed forward (the dVRK's own gravity compensation) added after the clamp, as sawControllers'
mtsPID adds it; the commanded effort is what the dVRK reports as the measured effort.
Motor torques follow as tau^m = A^T tau^d.
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
        # the PID's output is capped (sawControllers mtsPID: pid_max_output), the feed forward added after the cap
        self.effort = np.minimum(np.maximum(tau, -self.g.torque_limit), self.g.torque_limit)
        if feedforward is not None:
            self.effort += feedforward
        return self.effort
