"""recorder: an arm's joint states, its operating state and its player's status into a rosbag2 bag
(MCAP + metadata.yaml).

Subscriptions are raw: the serialised bytes go to :class:`~dvrk_ident_ros.data.recording.BagWriter`
with their receive time (the node clock, so use_sim_time works; wall time while
that clock reads 0), nothing is deserialised on the hot path. The arm's
``/<ARM>/operating_state`` (crtk_msgs, transient_local) is recorded too, so a
bag says when the arm was ready; where crtk_msgs is absent it is left out (one
log line). Samples of the arm's JointState topics with ``header.stamp`` 0 (the
dVRK's mark of invalid data: arm off, not homed, faulted) are not written, only
counted: see :mod:`dvrk_ident_ros.data.recording` for why. The status (counts
written and left out, inter-arrival gaps of ``measured_js``, the arm's state)
is published on ``/dvrk_ident/<ARM>/recorder_status`` about once a second; SIGINT
finalises the bag.

Arms side by side: the recorder of an arm records only the status of that arm's
player (``/dvrk_ident/<ARM>/player_status``) and publishes on its own arm's topic.
Each topic's offered QoS profiles (its publishers', read from the ROS graph when
its first message arrives; the subscription's own where none is listed) and the
ROS distribution are in the bag's metadata, as ``ros2 bag record`` writes them.

When the bag closes, its outcome (:func:`~dvrk_ident_ros.data.recording.recording_outcome`)
follows the arm's player: complete (kept as named); the player aborted (renamed
``<bag>-FAILED``); stopped while it was still running (``<bag>-INCOMPLETE``);
with ``expect_player`` and the player never moved the arm (it exited on a
missing file, the arm was never ready), the bag holds no run and is removed; a
run that moved the arm and aborted before its data (paused during its ramp-in)
is kept as failed. Without ``expect_player`` and without any player status the bag
is kept as it is (the recorder alone, e.g. teleoperation). The outcome is in
the exit log line, the last status (``outcome``) and the metadata's custom_data
(``dvrk_ident.outcome``, ``dvrk_ident.outcome_reason``).

Parameters: ``arm`` (PSM1), ``bag_path`` ("" = ``<output_directory>/<arm>-<YYYYmmdd-HHMMSS>``),
``output_directory`` (recordings), ``record_setpoint`` (true), ``gap_threshold`` (s, 0 = 2.5 x the
median period), ``extra_topics`` (more JointState topics), ``expect_player`` (false; collect.launch.py:
true). A bag that exists is never overwritten.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from rclpy.exceptions import InvalidTopicNameException
from rclpy.node import Node
from sensor_msgs.msg import JointState

from dvrk_ident.msg import PlayerStatus, RecorderStatus
from dvrk_ident_ros.arm.registry import arm_spec, player_status_topic, recorder_status_topic
from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.data.interfaces import JOINT_STATE, OPERATING_STATE, PLAYER_STATUS, typestore
from dvrk_ident_ros.data.outcome import Outcome, PlayerRuns, recording_outcome
from dvrk_ident_ros.data.recording import BagWriter, OfferedQos, duration_from_ns
from dvrk_ident_ros.errors import DataError, DvrkIdentError
from dvrk_ident_ros.parameters.recorder import SCHEMA
from dvrk_ident_ros.parameters.settings import RecorderSettings
from dvrk_ident_ros.ros.messages import check_arm_name, crtk_messages
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import guarded, run
from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS, STATUS_QOS


def recorded_topics(arm: str, record_setpoint: bool = True, extra_topics: Sequence[str] | None = None,
                    operating_state: bool = True) -> dict[str, str]:
    """Topic -> message type recorded for ``arm``: measured (and setpoint) joint states with the
    PSM jaw or MTM gripper, the arm's operating state (where crtk_msgs is available), the status of
    the arm's own player and ``extra_topics`` (JointState)."""
    kinds = ["measured_js", "setpoint_js"] if record_setpoint else ["measured_js"]
    spec = arm_spec(arm)  # the arm's jaw and gripper topics (the arm registry)
    topics = {f"{prefix}{kind}": JOINT_STATE for prefix in spec.state_prefixes(arm) for kind in kinds}
    for topic in spec.extra_state_topics(arm):
        topics[topic] = JOINT_STATE
    if operating_state:
        topics[f"/{arm}/operating_state"] = OPERATING_STATE
    topics[player_status_topic(arm)] = PLAYER_STATUS
    for topic in extra_topics or []:
        topics.setdefault(topic if topic.startswith("/") else f"/{topic}", JOINT_STATE)
    return topics


