"""Pose-grid recordings made by the project's player and recorder (rosbag2).

The recorder logs ``/<ARM>/measured_js`` and the player's
``dvrk_ident/msg/PlayerStatus`` (phase, pose index, direction) with the pose
grid file it plays. The samples of ``measured_js`` received while the player
reports PHASE_SAMPLING for a pose are that pose's samples; they are averaged
as the CUHK samples are (robust mean), and the pose's estimated joint and
auxiliary value are read from the grid file.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.data.interfaces import JOINT_STATE, PHASE_SAMPLING, PLAYER_STATUS, stamp_seconds, typestore
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import load_grid
from dvrk_ident_ros.gc.data import PoseData, robust_mean


def _stamp(msg, recv_ns: int) -> float:
    t = stamp_seconds(msg.header.stamp)
    return t if t > 0 else recv_ns * 1e-9


def load_pose_bag(path: str | Path, std_filter: float = 0.3, grid_path: str | Path | None = None) -> PoseData:
    from rosbags.rosbag2 import Reader

    path = Path(path)
    store = typestore()
    status, states = [], []
    try:
        with Reader(path) as reader:
            for conn, stamp, raw in reader.messages():
                if conn.msgtype == PLAYER_STATUS:
                    msg = store.deserialize_cdr(raw, conn.msgtype)
                    status.append((_stamp(msg, stamp), msg.phase, msg.pose_index, msg.direction, msg.trajectory_file,
                                   msg.arm))
                elif conn.msgtype == JOINT_STATE and conn.topic.endswith("/measured_js") and "/jaw/" not in conn.topic \
                        and "/gripper/" not in conn.topic:
                    msg = store.deserialize_cdr(raw, conn.msgtype)
                    states.append((_stamp(msg, stamp), np.asarray(msg.position, float), np.asarray(msg.effort, float)))
    except Exception as exc:  # rosbags raises many types for unreadable bags
        raise DataError(f"{path}: cannot read the bag: {exc}") from exc
    if not status:
        raise DataError(f"{path}: no {PLAYER_STATUS} messages: not a pose-grid recording of the player")
    if not states:
        raise DataError(f"{path}: no measured_js messages")
    grid = load_grid(grid_path or status[0][4], arm=status[0][5] or None)
    sweeps = grid["sweeps"]
    offsets = np.cumsum([0] + [len(s["poses"]) for s in sweeps])
    t_state = np.array([s[0] for s in states])
    windows: dict[int, list[tuple[float, float]]] = {}
    for (t0, phase, index, _, _, _), nxt in zip(status, [*status[1:], None], strict=True):
        if phase == PHASE_SAMPLING:
            windows.setdefault(int(index), []).append((t0, nxt[0] if nxt is not None else np.inf))
    qs, taus, joints, dirs, auxs, sweep_ids = [], [], [], [], [], []
    dropped = 0
    for index, spans in sorted(windows.items()):
        mask = np.zeros(len(t_state), dtype=bool)
        for t0, t1 in spans:
            mask |= (t_state > t0) & (t_state < t1)
        k = int(np.searchsorted(offsets, index, side="right") - 1)
        if not 0 <= k < len(sweeps):
            raise DataError(f"{path}: pose index {index} is not in the grid ({offsets[-1]} poses)")
        samples = [states[i] for i in np.flatnonzero(mask)]
        if not samples or any(len(s[1]) < 7 or len(s[2]) < 7 for s in samples):
            dropped += 1
            continue
        pos = np.array([s[1][:7] for s in samples]).T[None]  # 1 x 7 x samples
        eff = np.array([s[2][:7] for s in samples]).T[None]
        q, tau = robust_mean(pos, std_filter)[0], robust_mean(eff, std_filter)[0]
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
    if not qs:
        raise DataError(f"{path}: no sampling window with measured_js samples")
    return PoseData(np.array(qs), np.array(taus), np.array(joints), np.array(dirs), np.array(auxs),
                    np.array(sweep_ids), str(path), dropped)
