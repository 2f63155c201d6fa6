"""Plausible standard parameters: the second, convex stage after the SDP fit.

Only the base parameters are identifiable; a simulator or a URDF needs
standard ones, which the data leave free in the null space of the base map.
They are chosen as in Lee, Wensing and Park, "Geometric robot dynamic
identification: a convex programming approach" (IEEE T-RO 2020): closest to a
prior by the log-det (Bregman) divergence of the 4x4 pseudo-inertias,

    minimise  sum_k  tr(J0_k^-1 J_k) - log det J_k       (+ constants)
    s.t.      base(delta) == the identified base parameters,
              J_k > 0, mass and centre-of-mass bounds (as in the SDP),
              friction, motor inertia and springs as identified,

a divergence that is invariant to the link frame and keeps every link away
from the cone's boundary. The SDP's own answer satisfies every constraint, so
the stage is feasible whenever it is given the SDP's base parameters.

Without a prior from a file (CAD, a previous identification), the prior is
built from the description (:func:`geometric_prior`): each link a set of
uniform rods from its frame origin to its child frames' origins.

On real recordings the identified base parameters themselves can force links
onto their bounds (a 5 kg PSM link, a singular pseudo-inertia): model error
the data cannot tell from inertia. :func:`choose_within_fit` then lets the base
parameters move, within the fit's 95 % likelihood-ratio region

    ||A K delta - b||^2  <=  (1 + eps) r_fit,   eps <= c chi2_p(0.95) / (N - p)

(c: the residual's correlation length in samples, as in the covariance of
identify/least_squares.py), taking the smallest eps of a ladder for which no
bound is active: the standard parameters a simulator is given (export/),
while the file's base and standard parameters stay those of the fit.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.identify.compare import relative_parameter_errors
from dvrk_ident_ros.identify.prior import (
    divergences,
    geometric_prior,
    prior_blocks,
    symmetric_basis,
    whitening,
)
from dvrk_ident_ros.identify.sdp import (
    PSEUDO_INERTIA_FLOOR,
    _com_bounds,
    bound_constraints,
    check_constraints,
    parameter_bounds,
)
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.physical import pseudo_inertia

#: The largest change of a base parameter (relative to its kind, identify/compare.py) accepted as "kept".
BASE_TOLERANCE = 1e-5
#: A bound is reported active when the value is within this fraction of its range of it (0.1 %).
ACTIVE_TOLERANCE = 1e-3


@dataclass
class PlausibleResult:
    standard: np.ndarray
    prior: np.ndarray
    links: dict[str, dict]
    total_divergence: float
    fit_total_divergence: float
    max_base_change: float
    solve_seconds: float
    iterations: int
    status: str = "optimal"
    prior_source: str = "geometry"
    attempts: int = 1  # solver settings tried (SOLVER_ATTEMPTS)

    def as_dict(self, names: tuple[str, ...], start: np.ndarray) -> dict:
        """The parameter file's ``plausibility`` entry (docs/identification.md, "Plausible standard parameters")."""
        inertial = [n for n in names if n[0] in "Llm" and not n.startswith("Im")]
        index = {n: i for i, n in enumerate(names)}
        return {"status": self.status, "method": "log-det divergence to a prior (Lee, Wensing, Park 2020)",
                "prior_source": self.prior_source,
                "prior": {n: float(self.prior[index[n]]) for n in inertial},
                "fit_standard": dict(zip(names, np.asarray(start, dtype=float).tolist(), strict=True)),
                "links": self.links, "total_divergence": self.total_divergence,
                "fit_total_divergence": self.fit_total_divergence, "max_base_change": self.max_base_change,
                "solve_seconds": self.solve_seconds, "iterations": self.iterations, "attempts": self.attempts}


def summary_line(plausibility: dict) -> str:
    """One line for the CLI and /identify: masses, total divergence, the bounds that are active."""
    if not plausibility:
        return ""
    if plausibility.get("status") != "optimal":
        return f"plausible inertials {plausibility.get('status')} (standard parameters: the SDP's own)"
    links = plausibility["links"]
    masses = " ".join(f"{k} {v['mass']:.3g}" for k, v in links.items())
    active = [f"{k} {b}" for k, v in links.items() for b in v["active_bounds"]]
    return (f"plausible inertials (log-det divergence {plausibility['fit_total_divergence']:.3g} -> "
            f"{plausibility['total_divergence']:.3g}): masses (kg) {masses}; "
            + (f"on a bound: {', '.join(active)}" if active else "no bound active"))


