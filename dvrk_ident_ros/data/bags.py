"""rosbag2 recordings (MCAP or SQLite, read with rosbags, no ROS needed).

Reads sensor_msgs/JointState on ``/<ARM>/measured_js`` (and, for a PSM,
``/<ARM>/jaw/measured_js`` as the 7th joint), time-stamped by the message
header, and converts dVRK joint space to motor space with the arm's coupling:
q^m = A^-1 q^d, tau^m = A^T tau^d.

What is not data:
- a sample with ``header.stamp`` 0, the dVRK's mark of invalid data (arm off,
  not homed, faulted: all zeros). The project's recorder leaves them out of
  its bags; bags of other recorders may hold them. Skipped and counted.
- where the bag holds the arm's ``/<ARM>/operating_state`` (crtk_msgs), a
  sample received while the last state said the arm was not ENABLED or not
  homed (busy homing is not homed; busy while homed is the arm's own move:
  data), or before the first state. Skipped and counted.
- in a bag recorded with the project's player, which also holds its
  ``dvrk_ident/msg/PlayerStatus``: a sample outside PlayerPhase.PLAYING (the
  excitation trajectory, rest to rest); the ramp from wherever the arm was
  and the wait before it are not data.
The counts are in the dataset's ``source``.

Only the status of the player of the bag's own arm cuts it (:func:`read_player_status`): its
per-arm topic ``/dvrk_ident/<ARM>/player_status``, or, in a bag recorded before the topics were
per arm, the messages of the global ``/dvrk_ident/player_status`` whose ``arm`` is the bag's arm.
Two arms recorded side by side never cut each other's bags.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.arm.registry import canonical_arm, player_status_topic
from dvrk_ident_ros.arm.samples import REPEAT_TOLERANCE
from dvrk_ident_ros.arm.state import CrtkState
from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.data.interfaces import (
    JOINT_STATE,
    OPERATING_STATE,
    PLAYER_STATUS,
    PlayerStatusMessage,
    bag_typestore,
    stamp_seconds,
)
from dvrk_ident_ros.errors import DataError, DvrkIdentError

#: The players' status topic before it was per arm (every player on it; the message's ``arm`` says whose).
LEGACY_PLAYER_STATUS_TOPIC = "/dvrk_ident/player_status"


def _typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


@dataclass(frozen=True)
class JointStates:
    """The valid samples of one JointState topic: header time (s), position, velocity, effort
    (samples x joints), joint names, log time (s: when the recorder received each sample) and how
    many samples with header.stamp 0 (``invalid``) and repeating the previous sample's stamp (``repeated``) were
    left out."""

    t: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    names: list[str]
    logged: np.ndarray
    invalid: int = 0
    repeated: int = 0

    def select(self, mask: np.ndarray) -> JointStates:
        return replace(self, t=self.t[mask], position=self.position[mask], velocity=self.velocity[mask],
                       effort=self.effort[mask], logged=self.logged[mask])


def read_joint_states(path: Path, topic: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Time (s), position, velocity, effort arrays of one JointState topic (stamp-0 samples left out)."""
    states = read_joint_state_topic(path, topic)
    return states.t, states.position, states.velocity, states.effort, states.names


def read_joint_state_topic(path: Path, topic: str) -> JointStates:
    """One JointState topic of a bag; samples with header.stamp 0 are skipped and counted."""
    from rosbags.rosbag2 import Reader

    store = _typestore()
    t, pos, vel, eff, logged = [], [], [], [], []
    names: list[str] = []
    invalid = 0
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
                if msg.header.stamp.sec == 0 and msg.header.stamp.nanosec == 0:
                    invalid += 1
                    continue
                t.append(stamp_seconds(msg.header.stamp))
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
        if invalid:
            raise DataError(f"{path}: all {invalid} samples of {topic} have header.stamp 0, the dVRK's mark of "
                            "invalid data: the arm was never ready (powered, homed) while recording")
        raise DataError(f"{path}: {topic} has no messages")
    width = max(len(a) for a in (*pos, *vel, *eff))
    columns = []
    for field in (pos, vel, eff):  # a field left empty in every message (setpoint_js's velocity) reads as NaN
        if {len(a) for a in field} == {0}:
            columns.append(np.full((len(field), width), np.nan))
        elif {len(a) for a in field} == {width}:
            columns.append(np.vstack(field))
        else:
            raise DataError(f"{path}: {topic} messages have inconsistent lengths (position/velocity/effort)")
    position, velocity, effort = columns
    return JointStates(np.asarray(t), position, velocity, effort, names, np.asarray(logged), invalid)


