"""OLS and WLS on the base parameters, with their covariance."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.identify.problem import Regression, range_weights

#: The per-joint weights of each weighting, from the measured torques (N x n).
WEIGHTINGS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": lambda y: np.ones(y.shape[1]),
    "range": range_weights,
}


@dataclass(frozen=True)
class LeastSquaresResult:
    base: np.ndarray
    covariance: np.ndarray
    weights: np.ndarray
    residual_std: np.ndarray  # per joint, unweighted


def solve_least_squares(reg: Regression, weighting: str = "range", correlation: float = 1.0) -> LeastSquaresResult:
    """weighting: "none" (OLS) or "range" (1/(max - min), the paper's WLS): an estimator's
    (:mod:`dvrk_ident_ros.estimators`).

    ``correlation`` inflates the covariance for correlated residuals (low-pass
    filtered data): with N samples carrying about N / correlation independent
    values, Cov = correlation * s^2 (A^T A)^-1.
    """
    if weighting not in WEIGHTINGS:
        raise SolverError(f"unknown weighting {weighting!r} ({', '.join(WEIGHTINGS)})")
    w = WEIGHTINGS[weighting](reg.y)
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
