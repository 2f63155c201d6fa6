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
from scipy.special import logsumexp, softmax
from tqdm import tqdm

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.excitation.workers import TaskRunner, available_cpus
from dvrk_ident_ros.model.arm_model import ArmModel, load_model
from dvrk_ident_ros.model.description import ArmDescription
from dvrk_ident_ros.model.limits import (
    CartesianBox,
    CoordinateLimit,
    Margin,
    check_margins,
)

CHECK_RATE = 1000.0  # Hz: the dense verification of every limit
SOFTNESS = 8.0  # p of the soft maximum / minimum of the Gram eigenvalues
EXTREMES = 8  # Gram eigenvalues at each end bounded in the epigraph polish
STATE_STEP = 1e-6  # forward-difference step of the regressor in q, qd, qdd
# s: each window of the period gives the extremes of every limited coordinate (rows of SLSQP's
# subproblem, whose cost grows with them: 0.25 s instead of 0.1 s made an MTM exploration 14 %
# faster, with explorations as good; still exact on the 1 kHz grid, a window's maximum is its own)
WINDOW = 0.25
# Fraction of each position range (and of each speed limit) left free. The
# limit tables are already the excitation limits and the constraints hold on
# the 1 kHz verification grid; the margin covers the rounding of the player's
# conversions between motor and dVRK coordinates, and what a 1 kHz grid misses.
LIMIT_MARGIN = 1e-4
# The search's defaults (the CLI's): random starts, brief polishes, full polishes, iterations.
DEFAULT_STARTS = 192
# Explorations are screened: every start runs half the exploration, and only this fraction of
# them (the best) runs the other half. On 64 MTM starts the ranking after 25 iterations
# predicted the ranking after 50 (Spearman 0.93; the 4 best at 50 were among the 5 best at
# 25), and 25 + 25 iterations ended where 50 did: twice the starts for the time of one.
CONTINUED_FRACTION = 1 / 8
DEFAULT_POLISH = 12
DEFAULT_FINALISTS = 2
DEFAULT_ITERATIONS = 200


def sample_times(period: float, samples: int) -> np.ndarray:
    """Mid-interval times over one period: never t = 0, where a rest-to-rest
    trajectory's velocity is exactly zero and the Coulomb columns' sign flips
    under the smallest perturbation."""
    return (np.arange(samples) + 0.5) * period / samples


def condition_number(model: ArmModel, traj: FourierTrajectory, samples: int) -> float:
    """Condition number of the column-normalised base regressor over one period."""
    t = sample_times(traj.period, samples)
    q, qd, qdd = traj.evaluate(t)
    W = model.base_regressor(q, qd, qdd).reshape(-1, model.base.count)
    norms = np.linalg.norm(W, axis=0)
    if np.any(norms == 0):
        return np.inf
    return float(np.linalg.cond(W / norms))


def verify(model: ArmModel, traj: FourierTrajectory, limits: list[CoordinateLimit], boxes: list[CartesianBox],
           rate: float = CHECK_RATE) -> list[Margin]:
    """Every limit's worst margin over one period sampled at ``rate``."""
    t = np.arange(0.0, traj.period, 1.0 / rate)
    q, qd, _ = traj.evaluate(t)
    return check_margins(model, q, qd, t, limits, boxes)


@dataclass
class OptimisationResult:
    trajectory: FourierTrajectory
    condition_number: float
    starts: list[float]  # best condition number of each start
    seconds: float
    margins: list[Margin]


