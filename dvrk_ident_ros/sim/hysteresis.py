"""Direction-dependent cable torque: a Dahl hysteresis per joint (what MLSE models on the MTM).

    dz/dq = (1 - z sgn(qdot)) / width,   z in [-1, 1]
    tau_h = z * (c0 + c1 q + ...)        (dVRK joint space)

At rest z keeps the sign of the last motion, so a pose reached moving up
needs a different holding torque than the same pose reached moving down
(Lin 2019, section III-A), and the difference depends on the pose.
"""
from __future__ import annotations

import numpy as np


class DahlHysteresis:
    def __init__(self, amplitude: np.ndarray, width: float):
        """``amplitude``: dof x k polynomial coefficients (c0, c1, ...) per joint; ``width``: rad to saturate."""
        self.coefficients = np.atleast_2d(np.asarray(amplitude, dtype=float))
        self.width = float(width)
        self.z = np.zeros(self.coefficients.shape[0])
        self._powers = np.arange(self.coefficients.shape[1])

    def update(self, dq: np.ndarray) -> None:
        """Advance the internal state by the joint displacement ``dq`` of one step."""
        direction = np.sign(dq)
        self.z += np.abs(dq) / self.width * (direction - self.z)
        np.minimum(np.maximum(self.z, -1.0, out=self.z), 1.0, out=self.z)

    def torque(self, q: np.ndarray) -> np.ndarray:
        return self.z * (self.coefficients * np.power.outer(q, self._powers)).sum(axis=1)
