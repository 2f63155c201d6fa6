"""Pose-grid recordings for MLSE: loading, per-pose averaging with outlier rejection.

Sources: the CUHK layout of the dVRK gravity-compensation procedure
(``Train_Joint<i>/data_{pos,neg}/*.mat``, MATLAB v5 with ``current_position``
and ``desired_effort`` 7 x N x samples) and NPZ files of the same arrays.
Each pose's samples are averaged after discarding those further than
``std_filter`` standard deviations from their mean (the original tool: 0.3),
per joint; NaN samples are discarded first and a pose with no finite sample
is dropped (counted in ``PoseData.dropped``). The first two and the last pose
of every sweep are dropped by default, as the original tool did (joint-limit
and cable transients).

Efforts: the CUHK files hold the commanded effort (``desired_effort``), which
is what Lin 2019's MLSE fits; a rosbag2 recording is read the same way by
default (``setpoint_js``), or with ``effort="measured"`` from ``measured_js``
(:mod:`dvrk_ident_ros.gc.fitting.bags`); :func:`dvrk_ident_ros.gc.fitting.loaders.load_poses` reads any of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.model.travel import Recording


@dataclass
class PoseData:
    """Averaged poses: q, tau (N x 7, dVRK joint space), and per pose the
    estimated joint (1..6), the direction (+1/-1), the auxiliary value and the sweep id."""

    q: np.ndarray
    tau: np.ndarray
    joint: np.ndarray
    direction: np.ndarray
    auxiliary: np.ndarray
    sweep: np.ndarray
    source: str = ""
    dropped: int = 0
    files: list[str] = field(default_factory=list)
    effort_topic: str = ""  # a bag's topic the efforts were read from ('' for other sources)
    invalid_samples: int = 0  # a bag's samples with header.stamp 0 (arm not ready), skipped
    not_ready_samples: int = 0  # a bag's samples while its operating_state said not ready, skipped
    skipped: str = ""  # both counts in words ('' when none)
    #: per pose the direction state h of its estimated joint's cable while it was sampled (gc/model/travel.py),
    #: where the recording has the motion between poses; None: the sweep's direction (+-1)
    branch: np.ndarray | None = None
    #: the positions the branches come from, for another width (gc/model/travel.py); None: no stream
    recording: Recording | None = None

    def select(self, mask: np.ndarray) -> PoseData:
        return replace(self, q=self.q[mask], tau=self.tau[mask], joint=self.joint[mask],
                       direction=self.direction[mask], auxiliary=self.auxiliary[mask], sweep=self.sweep[mask],
                       branch=None if self.branch is None else self.branch[mask],
                       recording=None if self.recording is None else self.recording.select(mask))

    def with_travel(self, width: float) -> PoseData:
        """The same poses with the branches of a direction state of ``width`` (needs the recording)."""
        if self.recording is None:
            raise DataError(f"{self.source}: no recorded motion to compute the cable's direction state from")
        return replace(self, branch=self.recording.branches(self.joint, width))

    def positive_weight(self) -> np.ndarray:
        """Per pose the weight (1 + h) / 2 of the positive direction's torques in what was measured: from the
        recorded state h, else 1 on positive sweeps and 0 on negative ones."""
        if self.branch is None:
            return (self.direction > 0).astype(float)
        return 0.5 * (1.0 + np.clip(self.branch, -1.0, 1.0))

    @property
    def joints_present(self) -> list[int]:
        return sorted({int(j) for j in self.joint})


def robust_mean(samples: np.ndarray, std_filter: float) -> np.ndarray:
    """Mean over the last axis of the samples within ``std_filter`` std of the mean (NaN-free)."""
    out = np.full(samples.shape[:-1], np.nan)
    for idx in np.ndindex(samples.shape[:-1]):
        x = samples[idx]
        x = x[np.isfinite(x)]
        if len(x) == 0:
            continue
        m, s = x.mean(), x.std()
        keep = x[np.abs(x - m) <= std_filter * s] if s > 0 else x
        out[idx] = keep.mean() if len(keep) else x[np.argmin(np.abs(x - m))]
    return out


def _sweep(q: np.ndarray, tau: np.ndarray, trim: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    first, last = trim
    end = q.shape[0] - last
    return q[first:end], tau[first:end]


def load_cuhk(root: str | Path, std_filter: float = 0.3, trim: tuple[int, int] = (2, 1)) -> PoseData:
    """A directory holding ``Train_Joint<i>/data_pos|data_neg/*.mat`` (or the directory above it)."""
    import scipy.io

    root = Path(root)
    if not root.is_dir():
        raise DataError(f"{root}: not a directory")
    joint_dirs = sorted(root.glob("Train_Joint*")) or sorted(root.glob("*/Train_Joint*"))
    if not joint_dirs:
        raise DataError(f"{root}: no Train_Joint<i> directories (CUHK layout expected)")
    qs, taus, joints, dirs, auxs, sweeps, files = [], [], [], [], [], [], []
    dropped = 0
    sweep_id = 0
    for jd in joint_dirs:
        match = re.search(r"Train_Joint(\d)", jd.name)
        if not match:
            continue
        joint = int(match.group(1))
        for sub, direction in (("data_pos", 1), ("data_neg", -1)):
            for f in sorted((jd / sub).glob("*.mat")):
                try:
                    m = scipy.io.loadmat(f)
                    pos = np.asarray(m["current_position"], dtype=float)
                    eff = np.asarray(m["desired_effort"], dtype=float)
                    theta = float(np.ravel(m.get("Theta", [np.nan]))[0])
                except (KeyError, ValueError, OSError, NotImplementedError) as exc:
                    raise DataError(f"{f}: not a pose-grid .mat file: {exc}") from exc
                if pos.ndim != 3 or pos.shape[0] != 7 or eff.shape != pos.shape:
                    raise DataError(f"{f}: current_position/desired_effort must be 7 x N x samples, "
                                    f"got {pos.shape} and {eff.shape}")
                q = robust_mean(pos.transpose(1, 0, 2), std_filter)
                tau = robust_mean(eff.transpose(1, 0, 2), std_filter)
                q, tau = _sweep(q, tau, trim)
                ok = np.all(np.isfinite(q), axis=1) & np.all(np.isfinite(tau), axis=1)
                dropped += int(np.sum(~ok))
                q, tau = q[ok], tau[ok]
                n = len(q)
                qs.append(q)
                taus.append(tau)
                joints.append(np.full(n, joint))
                dirs.append(np.full(n, direction))
                auxs.append(np.full(n, theta))
                sweeps.append(np.full(n, sweep_id))
                files.append(str(f))
                sweep_id += 1
    if not qs:
        raise DataError(f"{root}: no .mat files under Train_Joint*/data_pos|data_neg")
    return PoseData(np.vstack(qs), np.vstack(taus), np.concatenate(joints), np.concatenate(dirs),
                    np.concatenate(auxs), np.concatenate(sweeps), str(root), dropped, files)


#: Where a bag's efforts come from: the commanded effort (setpoint_js, the default) or the measured one.
EFFORTS = ("setpoint", "measured")
