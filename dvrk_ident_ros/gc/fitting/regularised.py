"""Regularised MLSE: Lin 2019's multi-step estimate (section III-B, eqs. 17-24) with, per joint,
the polynomial order and a ridge penalty on the polynomial terms chosen by held-out error.

Each step is MLSE's: for joint i, from distal to proximal, the gravity
parameters first appearing in row i and the joint's two direction-dependent
polynomials, from joint i's own sweeps, the torque of the gravity parameters
already estimated subtracted. Here the step minimises

    ||A x - b||^2 + lambda N sum_p (s_p x_p)^2     (p: the polynomial terms q^1 .. q^k)

with s_p the RMS of column p (so lambda is scale-free and the constant terms
and gravity parameters are not shrunk). The pair (order, lambda) of joint i
is the one of least relative RMS error on held-out sweeps of the training
data itself (inner cross-validation on the held-out folds of
:mod:`dvrk_ident_ros.gc.fitting.folds` restricted to joint i), with the distal
gravity parameters fixed at their estimate; with ``cross_guard`` (default)
the score adds the relative RMS error of joint i's torque at rest (the two
directions blended half and half, as the controller does) on the held-out
poses of the other joints' sweeps: joint 2's sweeps vary no other joint, so
on them alone a 4th-order polynomial in q2 takes over joint 2's gravity
columns (its own-sweep error falls while its error everywhere else grows
several-fold: docs/results.md, bench/bench_gc_generalisation.py). Optionally
(``split_gravity``) each direction gets its own gravity parameters, which the
gc file format allows (``gc_dynamic_params_pos[:10]`` and ``..._neg[:10]``).
The output is a :class:`~dvrk_ident_ros.gc.fitting.mlse.GcFit`: the same 40-parameter
file.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.folds import held_out_folds
from dvrk_ident_ros.gc.fitting.mlse import (
    DEFAULT_ORDERS,
    GcFit,
    check_sweeps,
    new_gravity_columns,
    pad_coefficients,
    step_weights,
)
from dvrk_ident_ros.gc.model.regressor import N_GRAVITY, POLY_ORDER, gravity_regressor

#: Candidate ridge weights (scale-free, see the module docstring) and polynomial orders.
LAMBDAS = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
ORDERS = tuple(range(1, POLY_ORDER + 1))


@dataclass(frozen=True)
class Settings:
    lambdas: tuple[float, ...] = LAMBDAS
    orders: tuple[int, ...] = ORDERS
    split_gravity: bool = False
    inner_folds: int = 5
    far_fraction: float = 0.1
    cross_guard: bool = True  # also score the joint's torque at rest on the other joints' sweeps


def _design(q_i: np.ndarray, positive: np.ndarray, Rg_new: np.ndarray, order: int, split: bool) -> np.ndarray:
    """[gravity (shared, or per direction) | polynomial of the positive | of the negative direction], each
    direction weighted by the pose's ``positive`` weight (:meth:`PoseData.positive_weight`)."""
    pos, neg = positive[:, None], 1.0 - positive[:, None]
    grav = np.hstack([Rg_new * pos, Rg_new * neg]) if split else Rg_new
    powers = q_i[:, None] ** np.arange(order + 1)
    return np.hstack([grav, powers * pos, powers * neg])


def _penalised(n_grav: int, order: int) -> np.ndarray:
    """Which columns of the design are shrunk: the polynomial terms q^1 .. q^order."""
    powers = np.arange(order + 1)
    return np.concatenate([np.zeros(n_grav, bool), powers > 0, powers > 0])


def _solve(A: np.ndarray, b: np.ndarray, penalised: np.ndarray, lam: float) -> np.ndarray:
    scale = np.sqrt(np.mean(A * A, axis=0))
    scale[scale == 0] = 1.0
    As = A / scale
    if lam > 0:
        rows = np.sqrt(lam * len(b)) * np.eye(A.shape[1])[penalised]
        As = np.vstack([As, rows])
        b = np.concatenate([b, np.zeros(len(rows))])
    x, _, rank, _ = np.linalg.lstsq(As, b, rcond=None)
    if lam == 0 and rank < A.shape[1]:
        raise SolverError(f"rank {rank} of {A.shape[1]}: the sweeps do not excite the step's parameters")
    return x / scale


def _at_rest(design: np.ndarray, n_grav: int, order: int, split: bool) -> np.ndarray:
    """A design evaluated with both directions set, turned into the at-rest blend (0.5 each)."""
    n = order + 1
    grav = design[:, :n_grav]
    if split:
        k = n_grav // 2
        grav = np.hstack([0.5 * grav[:, :k], 0.5 * grav[:, :k]])
    powers = design[:, n_grav:n_grav + n]
    return np.hstack([grav, 0.5 * powers, 0.5 * powers])


