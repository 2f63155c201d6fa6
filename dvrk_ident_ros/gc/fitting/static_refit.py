"""An identified model's gravity made to agree with static holds: the minimum-norm correction (ROS-free).

An identification from a moving excitation fits the sum of the gravity torques and the friction offsets
(Fo, the constant column of the friction model) right, not each: over a trajectory whose gravity torques vary
little (the PSM's pitch and insertion), their near-constant part and Fo alias. Fo acts only while a joint
slides; at rest the compensation needs the gravity alone, and a PSM held by the identified gravity drifts
(docs/gravity-compensation.md, PSM). Static holds separate them: at rest the arm's effort is its gravity and
springs (no inertia, no Coriolis, no sliding friction),

    tau^m_k = A^T tau^d_k = Y_g(q^m_k) delta + tau_known(q^m_k),   k = 1..K poses,

linear in the standard parameters delta through the gravity regressor Y_g. The correction is

    delta' = delta + d,   d = pinv(Y) r,   Y = [Y_g(q^m_k)]_k,   r = [tau^m_k - tau_known(q^m_k) - Y_g(q^m_k) delta]_k

(the least-squares correction of least norm): only the combinations of delta that static holds determine
(the gravity base parameters: 6 of 115 for the PSM) change; every other parameter, inertia and friction,
stays as identified.

Static holds from a recording (:func:`rest_holds`): the stretches where every joint stays within
``tolerance`` over ``window`` s are at rest; each stretch at least ``min_hold`` s long, less its first
``settle`` s (the PID settling), is one hold: its mean position and effort.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dvrk_ident_ros.errors import DataError

if TYPE_CHECKING:  # annotations only: the CLI imports the defaults without the model core (sympy)
    from dvrk_ident_ros.model.arm_model import ArmModel

#: singular values of the stacked gravity regressor below this fraction of the largest are not fitted
RCOND = 1e-8
#: poses needed per static parameter combination fitted (a fit from as many poses as unknowns fits the noise)
POSES_PER_COMBINATION = 3
#: rest: every joint within this range (rad, or m for a prismatic joint) over REST_WINDOW s
REST_TOLERANCE = 1e-3
REST_WINDOW = 0.5  # s
MIN_HOLD = 1.5  # s: shorter rests (a move's turning point, a pause) are no holds
SETTLE = 1.0  # s: the start of each rest left out (the PID settling, the cable letting go)


@dataclass(frozen=True)
class Holds:
    """Mean position and effort (K x n, dVRK joint space) of each hold, and each hold's samples."""

    q: np.ndarray
    effort: np.ndarray
    samples: np.ndarray


def rest_holds(t: np.ndarray, q_dvrk: np.ndarray, effort_dvrk: np.ndarray, tolerance: float = REST_TOLERANCE,
               window: float = REST_WINDOW, min_hold: float = MIN_HOLD, settle: float = SETTLE) -> Holds:
    """The static holds of a recording (time s, positions and efforts, N x n): see the module's docstring."""
    t = np.asarray(t, dtype=float)
    q_dvrk = np.asarray(q_dvrk, dtype=float)
    effort_dvrk = np.asarray(effort_dvrk, dtype=float)
    if q_dvrk.ndim != 2 or q_dvrk.shape != effort_dvrk.shape or len(t) != len(q_dvrk):
        raise DataError(f"rest holds: {len(t)} times, positions {q_dvrk.shape}, efforts {effort_dvrk.shape}")
    if len(t) < 2 or np.any(np.diff(t) <= 0):
        raise DataError("rest holds: the times must increase")
    # at rest at sample k: the range of every joint over the window (samples at the median period) ending at k
    # within the tolerance
    width = max(2, round(window / float(np.median(np.diff(t)))) + 1)
    at_rest = np.zeros(len(t), dtype=bool)
    if len(t) >= width:
        spans = np.lib.stride_tricks.sliding_window_view(q_dvrk, width, axis=0)  # (N - width + 1) x n x width
        at_rest[width - 1:] = np.all(spans.max(axis=2) - spans.min(axis=2) <= tolerance, axis=1)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], at_rest.astype(np.int8), [0]])))
    qs, efforts, counts = [], [], []
    for first, end in zip(edges[::2], edges[1::2], strict=True):
        rest_start = t[first] - window  # the window before the first sample at rest was at rest too
        if t[end - 1] - rest_start < min_hold:
            continue
        keep = np.arange(first, end)[t[first:end] >= rest_start + settle]
        keep = keep[np.all(np.isfinite(q_dvrk[keep]), axis=1) & np.all(np.isfinite(effort_dvrk[keep]), axis=1)]
        if len(keep) < 2:
            continue
        qs.append(q_dvrk[keep].mean(axis=0))
        efforts.append(effort_dvrk[keep].mean(axis=0))
        counts.append(len(keep))
    n = q_dvrk.shape[1]
    return Holds(np.array(qs).reshape(-1, n), np.array(efforts).reshape(-1, n), np.array(counts, dtype=int))