def active_bounds(model: ArmModel, delta: np.ndarray) -> dict[str, list[str]]:
    """Per link, the mass / COM bounds that ``delta`` sits on, and "pseudo-inertia boundary" for a
    (numerically) singular pseudo-inertia: a link the base parameters force onto the cone's boundary."""
    layout = model.layout
    out: dict[str, list[str]] = {link: [] for link in layout.inertial_blocks}
    for name, (lo, hi) in parameter_bounds(model).items():
        owner = layout.owners[layout.index(name)]
        if layout.kinds[layout.index(name)] != "m":
            continue
        v, span = delta[layout.index(name)], (hi - lo) if np.isfinite(hi - lo) else max(abs(lo), abs(hi), 1.0)
        for side, bound in (("lower", lo), ("upper", hi)):
            if np.isfinite(bound) and abs(v - bound) <= ACTIVE_TOLERANCE * span:
                out[owner].append(f"mass {side}")
    for (link, axis), (lo, hi) in _com_bounds(model).items():
        i = layout.inertial_blocks[link]
        first, m = delta[i + 6 + axis], delta[i + 9]
        for side, bound in (("lower", lo), ("upper", hi)):
            if abs(first - bound * m) <= ACTIVE_TOLERANCE * m * (hi - lo):
                out[link].append(f"com {'xyz'[axis]} {side}")
    for link, i in layout.inertial_blocks.items():
        if np.linalg.eigvalsh(pseudo_inertia(delta[i:i + 10]))[0] <= 2 * PSEUDO_INERTIA_FLOOR:
            out[link].append("pseudo-inertia boundary")
    return out


#: Clarabel settings tried in turn until one ends "optimal": a link the base parameters force onto the
#: cone's boundary leaves the log-det problem almost no interior, and the default settings then stop at
#: "optimal_inaccurate" (the PSM simulated by config/sim/psm.yaml, tracked and identified; its answer
#: was verified the same with the second settings: docs/results.md).
SOLVER_ATTEMPTS: tuple[dict, ...] = ({}, {"static_regularization_enable": False}, {"equilibrate_enable": False})


