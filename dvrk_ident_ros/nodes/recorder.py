"""recorder: an arm's joint states and the player's status into a rosbag2 bag (MCAP + metadata.yaml).

Subscriptions are raw: the serialised bytes go to :class:`~dvrk_ident_ros.data.recording.BagWriter`
with their receive time (the node clock, so use_sim_time works; wall time while
that clock reads 0), nothing is deserialised on the hot path. The status
(counts, inter-arrival gaps of ``measured_js``) is published on
``/dvrk_ident/recorder_status`` about once a second; SIGINT finalises the bag.

Parameters: ``arm`` (PSM1), ``bag_path`` ("" = ``<output_directory>/<arm>-<YYYYmmdd-HHMMSS>``),
``output_directory`` (recordings), ``record_setpoint`` (true), ``gap_threshold`` (s, 0 = 2.5 x the
median period), ``extra_topics`` (more JointState topics). A bag that exists is never overwritten.
"""
from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

from rclpy.exceptions import InvalidTopicNameException
from rclpy.node import Node
from sensor_msgs.msg import JointState

from dvrk_ident.msg import PlayerStatus, RecorderStatus
from dvrk_ident_ros.data.interfaces import JOINT_STATE, PLAYER_STATUS
from dvrk_ident_ros.data.recording import BagWriter
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.nodes.common import STATE_QOS, check_arm_name, declare, guarded, run

PLAYER_STATUS_TOPIC = "/dvrk_ident/player_status"
STATUS_TOPIC = "/dvrk_ident/recorder_status"
_MSG_CLASSES = {JOINT_STATE: JointState, PLAYER_STATUS: PlayerStatus}


def recorded_topics(arm: str, record_setpoint: bool = True, extra_topics: list[str] | None = None) -> dict[str, str]:
    """Topic -> message type recorded for ``arm``: measured (and setpoint) joint states with the
    PSM jaw or MTM gripper, the player's status and ``extra_topics`` (JointState)."""
    kinds = ["measured_js", "setpoint_js"] if record_setpoint else ["measured_js"]
    prefixes = [f"/{arm}/"]
    if arm.startswith("PSM"):
        prefixes.append(f"/{arm}/jaw/")
    topics = {f"{prefix}{kind}": JOINT_STATE for prefix in prefixes for kind in kinds}
    if arm.startswith("MTM"):
        topics[f"/{arm}/gripper/measured_js"] = JOINT_STATE
    topics[PLAYER_STATUS_TOPIC] = PLAYER_STATUS
    for topic in extra_topics or []:
        topics.setdefault(topic if topic.startswith("/") else f"/{topic}", JOINT_STATE)
    return topics


class Recorder(Node):
    """Records the topics of :func:`recorded_topics` until SIGINT; :meth:`close` finalises the bag."""

    def __init__(self) -> None:
        super().__init__("recorder")
        self._closing = False
        self._bag: BagWriter | None = None
        arm = check_arm_name(declare(self, "arm", "PSM1"))
        bag_path = declare(self, "bag_path", "")
        output_directory = declare(self, "output_directory", "recordings")
        record_setpoint = declare(self, "record_setpoint", True)
        gap_threshold = declare(self, "gap_threshold", 0.0)
        extra_topics = declare(self, "extra_topics", [], items=str)
        if gap_threshold < 0:
            raise DvrkIdentError(f"gap_threshold {gap_threshold}: expected seconds >= 0 (0 = automatic)")
        if not bag_path:
            bag_path = str(Path(output_directory) / f"{arm}-{datetime.now():%Y%m%d-%H%M%S}")
        bag_path = Path(bag_path).expanduser().absolute()
        topics = recorded_topics(arm, record_setpoint, extra_topics)
        self._clock = self.get_clock()
        for topic, msgtype in topics.items():  # before the bag exists: a bad topic name leaves no directory
            try:
                self.create_subscription(_MSG_CLASSES[msgtype], topic, self._callback(topic), STATE_QOS, raw=True)
            except InvalidTopicNameException as exc:
                raise DvrkIdentError(f"extra_topics: invalid topic name {topic!r}: {exc}") from exc
        self._bag = BagWriter(bag_path, topics, main_topic=f"/{arm}/measured_js", gap_threshold=gap_threshold,
                              custom_data={"dvrk_ident.arm": arm})
        self._status = self.create_publisher(RecorderStatus, STATUS_TOPIC, 10)
        self._timer = self.create_timer(1.0, guarded(self, "status", self._publish_status))
        self.get_logger().info(f"recording {len(topics)} topics to {self._bag.path}: {', '.join(topics)}")

    def _callback(self, topic: str):
        write = self._write

        def on_message(data: bytes) -> None:
            write(topic, data)

        return guarded(self, topic, on_message)

    def _write(self, topic: str, data: bytes) -> None:
        stamp = self._clock.now().nanoseconds or time.time_ns()
        self._bag.write(topic, data, stamp)  # signals only set a flag (common.run): never cut mid-write

    def _status_message(self, recording: bool) -> RecorderStatus:
        counts = self._bag.counts
        gaps = self._bag.gaps()
        msg = RecorderStatus(recording=recording, bag_path=str(self._bag.path), topics=list(counts),
                             message_counts=list(counts.values()), gap_count=gaps.count, max_gap=gaps.max_gap)
        msg.header.stamp = self._clock.now().to_msg()
        return msg

    def _publish_status(self) -> None:
        self._status.publish(self._status_message(recording=True))

    def close(self) -> None:
        """Finalise the bag, publish a last status (recording false) and log the figures. Idempotent."""
        self._closing = True
        if self._bag is None or self._bag.closed:
            return
        self._timer.cancel()
        try:
            self._bag.close()
        finally:
            gaps = self._bag.gaps()
            counts = ", ".join(f"{topic} {n}" for topic, n in self._bag.counts.items() if n)
            self.get_logger().info(
                f"closed {self._bag.path}: {counts or 'no messages'}; {self._bag.main_topic}: {gaps.count} gaps "
                f"over {gaps.threshold * 1e3:.2f} ms, largest interval {gaps.max_gap * 1e3:.2f} ms")
            try:
                self._status.publish(self._status_message(recording=False))
            except Exception as exc:  # noqa: BLE001 - the context may be gone; the bag is what matters
                self.get_logger().warning(f"last status not published: {exc}")


def main(args: list[str] | None = None) -> int:
    return run(Recorder, args)


if __name__ == "__main__":
    sys.exit(main())
