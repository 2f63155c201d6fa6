"""Base parameters by QR decomposition with column pivoting (Gautier 1991; Wang 2019 eq. 16).

On a stacked regressor W of random states, W Pi = Q [R1 R2] with R1 (r x r)
the independent columns. Then H delta = H_b delta_b with
delta_b = delta_1 + beta delta_2, beta = R1^-1 R2, where delta_1 are the
parameters of the independent (pivoted-first) columns, delta_2 the others.

Rank tolerance: a diagonal entry |R_ii| counts when it exceeds
``RANK_TOLERANCE`` x |R_00|. For the dVRK models the gap in |R_ii| / |R_00|
between identifiable and unidentifiable directions spans many orders of
magnitude (docs/results.md), and 1e-10 lies well inside it, far from both sides.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANK_TOLERANCE = 1e-10
_SMALL_COEFFICIENT = 1e-10


@dataclass(frozen=True)
class BaseParameters:
    independent: np.ndarray  # indices of the standard parameters kept as base columns (r)
    dependent: np.ndarray  # the others (P - r)
    beta: np.ndarray  # r x (P - r): delta_b = delta[independent] + beta @ delta[dependent]
    diagonal: np.ndarray  # |R_ii| / |R_00|, for reporting the rank decision

    @property
    def count(self) -> int:
        return len(self.independent)

    def matrix(self, n_standard: int) -> np.ndarray:
        """K (r x P) with delta_b = K delta."""
        K = np.zeros((self.count, n_standard))
        K[:, self.independent] = np.eye(self.count)
        K[:, self.dependent] = self.beta
        return K

    def from_standard(self, delta: np.ndarray) -> np.ndarray:
        return delta[..., self.independent] + delta[..., self.dependent] @ self.beta.T

    def describe(self, names: tuple[str, ...], digits: int = 4) -> list[str]:
        """Each base parameter as its combination, e.g. "L2xx - 0.0415 m2'' + ..."."""
        out = []
        for i, col in enumerate(self.independent):
            text = names[col]
            for j, dep in enumerate(self.dependent):
                c = self.beta[i, j]
                if c != 0:
                    factor = "" if np.isclose(abs(c), 1.0, rtol=1e-12) else f"{abs(c):.{digits}g} "
                    text += f" {'-' if c < 0 else '+'} {factor}{names[dep]}"
            out.append(text)
        return out


def compute_base_parameters(W: np.ndarray) -> BaseParameters:
    """From a stacked regressor W (rows x P) of random, exciting states."""
    import scipy.linalg  # only on a model's build: not on every node's start

    _, R, piv = scipy.linalg.qr(W, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    ratio = diag / diag[0]
    r = int(np.sum(ratio > RANK_TOLERANCE))
    beta = scipy.linalg.solve_triangular(R[:r, :r], R[:r, r:])
    beta[np.abs(beta) < _SMALL_COEFFICIENT] = 0.0
    order = np.argsort(piv[:r])  # present base parameters in the standard order
    return BaseParameters(independent=piv[:r][order], dependent=piv[r:], beta=beta[order], diagonal=ratio)
