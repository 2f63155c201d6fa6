"""Signal processing of recordings (Wang 2019 section VI-A2, done right).

Zero-phase Butterworth low-pass designed with the sampling rate
(``butter(N, fc, fs=fs)``, second-order sections, ``sosfiltfilt``: the
original package's cutoff was pi times too high), accelerations by
differentiating the filtered velocities, trimming of the filter's edge
transients, optional decimation and removal of near-zero-velocity samples.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.errors import DataError


@dataclass(frozen=True)
class FilterSettings:
    cutoff_hz: float
    order: int = 6
    trim_seconds: float = 0.5
    decimate: int = 1
    min_speed: float = 0.0  # drop samples whose every joint speed is below this (rad/s, m/s)


def lowpass(x: np.ndarray, fs: float, cutoff_hz: float, order: int, settle: bool = False) -> np.ndarray:
    """Zero-phase Butterworth low-pass along axis 0 (effective order 2 x order).

    By default the edges are padded as ``scipy.signal.sosfiltfilt`` does (a few
    samples of odd extension): the evaluation protocol's filter of measured
    torques. Its edges flatten, because the padding is far shorter than the
    filter's response. ``settle=True`` pads two cutoff periods of odd extension
    (point reflection, which keeps the slope at the edge) so a smooth signal
    such as a joint trajectory keeps its slope and curvature up to the last sample.
    """
    import scipy.signal  # here: half a second the nodes that never filter (simulated arm, player) do not pay

    if not 0 < cutoff_hz < fs / 2:
        raise DataError(f"filter cutoff {cutoff_hz} Hz must lie in (0, {fs / 2:g}) for data at {fs:g} Hz")
    sos = scipy.signal.butter(order, cutoff_hz, fs=fs, output="sos")
    padlen = round(2 * fs / cutoff_hz) if settle else 3 * (2 * len(sos) + 1)
    return scipy.signal.sosfiltfilt(sos, x, axis=0, padlen=min(padlen, len(x) - 1))


def process(data: Dataset, settings: FilterSettings) -> Dataset:
    """Filter q, qd, tau; qdd from the filtered qd; trim, decimate, drop resting samples."""
    fs = data.rate
    trim = round(settings.trim_seconds * fs)
    if data.samples <= 2 * trim + 10:
        raise DataError(f"{data.source}: {data.samples} samples are too few to filter and trim {trim} per side")
    q = lowpass(data.q, fs, settings.cutoff_hz, settings.order)
    qd = lowpass(data.qd, fs, settings.cutoff_hz, settings.order)
    tau = lowpass(data.tau, fs, settings.cutoff_hz, settings.order)
    qdd = np.gradient(qd, data.t, axis=0)
    out = replace(data, q=q, qd=qd, tau=tau, qdd=qdd,
                  processing={"cutoff_hz": settings.cutoff_hz, "order": settings.order,
                              "trim_seconds": settings.trim_seconds, "decimate": settings.decimate,
                              "min_speed": settings.min_speed, "rate_hz": fs})
    out = out.select(slice(trim, data.samples - trim, max(1, settings.decimate)))
    if settings.min_speed > 0:
        moving = np.any(np.abs(out.qd) >= settings.min_speed, axis=1)
        out = out.select(moving)
    return out
