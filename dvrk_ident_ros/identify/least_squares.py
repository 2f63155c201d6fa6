"""OLS and WLS on the base parameters, with their covariance."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.identify.problem import Regression, range_weights


@dataclass(frozen=True)
class LeastSquaresResult:
    base: np.ndarray
    covariance: np.ndarray
    weights: np.ndarray
    residual_std: np.ndarray  # per joint, unweighted


def solve_least_squares(reg: Regression, weighting: str = "range", correlation: float = 1.0) -> LeastSquaresResult:
    """weighting: "none" (OLS), "range" (1/(max - min), the paper's WLS) or "noise"
    (two steps: 1/residual standard deviation of an OLS fit).

    ``correlation`` inflates the covariance for correlated residuals (low-pass
    filtered data): with N samples carrying about N / correlation independent
    values, Cov = correlation * s^2 (A^T A)^-1.
    """
    n = reg.joints
    if weighting == "none":
        w = np.ones(n)
    elif weighting == "range":
        w = range_weights(reg.y)
    elif weighting == "noise":
        first = solve_least_squares(reg, "none")
        if np.any(first.residual_std <= 0):
            raise SolverError("noise weighting: a joint fits exactly; use range weighting")
        w = 1.0 / first.residual_std
    else:
        raise SolverError(f"unknown weighting {weighting!r} (none, range, noise)")
    A, b = reg.weighted(w)
    base, _, rank, _ = np.linalg.lstsq(A, b, rcond=None)
    if rank < A.shape[1]:
        raise SolverError(f"the data do not excite all base parameters (rank {rank} of {A.shape[1]})")
    residual = b - A @ base
    dof = max(len(b) - A.shape[1], 1)
    s2 = residual @ residual / dof
    covariance = correlation * s2 * np.linalg.inv(A.T @ A)
    unweighted = reg.y - reg.Hb @ base
    return LeastSquaresResult(base, covariance, w, unweighted.std(axis=0))