def data_state(state: str, is_homed: bool) -> bool:
    """Whether the arm's samples are data in this operating state: ENABLED and homed. Busy while homed is
    the arm's own move_jp, or an MTM's homing move (its encoders are biased before it): motion like any
    other, valid samples; a PSM homes not homed, its data invalid (stamp 0) until then."""
    return state == CrtkState.ENABLED.value and bool(is_homed)


@dataclass(frozen=True)
class ArmReadiness:
    """The arm's recorded operating states: log times (s, sorted) and whether each allowed data."""

    topic: str
    times: np.ndarray
    ready: np.ndarray

    def mask(self, logged: np.ndarray) -> np.ndarray:
        """True for each log time at which the last state received allowed data (False before the first)."""
        index = np.searchsorted(self.times, logged, side="right") - 1
        return (index >= 0) & self.ready[np.clip(index, 0, None)]


def operating_state_topic(arm_topic: str) -> str:
    """``/MTML/measured_js`` -> ``/MTML/operating_state``."""
    return arm_topic.rsplit("/", 1)[0] + "/operating_state"


def arm_readiness(path: Path, arm_topic: str) -> ArmReadiness | None:
    """The operating states of the arm whose ``arm_topic`` (``/<ARM>/measured_js``) is loaded; None when
    the bag holds no ``/<ARM>/operating_state``. Read with the definition the bag carries."""
    from rosbags.rosbag2 import Reader

    topic = operating_state_topic(arm_topic)
    states: list[tuple[float, bool]] = []
    try:
        with Reader(path) as reader:
            connections = [c for c in reader.connections if c.topic == topic]
            if not connections:
                return None
            if connections[0].msgtype != OPERATING_STATE:
                raise DataError(f"{path}: {topic} is {connections[0].msgtype}, expected {OPERATING_STATE}")
            store = bag_typestore(connections)
            for connection, stamp, raw in reader.messages(connections=connections):
                msg = store.deserialize_cdr(raw, connection.msgtype)
                states.append((stamp * 1e-9, data_state(str(msg.state), msg.is_homed)))
    except DataError:
        raise
    except Exception as exc:  # rosbags raises many types for unreadable bags
        raise DataError(f"{path}: cannot read {topic}: {exc}") from exc
    states.sort(key=lambda s: s[0])
    return ArmReadiness(topic, np.array([s[0] for s in states]), np.array([s[1] for s in states], dtype=bool))


def valid_joint_states(path: Path, topic: str) -> tuple[JointStates, int, str]:
    """:func:`read_joint_state_topic` less the samples received while the arm was not ready (see
    :func:`arm_readiness`) and those repeating the previous sample, stamp and positions (the bridge behind a
    stalled arm loop publishes its last sample again: :data:`~dvrk_ident_ros.arm.samples.REPEAT_TOLERANCE`):
    (states, samples left out as not ready, a summary of what was skipped)."""
    states = read_joint_state_topic(path, topic)
    same = (np.abs(np.diff(states.t)) < REPEAT_TOLERANCE) & np.all(np.diff(states.position, axis=0) == 0, axis=1)
    fresh = np.r_[True, ~same]
    if not fresh.all():
        states = replace(states.select(fresh), repeated=int(np.sum(~fresh)))
    readiness = arm_readiness(path, topic)
    not_ready = 0
    if readiness is not None:
        ready = readiness.mask(states.logged)
        not_ready = int(np.sum(~ready))
        if not ready.any():
            raise DataError(f"{path}: no {topic} sample while {readiness.topic} said the arm was ENABLED and "
                            f"homed ({len(states.t)} samples, {len(readiness.times)} states)")
        states = states.select(ready)
    return states, not_ready, skipped_summary(states.invalid, not_ready, states.repeated)


def skipped_summary(invalid: int, not_ready: int, repeated: int = 0) -> str:
    """'12 samples with header.stamp 0 and 30 while the arm was not ready skipped' ('' when none)."""
    parts = []
    if invalid:
        parts.append(f"{invalid} samples with header.stamp 0")
    if repeated:
        parts.append(f"{repeated} repeating the previous sample's stamp (the arm's loop stalled)")
    if not_ready:
        parts.append(f"{not_ready} while operating_state said the arm was not ready")
    return " and ".join(parts) + " skipped" if parts else ""


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


def arm_of_topic(arm_topic: str) -> str:
    """The arm of an arm topic: ``/psm1/measured_js`` -> ``PSM1`` (the name as written where it is no dVRK arm)."""
    name = arm_topic.strip("/").split("/", 1)[0]
    try:
        return canonical_arm(name)
    except DvrkIdentError:
        return name


