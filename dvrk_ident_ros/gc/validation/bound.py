"""The least held-out figure any one gc file reaches on a data set: the format's bound.

A fixed file (its two 40-vectors, gc/model/regressor.py) scored by the held-out
protocol (gc/validation/validation.py) is scored on every pose its folds hold out: each
pose of a sweep once, each far pose once more. Its figure, the mean over
joints 1-6 of

    e_j(theta) = ||W_j (X_j theta - tau_j)|| / ||W_j tau_j||

(X_j: joint j's own-torque rows at joint j's sweeps, linear in the 80 numbers
theta = [theta_pos, theta_neg] through each pose's direction weight; W_j the
square root of how many folds hold each pose out), is a sum of norms: convex
in theta. Its minimum over theta, found by iteratively reweighted least
squares (each step minimises the majoriser sum_j ||r_j||^2 / (2 c_j ||r_j^k||),
so the figure never increases), is the lowest figure a file of the format can
have on these poses, whatever estimator wrote it, the held-out poses seen.
Estimators refitted per fold see less; the bound is what the format leaves.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.folds import Fold, held_out_folds
from dvrk_ident_ros.gc.model.regressor import N_PARAMS, regressor

JOINTS = 6


@dataclass(frozen=True)
class FormatBound:
    theta_pos: np.ndarray
    theta_neg: np.ndarray
    per_joint: np.ndarray  # e_j (fractions), joints 1-6
    iterations: int

    def mean(self) -> float:
        return float(np.mean(self.per_joint))


def own_torque_design(data: PoseData) -> tuple[np.ndarray, np.ndarray]:
    """X (N x 80) and tau (N): each pose's own joint's torque, linear in [theta_pos, theta_neg] with the
    pose's direction weight (:meth:`PoseData.positive_weight`), as the protocol scores a file."""
    own = data.joint.astype(np.int64) - 1
    rows = regressor(data.q)[np.arange(len(own)), own, :]
    a = data.positive_weight()[:, None]
    return np.hstack([a * rows, (1.0 - a) * rows]), data.tau[np.arange(len(own)), own]


def _figures(X: np.ndarray, y: np.ndarray, own: np.ndarray, scale: np.ndarray, theta: np.ndarray) -> np.ndarray:
    r2 = np.bincount(own, weights=(X @ theta - y) ** 2, minlength=JOINTS)[:JOINTS]
    return np.sqrt(r2) / scale


def format_bound(data: PoseData, folds: list[Fold] | None = None, tol: float = 1e-10,
                 max_iterations: int = 500) -> FormatBound:
    """The file (theta_pos, theta_neg) of least held-out figure on ``data`` under ``folds`` (module
    docstring); its per-joint figures equal :func:`~dvrk_ident_ros.gc.validation.validation.held_out_errors` of it."""
    folds = held_out_folds(data) if folds is None else folds
    times_held = np.sum([f.test for f in folds], axis=0).astype(float)
    keep = (times_held > 0) & (data.joint >= 1) & (data.joint <= JOINTS)
    X, y = own_torque_design(data)
    w = np.sqrt(times_held[keep])
    X, y, own = X[keep] * w[:, None], y[keep] * w, data.joint[keep].astype(np.int64) - 1
    scale = np.sqrt(np.bincount(own, weights=y * y, minlength=JOINTS)[:JOINTS])
    if not np.all(scale > 0):
        missing = [j + 1 for j in range(JOINTS) if not scale[j] > 0]
        raise DataError(f"{data.source}: the folds hold out no torque of joint(s) {missing}: no held-out figure")
    theta = np.linalg.lstsq(X, y, rcond=None)[0]  # the start: equal weights per row
    figures = _figures(X, y, own, scale, theta)
    iterations = 0
    while iterations < max_iterations:
        iterations += 1
        # (a joint fitted exactly keeps a finite weight: its residual norm floored at 1e-12 of its torque's)
        row = 1.0 / np.sqrt(scale[own] * np.maximum(figures[own], 1e-12) * scale[own])
        candidate = np.linalg.lstsq(X * row[:, None], y * row, rcond=None)[0]
        new = _figures(X, y, own, scale, candidate)
        if new.sum() > figures.sum():  # rounding at the optimum: keep the better one
            break
        theta, gain, figures = candidate, figures.sum() - new.sum(), new
        if gain <= tol * figures.sum():
            break
    return FormatBound(theta[:N_PARAMS].copy(), theta[N_PARAMS:].copy(), figures, iterations)
