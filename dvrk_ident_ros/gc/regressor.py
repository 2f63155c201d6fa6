"""The dVRK gravity-compensation model: tau = R(q) theta, R 7 x 40 (reference/gc-json.md).

Columns 1-10: the lumped gravity parameters of links 2-6 (distal links lumped
into link 6), a function of the dVRK joint positions q (rad). Columns 11-40:
for joint i = 1..6 the polynomial [1, q_i, q_i^2, q_i^3, q_i^4] on row i.
Row 7 is zero. ``regressor`` is vectorised over samples; the compensation
law evaluates the same products per sample without arrays (``gravity_torques``).
:mod:`dvrk_ident_ros.gc.derivation` checks the gravity columns against the
MTM model of the physics core.
"""
from __future__ import annotations

import math

import numpy as np

G = 9.81
N_GRAVITY = 10
N_PARAMS = 40
POLY_ORDER = 4


def _trig(q: np.ndarray):
    s2, c2 = np.sin(q[..., 1]), np.cos(q[..., 1])
    s23, c23 = np.sin(q[..., 1] + q[..., 2]), np.cos(q[..., 1] + q[..., 2])
    s4, c4 = np.sin(q[..., 3]), np.cos(q[..., 3])
    s5, c5 = np.sin(q[..., 4]), np.cos(q[..., 4])
    s6, c6 = np.sin(q[..., 5]), np.cos(q[..., 5])
    return s2, c2, s23, c23, s4, c4, s5, c5, s6, c6


def gravity_regressor(q: np.ndarray, g: float = G) -> np.ndarray:
    """R_g (N x 7 x 10) for dVRK joint positions q (N x 7)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    s2, c2, s23, c23, s4, c4, s5, c5, s6, c6 = _trig(q)
    R = np.zeros((q.shape[0], 7, N_GRAVITY))
    R[:, 1, 0], R[:, 1, 1] = g * s2, g * c2
    shared = [g * c23, -g * s23, g * c23 * c4, -g * c23 * s4, -g * (c23 * c4 * s5 + s23 * c5),
              g * (c23 * c4 * c5 - s23 * s5), g * (c23 * s4 * s6 + s23 * s5 * c6 - c23 * c4 * c5 * c6),
              g * (c23 * s4 * c6 - s23 * s5 * s6 + c23 * c4 * c5 * s6)]
    for k, col in enumerate(shared):
        R[:, 1, 2 + k] = col
        R[:, 2, 2 + k] = col
    row4 = [-g * s23 * s4, -g * s23 * c4, g * s23 * s4 * s5, -g * s23 * s4 * c5, g * s23 * (c4 * s6 + s4 * c5 * c6),
            g * s23 * (c4 * c6 - s4 * c5 * s6)]
    for k, col in enumerate(row4):
        R[:, 3, 4 + k] = col
    row5 = [-g * (c23 * s5 + s23 * c4 * c5), g * (c23 * c5 - s23 * c4 * s5), g * (s23 * c4 * s5 * c6 - c23 * c5 * c6),
            g * (c23 * c5 * s6 - s23 * c4 * s5 * s6)]
    for k, col in enumerate(row5):
        R[:, 4, 6 + k] = col
    R[:, 5, 8] = g * (s23 * s4 * c6 + c23 * s5 * s6 + s23 * c4 * c5 * s6)
    R[:, 5, 9] = g * (c23 * s5 * c6 - s23 * s4 * s6 + s23 * c4 * c5 * c6)
    return R


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


def gravity_torques(q, theta, out: list[float], g: float = G) -> None:
    """R_g(q) theta[:10] for one sample, written into ``out`` (7 floats): no arrays, for the control loop."""
    t = theta
    s2, c2 = math.sin(q[1]), math.cos(q[1])
    s23, c23 = math.sin(q[1] + q[2]), math.cos(q[1] + q[2])
    s4, c4 = math.sin(q[3]), math.cos(q[3])
    s5, c5 = math.sin(q[4]), math.cos(q[4])
    s6, c6 = math.sin(q[5]), math.cos(q[5])
    c23c4, c23s4, s23c4, s23s4 = c23 * c4, c23 * s4, s23 * c4, s23 * s4
    shared = (c23 * t[2] - s23 * t[3] + c23c4 * t[4] - c23s4 * t[5] - (c23c4 * s5 + s23 * c5) * t[6]
              + (c23c4 * c5 - s23 * s5) * t[7] + (c23s4 * s6 + s23 * s5 * c6 - c23c4 * c5 * c6) * t[8]
              + (c23s4 * c6 - s23 * s5 * s6 + c23c4 * c5 * s6) * t[9])
    out[0] = 0.0
    out[1] = g * (s2 * t[0] + c2 * t[1] + shared)
    out[2] = g * shared
    out[3] = g * (-s23s4 * t[4] - s23c4 * t[5] + s23s4 * s5 * t[6] - s23s4 * c5 * t[7]
                  + s23 * (c4 * s6 + s4 * c5 * c6) * t[8] + s23 * (c4 * c6 - s4 * c5 * s6) * t[9])
    out[4] = g * (-(c23 * s5 + s23c4 * c5) * t[6] + (c23 * c5 - s23c4 * s5) * t[7]
                  + (s23c4 * s5 * c6 - c23 * c5 * c6) * t[8] + (c23 * c5 * s6 - s23c4 * s5 * s6) * t[9])
    out[5] = g * ((s23s4 * c6 + c23 * s5 * s6 + s23c4 * c5 * s6) * t[8]
                  + (c23 * s5 * c6 - s23s4 * s6 + s23c4 * c5 * c6) * t[9])
    out[6] = 0.0
