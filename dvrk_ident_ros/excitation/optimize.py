"""Excitation trajectory optimisation (Wang 2019 section IV).

Minimises the condition number of the column-normalised base regressor
W_b (eq. 21) over the Fourier coefficients of a rest-to-rest trajectory (eq. 22),
with SLSQP: short explorations of a smooth soft-max bound of log cond from many
random feasible starts (screened at half length; the best eighth go on), then
polishes of the best in the epigraph form of the true log cond; the runs are
spread over worker processes (``workers.py``).
Gradients are exact up to the regressor's own forward differences in q, qd,
qdd (chain rule through the normalisation and the Fourier basis).

Position and speed limits of every limited coordinate are linear in the
coefficients; they are semi-infinite (every instant of the period), and are
imposed on the 1 kHz grid the answer is verified on: the period is cut into
windows and each window contributes its extreme value of every limited
coordinate and speed, with the exact gradient at that instant (the basis row;
an interior extremum is stationary in time, so moving it costs nothing to
first order). Few rows, and no limit crossed between constraint points.
Cartesian boxes use forward kinematics on a coarser grid. The answer is then
verified at 1 kHz over a whole period.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
import scipy.optimize
from tqdm import tqdm

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.excitation.objective import (
    CHECK_RATE,
    LIMIT_MARGIN,
    SOFTNESS,
    ExcitationProblem,
    condition_number,
    verify,
)
from dvrk_ident_ros.excitation.workers import TaskRunner, available_cpus
from dvrk_ident_ros.model.arm_model import ArmModel, load_model
from dvrk_ident_ros.model.description import ArmDescription
from dvrk_ident_ros.model.limits import (
    CartesianBox,
    CoordinateLimit,
    Margin,
)

EXTREMES = 8  # Gram eigenvalues at each end bounded in the epigraph polish
# The search's defaults (the CLI's): random starts, brief polishes, full polishes, iterations.
DEFAULT_STARTS = 192
# Explorations are screened: every start runs half the exploration, and only this fraction of
# them (the best) runs the other half. The ranking at half-way predicts the final one, and a
# continued exploration ends where an unbroken one does (docs/results.md): twice the starts
# for the time of one.
CONTINUED_FRACTION = 1 / 8
DEFAULT_POLISH = 12
DEFAULT_FINALISTS = 2
DEFAULT_ITERATIONS = 200


@dataclass
class OptimisationResult:
    trajectory: FourierTrajectory
    condition_number: float
    starts: list[float]  # best condition number of each start
    seconds: float
    margins: list[Margin]


@dataclass
class _Best:
    """The best feasible iterate of one SLSQP run (true condition number) and the iterations so far."""

    x: np.ndarray
    value: float
    iteration: int = 0


class _Search:
    """SLSQP runs on one problem that keep the best feasible iterate by the true condition number."""

    def __init__(self, problem: ExcitationProblem):
        self.problem = problem

    def feasible(self, x: np.ndarray) -> bool:
        p = self.problem
        return bool(np.all(p.limit_slack(x)[0] >= -1e-12) and (not p.boxes or np.all(p.cartesian(x) >= -1e-9)))

    def _linear(self, extra: int) -> list[dict]:
        p = self.problem

        def jac(z: np.ndarray) -> np.ndarray:
            J = p.limit_slack(z[:len(z) - extra])[1]
            return np.hstack([J, np.zeros((len(J), extra))])

        out = [{"type": "ineq", "fun": lambda z: p.limit_slack(z[:len(z) - extra])[0], "jac": jac}]
        if p.boxes:
            out.append({"type": "ineq", "fun": lambda z: p.cartesian(z[:len(z) - extra])})
        return out

    def run(self, x0: np.ndarray, iterations: int, p: float | None = SOFTNESS,
            m: int = 0) -> tuple[np.ndarray, float, int]:
        """Soft log cond with softness ``p``; or, with ``m`` > 0, the epigraph form of log cond:
        minimise (tau - beta) / 2 subject to beta <= log lambda_i <= tau for the m largest and
        m smallest Gram eigenvalues."""
        problem = self.problem
        state = _Best(x0, problem.true_cond(x0) if self.feasible(x0) else np.inf)
        m = min(m, problem.model.base.count // 2)
        extra = 2 if m else 0

        def report(z: np.ndarray) -> None:
            x = problem.pull_inside(z[:len(z) - extra])
            state.iteration += 1
            value = problem.true_cond(x)
            if value < state.value and self.feasible(x):
                state.x, state.value = x.copy(), value

        constraints = self._linear(extra)
        if m:
            log_lam, _ = problem.extreme_log_eigenvalues(x0, m)
            z0 = np.r_[x0, log_lam[:m].max(), log_lam[m:].min()]
            cache: dict = {}

            def eig(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                if cache.get("z") is None or not np.array_equal(cache["z"], z):
                    cache["z"], cache["v"] = z.copy(), problem.extreme_log_eigenvalues(z[:-2], m)
                return cache["v"]

            sign = np.r_[-np.ones(m), np.ones(m)]

            def fun(z: np.ndarray) -> np.ndarray:
                return sign * eig(z)[0] + np.r_[np.full(m, z[-2]), np.full(m, -z[-1])]

            def jac(z: np.ndarray) -> np.ndarray:
                return np.hstack([sign[:, None] * eig(z)[1], np.r_[np.ones(m), np.zeros(m)][:, None],
                                  np.r_[np.zeros(m), -np.ones(m)][:, None]])

            constraints.append({"type": "ineq", "fun": fun, "jac": jac})
            weights = np.r_[np.zeros(len(x0)), 0.5, -0.5]
            result = scipy.optimize.minimize(lambda z: float(weights @ z), z0, jac=lambda z: weights,
                                             method="SLSQP", constraints=constraints, callback=report,
                                             options={"maxiter": iterations, "ftol": 1e-9})
        else:
            result = scipy.optimize.minimize(problem.soft_log_cond, x0, args=(p,), jac=True, method="SLSQP",
                                             constraints=constraints, callback=report,
                                             options={"maxiter": iterations, "ftol": 1e-7})
        report(result.x)
        return state.x, state.value, state.iteration


@dataclass(frozen=True)
class _Spec:
    """What a worker process needs to rebuild the problem (models do not pickle; descriptions do)."""

    description: ArmDescription
    harmonics: int
    base_frequency: float
    limits: list[CoordinateLimit]
    boxes: list[CartesianBox]
    samples: int
    constraint_samples: int
    margin: float


_SEARCH: _Search | None = None  # the problem of this (worker) process


def _set_up(spec: _Spec, problem: ExcitationProblem | None = None) -> None:
    """Worker start-up: rebuild the problem from ``spec``, or use ``problem`` (in this process)."""
    global _SEARCH
    if problem is None:
        problem = ExcitationProblem(load_model(spec.description), spec.harmonics, spec.base_frequency, spec.limits,
                           spec.boxes, spec.samples, spec.constraint_samples, spec.margin)
    _SEARCH = _Search(problem)


def _explore(seed: int, index: int, iterations: int) -> tuple[np.ndarray, float, int]:
    """Start ``index`` of ``seed``: its own random stream, so it does not depend on which
    process runs it or in what order."""
    assert _SEARCH is not None
    return _continue(_SEARCH.problem.feasible_start(np.random.default_rng([seed, index])), iterations)


def _continue(x0: np.ndarray, iterations: int) -> tuple[np.ndarray, float, int]:
    """An exploration (the soft log cond) from ``x0``: a start, or where an exploration stopped."""
    assert _SEARCH is not None
    return _SEARCH.run(x0, iterations, SOFTNESS)


def _polish(x0: np.ndarray, iterations: int) -> tuple[np.ndarray, float, int]:
    assert _SEARCH is not None
    return _SEARCH.run(x0, iterations, None, EXTREMES)


class _Progress:
    """A one-line progress bar on stderr (tqdm) for a stage of independent runs: runs finished of all, and the
    best condition number so far; the line stays when the stage is over."""

    def __init__(self, stage: str, total: int, enabled: bool):
        self.best = np.inf
        self._bar = tqdm(total=total, desc=stage, disable=not enabled, file=sys.stderr, ascii=".#",
                         bar_format="  {desc:13s} [{bar:20}] {n_fmt}/{total_fmt}{postfix}  [{elapsed}<{remaining}]")

    def __call__(self, _index: int, result: tuple[np.ndarray, float, int]) -> None:
        self.best = min(self.best, result[1])
        self._bar.set_postfix_str(f"best condition number {self.best:9.1f}", refresh=False)
        self._bar.update()
        if self._bar.n >= (self._bar.total or 0):
            self._bar.close()


def optimise(model: ArmModel, limits: list[CoordinateLimit], boxes: list[CartesianBox], *, harmonics: int = 6,
             base_frequency: float = 0.1, starts: int = DEFAULT_STARTS, seed: int = 0,
             max_iterations: int = DEFAULT_ITERATIONS, samples: int = 120, constraint_samples: int = 200,
             margin: float = LIMIT_MARGIN, progress: bool = True, initial: FourierTrajectory | None = None,
             polish: int = DEFAULT_POLISH, finalists: int = DEFAULT_FINALISTS, workers: int | None = None
             ) -> OptimisationResult:
    """Minimise the condition number of the column-normalised base regressor (Wang 2019 section IV).

    ``starts`` short SLSQP explorations of the soft log cond from seeded random
    feasible starts, screened: all run half of the exploration, the best
    ``CONTINUED_FRACTION`` the rest; brief polishes of the ``polish`` best in the
    epigraph form of the true log cond (the explorations' ranking is only a
    guess); full polishes (``max_iterations``) of the ``finalists`` best; the
    best of all wins.
    ``initial`` (a feasible rest-to-rest trajectory, e.g. a shipped one) competes
    with the starts' results. The runs are spread over ``workers`` processes
    (default: one per CPU; 0: this process); the answer does not depend on it.
    """
    if harmonics < 2:
        raise SolverError(f"harmonics must be at least 2 (a rest-to-rest trajectory needs them), got {harmonics}")
    if not base_frequency > 0:
        raise SolverError(f"the base frequency must be positive, got {base_frequency}")
    if not limits:
        raise SolverError(f"{model.description.path}: no limits: refusing to optimise an unbounded trajectory")
    start_time = time.perf_counter()
    problem = ExcitationProblem(model, harmonics, base_frequency, limits, boxes, samples, constraint_samples, margin)
    search = _Search(problem)
    candidates: list[tuple[float, np.ndarray]] = []
    if initial is not None:
        x = problem.variables(initial)
        if not search.feasible(x):
            raise SolverError("initial trajectory: outside the limits (with the optimiser's margin)")
        candidates.append((problem.true_cond(x), x))
    problem.feasible_start(np.random.default_rng(seed))  # fails here, clearly, if the limits leave no room
    spec = _Spec(model.description, harmonics, base_frequency, limits, boxes, samples, constraint_samples, margin)
    workers = min(available_cpus(), max(1, starts)) if workers is None else workers
    explore = max(1, max_iterations // 4)
    screen = max(1, explore // 2)
    with TaskRunner(workers, _set_up, (spec,) if workers else (spec, problem)) as runner:
        explored = runner.map(_explore, [(seed, index, screen) for index in range(starts)],
                              _Progress("explorations", starts, progress))
        points = [x for x, _, _ in explored]
        per_start = [value for _, value, _ in explored]
        ranked = sorted((i for i in range(starts) if np.isfinite(per_start[i])), key=per_start.__getitem__)
        if not ranked and not candidates:
            raise SolverError("no start converged to a trajectory within the limits")
        go_on = ranked[:max(1, round(CONTINUED_FRACTION * starts))] if explore > screen else []
        continued = runner.map(_continue, [(points[i], explore - screen) for i in go_on],
                               _Progress("continued", len(go_on), progress and bool(go_on)))
        for i, (x, value, _) in zip(go_on, continued, strict=True):  # a run's best iterate: never worse than its start
            points[i], per_start[i] = x, value
        candidates += [(per_start[i], points[i]) for i in ranked]
        # The explorations' ranking is a poor guess of where a polish ends: polish
        # the ``polish`` best briefly, then the ``finalists`` best in full.
        candidates.sort(key=lambda c: c[0])
        if polish > 1:
            brief = runner.map(_polish, [(x0, explore) for _, x0 in candidates[:polish]],
                               _Progress("brief polishes", min(polish, len(candidates)), progress))
            candidates = sorted([(value, x) for x, value, _ in brief] + candidates, key=lambda c: c[0])
        finals = runner.map(_polish, [(x0, max_iterations) for _, x0 in candidates[:max(1, finalists)]],
                            _Progress("full polishes", min(max(1, finalists), len(candidates)), progress))
    candidates = sorted([(value, x) for x, value, _ in finals] + candidates, key=lambda c: c[0])
    best = candidates[0][1]
    # Only feasible iterates are kept, so the 1 kHz check passes; Cartesian boxes
    # are imposed on a coarser grid: if one is crossed between its constraint
    # times, shrink the harmonics about the mean position until the check passes.
    center = best.reshape(problem.n, problem.k).copy()
    center[:, 1:] = 0.0
    center = center.ravel()
    for _ in range(50):
        traj = problem.trajectory(best)
        margins = verify(model, traj, limits, boxes)
        worst = min(margins, key=lambda m: m.margin)
        if worst.margin >= 0:
            break
        best = center + 0.99 * (best - center)
    if worst.margin < 0:
        raise SolverError(f"the optimised trajectory violates {worst.name} ({worst.kind}) by {-worst.margin:.3g} "
                          f"at t = {worst.at_time:.3f} s when checked at {CHECK_RATE:g} Hz")
    return OptimisationResult(traj, condition_number(model, traj, samples), per_start,
                              time.perf_counter() - start_time, margins)
