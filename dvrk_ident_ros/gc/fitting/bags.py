"""Pose-grid recordings made by the project's player and recorder (rosbag2).

The recorder logs ``/<ARM>/measured_js``, ``/<ARM>/setpoint_js``, the arm's
``operating_state`` and the player's ``dvrk_ident/msg/PlayerStatus`` (phase,
pose index, direction) with the pose grid file it plays. Only the status of the
player of the bag's own arm counts (:func:`~dvrk_ident_ros.data.bags.read_player_status`:
its per-arm topic, or in older bags the global topic's messages for that arm).
The samples received while that player reports SAMPLING for a pose are that pose's samples;
they are averaged as the CUHK samples are (robust mean), and the pose's
estimated joint and auxiliary value are read from the grid file.

Positions come from ``measured_js``. Efforts, by default, from ``setpoint_js``:
the effort the PID commands, which is what Lin 2019's MLSE procedure fits
(the CUHK files' ``desired_effort``); ``effort="measured"`` takes
``measured_js.effort`` (from the motor currents) instead. Samples with
header.stamp 0 and samples while the arm was not ready are never data
(:mod:`dvrk_ident_ros.data.bags`); their counts are kept in the PoseData.

``trim=(1, 0)`` leaves out the first pose of every sweep, as the simulated
collection does (:mod:`dvrk_ident_ros.sim.experiments`): the arm reaches it
from the previous sweep, with the cable's hysteresis still in that motion's
state (the original tool drops the first two and the last pose of its own
sweeps, :func:`dvrk_ident_ros.gc.fitting.data.load_cuhk`). The default, the one rule of
`dvrk-ident gc fit`, `/identify` and gc_calibration, keeps every pose: a bag
records the motion, so each pose is weighed by its cable's recorded state, and
a grid played with a pose stride keeps too few poses per sweep without its
first ones.

Each pose also gets the state its estimated joint's cable was in while it was
sampled (``PoseData.branch``): the direction state of gc/model/travel.py run over the
whole ``measured_js`` stream, moves included. A PID that overshoots and settles
back leaves the cable partly turned; the fit weighs that pose's two branches
by it (gc/fitting/mlse.py) instead of taking it for the whole branch of its sweep.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.data.bags import (
    JointStates,
    arm_of_topic,
    find_arm_topic,
    read_player_status,
    skipped_summary,
    valid_joint_states,
)
from dvrk_ident_ros.data.interfaces import PLAYER_STATUS, stamp_seconds
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import load_grid
from dvrk_ident_ros.gc.fitting.data import EFFORTS, PoseData, robust_mean
from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL, Recording


def _player_status(path: Path, arm: str) -> list[tuple]:
    """(time, phase, pose index, direction, trajectory file, arm) of every PlayerStatus of ``arm``'s player, by
    header time (the receive time where the header is empty)."""
    status = []
    for stamp, msg in read_player_status(path, arm)[1]:
        t = stamp_seconds(msg.header.stamp)
        status.append((t if t > 0 else stamp * 1e-9, msg.phase, msg.pose_index, msg.direction, msg.trajectory_file,
                       msg.arm))
    return status


def _efforts(path: Path, arm_topic: str, measured: JointStates, effort: str) -> tuple[JointStates, int, str]:
    """The joint states whose effort the fit uses, their not-ready count and their topic."""
    if effort == "measured":
        return measured, 0, arm_topic
    topic = arm_topic.rsplit("/", 1)[0] + "/setpoint_js"
    try:
        states, not_ready, _ = valid_joint_states(path, topic)
    except DataError as exc:
        if f"no topic {topic}" not in str(exc):
            raise
        raise DataError(f"{path}: no {topic}: the fit uses the commanded effort (setpoint_js, as Lin 2019's "
                        "procedure does); record with record_setpoint true, or fit measured_js's effort "
                        "(--effort measured)") from None
    return states, not_ready, topic


def load_pose_bag(path: str | Path, std_filter: float = 0.3, grid_path: str | Path | None = None,
                  effort: str = "setpoint", trim: tuple[int, int] = (0, 0),
                  travel: float | None = DEFAULT_TRAVEL) -> PoseData:
    """Averaged poses of a pose-grid bag; ``effort``: "setpoint" (commanded, default) or "measured";
    ``trim``: poses of every sweep left out at its start and its end (of those the player reached: with a
    pose stride, the first one played); ``travel``: the width of the cable's direction state
    (gc/model/travel.py) tracked over the whole ``measured_js`` stream: each pose's ``branch`` is its estimated
    joint's mean state while sampled (None: no branch, the sweep's direction stands)."""
    if effort not in EFFORTS:
        raise DataError(f"effort {effort!r}: expected one of {', '.join(EFFORTS)}")
    if min(trim) < 0:
        raise DataError(f"trim {trim}: the poses left out at a sweep's start and end cannot be negative")
    path = Path(path)
    arm_topic = find_arm_topic(path)
    arm = arm_of_topic(arm_topic)
    status = _player_status(path, arm)
    if not status:
        raise DataError(f"{path}: no {PLAYER_STATUS} messages of the {arm} player: not a pose-grid recording "
                        "of the player")
    measured, not_ready, _ = valid_joint_states(path, arm_topic)
    efforts, effort_not_ready, effort_topic = _efforts(path, arm_topic, measured, effort)
    if measured.position.shape[1] < 7:
        raise DataError(f"{path}: {arm_topic} has {measured.position.shape[1]} joints, an MTM has 7")
    if efforts.effort.shape[1] < 7:
        raise DataError(f"{path}: {effort_topic} has {efforts.effort.shape[1]} efforts, an MTM has 7")
    grid = load_grid(grid_path or status[0][4], arm=status[0][5] or None)
    sweeps = grid["sweeps"]
    offsets = np.cumsum([0] + [len(s["poses"]) for s in sweeps])
    windows: dict[int, list[tuple[float, float]]] = {}
    for (t0, phase, index, _, _, _), nxt in zip(status, [*status[1:], None], strict=True):
        if phase == PlayerPhase.SAMPLING:
            windows.setdefault(int(index), []).append((t0, nxt[0] if nxt is not None else np.inf))
    played: dict[int, list[int]] = {}  # per sweep, its poses in the order the player reached them
    for index in sorted(windows):
        played.setdefault(int(np.searchsorted(offsets, index, side="right") - 1), []).append(index)
    rank = {index: (r, len(indices)) for indices in played.values() for r, index in enumerate(indices)}
    qs, taus, joints, dirs, auxs, sweep_ids = [], [], [], [], [], []
    windows_kept: list[np.ndarray] = []
    dropped = 0
    for index, spans in sorted(windows.items()):
        k = int(np.searchsorted(offsets, index, side="right") - 1)
        if not 0 <= k < len(sweeps):
            raise DataError(f"{path}: pose index {index} is not in the grid ({offsets[-1]} poses)")
        position, reached = rank[index]
        if not trim[0] <= position < reached - trim[1]:
            continue
        in_q, in_tau = _inside(measured.t, spans), _inside(efforts.t, spans)
        if not in_q.any() or not in_tau.any():
            dropped += 1
            continue
        q = robust_mean(measured.position[in_q, :7].T[None], std_filter)[0]  # 1 x 7 x samples -> 7
        tau = robust_mean(efforts.effort[in_tau, :7].T[None], std_filter)[0]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(tau))):
            dropped += 1
            continue
        sweep = sweeps[k]
        qs.append(q)
        taus.append(tau)
        joints.append(sweep["estimated_joint"])
        dirs.append(1 if sweep["direction"] == "positive" else -1)
        auxs.append(sweep["auxiliary_value"] if sweep["auxiliary_value"] is not None else np.nan)
        sweep_ids.append(k)
        windows_kept.append(np.flatnonzero(in_q))
    if not qs:
        raise DataError(f"{path}: no sampling window with valid {arm_topic} and {effort_topic} samples")
    invalid = measured.invalid + (efforts.invalid if efforts is not measured else 0)
    repeated = measured.repeated + (efforts.repeated if efforts is not measured else 0)
    not_ready += effort_not_ready
    recording = Recording(measured.position[:, :7], tuple(windows_kept))
    return PoseData(np.array(qs), np.array(taus), np.array(joints), np.array(dirs), np.array(auxs),
                    np.array(sweep_ids), str(path), dropped, effort_topic=effort_topic, invalid_samples=invalid,
                    not_ready_samples=not_ready, skipped=skipped_summary(invalid, not_ready, repeated),
                    branch=recording.branches(np.array(joints), travel) if travel is not None else None,
                    recording=recording)


def _inside(t: np.ndarray, spans: list[tuple[float, float]]) -> np.ndarray:
    mask = np.zeros(len(t), dtype=bool)
    for t0, t1 in spans:
        mask |= (t > t0) & (t < t1)
    return mask