class _Problem:
    def __init__(self, model: ArmModel, harmonics: int, base_frequency: float, limits: list[CoordinateLimit],
                 boxes: list[CartesianBox], samples: int, constraint_samples: int, margin: float):
        self.model, self.H, self.f = model, harmonics, base_frequency
        self.n = model.dof
        self.limits, self.boxes, self.samples = limits, boxes, samples
        k = 2 * harmonics - 1  # per joint: centre, a_2..a_H, b_2..b_H
        self.k = k
        # T maps the free variables of one joint to [q0, a_1..a_H, b_1..b_H]
        T = np.zeros((1 + 2 * harmonics, k))
        T[0, 0] = 1.0
        for h in range(2, harmonics + 1):
            T[h, h - 1] = 1.0  # a_h
            T[1, h - 1] = -1.0  # a_1 = -sum a_h
            T[harmonics + h, harmonics + h - 2] = 1.0  # b_h
            T[harmonics + 1, harmonics + h - 2] = -float(h)  # b_1 = -sum h b_h
        self.T = T
        proto = FourierTrajectory(base_frequency, np.zeros(self.n), np.zeros((harmonics, self.n)),
                                  np.zeros((harmonics, self.n)))
        self.proto = proto
        self.margin = margin
        tc = np.linspace(0.0, proto.period, constraint_samples, endpoint=False)
        self.G, self.h = self._rows(tc)  # G x <= h on a coarse grid: for building starts only
        self.tc = tc
        self._dense_limits()
        ts = sample_times(proto.period, samples)
        self.bases = [proto.basis(ts, order) for order in range(3)]

    def _rows(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Linear position and speed limits at ``times``: rows of G x <= h."""
        B0, B1 = self.proto.basis(times, 0) @ self.T, self.proto.basis(times, 1) @ self.T
        rows, rhs = [], []
        for lim in self.limits:
            span = lim.upper - lim.lower
            G0 = np.kron(lim.coefficients[None, :], B0)  # x ordered joint-major
            G1 = np.kron(lim.coefficients[None, :], B1)
            rows += [G0, -G0]
            rhs += [np.full(len(times), lim.upper - lim.offset - self.margin * span),
                    np.full(len(times), -(lim.lower - lim.offset + self.margin * span))]
            if np.isfinite(lim.max_speed):
                rows += [G1, -G1]
                rhs += [np.full(len(times), lim.max_speed * (1 - self.margin))] * 2
        return np.vstack(rows), np.concatenate(rhs)

    def _dense_limits(self) -> None:
        """The 1 kHz grid of :func:`verify`, cut into windows of about ``WINDOW`` seconds."""
        td = np.arange(0.0, self.proto.period, 1.0 / CHECK_RATE)
        self.dense = [self.proto.basis(td, order) @ self.T for order in (0, 1)]  # (times, k)
        windows = max(1, round(self.proto.period / WINDOW))
        per_window = -(-len(td) // windows)
        # every window gets per_window samples; the last is padded with copies of the last instant
        self.padded = np.minimum(np.arange(windows * per_window), len(td) - 1).reshape(windows, -1)
        self.C = np.array([lim.coefficients for lim in self.limits])  # (limits, n)
        span = np.array([lim.upper - lim.lower for lim in self.limits])
        upper = np.array([lim.upper - lim.offset for lim in self.limits]) - self.margin * span
        lower = np.array([lim.lower - lim.offset for lim in self.limits]) + self.margin * span
        speed = np.array([lim.max_speed for lim in self.limits]) * (1 - self.margin)
        center = np.zeros((self.n, self.k))  # at rest mid-range: inside every limit
        mid = np.array([(lim.lower + lim.upper) / 2 - lim.offset for lim in self.limits])
        center[:, 0] = np.linalg.lstsq(self.C, mid, rcond=None)[0]
        self.center = center.ravel()
        # (derivative order, sign, which limits, bound, room at the centre): rows sign * c <= bound
        self.sides = []
        for order, sign, bound in ((0, 1.0, upper), (0, -1.0, -lower), (1, 1.0, speed), (1, -1.0, speed)):
            keep = np.isfinite(bound)
            room = bound[keep] - sign * (self.dense[order] @ center.T @ self.C[keep].T)
            self.sides.append((order, sign, keep, bound[keep], room))
        self._limit_cache: dict = {}

    def pull_inside(self, x: np.ndarray) -> np.ndarray:
        """x itself if it respects every limit on the 1 kHz grid, else the point nearest to
        it on the segment from the centre (at rest mid-range) that does. SLSQP moves each
        window's extreme in time as it steps, so its iterates overshoot by a second-order
        amount: the limits are linear in x, so the largest feasible fraction is exact."""
        d = (x - self.center).reshape(self.n, self.k)
        fraction = 1.0
        for order, sign, keep, _, room in self.sides:
            along = sign * (self.dense[order] @ d.T @ self.C[keep].T)  # (times, kept limits) along the segment
            out = along > room
            if np.any(out):
                fraction = min(fraction, float(np.min(room[out] / along[out])))
        if fraction >= 1.0:
            return x
        if fraction <= 0.0:
            raise SolverError("the centre of the position ranges violates the limits "
                              "(the ranges of the limited coordinates are inconsistent)")
        return self.center + fraction * (1 - 1e-12) * (x - self.center)

    def limit_slack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Slack (>= 0 when respected) of every limit at each window's extremes on the
        1 kHz grid, and its Jacobian: rows for max c, min c, max v, min v per window and
        limited coordinate c = C q (v its rate; speed rows only for finite limits)."""
        if self._limit_cache.get("x") is not None and np.array_equal(self._limit_cache["x"], x):
            return self._limit_cache["value"]
        X = x.reshape(self.n, self.k)
        values, jac = [], []
        coordinates = [B @ X.T @ self.C.T for B in self.dense]  # positions and rates (times, limits)
        for order, sign, keep, bound, _ in self.sides:
            signed = sign * coordinates[order][:, keep][self.padded]  # (windows, per window, kept limits)
            at = np.take_along_axis(self.padded[:, :, None], signed.argmax(axis=1)[:, None, :], axis=1)[:, 0]
            values.append((bound[None, :] - signed.max(axis=1)).ravel())  # (windows x kept limits)
            rows = -sign * self.C[keep][None, :, :, None] * self.dense[order][at][:, :, None, :]  # (w, l, n, k)
            jac.append(rows.reshape(-1, self.n * self.k))
        result = (np.concatenate(values), np.vstack(jac))
        self._limit_cache = {"x": x.copy(), "value": result}
        return result

    def variables(self, traj: FourierTrajectory) -> np.ndarray:
        """The free variables x of a rest-to-rest trajectory with this problem's harmonics and frequency."""
        if traj.harmonics != self.H or not np.isclose(traj.base_frequency, self.f) or traj.joints != self.n:
            raise SolverError(f"initial trajectory: {traj.harmonics} harmonics at {traj.base_frequency} Hz for "
                              f"{traj.joints} joints; the problem has {self.H} at {self.f} Hz for {self.n}")
        coeffs = np.vstack([traj.q0[None], traj.a, traj.b])  # (1 + 2H) x n
        x, *_ = np.linalg.lstsq(self.T, coeffs, rcond=None)
        if np.abs(self.T @ x - coeffs).max() > 1e-9 * max(1.0, np.abs(coeffs).max()):
            raise SolverError("initial trajectory: not at rest at t = 0 (not of the rest-to-rest form)")
        return x.T.ravel()

    def trajectory(self, x: np.ndarray) -> FourierTrajectory:
        coeffs = self.T @ x.reshape(self.n, self.k).T  # (1 + 2H) x n
        return FourierTrajectory.from_coefficients(self.f, coeffs)

    def _states(self, x: np.ndarray) -> list[np.ndarray]:
        """q, qd, qdd (samples x n) at the sample times."""
        coeffs = self.T @ x.reshape(self.n, self.k).T  # (1 + 2H) x n
        return [B @ coeffs for B in self.bases]

    def _linearise(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Column-normalised base regressor Wn (samples, n, r), its column norms, and the
        derivatives D (samples, n r, 3n) of the raw regressor rows of every sample with
        respect to that sample's q, qd and qdd (forward differences, one regressor call)."""
        states = self._states(x)
        S, n = states[0].shape
        stacked = [np.broadcast_to(s, (1 + 3 * n, S, n)).copy() for s in states]
        for v in range(3 * n):
            stacked[v // n][1 + v, :, v % n] += STATE_STEP
        W = self.model.base_regressor(*(s.reshape(-1, n) for s in stacked)).reshape(1 + 3 * n, S, -1)
        D = ((W[1:] - W[0]) / STATE_STEP).transpose(1, 2, 0)
        W0 = W[0].reshape(S, n, -1)
        norms = np.linalg.norm(W0, axis=(0, 1))
        return W0 / norms, norms, D

    def _backprop(self, Wn: np.ndarray, norms: np.ndarray, D: np.ndarray, G: np.ndarray) -> np.ndarray:
        """Chain rule: gradients (m, variables) from m gradients G (m, samples, n, r) with
        respect to the column-normalised regressor, through the normalisation, the
        regressor's dependence on each sample's state and the Fourier basis."""
        m, S = G.shape[:2]
        G = (G - Wn * np.sum(Wn * G, axis=(1, 2), keepdims=True)) / norms
        g = np.matmul(G.reshape(m, S, -1).transpose(1, 0, 2), D)  # (S, m, 3n): per sample and state variable
        n = self.n
        gc = sum(np.einsum("sc,smj->mcj", B, g[:, :, o * n:(o + 1) * n]) for o, B in enumerate(self.bases))
        return np.matmul(self.T.T, gc).transpose(0, 2, 1).reshape(m, -1)  # joint-major, like x

    def soft_log_cond(self, x: np.ndarray, p: float = SOFTNESS) -> tuple[float, np.ndarray]:
        """A smooth upper bound of log cond and its gradient: p-norm soft maximum and minimum
        of the Gram eigenvalues lambda = sigma^2 (the true condition number is not
        differentiable where singular values cross, which stalls a gradient method).
        d lambda_i / d Wn = 2 Wn v_i v_i^T."""
        Wn, norms, D = self._linearise(x)
        flat = Wn.reshape(-1, Wn.shape[-1])
        lam, V = np.linalg.eigh(flat.T @ flat)
        log_lam = np.log(np.maximum(lam, 1e-300))
        value = 0.5 * (logsumexp(p * log_lam) + logsumexp(-p * log_lam)) / p
        weight = 0.5 * (softmax(p * log_lam) - softmax(-p * log_lam)) / lam
        G = 2.0 * Wn @ ((V * weight) @ V.T)
        return float(value), self._backprop(Wn, norms, D, G[None])[0]

    def extreme_log_eigenvalues(self, x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The m largest and then the m smallest log Gram eigenvalues
        and their gradients: d log lambda_i / d Wn = 2 Wn v_i v_i^T / lambda_i."""
        Wn, norms, D = self._linearise(x)
        flat = Wn.reshape(-1, Wn.shape[-1])
        lam, V = np.linalg.eigh(flat.T @ flat)
        pick = np.r_[np.arange(len(lam) - m, len(lam)), np.arange(m)]
        lam, V = np.maximum(lam[pick], 1e-300), V[:, pick]
        WV = Wn @ V  # (S, n, 2m)
        G = 2.0 * WV.transpose(2, 0, 1)[..., None] * (V / lam).T[:, None, None, :]
        return np.log(lam), self._backprop(Wn, norms, D, G)

    def true_cond(self, x: np.ndarray) -> float:
        return condition_number(self.model, self.trajectory(x), self.samples)

    def cartesian(self, x: np.ndarray) -> np.ndarray:
        q, _, _ = self.trajectory(x).evaluate(self.tc)
        fk = self.model.forward_kinematics(q)
        out = []
        for box in self.boxes:
            p = fk[:, box.index, :3, 3]
            out += [(p - box.lower).ravel(), (box.upper - p).ravel()]
        return np.concatenate(out)

    def feasible_start(self, rng: np.random.Generator, fill: float = 0.8) -> np.ndarray:
        """A random direction about a centre that satisfies the limits, scaled to ``fill``
        of the largest step the (linear) limits allow; shrunk further for Cartesian boxes."""
        base = self.center
        if np.any(self.h - self.G @ base < 0):
            raise SolverError("no feasible start: the centre of the position ranges violates the limits "
                              "(the ranges of the limited coordinates are inconsistent)")
        # every joint in turn gets a random motion as large as the limits still
        # allow (times ``fill``), so no joint starts nearly still
        x = base.copy()
        for j in rng.permutation(self.n):
            coefficients = np.zeros((self.n, self.k))
            coefficients[j, 1:] = rng.normal(size=self.k - 1)
            direction = coefficients.ravel()
            rate = self.G @ direction
            room = self.h - self.G @ x
            if np.any(rate > 0):
                x = x + fill * np.min(room[rate > 0] / rate[rate > 0]) * direction
        for _ in range(60):
            if np.all(self.limit_slack(x)[0] >= 0) and (not self.boxes or np.all(self.cartesian(x) >= 0)):
                return x
            x = base + 0.7 * (x - base)
        raise SolverError("no feasible start: the limits leave no room about the centre")


@dataclass
class _Best:
    """The best feasible iterate of one SLSQP run (true condition number) and the iterations so far."""

    x: np.ndarray
    value: float
    iteration: int = 0


class _Search:
    """SLSQP runs on one problem that keep the best feasible iterate by the true condition number."""

    def __init__(self, problem: _Problem):
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


def _set_up(spec: _Spec, problem: _Problem | None = None) -> None:
    """Worker start-up: rebuild the problem from ``spec``, or use ``problem`` (in this process)."""
    global _SEARCH
    if problem is None:
        problem = _Problem(load_model(spec.description), spec.harmonics, spec.base_frequency, spec.limits,
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
    problem = _Problem(model, harmonics, base_frequency, limits, boxes, samples, constraint_samples, margin)
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
