"""The excitation problem (Wang 2019 section IV, eq. 21-22): the condition number of the column-normalised base
regressor of a Fourier trajectory, its smooth bound and exact gradients, the limits as SLSQP constraints on the
1 kHz verification grid, and the verification itself. excitation/optimize.py searches it."""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, softmax

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.limits import (
    CartesianBox,
    CoordinateLimit,
    Margin,
    check_margins,
)

CHECK_RATE = 1000.0  # Hz: the dense verification of every limit
SOFTNESS = 8.0  # p of the soft maximum / minimum of the Gram eigenvalues
STATE_STEP = 1e-6  # forward-difference step of the regressor in q, qd, qdd
# s: each window of the period gives the extremes of every limited coordinate (rows of SLSQP's
# subproblem, whose cost grows with them: longer windows, fewer rows, faster explorations as good,
# docs/results.md; still exact on the 1 kHz grid, a window's maximum is its own)
WINDOW = 0.25
# Fraction of each position range (and of each speed limit) left free. The
# limit tables are already the excitation limits and the constraints hold on
# the 1 kHz verification grid; the margin covers the rounding of the player's
# conversions between motor and dVRK coordinates, and what a 1 kHz grid misses.
LIMIT_MARGIN = 1e-4

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


class ExcitationProblem:
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
