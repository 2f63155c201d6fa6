"""MLSE and SLSE estimation of the gc model (Lin 2019 section III).

The gravity regressor is upper echelon over joints 2-6: row i uses only
gravity parameters that rows i..6 also use. MLSE estimates, from distal to
proximal, for joint i: the gravity parameters first appearing in row i and
the joint's two direction-dependent polynomials, from joint i's own sweeps,
with the torque of the gravity parameters already estimated subtracted
(eqs. 17-24). SLSE fits everything at once (eq. 15). Which gravity columns are
"new" in row i is read off the regressor's sparsity, not typed in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DataError, SolverError
from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.model.regressor import N_GRAVITY, POLY_ORDER, gravity_regressor, torques

DEFAULT_ORDERS = {1: 4, 2: 1, 3: 4, 4: 4, 5: 4, 6: 4}  # Lin 2019 section VI-A


def new_gravity_columns() -> dict[int, list[int]]:
    """For joint i (1..6) the gravity columns used by row i and by no row below it (distal)."""
    q = np.random.default_rng(0).uniform(-np.pi, np.pi, (50, 7))
    used = np.any(np.abs(gravity_regressor(q)) > 1e-12, axis=0)  # 7 x 10
    out = {}
    for i in range(6, 0, -1):
        distal = np.any(used[i:6], axis=0) if i < 6 else np.zeros(N_GRAVITY, dtype=bool)
        out[i] = [int(c) for c in np.flatnonzero(used[i - 1] & ~distal)]
    return out


@dataclass
class GcFit:
    gravity: np.ndarray  # 10
    poly_pos: dict[int, np.ndarray]  # joint -> coefficients [c0..c4] (order+1 used, rest 0)
    poly_neg: dict[int, np.ndarray]
    orders: dict[int, int]
    method: str
    gravity_neg: np.ndarray | None = None  # the negative direction's own 10 (None: ``gravity`` for both)
    lambdas: dict[int, float] | None = None  # per joint, the ridge weight of a regularised fit
    notes: tuple[str, ...] = ()  # what the fit did other than asked (step_weights' fallbacks)
    by_direction: tuple[int, ...] = ()  # joints fitted by the sweep directions although the data had states

    def theta(self, direction: int) -> np.ndarray:
        """The 40-vector for one direction (+1 / -1)."""
        polys = self.poly_pos if direction > 0 else self.poly_neg
        out = np.zeros(N_GRAVITY + 6 * (POLY_ORDER + 1))
        out[:N_GRAVITY] = self.gravity if direction > 0 or self.gravity_neg is None else self.gravity_neg
        for i in range(1, 7):
            out[N_GRAVITY + 5 * (i - 1):N_GRAVITY + 5 * i] = polys[i]
        return out

    def predict(self, data: PoseData) -> np.ndarray:
        """Torques (N x 7) at the poses, each with its sweep's direction (blended by the recorded state, where
        the data have it: :meth:`PoseData.positive_weight`)."""
        a = data.positive_weight()
        if self.by_direction:  # those joints' poses as they were fitted: by their sweep's direction
            labelled = np.isin(data.joint, self.by_direction)
            a = np.where(labelled, data.direction > 0, a)
        Rg = gravity_regressor(data.q)
        R = Rg @ self.gravity
        if self.gravity_neg is not None:
            R = a[:, None] * R + (1 - a[:, None]) * (Rg @ self.gravity_neg)
        for i in range(1, 7):
            powers = data.q[:, i - 1:i] ** np.arange(POLY_ORDER + 1)
            R[:, i - 1] += a * (powers @ self.poly_pos[i]) + (1 - a) * (powers @ self.poly_neg[i])
        return R


def fit_residual(fit: GcFit, data: PoseData) -> np.ndarray:
    """Per joint, the RMS of the measured torques less the fit's at the poses it was fitted on (N m, 7)."""
    return np.sqrt(np.mean((data.tau - fit.predict(data)) ** 2, axis=0))


def blended_torques(data: PoseData, theta_pos: np.ndarray, theta_neg: np.ndarray) -> np.ndarray:
    """Torques (N x 7) of a file's two 40-vectors at the poses, each pose's directions blended as it was
    measured (:meth:`PoseData.positive_weight`)."""
    a = data.positive_weight()[:, None]
    return a * torques(data.q, theta_pos) + (1 - a) * torques(data.q, theta_neg)


def check_sweeps(data: PoseData, orders: dict[int, int]) -> None:
    """Every joint 1-6 swept in both directions, and orders within the file's polynomial."""
    missing = [i for i in range(1, 7) if i not in data.joints_present]
    if missing:
        raise DataError(f"{data.source}: no sweep of joint(s) {missing}: MLSE needs every joint 1-6 "
                        "(record the whole pose grid)")
    for i in range(1, 7):
        sel = data.joint == i
        if not (np.any(data.direction[sel] > 0) and np.any(data.direction[sel] < 0)):
            raise DataError(f"{data.source}: joint {i} lacks sweeps in both directions")
        if not 0 <= orders[i] <= POLY_ORDER:
            raise SolverError(f"polynomial order {orders[i]} of joint {i} outside 0..{POLY_ORDER} (the gc format)")


def poly_columns(qi: np.ndarray, positive: np.ndarray, order: int) -> np.ndarray:
    """[the positive direction's polynomial | the negative's], weighted by each pose's ``positive`` weight
    (:meth:`PoseData.positive_weight`: 1 or 0 on a sweep's direction, or the recorded state's blend)."""
    powers = qi[:, None] ** np.arange(order + 1)
    return np.hstack([powers * positive[:, None], powers * (1.0 - positive)[:, None]])


