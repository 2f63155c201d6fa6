"""Measurement imperfections of the simulated arm, at the levels of real recordings.

Encoder quantisation (positions are multiples of a resolution), white
effort noise, and the quantisation of the measured effort (it comes from the
motor currents' ADC: in the WPI recordings every step of every joint's torque
is a whole multiple of one smallest step, in motor coordinates).
:func:`estimate_levels` reads them off a real recording: the resolutions as the
smallest non-zero step between successive positions (torques), the effort noise
as the standard deviation of what a 20 Hz low-pass removes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.data.processing import lowpass


@dataclass(frozen=True)
class NoiseLevels:
    resolution: np.ndarray  # per joint, rad (m)
    effort_std: np.ndarray  # per joint, N m (N)
    effort_resolution: np.ndarray | None = None  # per motor coordinate, N m (N); None: not quantised


def estimate_levels(data: Dataset, cutoff_hz: float = 20.0) -> NoiseLevels:
    resolution = _smallest_steps(data.q)
    residual = data.tau - lowpass(data.tau, data.rate, cutoff_hz, 4)
    return NoiseLevels(resolution, residual.std(axis=0), _smallest_steps(data.tau))


def _smallest_steps(values: np.ndarray) -> np.ndarray:
    steps = np.abs(np.diff(values, axis=0))
    return np.array([np.min(col[col > 1e-12]) if np.any(col > 1e-12) else 0.0 for col in steps.T])


def quantize(q: np.ndarray, resolution: np.ndarray) -> np.ndarray:
    """Positions as an encoder reports them (resolution 0: exact)."""
    res = np.asarray(resolution, dtype=float)
    safe = np.where(res > 0, res, 1.0)
    return np.where(res > 0, np.round(q / safe) * safe, q)


def noisy_effort(tau: np.ndarray, effort_std: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return tau + rng.normal(size=np.shape(tau)) * effort_std