def same_arm(a: str, b: str) -> bool:
    """Whether two arm names name the same arm (case and blanks ignored, as canonical_arm reads them)."""
    return a.strip().upper() == b.strip().upper()


def read_player_status(path: Path, arm: str) -> tuple[str, list[tuple[int, PlayerStatusMessage]]]:
    """The status of the player of ``arm`` in a bag: (the topic read, [(log time ns, PlayerStatus)] in log-time
    order); ("", []) when the bag holds none.

    Read from ``arm``'s own topic (``/dvrk_ident/<ARM>/player_status``); in a bag without it (recorded before
    the status topics were per arm), from the global ``/dvrk_ident/player_status``, keeping only the messages
    whose ``arm`` is ``arm``. Other arms' players are never read. Deserialised with the definition the bag
    carries (older bags keep reading when PlayerStatus grows)."""
    from rosbags.rosbag2 import Reader

    from dvrk_ident_ros.data.interfaces import typestore

    try:
        own = player_status_topic(arm)
    except DvrkIdentError:
        own = f"/dvrk_ident/{arm}/player_status"
    statuses: list[tuple[int, PlayerStatusMessage]] = []
    try:
        with Reader(path) as reader:
            by_topic = {c.topic: c for c in reader.connections if c.msgtype == PLAYER_STATUS}
            topic = own if own in by_topic else LEGACY_PLAYER_STATUS_TOPIC if LEGACY_PLAYER_STATUS_TOPIC in \
                by_topic else ""
            if not topic:
                return "", []
            connections = [c for c in reader.connections if c.topic == topic and c.msgtype == PLAYER_STATUS]
            store = bag_typestore(connections)
            if PLAYER_STATUS not in store.types:  # a bag without the definition: the package's own
                store = typestore()
            for connection, stamp, raw in reader.messages(connections=connections):
                msg = store.deserialize_cdr(raw, connection.msgtype)
                if topic == own or same_arm(str(msg.arm), arm):
                    statuses.append((stamp, msg))
    except Exception as exc:  # rosbags raises many types for unreadable bags
        raise DataError(f"{path}: cannot read the player status: {exc}") from exc
    statuses.sort(key=lambda s: s[0])
    return topic, statuses


def playing_windows(path: Path, arm: str | None = None) -> list[tuple[float, float]]:
    """(start, end) log times (s) of each stretch the player of ``arm`` (None: the bag's arm, from its
    ``/<ARM>/measured_js``) reported PLAYING; [] without its status (:func:`read_player_status`).

    A window runs from its first PLAYING status to the first status after it in another phase. Log times
    (when the recorder received each message) put the player's status and the arm's state on one clock,
    whatever clocks their publishers stamp with."""
    arm = arm or arm_of_topic(find_arm_topic(path))
    _, statuses = read_player_status(path, arm)
    windows, start = [], None
    for stamp, msg in statuses:
        t, phase = stamp * 1e-9, int(msg.phase)
        if phase == PlayerPhase.PLAYING and start is None:
            start = t
        elif phase != PlayerPhase.PLAYING and start is not None:
            windows.append((start, t))
            start = None
    if start is not None:  # recording stopped while playing
        windows.append((start, np.inf))
    return windows


def load_bag(path: Path, dvrk_from_motor: np.ndarray, topic: str | None = None, playing_only: bool = True) -> Dataset:
    """Load an arm's recording; ``dvrk_from_motor`` is the arm's A (n x n).

    ``playing_only``: with the status of the arm's own player in the bag, keep the samples of its longest
    PLAYING window (another arm's player never cuts the bag)."""
    path = Path(path)
    topic = topic or find_arm_topic(path)
    states, _, skipped = valid_joint_states(path, topic)
    t, q, qd, tau, logged = states.t, states.position, states.velocity, states.effort, states.logged
    for name, values in (("velocity", qd), ("effort", tau)):
        if np.isnan(values).all():
            raise DataError(f"{path}: {topic} messages carry no {name}")
    source = f"{path}:{topic}"
    arm = arm_of_topic(topic)
    windows = playing_windows(path, arm) if playing_only else []
    if windows:
        start, end = max(windows, key=lambda w: min(w[1], logged.max()) - w[0])
        inside = (logged >= start) & (logged <= end)
        if inside.sum() < 2:
            raise DataError(f"{path}: no {topic} samples while the player was playing ({start:.3f}-{end:.3f} s)")
        t, q, qd, tau = t[inside], q[inside], qd[inside], tau[inside]
        source += f" (the longest of {len(windows)} PLAYING windows of the {arm} player: {len(t)} samples)"
    if skipped:
        source += f"; {skipped}"
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