def offered_qos(profile) -> OfferedQos:
    """An rclpy QoSProfile as the bag records it (rmw's policy numbers, durations as (sec, nsec))."""
    def duration(value) -> tuple[int, int]:
        return duration_from_ns(getattr(value, "nanoseconds", 0))

    return OfferedQos(int(profile.history), int(profile.depth), int(profile.reliability), int(profile.durability),
                      duration(profile.deadline), duration(profile.lifespan), int(profile.liveliness),
                      duration(profile.liveliness_lease_duration), bool(profile.avoid_ros_namespace_conventions))


#: Messages held for the first /clock at most (about 3 s of a 1 kHz arm's topics): a recorder on sim time
#: with no /clock must not grow without bound.
MAX_BEFORE_CLOCK = 10_000


def stamped_topics(arm: str, topics: dict[str, str]) -> list[str]:
    """The arm's JointState topics (``/<ARM>/...``): the dVRK marks their invalid samples with stamp 0."""
    return [topic for topic, msgtype in topics.items() if msgtype == JOINT_STATE and topic.startswith(f"/{arm}/")]


class Recorder(Node):
    """Records the topics of :func:`recorded_topics` until SIGINT; :meth:`close` finalises the bag."""

    def __init__(self) -> None:
        super().__init__("recorder")
        self._bag: BagWriter | None = None
        self._outcome: Outcome | None = None
        params = declare_parameters(self, SCHEMA)  # types and ranges checked there (gap_threshold >= 0)
        settings = RecorderSettings.from_values(params)
        arm = check_arm_name(settings.arm)
        bag_path = settings.bag_path
        output_directory = settings.output_directory
        record_setpoint = settings.record_setpoint
        gap_threshold = settings.gap_threshold
        extra_topics = settings.extra_topics
        self._expect_player = settings.expect_player
        if not bag_path:
            bag_path = str(Path(output_directory) / f"{arm}-{datetime.now():%Y%m%d-%H%M%S}")
        bag_directory = Path(bag_path).expanduser().absolute()
        self._arm = arm
        self._state_topic = f"/{arm}/operating_state"
        self._player_topic = player_status_topic(arm)
        self._player = PlayerRuns()
        self._arm_status: OperatingStatus | None = None
        crtk = crtk_messages()
        has_state = crtk is not None and OPERATING_STATE in typestore().types
        if not has_state:
            self.get_logger().warning(f"crtk_msgs (its OperatingState) is not installed: {self._state_topic} is "
                                      "not recorded (the bag will not say when the arm was ready; stamp-0 samples "
                                      "are still left out)")
        topics = recorded_topics(arm, record_setpoint, extra_topics, operating_state=has_state)
        classes = {JOINT_STATE: JointState, PLAYER_STATUS: PlayerStatus}
        if has_state:
            classes[OPERATING_STATE] = crtk.OperatingState
            self._state_class = crtk.OperatingState
        self._ros_clock = self.get_clock()
        self._before_clock: list[tuple[str, bytes]] = []  # sim time: received before the first /clock
        self._wall_clock_only = False  # sim time and no /clock came: the bag's one clock is the wall clock
        self._requested_qos = {}
        for topic, msgtype in topics.items():  # before the bag exists: a bad topic name leaves no directory
            qos = EVENT_QOS if msgtype == OPERATING_STATE else STATUS_QOS if msgtype == PLAYER_STATUS else STATE_QOS
            try:
                self.create_subscription(classes[msgtype], topic, self._callback(topic), qos, raw=True)
            except InvalidTopicNameException as exc:
                raise DvrkIdentError(f"extra_topics: invalid topic name {topic!r}: {exc}") from exc
            self._requested_qos[topic] = qos
        self._bag = BagWriter(bag_directory, topics, main_topic=f"/{arm}/measured_js", gap_threshold=gap_threshold,
                              custom_data={"dvrk_ident.arm": arm,
                                           "dvrk_ident.expect_player": str(self._expect_player).lower()},
                              stamped_topics=stamped_topics(arm, topics), offered_qos=self._offered_qos)
        self._status = self.create_publisher(RecorderStatus, recorder_status_topic(arm), 10)
        self._timer = self.create_timer(1.0, guarded(self, "status", self._publish_status))
        self.get_logger().info(
            f"recording {len(topics)} topics to {self._bag.path} (rosbag2 metadata version {self._bag.version}, "
            f"ros_distro {self._bag.ros_distro or 'unknown'}"
            + (f"; expecting the {arm} player: a bag without its data is not kept" if self._expect_player else "")
            + f"): {', '.join(topics)}")

    @property
    def bag(self) -> BagWriter:
        """The bag being written (created at the end of ``__init__``)."""
        if self._bag is None:
            raise DvrkIdentError("the recorder has no bag: its start failed")
        return self._bag

    def _offered_qos(self, topic: str) -> list[OfferedQos]:
        """The QoS profiles the topic's publishers offer (as ``ros2 bag record`` records them); where the graph
        lists none (yet), the profile this recorder's subscription requested."""
        try:
            profiles = [offered_qos(info.qos_profile) for info in self.get_publishers_info_by_topic(topic)]
        except Exception as exc:  # noqa: BLE001 - a graph query must never stop the recording
            self.get_logger().warning(f"{topic}: offered QoS not read ({exc}): recording the subscription's")
            profiles = []
        return profiles or [offered_qos(self._requested_qos[topic])]

    def _callback(self, topic: str):
        write = self._write
        if topic == self._state_topic:
            def on_state(data: bytes) -> None:
                write(topic, data)
                self._log_state(data)

            return guarded(self, topic, on_state)
        if topic == self._player_topic:
            def on_player(data: bytes) -> None:
                write(topic, data)
                self._follow_player(data)

            return guarded(self, topic, on_player)

        def on_message(data: bytes) -> None:
            write(topic, data)

        return guarded(self, topic, on_message)

    def _write(self, topic: str, data: bytes) -> None:
        """Writes at the node's clock. With sim time, messages that arrive before the first /clock (the
        arm's latched operating_state) wait for it and are written at its time, so one bag has one clock;
        if :data:`MAX_BEFORE_CLOCK` of them wait (no /clock is coming), the whole bag takes the wall clock."""
        stamp = time.time_ns() if self._wall_clock_only else self._ros_clock.now().nanoseconds
        if not stamp:
            self._before_clock.append((topic, data))
            if len(self._before_clock) < MAX_BEFORE_CLOCK:
                return
            self.get_logger().warning(f"no /clock after {MAX_BEFORE_CLOCK} messages (use_sim_time): the bag is "
                                      "written at the wall clock's time")
            self._wall_clock_only = True
            stamp = time.time_ns()
            self._before_clock.pop()
        if self._before_clock:
            self._write_waiting(stamp)
        self.bag.write(topic, data, stamp)  # signals only set a flag (common.run): never cut mid-write

    def _write_waiting(self, stamp: int) -> None:
        """The messages that arrived before the clock started, at ``stamp``."""
        waiting, self._before_clock = self._before_clock, []
        for topic, data in waiting:
            self.bag.write(topic, data, stamp)

    def _log_state(self, data: bytes) -> None:
        """One log line per change of the arm's operating state (a few messages per session)."""
        from rclpy.serialization import deserialize_message

        msg = deserialize_message(data, self._state_class)
        status = OperatingStatus(str(msg.state), bool(msg.is_homed), bool(msg.is_busy))
        if status != self._arm_status:
            self._arm_status = status
            reason = status.not_ready_reason(self._arm)
            self.get_logger().info(f"{self._arm}: {status.describe()}"
                                   + (f" ({reason}; its stamp-0 samples are not recorded)" if reason else ""))

    def _follow_player(self, data: bytes) -> None:
        """The phases of the arm's player (about 50 messages a second while it plays): the bag's outcome."""
        from rclpy.serialization import deserialize_message

        self._player.add(deserialize_message(data, PlayerStatus).phase)

    def _status_message(self, recording: bool) -> RecorderStatus:
        bag = self.bag
        counts = bag.counts
        invalid = bag.invalid_counts
        gaps = bag.gaps()
        outcome = self._outcome
        path = "" if outcome is not None and not outcome.keep else str(bag.path)
        msg = RecorderStatus(recording=recording, bag_path=path, topics=list(counts),
                             message_counts=list(counts.values()),
                             invalid_counts=[invalid.get(topic, 0) for topic in counts],
                             gap_count=gaps.count, max_gap=gaps.max_gap,
                             operating_state=self._arm_status.describe() if self._arm_status else "",
                             outcome=outcome.kind if outcome is not None else "")
        msg.header.stamp = self._ros_clock.now().to_msg()
        return msg

    def _publish_status(self) -> None:
        self._status.publish(self._status_message(recording=True))

    def close(self) -> None:
        """Finalise the bag with its outcome (kept, renamed or removed: see the module), publish a last status
        (recording false) and log the figures. Idempotent."""
        if self._bag is None or self._bag.closed:
            return
        self._timer.cancel()
        bag = self._bag
        if self._before_clock:  # sim time and no /clock ever came: the bag's only clock is the wall clock
            self.get_logger().warning(f"no /clock received (use_sim_time): {len(self._before_clock)} message(s) "
                                      "written at the wall clock's time")
            self._write_waiting(time.time_ns())
        outcome = recording_outcome(self._player, self._expect_player, self._arm)
        try:
            bag.close({"dvrk_ident.outcome": outcome.kind, "dvrk_ident.outcome_reason": outcome.reason})
        finally:
            gaps = bag.gaps()
            counts = ", ".join(f"{topic} {n}" for topic, n in bag.counts.items() if n)
            invalid = ", ".join(f"{topic} {n}" for topic, n in bag.invalid_counts.items() if n)
            self.get_logger().info(
                f"closed {bag.path}: {counts or 'no messages'}; not recorded (header.stamp 0, arm not "
                f"ready): {invalid or 'none'}; {bag.main_topic}: {gaps.count} gaps "
                f"over {gaps.threshold * 1e3:.2f} ms, largest interval {gaps.max_gap * 1e3:.2f} ms")
        self._outcome = outcome
        self._finish(outcome)
        try:
            self._status.publish(self._status_message(recording=False))
        except Exception as exc:  # noqa: BLE001 - the context may be gone; the bag is what matters
            self.get_logger().warning(f"last status not published: {exc}")

    def _finish(self, outcome: Outcome) -> None:
        """Rename or remove the closed bag as its outcome says, with one log line saying what and why."""
        bag, log = self.bag, self.get_logger()
        try:
            if not outcome.keep:
                left = bag.remove()
                if left:
                    log.warning(f"bag {outcome.kind}: {outcome.reason}; its files removed, {bag.path} kept for the "
                                f"files another program put there: {', '.join(left)}")
                else:
                    log.warning(f"bag {outcome.kind}: {outcome.reason}; removed {bag.path}")
            elif outcome.suffix:
                old = bag.path
                bag.rename(outcome.suffix)
                log.warning(f"bag {outcome.kind}: {outcome.reason}; renamed {old} to {bag.path}")
            else:
                log.info(f"bag {outcome.kind}: {outcome.reason}: {bag.path}")
        except (DataError, OSError) as exc:
            log.error(f"bag {outcome.kind} ({outcome.reason}), but it stays at {bag.path}: {exc}")


def main(args: list[str] | None = None) -> int:
    return run(Recorder, args)


if __name__ == "__main__":
    sys.exit(main())
