"""The rate of an arm's state, from the stamps of its fresh samples (ROS-free).

The dVRK's bridge publishes ``measured_js`` at 100 Hz by default (``dvrk_system -p 0.01``). That is enough
for a pose grid (each pose is sampled at rest), not for identification: the efforts of a PID tracking a
fast stream alias when sampled at 100 Hz (docs/lab-procedure.md; the simulated PSM identified from 100 Hz
recordings fits far worse than from 1 kHz ones: docs/results.md). :data:`IDENTIFICATION_RATE`
is the rate below which the player warns before it streams an excitation trajectory and the identification
notes the recording in its summary.
"""
from __future__ import annotations

import numpy as np

#: Hz: an excitation recorded slower than this is noted (identification wants 1 kHz: the console's -p 0.001)
IDENTIFICATION_RATE = 150.0


def rate_from_stamps(stamps: np.ndarray) -> float | None:
    """Hz from the median interval of increasing stamps (s); None for fewer than two or no positive interval."""
    if len(stamps) < 2:
        return None
    period = float(np.median(np.diff(stamps)))
    return 1.0 / period if period > 0 else None


def low_rate_advice(rate: float) -> str:
    """What to do about an identification recording at ``rate`` Hz (< IDENTIFICATION_RATE)."""
    return (f"identification runs want the arm's state at 1 kHz (the console's -p 0.001): at {rate:.0f} Hz the "
            "commanded efforts alias")


class StampRate:
    """The state's rate over the last ``window`` fresh samples: a fixed ring of their stamps, no allocation per
    sample (:meth:`add` runs in a state callback)."""

    def __init__(self, window: int = 64):
        if window < 2:
            raise ValueError(f"StampRate window {window}: at least 2 stamps")
        self._stamps = np.zeros(window)
        self._count = 0

    def add(self, stamp: float) -> None:
        self._stamps[self._count % len(self._stamps)] = stamp
        self._count += 1

    @property
    def count(self) -> int:
        """Stamps added so far."""
        return self._count

    def rate(self) -> float | None:
        """Hz over the stamps held (None with fewer than two)."""
        n = min(self._count, len(self._stamps))
        if n < 2:
            return None
        return rate_from_stamps(np.sort(self._stamps[:n]))
