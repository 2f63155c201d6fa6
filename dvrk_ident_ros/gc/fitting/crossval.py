"""Cross-validation for MLSE settings (the polynomial orders of Lin 2019 Fig. 7).

Whole groups are held out: for a joint with an auxiliary joint, every sweep at
one auxiliary value (both directions); for joints 1 and 2, one repetition of
the sweep pair. The score of a joint is the relative RMS error of its torque
on its held-out sweeps, pooled over the folds.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.mlse import DEFAULT_ORDERS, fit_mlse
from dvrk_ident_ros.gc.model.regressor import POLY_ORDER


def _groups(data: PoseData) -> np.ndarray:
    """A group label per pose: (joint, auxiliary value) or (joint, repetition)."""
    labels = np.zeros(len(data.q), dtype=np.int64)
    for i in range(1, 7):
        sel = data.joint == i
        aux = data.auxiliary[sel]
        if np.all(np.isfinite(aux)) and len(np.unique(aux)) > 1:
            _, idx = np.unique(np.round(aux, 6), return_inverse=True)
        else:  # repetitions: pair the sweeps in order (positive, negative)
            _, order = np.unique(data.sweep[sel], return_inverse=True)
            idx = order // 2
        labels[sel] = i * 1000 + idx
    return labels


def cross_validate(data: PoseData, orders: dict[int, int] | None = None, folds: int = 5,
                   seed: int = 0) -> dict[int, float]:
    """Held-out relative RMS error per joint (1..6)."""
    orders = {**DEFAULT_ORDERS, **(orders or {})}
    labels = _groups(data)
    rng = np.random.default_rng(seed)
    fold_of = {}
    for i in range(1, 7):
        groups = np.unique(labels[data.joint == i])
        for k, g in enumerate(rng.permutation(groups)):
            fold_of[int(g)] = k % folds
    fold = np.array([fold_of[int(g)] for g in labels])
    pred = np.full(len(data.q), np.nan)
    for k in range(folds):
        test = fold == k
        if not np.any(test):
            continue
        fit = fit_mlse(data.select(~test), orders)
        held = data.select(test)
        p = fit.predict(held)
        pred[test] = p[np.arange(len(held.q)), held.joint - 1]
    out = {}
    for i in range(1, 7):
        sel = (data.joint == i) & np.isfinite(pred)
        tau = data.tau[sel, i - 1]
        out[i] = float(np.linalg.norm(pred[sel] - tau) / np.linalg.norm(tau))
    return out


def select_orders(data: PoseData, folds: int = 5, seed: int = 0,
                  candidates: range = range(1, POLY_ORDER + 1)) -> tuple[dict[int, int], dict[int, dict[int, float]]]:
    """Per joint, the polynomial order of least cross-validated error, distal to proximal
    (MLSE's order: a joint's choice is made with its distal joints' orders fixed)."""
    orders = dict(DEFAULT_ORDERS)
    table: dict[int, dict[int, float]] = {}
    for i in range(6, 0, -1):
        table[i] = {}
        for order in candidates:
            trial = {**orders, i: order}
            table[i][order] = cross_validate(data, trial, folds, seed)[i]
        orders[i] = min(table[i], key=table[i].__getitem__)
    return orders, table