def step_weights(data: PoseData, sel: np.ndarray, joint: int, order: int) -> tuple[np.ndarray, str]:
    """The positive-direction weights of joint ``joint``'s poses ``sel``: the recorded cable states
    (:meth:`PoseData.positive_weight`) where each direction keeps at least ``order`` + 1 distinct positions of the
    joint (1 mrad apart) among the poses mostly on it; else the sweep directions, and a note saying so (a
    sparse grid: each sweep's first pose, not moved since the last sweep, is on the other branch)."""
    labels = (data.direction[sel] > 0).astype(float)
    if data.branch is None:
        return labels, ""
    a = data.positive_weight()[sel]
    qi = np.round(data.q[sel, joint - 1], 3)
    distinct = min(len(np.unique(qi[a >= 0.5])), len(np.unique(qi[a <= 0.5])))
    if distinct > order:
        return a, ""
    return labels, (f"joint {joint}: the recorded cable states leave a direction {distinct} distinct positions for "
                    f"{order + 1} coefficients; fitted by the sweeps' directions")


def pad_coefficients(c: np.ndarray) -> np.ndarray:
    """Polynomial coefficients padded with zeros to the file's 5 per direction."""
    out = np.zeros(POLY_ORDER + 1)
    out[:len(c)] = c
    return out


def fit_mlse(data: PoseData, orders: dict[int, int] | None = None) -> GcFit:
    orders = {**DEFAULT_ORDERS, **(orders or {})}
    check_sweeps(data, orders)
    new = new_gravity_columns()
    gravity = np.zeros(N_GRAVITY)
    known = np.zeros(N_GRAVITY, dtype=bool)
    poly_pos, poly_neg = {}, {}
    notes, by_direction = [], []
    for i in range(6, 0, -1):
        sel = data.joint == i
        a, note = step_weights(data, sel, i, orders[i])
        if note:
            notes.append(note)
            by_direction.append(i)
        q, tau = data.q[sel], data.tau[sel, i - 1]
        Rg = gravity_regressor(q)[:, i - 1, :]
        target = tau - Rg[:, known] @ gravity[known]
        A = np.hstack([Rg[:, new[i]], poly_columns(q[:, i - 1], a, orders[i])])
        x, _, rank, _ = np.linalg.lstsq(A, target, rcond=None)
        if rank < A.shape[1]:
            raise SolverError(f"MLSE step for joint {i}: the sweeps do not excite its parameters "
                              f"(rank {rank} of {A.shape[1]})")
        k = len(new[i])
        gravity[new[i]] = x[:k]
        known[new[i]] = True
        n = orders[i] + 1
        poly_pos[i], poly_neg[i] = pad_coefficients(x[k:k + n]), pad_coefficients(x[k + n:k + 2 * n])
    return GcFit(gravity, poly_pos, poly_neg, orders, "mlse", notes=tuple(notes), by_direction=tuple(by_direction))


def fit_slse(data: PoseData, orders: dict[int, int] | None = None) -> GcFit:
    """All joints at once on all the data (eq. 15), for comparison."""
    orders = {**DEFAULT_ORDERS, **(orders or {})}
    check_sweeps(data, orders)
    blocks, targets = [], []
    n_poly = [orders[i] + 1 for i in range(1, 7)]
    offsets = np.cumsum([0, *[2 * n for n in n_poly]])
    Rg = gravity_regressor(data.q)
    positive = data.positive_weight()
    for i in range(1, 7):
        A = np.zeros((len(data.q), N_GRAVITY + offsets[-1]))
        A[:, :N_GRAVITY] = Rg[:, i - 1, :]
        A[:, N_GRAVITY + offsets[i - 1]:N_GRAVITY + offsets[i]] = poly_columns(data.q[:, i - 1], positive, orders[i])
        blocks.append(A)
        targets.append(data.tau[:, i - 1])
    x, *_ = np.linalg.lstsq(np.vstack(blocks), np.concatenate(targets), rcond=None)
    poly_pos, poly_neg = {}, {}
    for i in range(1, 7):
        seg = x[N_GRAVITY + offsets[i - 1]:N_GRAVITY + offsets[i]]
        n = orders[i] + 1
        poly_pos[i], poly_neg[i] = pad_coefficients(seg[:n]), pad_coefficients(seg[n:])
    return GcFit(x[:N_GRAVITY], poly_pos, poly_neg, orders, "slse")


def relative_errors(fit_or_thetas, data: PoseData, by_direction: bool = False) -> dict:
    """Relative RMS error per joint, on each joint's own sweeps (eq. 32), pooled or per direction."""
    if isinstance(fit_or_thetas, GcFit):
        pred = fit_or_thetas.predict(data)
    else:
        pred = blended_torques(data, *fit_or_thetas)
    out = {}
    for i in range(1, 7):
        sel = data.joint == i
        groups = [("both", sel)] if not by_direction else [("pos", sel & (data.direction > 0)),
                                                           ("neg", sel & (data.direction < 0))]
        for label, mask in groups:
            if np.any(mask):
                err = np.linalg.norm(pred[mask, i - 1] - data.tau[mask, i - 1]) / np.linalg.norm(data.tau[mask, i - 1])
                out[(i, label)] = float(err)
    return out
