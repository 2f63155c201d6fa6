"""Streaming rosbag2 recording of already-serialised messages (ROS-free).

The recorder node hands over the CDR bytes of each message as it arrives with
its receive time; :class:`BagWriter` appends them to a rosbag2 bag (MCAP
storage plus ``metadata.yaml``, written with rosbags in the metadata version
that ``ros2 bag info`` on Jazzy reads), counts messages per topic and counts
inter-arrival gaps of the main topic with :class:`GapCounter`.

Invalid data is left out of the bag: a message of an arm's state topic with
``header.stamp`` 0 (the dVRK's mark: arm off, not homed, faulted; all zeros)
carries nothing, and a bag whose every sample is data needs no reader to know
the convention (``ros2 bag play``, other tools). Such messages are counted per
topic (:attr:`BagWriter.invalid_counts`, ``dvrk_ident.invalid_samples`` in the
metadata's custom_data); the arm's operating_state, recorded beside them, says
when and why the arm was not ready. The loaders skip stamp-0 samples all the
same, for bags of other recorders.
"""
from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dvrk_ident_ros.data.interfaces import cdr_stamp_is_zero
from dvrk_ident_ros.errors import DataError

#: rosbag2 metadata version: what Jazzy writes (rosbags writes 8 or 9).
BAG_VERSION = 9


@dataclass(frozen=True)
class GapStats:
    """Inter-arrival gaps of one stream."""

    count: int  # intervals above the threshold
    max_gap: float  # s, the largest interval seen (0 before two messages)
    threshold: float  # s, 0 while too few intervals to estimate it


class GapCounter:
    """Counts intervals between successive time stamps that exceed a threshold.

    With ``threshold`` 0 the threshold is automatic: ``factor`` times the median
    of the first ``warmup`` intervals (the intervals seen so far until then).
    Time going backwards (a simulated clock restarting) starts a new interval.
    """

    def __init__(self, threshold: float = 0.0, factor: float = 2.5, warmup: int = 1000) -> None:
        if not threshold >= 0.0:
            raise DataError(f"gap threshold {threshold} s: expected a value >= 0 (0 = automatic)")
        self._threshold_ns = round(threshold * 1e9)
        self._factor = factor
        self._warmup = max(1, warmup)
        self._pending: list[int] = []  # intervals (ns) before the automatic threshold is known
        self._last: int | None = None
        self._count = 0
        self._max_ns = 0

    def add(self, stamp_ns: int) -> None:
        """Account for a message received at ``stamp_ns``."""
        last, self._last = self._last, stamp_ns
        if last is None or stamp_ns < last:
            return
        dt = stamp_ns - last
        if dt > self._max_ns:
            self._max_ns = dt
        if self._threshold_ns:
            if dt > self._threshold_ns:
                self._count += 1
            return
        self._pending.append(dt)
        if len(self._pending) >= self._warmup:
            self._threshold_ns = self._automatic_threshold()
            self._count += sum(d > self._threshold_ns for d in self._pending)
            self._pending.clear()

    def _automatic_threshold(self) -> int:
        return max(1, round(self._factor * statistics.median(self._pending)))

    def stats(self) -> GapStats:
        """Gap count, largest interval and threshold so far."""
        threshold, count = self._threshold_ns, self._count
        if not threshold and self._pending:  # provisional, from the intervals seen so far
            threshold = self._automatic_threshold()
            count += sum(d > threshold for d in self._pending)
        return GapStats(count, self._max_ns * 1e-9, threshold * 1e-9)


