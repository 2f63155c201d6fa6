"""rosbag2 recordings (MCAP or SQLite, read with rosbags, no ROS needed).

Reads sensor_msgs/JointState on ``/<ARM>/measured_js`` (and, for a PSM,
``/<ARM>/jaw/measured_js`` as the 7th joint), time-stamped by the message
header (receive time when the header is empty), and converts dVRK joint space
to motor space with the arm's coupling: q^m = A^-1 q^d, tau^m = A^T tau^d.

A bag recorded with the project's player also holds its
``dvrk_ident/msg/PlayerStatus``: only the samples while it reported
PHASE_PLAYING (the excitation trajectory, rest to rest) are data; the ramp
from wherever the arm was, the wait before it and the ramp out are not.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.data.interfaces import JOINT_STATE, PHASE_PLAYING, PLAYER_STATUS, stamp_seconds
from dvrk_ident_ros.errors import DataError


def _typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


def read_joint_states(path: Path, topic: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Time (s), position, velocity, effort arrays of one JointState topic."""
    return _read_joint_states(path, topic)[:5]


def _read_joint_states(path: Path, topic: str):
    """:func:`read_joint_states` and, last, when the recorder received each message (log time, s)."""
    from rosbags.rosbag2 import Reader

    store = _typestore()
    t, pos, vel, eff, logged = [], [], [], [], []
    names: list[str] = []
    try:
        with Reader(path) as reader:
            connections = [c for c in reader.connections if c.topic == topic]
            if not connections:
                topics = sorted({c.topic for c in reader.connections})
                raise DataError(f"{path}: no topic {topic} (topics: {', '.join(topics) or 'none'})")
            if connections[0].msgtype != JOINT_STATE:
                raise DataError(f"{path}: {topic} is {connections[0].msgtype}, expected {JOINT_STATE}")
            for connection, stamp, raw in reader.messages(connections=connections):
                msg = store.deserialize_cdr(raw, connection.msgtype)
                header = stamp_seconds(msg.header.stamp)
                t.append(header if header > 0 else stamp * 1e-9)
                logged.append(stamp * 1e-9)
                pos.append(np.asarray(msg.position, dtype=float))
                vel.append(np.asarray(msg.velocity, dtype=float))
                eff.append(np.asarray(msg.effort, dtype=float))
                names = list(msg.name)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"{path}: cannot read the bag: {exc}") from exc
    if not t:
        raise DataError(f"{path}: {topic} has no messages")
    width = {len(p) for p in pos}
    if len(width) != 1 or {len(v) for v in vel} != width or {len(e) for e in eff} != width:
        raise DataError(f"{path}: {topic} messages have inconsistent lengths (position/velocity/effort)")
    return np.asarray(t), np.vstack(pos), np.vstack(vel), np.vstack(eff), names, np.asarray(logged)


def _topics(path: Path) -> list[str]:
    from rosbags.rosbag2 import Reader

    try:
        with Reader(path) as reader:
            return sorted({c.topic for c in reader.connections})
    except Exception as exc:  # rosbags raises many types for unreadable bags
        raise DataError(f"{path}: cannot read the bag: {exc}") from exc


def find_arm_topic(path: Path) -> str:
    topics = _topics(path)
    arms = [t for t in topics if t.endswith("/measured_js") and "/jaw/" not in t and "/gripper/" not in t
            and "/gravity_compensation/" not in t]
    if len(arms) != 1:
        raise DataError(f"{path}: expected one /<ARM>/measured_js topic, found {arms or 'none'}")
    return arms[0]


