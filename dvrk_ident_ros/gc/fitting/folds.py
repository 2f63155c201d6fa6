"""The held-out folds of a gc data set: whole sweeps and the outlying poses held out.

Poses the estimator does not see (docs/gravity-compensation.md): the held-out
figures (gc/validation/validation.py) and the inner cross-validation of the
regularised fit (gc/fitting/regularised.py) hold out the same folds:

- ``sweeps`` folds: every sweep of one group held out at once, both
  directions: one auxiliary-joint value for joints 3-6, one repetition pair
  (positive and negative sweep) for joints 1 and 2. A joint's groups, in the
  order of their auxiliary value (or repetition), go to folds 0, 1, .., k-1,
  0, 1, .. (deterministic, no random draw);
- one ``far`` fold: per joint, the fraction of its poses farthest from the
  others (the largest mean joint-space distance to that joint's other poses:
  the ends of the swept range and the outermost auxiliary values), so the
  figure includes extrapolation to the edge of the grid.

Every fold keeps sweeps of every joint in both directions for training.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.gc.fitting.data import PoseData


@dataclass(frozen=True)
class Fold:
    name: str
    family: str  # "sweeps" or "far"
    test: np.ndarray  # boolean mask over the poses


def sweep_groups(data: PoseData) -> np.ndarray:
    """A group rank per pose, within its joint: the auxiliary value's rank (joints with several
    auxiliary values) or the repetition pair's (positive and negative sweeps paired in order)."""
    rank = np.zeros(len(data.q), dtype=np.int64)
    for i in data.joints_present:
        sel = data.joint == i
        aux = data.auxiliary[sel]
        if np.all(np.isfinite(aux)) and len(np.unique(aux)) > 1:
            _, idx = np.unique(np.round(aux, 6), return_inverse=True)
        else:
            sweeps = data.sweep[sel]
            ranks = np.zeros(len(sweeps), dtype=np.int64)
            for d in (1, -1):  # the n-th positive sweep pairs with the n-th negative one
                m = data.direction[sel] == d
                ranks[m] = np.unique(sweeps[m], return_inverse=True)[1]
            idx = ranks
        rank[sel] = idx
    return rank


def far_poses(data: PoseData, fraction: float) -> np.ndarray:
    """Per joint, the ``fraction`` of its poses with the largest mean distance (rad, joints 1-7)
    to that joint's other poses."""
    out = np.zeros(len(data.q), dtype=bool)
    for i in data.joints_present:
        idx = np.flatnonzero(data.joint == i)
        q = data.q[idx]
        spread = np.sqrt(np.maximum(np.sum(q * q, 1)[:, None] + np.sum(q * q, 1)[None, :] - 2 * q @ q.T, 0.0))
        score = spread.sum(axis=1) / max(len(idx) - 1, 1)
        n = round(fraction * len(idx))
        out[idx[np.argsort(-score, kind="stable")[:n]]] = True
    return out


def held_out_folds(data: PoseData, sweep_folds: int = 5, far_fraction: float = 0.1) -> list[Fold]:
    """The protocol's folds (module docstring): ``sweep_folds`` sweep folds and one far fold."""
    rank = sweep_groups(data)
    folds = [Fold(f"sweeps{k}", "sweeps", rank % sweep_folds == k) for k in range(sweep_folds)]
    if far_fraction > 0:
        folds.append(Fold("far", "far", far_poses(data, far_fraction)))
    return [f for f in folds if np.any(f.test)]