class BagWriter:
    """A rosbag2 bag (MCAP storage, metadata.yaml) written one serialised message at a time.

    ``topics`` maps topic names to message types (``sensor_msgs/msg/JointState``,
    ``dvrk_ident/msg/PlayerStatus``, ...); a topic's connection is added to the
    bag with its first message, so topics that never published are not in it.
    Gaps are counted on ``main_topic`` (``gap_threshold`` in s, 0 = automatic).
    A message of one of the ``stamped_topics`` (types that start with a std_msgs/Header) with
    ``header.stamp`` 0 is not written, only counted (:attr:`invalid_counts`).
    The bag directory must not exist: a recording is never overwritten.
    """

    def __init__(self, path: Path | str, topics: Mapping[str, str] | None = None, *, main_topic: str | None = None,
                 gap_threshold: float = 0.0, custom_data: Mapping[str, str] | None = None, typestore=None,
                 stamped_topics: Iterable[str] = ()) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.rosbag2.errors import WriterError

        self.path = Path(path)
        if self.path.exists():
            raise DataError(f"{self.path} exists already: not overwriting a recording")
        if typestore is None:
            from dvrk_ident_ros.data.interfaces import typestore as package_typestore

            typestore = package_typestore()
        self._store = typestore
        self._topics: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._connections: dict[str, object] = {}
        for topic, msgtype in (topics or {}).items():
            self.add_topic(topic, msgtype)
        self._invalid: dict[str, int] = {}
        for topic in stamped_topics:
            msgtype = self._topics.get(topic)
            if msgtype is None:
                raise DataError(f"{topic}: a stamped topic that is not recorded")
            fields = self._store.fielddefs[msgtype][1]
            if not fields or fields[0][1][-1] != "std_msgs/msg/Header":
                raise DataError(f"{topic}: {msgtype} does not start with a std_msgs/Header")
            self._invalid[topic] = 0
        self.main_topic = main_topic
        self._gaps = GapCounter(gap_threshold)
        self._custom_data = dict(custom_data or {})
        self._writer_error = WriterError
        writer = Writer(self.path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        try:
            writer.open()
        except (OSError, WriterError) as exc:
            raise DataError(f"{self.path}: cannot create the bag: {exc}") from exc
        self._writer: Writer | None = writer

    def add_topic(self, topic: str, msgtype: str) -> None:
        """Accept messages of ``msgtype`` on ``topic``."""
        if msgtype not in self._store.types:
            raise DataError(f"{topic}: unknown message type {msgtype!r}")
        if self._topics.get(topic, msgtype) != msgtype:
            raise DataError(f"{topic}: already recorded as {self._topics[topic]}, not {msgtype}")
        self._topics[topic] = msgtype
        self._counts.setdefault(topic, 0)

    @property
    def topics(self) -> list[str]:
        return list(self._topics)

    @property
    def counts(self) -> dict[str, int]:
        """Messages written per topic (every accepted topic, 0 if none)."""
        return dict(self._counts)

    @property
    def invalid_counts(self) -> dict[str, int]:
        """Messages of each stamped topic left out for their header.stamp 0."""
        return dict(self._invalid)

    @property
    def closed(self) -> bool:
        return self._writer is None

    def gaps(self) -> GapStats:
        """Inter-arrival gaps of the main topic so far."""
        return self._gaps.stats()

    def write(self, topic: str, data: bytes, stamp_ns: int) -> bool:
        """Append one serialised (CDR) message received at ``stamp_ns`` (ns since the epoch); False (not
        written, counted) for a message of a stamped topic with header.stamp 0."""
        if topic in self._invalid and cdr_stamp_is_zero(data):
            if self._writer is None:
                raise DataError(f"{self.path}: the bag is closed")
            self._invalid[topic] += 1
            return False
        connection = self._connections.get(topic)
        if connection is None:
            connection = self._connect(topic)
        try:
            self._writer.write(connection, stamp_ns, data)
        except (OSError, self._writer_error) as exc:
            raise DataError(f"{self.path}: cannot write {topic}: {exc}") from exc
        self._counts[topic] += 1
        if topic == self.main_topic:
            self._gaps.add(stamp_ns)
        return True

    def _connect(self, topic: str):
        if self._writer is None:
            raise DataError(f"{self.path}: the bag is closed")
        msgtype = self._topics.get(topic)
        if msgtype is None:
            raise DataError(f"{self.path}: topic {topic} was not added to the recording")
        connection = self._writer.add_connection(topic, msgtype, typestore=self._store)
        self._connections[topic] = connection
        return connection

    def close(self) -> None:
        """Finish the MCAP file and write metadata.yaml (gap figures in its custom_data). Idempotent."""
        writer, self._writer = self._writer, None
        self._connections.clear()
        if writer is None:
            return
        gaps = self._gaps.stats()
        custom = {**self._custom_data, "dvrk_ident.gap_topic": self.main_topic or "",
                  "dvrk_ident.gap_count": str(gaps.count), "dvrk_ident.max_gap": f"{gaps.max_gap:.6f}",
                  "dvrk_ident.gap_threshold": f"{gaps.threshold:.6f}",
                  "dvrk_ident.invalid_samples": json.dumps(self._invalid)}
        try:
            for key, value in custom.items():
                writer.set_custom_data(key, str(value))
            writer.close()
        except (OSError, self._writer_error) as exc:
            raise DataError(f"{self.path}: cannot finish the bag: {exc}") from exc

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
