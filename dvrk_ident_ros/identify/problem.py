"""The linear regression tau^m - tau_known = H_b(q, qd, qdd) delta_b (Wang 2019 eqs. 23-24)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.data.processing import FilterSettings, lowpass
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.arm_model import ArmModel


@dataclass(frozen=True)
class Regression:
    """Per-sample base regressor and target: H_b (N x n x r), y (N x n)."""

    Hb: np.ndarray
    y: np.ndarray

    @property
    def joints(self) -> int:
        return self.y.shape[1]

    @classmethod
    def stacked(cls, regressions: list[Regression]) -> Regression:
        """The samples of several regressions (recordings) one after the other."""
        return cls(np.concatenate([r.Hb for r in regressions]), np.concatenate([r.y for r in regressions]))

    def weighted(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stacked rows (N n x r) and targets with per-joint weights."""
        A = (self.Hb * weights[None, :, None]).reshape(-1, self.Hb.shape[2])
        b = (self.y * weights[None, :]).reshape(-1)
        return A, b


def default_filter(model: ArmModel) -> FilterSettings:
    spec = model.description.raw.get("identification") or {}
    return FilterSettings(cutoff_hz=float(spec.get("cutoff_hz", 2.0)), order=int(spec.get("filter_order", 6)),
                          trim_seconds=float(spec.get("trim_seconds", 1.0)))


def build_regression(model: ArmModel, data: Dataset) -> Regression:
    """From a processed dataset (with qdd): known torques (the cable) are moved to the target."""
    if data.qdd is None:
        raise DataError(f"{data.source}: accelerations missing (process the dataset first)")
    if data.joints != model.dof:
        raise DataError(f"{data.source}: {data.joints} joints, the {model.description.arm} model has {model.dof}")
    Hb = model.base_regressor(data.q, data.qd, data.qdd)
    y = data.tau - model.known_torques(data.q)
    cutoff, order = data.processing.get("cutoff_hz"), data.processing.get("order")
    if cutoff:
        if order is None:
            raise DataError(f"{data.source}: low-passed at {cutoff} Hz by a filter of unrecorded order")
        # The measured torque went through the low-pass; so does every regressor
        # column, so that fit and evaluation compare like with like: the
        # Coulomb columns' steps are smoothed as the measured torque's were.
        N, n, r = Hb.shape
        Hb = lowpass(Hb.reshape(N, n * r), data.rate, cutoff, order).reshape(N, n, r)
    return Regression(Hb, y)


def delayed(reg: Regression, lags: np.ndarray) -> Regression:
    """Pair joint j's torque at sample t with the kinematics at t - lags[j].

    The measured effort of a dVRK joint lags its encoder-derived motion by a
    joint-specific delay (tens of ms on the cable-driven wrists); a fit that
    ignores it explains the lag with negative motor inertias.
    """
    lags = np.asarray(lags, dtype=int)
    if np.any(lags < 0):
        raise DataError("torque lags must be non-negative")
    top = int(lags.max(initial=0))
    N = reg.y.shape[0] - top
    if N <= 0:
        raise DataError("the recording is shorter than the torque lag")
    Hb = np.stack([reg.Hb[top - lag:top - lag + N, j, :] for j, lag in enumerate(lags)], axis=1)
    y = reg.y[top:top + N]
    return Regression(Hb, y)


def range_weights(y: np.ndarray) -> np.ndarray:
    """w_j = 1 / (max tau_j - min tau_j) (Wang 2019 section VI-A3)."""
    span = y.max(axis=0) - y.min(axis=0)
    if np.any(span <= 0):
        raise DataError(f"joint(s) {list(np.flatnonzero(span <= 0) + 1)} have constant torque: nothing to fit")
    return 1.0 / span


def relative_errors(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """||tau_j - tau_hat_j|| / ||tau_j|| per joint (Table III)."""
    return np.linalg.norm(measured - predicted, axis=0) / np.linalg.norm(measured, axis=0)