def _ratio(num: float, den: float) -> float:
    return float(np.sqrt(num / den)) if den > 0 else 0.0


def _inner_error(own: tuple[np.ndarray, np.ndarray, list[np.ndarray]],
                 cross: tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None, n_grav: int, order: int,
                 lam: float) -> float:
    """Held-out relative RMS of the joint's own torque, plus (the guard) that of its torque at rest
    on the other joints' held-out poses."""
    A, b, folds = own
    pen = _penalised(n_grav, order)
    num = den = cnum = cden = 0.0
    for f, test in enumerate(folds):
        try:
            x = _solve(A[~test], b[~test], pen, lam)
        except SolverError:
            return np.inf
        num += float(np.sum((A[test] @ x - b[test]) ** 2))
        den += float(np.sum(b[test] ** 2))
        if cross is not None:
            Ac, bc, cfolds = cross
            t = cfolds[f]
            cnum += float(np.sum((Ac[t] @ x - bc[t]) ** 2))
            cden += float(np.sum(bc[t] ** 2))
    return _ratio(num, den) + _ratio(cnum, cden) if den > 0 else np.inf


def fit_regularised(data: PoseData, orders: dict[int, int] | None = None,
                    settings: Settings | None = None) -> GcFit:
    """MLSE with per-joint order and ridge weight by inner held-out error (module docstring).

    ``orders`` given fixes those joints' orders (only lambda is then chosen for them)."""
    settings = settings or Settings()
    fixed = dict(orders or {})
    check_sweeps(data, {**DEFAULT_ORDERS, **fixed})
    new = new_gravity_columns()
    Rg_all = gravity_regressor(data.q)
    inner = held_out_folds(data, settings.inner_folds, settings.far_fraction)
    g_pos, g_neg = np.zeros(N_GRAVITY), np.zeros(N_GRAVITY)
    known = np.zeros(N_GRAVITY, dtype=bool)
    poly_pos, poly_neg, chosen, lambdas = {}, {}, {}, {}
    notes: list[str] = []
    by_direction: list[int] = []
    for i in range(6, 0, -1):
        sel = data.joint == i
        candidates = (fixed[i],) if i in fixed else settings.orders
        d, note = step_weights(data, sel, i, max(candidates))
        if note:
            notes.append(note)
            by_direction.append(i)
        q = data.q[sel]
        Rg = Rg_all[sel, i - 1, :]
        known_torque = d * (Rg[:, known] @ g_pos[known]) + (1 - d) * (Rg[:, known] @ g_neg[known])
        b = data.tau[sel, i - 1] - known_torque
        k = len(new[i])
        n_grav = 2 * k if settings.split_gravity else k
        A_of = {o: _design(q[:, i - 1], d, Rg[:, new[i]], o, settings.split_gravity) for o in candidates}
        usable = [f for f in inner if np.any(f.test[sel]) and not np.all(f.test[sel])]
        folds = [f.test[sel] for f in usable]
        cross_of: dict[int, tuple | None] = {o: None for o in candidates}
        if settings.cross_guard and np.any(~sel):
            Rc = Rg_all[~sel, i - 1, :]
            bc = data.tau[~sel, i - 1] - 0.5 * (Rc[:, known] @ g_pos[known] + Rc[:, known] @ g_neg[known])
            qc = data.q[~sel]
            both = np.ones(len(qc))
            cfolds = [f.test[~sel] for f in usable]
            cross_of = {o: (_at_rest(_design(qc[:, i - 1], both, Rc[:, new[i]], o, settings.split_gravity),
                                     n_grav, o, settings.split_gravity), bc, cfolds) for o in candidates}
        scores = {(o, lam): _inner_error((A_of[o], b, folds), cross_of[o], n_grav, o, lam)
                  for o in candidates for lam in settings.lambdas}
        order, lam = min(scores, key=lambda key: (scores[key], key[0], -key[1]))
        if not np.isfinite(scores[(order, lam)]):
            raise SolverError(f"regularised MLSE, joint {i}: no order and weight gives a finite held-out error")
        x = _solve(A_of[order], b, _penalised(n_grav, order), lam)
        g_pos[new[i]] = x[:k]
        g_neg[new[i]] = x[k:2 * k] if settings.split_gravity else x[:k]
        known[new[i]] = True
        n = order + 1
        poly_pos[i] = pad_coefficients(x[n_grav:n_grav + n])
        poly_neg[i] = pad_coefficients(x[n_grav + n:n_grav + 2 * n])
        chosen[i], lambdas[i] = order, lam
    return GcFit(g_pos, poly_pos, poly_neg, chosen, "rmlse",
                 gravity_neg=g_neg if settings.split_gravity else None, lambdas=lambdas, notes=tuple(notes),
                 by_direction=tuple(by_direction))