def _solve(problem: cp.Problem) -> int:
    """Solve to status optimal (see SOLVER_ATTEMPTS); the number of attempts it took."""
    status = None
    for attempt, settings in enumerate(SOLVER_ATTEMPTS, start=1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                problem.solve(solver=cp.CLARABEL, **settings)
        except cp.error.SolverError as exc:
            status = f"failed ({exc})"
            continue
        status = problem.status
        if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            raise SolverError("plausible parameters: infeasible: no physically consistent standard parameters "
                              "within the bounds give these base parameters")
        if status == cp.OPTIMAL:
            return attempt
    raise SolverError(f"plausible parameters: solver status {status!r} after {len(SOLVER_ATTEMPTS)} attempts "
                      "(only 'optimal' is accepted)")


def _inertial_mask(model: ArmModel) -> np.ndarray:
    mask = np.zeros(len(model.layout), dtype=bool)
    for i in model.layout.inertial_blocks.values():
        mask[i:i + 10] = True
    return mask


def _divergence_problem(model: ArmModel, prior: np.ndarray, fixed: np.ndarray, free_other: bool
                        ) -> tuple[cp.Variable, cp.Expression, cp.Expression, np.ndarray]:
    """(x, delta, objective, M): delta = M x + the rest, x each link's whitened pseudo-inertia X_k (upper
    triangle; X_k = I is the prior), the objective sum_k tr(X_k) - log det X_k. The parameters outside the
    links (friction, motor inertias, springs) are ``fixed``'s, or variables when ``free_other``."""
    layout = model.layout
    P = len(layout)
    J0 = prior_blocks(model, prior)
    inertial = _inertial_mask(model)
    M = np.zeros((P, 10 * len(J0)))
    for k, (link, i) in enumerate(layout.inertial_blocks.items()):
        M[i:i + 10, 10 * k:10 * k + 10] = whitening(J0[link])
    x = cp.Variable(10 * len(J0))
    if free_other:
        other = cp.Variable(P)
        delta = M @ x + cp.multiply((~inertial).astype(float), other)
    else:
        delta = M @ x + np.where(inertial, 0.0, fixed)
    diagonal = np.isin(np.arange(10), [0, 4, 7, 9])  # the upper triangle's diagonal entries
    trace = np.tile(diagonal.astype(float), len(J0))
    X = [cp.reshape(symmetric_basis().reshape(10, 16).T @ x[10 * k:10 * k + 10], (4, 4), order="C")
         for k in range(len(J0))]
    objective = trace @ x - sum(cp.log_det(Xk) for Xk in X)
    return x, delta, objective, M


def _checked_value(model: ArmModel, delta: cp.Expression) -> np.ndarray:
    value = np.asarray(delta.value, dtype=float)
    min_eig, violation = check_constraints(model, value)
    if min_eig < 0 or violation > 1e-9:
        raise SolverError(f"plausible parameters: answer violates its constraints (min pseudo-inertia eigenvalue "
                          f"{min_eig:.2e}, worst bound violation {violation:.2e})")
    return value


def choose_plausible(model: ArmModel, base: np.ndarray, fixed: np.ndarray, prior: np.ndarray | None = None,
                     *, start: np.ndarray | None = None, prior_source: str = "geometry") -> PlausibleResult:
    """The standard parameters closest to ``prior`` (log-det divergence) that give ``base``.

    ``fixed``: standard parameters whose non-inertial entries (friction, motor
    inertia, springs) are kept; ``start``: the SDP's standard answer, reported for
    comparison (default ``fixed``). Raises :class:`SolverError` when no physically
    consistent parameters within the bounds give ``base`` (e.g. base parameters of
    an unconstrained least-squares fit), or when the answer changes them.
    """
    t0 = time.perf_counter()
    P = len(model.layout)
    prior = geometric_prior(model) if prior is None else np.asarray(prior, dtype=float)
    start = np.asarray(fixed if start is None else start, dtype=float)
    K = model.base.matrix(P)
    fixed = np.asarray(fixed, dtype=float)
    inertial = _inertial_mask(model)
    x, delta, objective, M = _divergence_problem(model, prior, fixed, free_other=False)
    # base == K delta, rows scaled to unit norm (their units mix kg, kg m, kg m^2); rows without an
    # inertial parameter are friction alone, kept by fixing it.
    KM = K @ M
    norms = np.linalg.norm(KM, axis=1)
    rows = norms > 0
    target = np.asarray(base, dtype=float) - K[:, ~inertial] @ fixed[~inertial]
    # J_k = C_k X_k C_k^T > 0 through log det X_k; the SDP's floor (J >= 1e-7 I) is not imposed: on the
    # tracked simulated PSM it took more solver attempts and longer, and links the base parameters force
    # onto the cone's boundary still ended below it within the solver's tolerance (docs/results.md)
    constraints = [*bound_constraints(model, delta), (KM[rows] / norms[rows, None]) @ x == target[rows] / norms[rows]]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    attempts = _solve(problem)
    value = _checked_value(model, delta)
    names = model.base_parameter_names
    change = float(relative_parameter_errors(names, K @ value, base).max(initial=0.0))
    if change > BASE_TOLERANCE:
        raise SolverError(f"plausible parameters: the base parameters moved by {change:.1e} (relative), "
                          f"more than {BASE_TOLERANCE:.0e}")
    result = _summarise(model, value, prior, start, change, time.perf_counter() - t0,
                        getattr(problem.solver_stats, "num_iters", 0) or 0, prior_source)
    result.attempts = attempts
    return result


@dataclass(frozen=True)
class FitRegion:
    """A least-squares fit in compressed form: residual(delta) = ||RK delta - c||^2 + floor (A = QR,
    c = Q^T b, floor = |b|^2 - |c|^2); ``best`` the fit's own residual, ``limit`` the largest relative
    increase accepted (the 95 % likelihood-ratio region)."""

    RK: np.ndarray
    c: np.ndarray
    floor: float
    best: float
    limit: float

    def residual(self, delta: np.ndarray) -> float:
        return float(np.sum((self.RK @ delta - self.c) ** 2) + self.floor)


def fit_region(model: ArmModel, A: np.ndarray, b: np.ndarray, fitted_base: np.ndarray, correlation: float = 1.0,
               level: float = 0.95) -> FitRegion:
    """The region of a weighted base-parameter fit (A: N x p, b: N): relative residual increase at most
    c chi2_p(level) / (N - p), c the residual's correlation length (N / c independent samples)."""
    from scipy.stats import chi2

    Q, R = np.linalg.qr(A)
    c = Q.T @ b
    n, p = A.shape
    floor = max(float(b @ b - c @ c), 0.0)
    # exact data fit to rounding: a region of (almost) one point, kept well scaled
    best = max(float(np.sum((R @ fitted_base - c) ** 2) + floor), 1e-12 * float(b @ b), 1e-300)
    limit = correlation * float(chi2.ppf(level, p)) / max(n - p, 1)
    return FitRegion(RK=R @ model.base.matrix(len(model.layout)), c=c, floor=floor, best=best, limit=limit)


#: Relative residual increases tried in turn by :func:`choose_within_fit` (then the region's limit).
FIT_LADDER = (0.001, 0.003, 0.01, 0.03, 0.1)


@dataclass
class RelaxedResult:
    standard: np.ndarray
    residual_increase: float  # the tolerance used: relative increase of the fit's residual allowed
    limit: float  # the 95 % region's
    links: dict[str, dict]
    total_divergence: float
    solve_seconds: float
    tried: list[float]

    def as_dict(self, names: tuple[str, ...]) -> dict:
        return {"status": "optimal", "standard": dict(zip(names, self.standard.tolist(), strict=True)),
                "residual_increase": self.residual_increase, "limit": self.limit, "tried": self.tried,
                "links": self.links, "total_divergence": self.total_divergence,
                "solve_seconds": self.solve_seconds}


def choose_within_fit(model: ArmModel, region: FitRegion, start: np.ndarray, prior: np.ndarray | None = None
                      ) -> RelaxedResult:
    """The standard parameters closest to ``prior`` whose fit is at most (1 + eps) times the best, for
    the smallest eps of :data:`FIT_LADDER` (capped at the region's limit, then the limit itself) that
    leaves no bound active; at the limit, whatever bounds are still active are reported as such.
    ``start``: the fit's standard parameters (the divergence the answer is compared with)."""
    t0 = time.perf_counter()
    prior = geometric_prior(model) if prior is None else np.asarray(prior, dtype=float)
    start = np.asarray(start, dtype=float)
    _, delta, objective, _ = _divergence_problem(model, prior, start, free_other=True)
    scale = 1.0 / np.sqrt(region.best)  # fit_region keeps best > 0
    allowed = cp.Parameter()  # the scaled compressed residual allowed: one problem, re-solved down the ladder
    problem = cp.Problem(cp.Minimize(objective), [*bound_constraints(model, delta),
                                                  cp.sum_squares(scale * (region.RK @ delta - region.c)) <= allowed])
    ladder = [e for e in FIT_LADDER if e < region.limit] + [region.limit]
    tried: list[float] = []
    value = start
    for eps in ladder:
        allowed.value = (1.0 + eps) - scale * scale * region.floor
        _solve(problem)
        value = _checked_value(model, delta)
        tried.append(eps)
        if not any(active_bounds(model, value).values()):
            break
    summary = _summarise(model, value, prior, start, 0.0, 0.0, 0, "")
    return RelaxedResult(standard=value, residual_increase=region.residual(value) / region.best - 1.0,
                         limit=region.limit, links=summary.links, total_divergence=summary.total_divergence,
                         solve_seconds=time.perf_counter() - t0, tried=tried)


def _summarise(model: ArmModel, value: np.ndarray, prior: np.ndarray, start: np.ndarray, change: float,
               seconds: float, iterations: int, prior_source: str) -> PlausibleResult:
    after, before = divergences(model, value, prior), divergences(model, start, prior)
    active = active_bounds(model, value)
    links = {}
    for link, i in model.layout.inertial_blocks.items():
        m = value[i + 9]
        links[link] = {"mass": float(m), "prior_mass": float(prior[i + 9]), "fit_mass": float(start[i + 9]),
                       "com": (value[i + 6:i + 9] / m).tolist(), "divergence": after[link],
                       "fit_divergence": before[link], "active_bounds": active[link],
                       "min_pseudo_inertia_eigenvalue": float(np.linalg.eigvalsh(pseudo_inertia(value[i:i + 10]))[0])}
    return PlausibleResult(standard=value, prior=prior, links=links, total_divergence=float(sum(after.values())),
                           fit_total_divergence=float(sum(before.values())), max_base_change=change,
                           solve_seconds=seconds, iterations=int(iterations), prior_source=prior_source)
