"""Excitation trajectory optimisation (Wang 2019 section IV).

Minimises the condition number of the column-normalised base regressor
W_b (eq. 21) over the Fourier coefficients of a rest-to-rest trajectory, with
SLSQP from several random feasible starts. Position and speed limits of every
limited coordinate are linear in the coefficients and imposed exactly (with
their analytic Jacobian) on a grid of constraint times; Cartesian boxes use
forward kinematics. The answer is then verified at 1 kHz over a whole period.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.excitation.constraints import (
    CartesianBox,
    CoordinateLimit,
    Margin,
    check_margins,
)
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.model.arm_model import ArmModel

CHECK_RATE = 1000.0  # Hz: the dense verification of every limit


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
        tc = np.linspace(0.0, proto.period, constraint_samples, endpoint=False)
        B0, B1 = proto.basis(tc, 0) @ T, proto.basis(tc, 1) @ T
        rows, rhs = [], []
        for lim in limits:
            span = lim.upper - lim.lower
            G0 = np.kron(lim.coefficients[None, :], B0)  # x ordered joint-major
            G1 = np.kron(lim.coefficients[None, :], B1)
            rows += [G0, -G0]
            rhs += [np.full(len(tc), lim.upper - lim.offset - margin * span),
                    np.full(len(tc), -(lim.lower - lim.offset + margin * span))]
            if np.isfinite(lim.max_speed):
                rows += [G1, -G1]
                rhs += [np.full(len(tc), lim.max_speed * (1 - margin))] * 2
        self.G = np.vstack(rows)  # G x <= h
        self.h = np.concatenate(rhs)
        self.tc = tc

    def trajectory(self, x: np.ndarray) -> FourierTrajectory:
        coeffs = self.T @ x.reshape(self.n, self.k).T  # (1 + 2H) x n
        return FourierTrajectory.from_coefficients(self.f, coeffs)

    def objective(self, x: np.ndarray) -> float:
        return float(np.log(condition_number(self.model, self.trajectory(x), self.samples)))

    def gradient(self, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
        """Forward differences, all perturbations through one vectorised regressor call."""
        P = len(x)
        xs = np.vstack([x, x + step * np.eye(P)])
        t = sample_times(1.0 / self.f, self.samples)
        qs, qds, qdds = [], [], []
        for xi in xs:
            q, qd, qdd = self.trajectory(xi).evaluate(t)
            qs.append(q)
            qds.append(qd)
            qdds.append(qdd)
        Hb = self.model.base_regressor(np.vstack(qs), np.vstack(qds), np.vstack(qdds))
        Hb = Hb.reshape(P + 1, self.samples * self.n, -1)
        values = np.empty(P + 1)
        for i in range(P + 1):
            W = Hb[i]
            values[i] = np.log(np.linalg.cond(W / np.linalg.norm(W, axis=0)))
        return (values[1:] - values[0]) / step

    def cartesian(self, x: np.ndarray) -> np.ndarray:
        q, _, _ = self.trajectory(x).evaluate(self.tc)
        fk = self.model.forward_kinematics(q)
        out = []
        for box in self.boxes:
            p = fk[:, box.index, :3, 3]
            out += [(p - box.lower).ravel(), (box.upper - p).ravel()]
        return np.concatenate(out)

    def feasible_start(self, rng: np.random.Generator, amplitude: float) -> np.ndarray:
        """Random coefficients about a centre that satisfies the limits, shrunk until feasible."""
        L = np.array([lim.coefficients for lim in self.limits])
        mid = np.array([(lim.lower + lim.upper) / 2 - lim.offset for lim in self.limits])
        center = np.linalg.lstsq(L, mid, rcond=None)[0]
        x = np.zeros((self.n, self.k))
        x[:, 0] = center
        x[:, 1:] = rng.normal(0, amplitude, (self.n, self.k - 1))
        x = x.ravel()
        base = np.zeros_like(x)
        base[:: self.k] = center
        for _ in range(60):
            if np.all(self.G @ x <= self.h) and (not self.boxes or np.all(self.cartesian(x) >= 0)):
                return x
            x = base + 0.7 * (x - base)
        raise SolverError("no feasible start: the limits leave no room for a trajectory about their centre "
                          "(check the position ranges and the Cartesian boxes)")


def optimise(model: ArmModel, limits: list[CoordinateLimit], boxes: list[CartesianBox], *, harmonics: int = 6,
             base_frequency: float = 0.1, starts: int = 4, seed: int = 0, max_iterations: int = 150,
             samples: int = 120, constraint_samples: int = 200, margin: float = 0.01,
             progress: bool = True) -> OptimisationResult:
    if harmonics < 2:
        raise SolverError(f"harmonics must be at least 2 (a rest-to-rest trajectory needs them), got {harmonics}")
    if not base_frequency > 0:
        raise SolverError(f"the base frequency must be positive, got {base_frequency}")
    if not limits:
        raise SolverError(f"{model.description.path}: no limits: refusing to optimise an unbounded trajectory")
    start_time = time.perf_counter()
    problem = _Problem(model, harmonics, base_frequency, limits, boxes, samples, constraint_samples, margin)
    rng = np.random.default_rng(seed)
    constraints = [{"type": "ineq", "fun": lambda x: problem.h - problem.G @ x, "jac": lambda x: -problem.G}]
    if boxes:
        constraints.append({"type": "ineq", "fun": problem.cartesian})
    best, best_value, per_start = None, np.inf, []
    for s in range(starts):
        x0 = problem.feasible_start(rng, amplitude=0.05)
        # SLSQP's iterates are not monotone (the sign of the velocity switches
        # friction columns): keep the best feasible iterate of each start.
        state = {"iteration": 0, "x": x0, "value": np.exp(problem.objective(x0))}

        def feasible(x) -> bool:
            return bool(np.all(problem.G @ x <= problem.h + 1e-9)
                        and (not boxes or np.all(problem.cartesian(x) >= -1e-9)))

        def report(x, s=s, state=state):
            state["iteration"] += 1
            value = np.exp(problem.objective(x))
            if value < state["value"] and feasible(x):
                state["x"], state["value"] = x.copy(), value
            if progress:
                print(f"\r  start {s + 1}/{starts}  iteration {state['iteration']:4d}  condition number "
                      f"{value:9.1f}  best {state['value']:9.1f}", end="", file=sys.stderr, flush=True)

        result = scipy.optimize.minimize(problem.objective, x0, jac=problem.gradient, method="SLSQP",
                                         constraints=constraints, callback=report,
                                         options={"maxiter": max_iterations, "ftol": 1e-6})
        report(result.x)
        per_start.append(state["value"])
        if progress:
            print(f"\r  start {s + 1}/{starts}: condition number {state['value']:9.1f} after "
                  f"{state['iteration']} iterations" + " " * 20, file=sys.stderr, flush=True)
        if state["value"] < best_value:
            best, best_value = state["x"], state["value"]
    if best is None:
        raise SolverError("no start converged to a trajectory within the limits")
    traj = problem.trajectory(best)
    margins = verify(model, traj, limits, boxes)
    worst = min(margins, key=lambda m: m.margin)
    if worst.margin < 0:
        raise SolverError(f"the optimised trajectory violates {worst.name} ({worst.kind}) by {-worst.margin:.3g} "
                          f"at t = {worst.at_time:.3f} s when checked at {CHECK_RATE:g} Hz")
    return OptimisationResult(traj, condition_number(model, traj, samples), per_start,
                              time.perf_counter() - start_time, margins)
