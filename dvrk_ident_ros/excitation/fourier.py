"""Finite Fourier series trajectories in motor coordinates (Wang 2019 eq. 22, Swevers 1997).

    q_k(t) = q0_k + sum_l  a_lk / (w l) sin(w l t) - b_lk / (w l) cos(w l t),   w = 2 pi f

with analytic velocity and acceleration. The series is periodic with period 1/f.
A trajectory built by :func:`rest_to_rest` starts and ends every period at rest
(zero velocity and acceleration), so a player can enter it from a standstill at
``q(0)`` and leave it at the same pose.
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
    def joints(self) -> int:
        return self.a.shape[1]

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

    def basis(self, t: np.ndarray, order: int) -> np.ndarray:
        """Matrix B (N x (1 + 2H)) with q^(order)_k(t) = B @ [q0_k, a_1k..a_Hk, b_1k..b_Hk]."""
        t = np.asarray(t, dtype=float)[:, None]
        w = 2 * np.pi * self.base_frequency
        wl = w * np.arange(1, self.harmonics + 1)
        s, c = np.sin(t * wl), np.cos(t * wl)
        if order == 0:
            return np.hstack([np.ones((len(t), 1)), s / wl, -c / wl])
        if order == 1:
            return np.hstack([np.zeros((len(t), 1)), c, s])
        if order == 2:
            return np.hstack([np.zeros((len(t), 1)), -s * wl, c * wl])
        raise ValueError(f"order {order} not in 0, 1, 2")

    def coefficients(self) -> np.ndarray:
        """Per joint [q0, a_1..a_H, b_1..b_H]: (1 + 2H) x n."""
        return np.vstack([self.q0[None, :], self.a, self.b])

    @classmethod
    def from_coefficients(cls, base_frequency: float, coefficients: np.ndarray) -> FourierTrajectory:
        H = (coefficients.shape[0] - 1) // 2
        return cls(base_frequency, coefficients[0].copy(), coefficients[1:1 + H].copy(), coefficients[1 + H:].copy())


def rest_to_rest(base_frequency: float, q_center: np.ndarray, a_free: np.ndarray,
                 b_free: np.ndarray) -> FourierTrajectory:
    """A trajectory at rest at t = 0 (and every period), from harmonics 2..H.

    qd(0) = sum_l a_l = 0 and qdd(0) = w sum_l l b_l = 0 fix a_1 and b_1.
    ``q_center`` is the constant term q0 (the mean position).
    """
    H = a_free.shape[0] + 1
    ls = np.arange(2, H + 1)[:, None]
    a1 = -a_free.sum(axis=0, keepdims=True)
    b1 = -(ls * b_free).sum(axis=0, keepdims=True)
    return FourierTrajectory(base_frequency, np.asarray(q_center, dtype=float), np.vstack([a1, a_free]),
                             np.vstack([b1, b_free]))


def quintic(q_from: np.ndarray, q_to: np.ndarray, duration: float, t: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rest-to-rest quintic from q_from to q_to: position, velocity, acceleration at times t."""
    s = np.clip(np.asarray(t, dtype=float) / duration, 0.0, 1.0)[:, None]
    d = np.asarray(q_to, dtype=float) - np.asarray(q_from, dtype=float)
    p = 10 * s**3 - 15 * s**4 + 6 * s**5
    v = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
    acc = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
    return q_from + p * d, v * d, acc * d
