"""Dataset: one recording in motor coordinates."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from dvrk_ident_ros.errors import DataError


@dataclass(frozen=True)
class Dataset:
    """Time (s), motor-space positions, velocities, accelerations and torques (N x n each)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    qdd: np.ndarray | None = None
    source: str = ""
    processing: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.t)
        if n == 0:
            raise DataError(f"{self.source or 'dataset'}: no samples")
        for name in ("q", "qd", "tau", "qdd"):
            a = getattr(self, name)
            if a is None:
                continue
            if a.ndim != 2 or a.shape[0] != n or a.shape[1] != self.q.shape[1]:
                raise DataError(f"{self.source or 'dataset'}: {name} has shape {a.shape}, expected ({n}, "
                                f"{self.q.shape[1]})")
        if np.any(np.diff(self.t) <= 0):
            raise DataError(f"{self.source or 'dataset'}: time stamps are not strictly increasing")

    @property
    def samples(self) -> int:
        return len(self.t)

    @property
    def joints(self) -> int:
        return self.q.shape[1]

    @property
    def rate(self) -> float:
        """Sampling rate (Hz) from the median time step."""
        return float(1.0 / np.median(np.diff(self.t)))

    def select(self, index) -> Dataset:
        """A subset of the samples (slice or boolean mask)."""
        return replace(self, t=self.t[index], q=self.q[index], qd=self.qd[index], tau=self.tau[index],
                       qdd=None if self.qdd is None else self.qdd[index])