def playing_windows(path: Path) -> list[tuple[float, float]]:
    """(start, end) log times (s) of each stretch the player reported PHASE_PLAYING; [] without player status.

    A window runs from its first PLAYING status to the first status after it in another phase. Log times
    (when the recorder received each message) put the player's status and the arm's state on one clock,
    whatever clocks their publishers stamp with."""
    from rosbags.rosbag2 import Reader

    from dvrk_ident_ros.data.interfaces import typestore

    phases: list[tuple[float, int]] = []
    try:
        with Reader(path) as reader:
            connections = [c for c in reader.connections if c.msgtype == PLAYER_STATUS]
            if not connections:
                return []
            store = typestore()
            for connection, stamp, raw in reader.messages(connections=connections):
                phases.append((stamp * 1e-9, int(store.deserialize_cdr(raw, connection.msgtype).phase)))
    except Exception as exc:  # rosbags raises many types for unreadable bags
        raise DataError(f"{path}: cannot read the player status: {exc}") from exc
    phases.sort()
    windows, start = [], None
    for t, phase in phases:
        if phase == PHASE_PLAYING and start is None:
            start = t
        elif phase != PHASE_PLAYING and start is not None:
            windows.append((start, t))
            start = None
    if start is not None:  # recording stopped while playing
        windows.append((start, np.inf))
    return windows


def load_bag(path: Path, dvrk_from_motor: np.ndarray, topic: str | None = None, playing_only: bool = True) -> Dataset:
    """Load an arm's recording; ``dvrk_from_motor`` is the arm's A (n x n).

    ``playing_only``: with player status in the bag, keep the samples of its longest PLAYING window."""
    path = Path(path)
    topic = topic or find_arm_topic(path)
    t, q, qd, tau, _, logged = _read_joint_states(path, topic)
    source = f"{path}:{topic}"
    windows = playing_windows(path) if playing_only else []
    if windows:
        start, end = max(windows, key=lambda w: min(w[1], logged.max()) - w[0])
        inside = (logged >= start) & (logged <= end)
        if inside.sum() < 2:
            raise DataError(f"{path}: no {topic} samples while the player was playing ({start:.3f}-{end:.3f} s)")
        t, q, qd, tau = t[inside], q[inside], qd[inside], tau[inside]
        source += f" (the longest of {len(windows)} PLAYING windows of the player: {len(t)} samples)"
    n = dvrk_from_motor.shape[0]
    jaw_topic = topic.replace("/measured_js", "/jaw/measured_js")
    if q.shape[1] == n - 1 and jaw_topic in _topics(path):  # PSM: the jaw is published separately
        tj, qj, qdj, tauj, _ = read_joint_states(path, jaw_topic)
        idx = np.clip(np.searchsorted(tj, t), 0, len(tj) - 1)
        q, qd, tau = (np.hstack([a, b[idx]]) for a, b in ((q, qj), (qd, qdj), (tau, tauj)))
    if q.shape[1] != n:
        raise DataError(f"{path}: {topic} has {q.shape[1]} joints, the arm has {n}")
    order = np.argsort(t, kind="stable")
    t, q, qd, tau = t[order], q[order], qd[order], tau[order]
    keep = np.concatenate([[True], np.diff(t) > 0])
    A_inv = np.linalg.inv(dvrk_from_motor)
    return Dataset(t=t[keep], q=q[keep] @ A_inv.T, qd=qd[keep] @ A_inv.T, tau=tau[keep] @ dvrk_from_motor,
                   source=source)


def write_joint_state_bag(path: Path, topics: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                          names: dict[str, list[str]] | None = None) -> Path:
    """Write JointState topics {topic: (t, position, velocity, effort)} to a rosbag2 (MCAP) directory."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = _typestore()
    JointState = store.types[JOINT_STATE]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        for topic, (t, pos, vel, eff) in topics.items():
            conn = writer.add_connection(topic, JOINT_STATE, typestore=store)
            joint_names = (names or {}).get(topic) or [f"joint{j + 1}" for j in range(pos.shape[1])]
            for k in range(len(t)):
                sec = int(t[k])
                msg = JointState(header=Header(stamp=Time(sec=sec, nanosec=int(np.rint((t[k] - sec) * 1e9))),
                                               frame_id=""),
                                 name=joint_names, position=pos[k].astype(float), velocity=vel[k].astype(float),
                                 effort=eff[k].astype(float))
                writer.write(conn, int(t[k] * 1e9), store.serialize_cdr(msg, JOINT_STATE))
    return path
