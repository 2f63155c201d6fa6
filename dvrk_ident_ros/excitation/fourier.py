"""Finite Fourier series trajectories in motor coordinates (Wang 2019 eq. 22, Swevers 1997).

    q_k(t) = q0_k + sum_l  a_lk / (w l) sin(w l t) - b_lk / (w l) cos(w l t),   w = 2 pi f

with analytic velocity and acceleration. The series is periodic with period 1/f.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FourierTrajectory:
    base_frequency: float  # Hz
    q0: np.ndarray  # (n,)
    a: np.ndarray  # (harmonics, n)
    b: np.ndarray  # (harmonics, n)

    @property
    def harmonics(self) -> int:
        return self.a.shape[0]

    @property
    def period(self) -> float:
        return 1.0 / self.base_frequency

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q, qd, qdd at times t (N,) -> three (N, n) arrays."""
        t = np.asarray(t, dtype=float)[:, None]
        w = 2 * np.pi * self.base_frequency
        wl = w * np.arange(1, self.harmonics + 1)  # (H,)
        s, c = np.sin(t * wl), np.cos(t * wl)  # (N, H)
        q = self.q0 + s @ (self.a / wl[:, None]) - c @ (self.b / wl[:, None])
        qd = c @ self.a + s @ self.b
        qdd = -s @ (self.a * wl[:, None]) + c @ (self.b * wl[:, None])
        return q, qd, qdd
