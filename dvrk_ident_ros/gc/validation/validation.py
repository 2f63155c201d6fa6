"""A held-out protocol for gc estimates: whole sweeps and the outlying poses held out.

Lin 2019 (section VI, eq. 32) scores a gc model by the relative RMS error of
each joint's torque on that joint's own sweeps. Scored on the poses it was
fitted on, that figure rewards fitting the grid; here it is measured on poses
the estimator did not see (docs/gravity-compensation.md): whole sweeps and
the outlying poses held out, the folds of gc/fitting/folds.py. The figure of
a joint is the relative RMS error of its own torque pooled over its held-out
poses (``||tau_hat - tau|| / ||tau||``), per family and over both
families; the headline is the mean over joints 1-6. A fixed parameter file
(the original tool's) is simply evaluated on each fold's held-out poses.

A guard beside it ("cross"): each joint's torque at the held-out poses of
the other joints' sweeps, where that joint is at rest and the controller
blends the two directions half and half. The own-sweep figure cannot see a
joint's polynomial taking over its gravity columns where its sweeps vary no
other joint (joint 2: one joint-3 value); this one can.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.folds import Fold, held_out_folds
from dvrk_ident_ros.gc.fitting.mlse import blended_torques

JOINTS = np.arange(1, 7)
FAMILIES = ("sweeps", "far")


@dataclass
class HeldOut:
    """Relative RMS errors (fractions) per joint 1-6: ``errors[family][direction]``, family in
    ("sweeps", "far", "all"), direction in ("both", "pos", "neg"); ``errors["cross"]["both"]``: each
    joint's torque on the held-out poses of the other joints' sweeps (a guard, not in "all")."""

    errors: dict[str, dict[str, np.ndarray]]
    folds: int

    def per_joint(self, family: str = "all", direction: str = "both") -> np.ndarray:
        return self.errors[family][direction]

    def mean(self, family: str = "all", direction: str = "both") -> float:
        return float(np.mean(self.errors[family][direction]))


class Model(Protocol):
    def predict(self, data: PoseData) -> np.ndarray: ...


def _pooled(sq_err: np.ndarray, sq_tau: np.ndarray, joint: np.ndarray, mask: np.ndarray) -> np.ndarray:
    num = np.bincount(joint[mask], weights=sq_err[mask], minlength=7)[1:7]
    den = np.bincount(joint[mask], weights=sq_tau[mask], minlength=7)[1:7]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(num / den)


def at_rest(model: Model, data: PoseData) -> np.ndarray:
    """The torques a gc controller commands at rest (blend 0.5 of the two directions, gc/runtime/law.py)."""
    return 0.5 * (model.predict(replace(data, direction=np.ones_like(data.direction), branch=None))
                  + model.predict(replace(data, direction=-np.ones_like(data.direction), branch=None)))


def held_out_errors(fit: Callable[[PoseData], Model], data: PoseData, folds: list[Fold] | None = None) -> HeldOut:
    """Fit on each fold's other poses, predict its held-out ones; pool per joint (module docstring).

    Also the "cross" guard: joint j's torque at the held-out poses of the other joints' sweeps
    (joint j at rest there: the at-rest blend), pooled over the sweep folds."""
    folds = held_out_folds(data) if folds is None else folds
    rows, sq_err, sq_tau, fam, dirs = [], [], [], [], []
    cross_err, cross_tau = np.zeros(6), np.zeros(6)
    for fold in folds:
        held = data.select(fold.test)
        model = fit(data.select(~fold.test))
        pred = np.asarray(model.predict(held))
        own = held.joint - 1
        k = np.arange(len(own))
        rows.append(held.joint)
        sq_err.append((pred[k, own] - held.tau[k, own]) ** 2)
        sq_tau.append(held.tau[k, own] ** 2)
        fam.append(np.full(len(own), FAMILIES.index(fold.family)))
        dirs.append(held.direction)
        if fold.family == "sweeps":
            other = held.joint[:, None] != JOINTS[None, :]
            rest = at_rest(model, held)[:, :6]
            cross_err += np.sum(np.where(other, (rest - held.tau[:, :6]) ** 2, 0.0), axis=0)
            cross_tau += np.sum(np.where(other, held.tau[:, :6] ** 2, 0.0), axis=0)
    joint, e, t = np.concatenate(rows).astype(np.int64), np.concatenate(sq_err), np.concatenate(sq_tau)
    family, direction = np.concatenate(fam), np.concatenate(dirs)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, fmask in (("sweeps", family == 0), ("far", family == 1), ("all", np.ones_like(family, bool))):
        out[name] = {label: _pooled(e, t, joint, fmask & dmask)
                     for label, dmask in (("both", np.ones_like(fmask)), ("pos", direction > 0),
                                          ("neg", direction < 0))}
    with np.errstate(invalid="ignore", divide="ignore"):
        out["cross"] = {"both": np.sqrt(cross_err / cross_tau)}
    return HeldOut(out, len(folds))


@dataclass
class FixedFile:
    """A parameter file's two 40-vectors as a model (fixed: fitting it ignores the data)."""

    theta_pos: np.ndarray
    theta_neg: np.ndarray

    def predict(self, data: PoseData) -> np.ndarray:
        """Each pose's torques blended as measured, as fits predict."""
        return blended_torques(data, self.theta_pos, self.theta_neg)

    def fit(self, _train: PoseData) -> FixedFile:
        return self