@dataclass(frozen=True)
class StaticRefit:
    """``delta``: the corrected standard parameters; ``rank``: the combinations the holds determined;
    ``before``, ``after``: RMS residual per joint (dVRK joint space, N m or N) of the holds' efforts against
    the model's gravity, with the identified and the corrected parameters; ``poses``: holds used."""

    delta: np.ndarray
    rank: int
    before: np.ndarray
    after: np.ndarray
    poses: int

    def summary(self) -> str:
        fmt = " ".join(f"{x:.4f}" for x in self.before)
        return (f"{self.poses} static holds, {self.rank} gravity combinations refitted; residual RMS per joint "
                f"{fmt} -> {' '.join(f'{x:.4f}' for x in self.after)}")


def refit_gravity(model: ArmModel, delta: np.ndarray, q_dvrk: np.ndarray, effort_dvrk: np.ndarray) -> StaticRefit:
    """The minimum-norm correction of ``delta`` (standard parameters of ``model``) to static holds: positions
    ``q_dvrk`` and the arm's mean efforts there ``effort_dvrk`` (K x n, dVRK joint space, at rest)."""
    delta = np.asarray(delta, dtype=float)
    q_dvrk = np.atleast_2d(np.asarray(q_dvrk, dtype=float))
    effort_dvrk = np.atleast_2d(np.asarray(effort_dvrk, dtype=float))
    n = model.dof
    if q_dvrk.shape != effort_dvrk.shape or q_dvrk.shape[1:] != (n,):
        raise DataError(f"static holds: positions {q_dvrk.shape} and efforts {effort_dvrk.shape}, expected K x {n}")
    if delta.shape != (len(model.parameter_names),):
        raise DataError(f"static holds: {delta.shape[0]} parameters, the model has {len(model.parameter_names)}")
    if not (np.isfinite(q_dvrk).all() and np.isfinite(effort_dvrk).all()):
        raise DataError("static holds: positions or efforts not finite")
    q_motor = model.motor_from_dvrk(q_dvrk)
    Y = model.gravity_regressor(q_motor)  # K x n x P
    measured = model.motor_torque_from_dvrk(effort_dvrk) - model.known_torques(q_motor)  # K x n, motor space
    Y_stacked = Y.reshape(-1, Y.shape[-1])
    residual = measured.reshape(-1) - Y_stacked @ delta
    seen = np.flatnonzero(np.abs(Y_stacked).max(axis=0) > 0.0)  # parameters with a gravity column
    correction = np.zeros_like(delta)
    correction[seen], _, rank, _ = np.linalg.lstsq(Y_stacked[:, seen], residual, rcond=RCOND)
    if len(q_dvrk) < POSES_PER_COMBINATION * rank:
        raise DataError(f"static holds: {len(q_dvrk)} poses for {rank} gravity combinations; at least "
                        f"{POSES_PER_COMBINATION * rank} needed")
    corrected = delta + correction

    def rms(parameters: np.ndarray) -> np.ndarray:
        left = measured - (Y_stacked @ parameters).reshape(measured.shape)
        return np.sqrt(np.mean(model.dvrk_torque_from_motor(left) ** 2, axis=0))

    return StaticRefit(corrected, int(rank), rms(delta), rms(corrected), len(q_dvrk))
