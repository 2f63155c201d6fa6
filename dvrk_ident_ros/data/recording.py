"""Streaming rosbag2 recording of already-serialised messages (ROS-free).

The recorder node hands over the CDR bytes of each message as it arrives with
its receive time; :class:`BagWriter` appends them to a rosbag2 bag (MCAP
storage plus ``metadata.yaml``, written with rosbags in the metadata version
that the recording distribution's ``ros2 bag info`` reads), counts messages per topic and counts
inter-arrival gaps of the main topic with :class:`GapCounter`.

Invalid data is left out of the bag: a message of an arm's state topic with
``header.stamp`` 0 (the dVRK's mark: arm off, not homed, faulted; all zeros)
carries nothing, and a bag whose every sample is data needs no reader to know
the convention (``ros2 bag play``, other tools). Such messages are counted per
topic (:attr:`BagWriter.invalid_counts`, ``dvrk_ident.invalid_samples`` in the
metadata's custom_data); the arm's operating_state, recorded beside them, says
when and why the arm was not ready. The loaders skip stamp-0 samples all the
same, for bags of other recorders.

What ``ros2 bag info`` shows: the metadata carries the ROS distribution that recorded the bag
(:func:`detect_ros_distro`; rosbags alone would write ``rosbags``) and, per topic, the QoS profiles its
publishers offered (:class:`OfferedQos`, as rosbag2 records them), in the metadata version that
distribution's rosbag2 reads (:func:`bag_version`: 8 up to Humble and Iron, with the profiles as a YAML
string of integer policies; 9 from Jazzy on, a YAML list with the policies named).

A recording made for a trajectory player ends with an outcome: data/outcome.py.
"""
from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dvrk_ident_ros.data.interfaces import cdr_stamp_is_zero
from dvrk_ident_ros.errors import DataError

#: The rosbag2 metadata versions rosbags writes.
BagVersion = Literal[8, 9]
#: rosbag2 metadata version: what Jazzy and Kilted write.
BAG_VERSION: BagVersion = 9
#: The metadata version for the rosbag2 of Humble (it writes 5 and reads the fields it knows of newer versions)
#: and Iron (it writes 8): the QoS profiles must be a YAML string with integer policies, which version 8 is.
HUMBLE_BAG_VERSION: BagVersion = 8
#: Distributions whose rosbag2 reads the QoS profiles only as a string (metadata version 8 or older).
STRING_QOS_DISTROS = frozenset({"foxy", "galactic", "humble", "iron"})
#: rclpy's major version -> the ROS 2 distribution that ships it (where ROS_DISTRO is not set, as in a venv of
#: the ros-* wheels); majors of Rolling between releases are left out: their distribution has no name.
RCLPY_DISTROS = {3: "humble", 4: "iron", 7: "jazzy", 9: "kilted"}


def detect_ros_distro(environ: Mapping[str, str] | None = None) -> str:
    """The ROS 2 distribution a bag records: ``ROS_DISTRO`` (every ROS setup script sets it), else the one
    whose rclpy is installed (its version, read from the package's metadata or its ament ``package.xml``;
    rclpy is not imported), else "" (unknown, as rosbag2 records it without ROS_DISTRO)."""
    environ = os.environ if environ is None else environ
    distro = environ.get("ROS_DISTRO", "").strip().lower()
    if distro:
        return distro
    version = _rclpy_version(environ)
    major = version.split(".")[0] if version else ""
    return RCLPY_DISTROS.get(int(major), "") if major.isdigit() else ""


def _rclpy_version(environ: Mapping[str, str]) -> str:
    from importlib import metadata

    try:
        return metadata.version("rclpy")
    except metadata.PackageNotFoundError:
        pass
    for prefix in environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        manifest = Path(prefix) / "share" / "rclpy" / "package.xml"
        if prefix and manifest.is_file():
            found = re.search(r"<version>\s*([^<\s]+)\s*</version>", manifest.read_text(errors="replace"))
            if found:
                return found.group(1)
    return ""


def bag_version(distro: str) -> BagVersion:
    """The rosbag2 metadata version to write for ``distro``'s ``ros2 bag``: 8 up to Iron, else 9."""
    return HUMBLE_BAG_VERSION if distro in STRING_QOS_DISTROS else BAG_VERSION


#: rmw's infinite duration (sec, nsec), as rosbag2 writes it (RMW_DURATION_INFINITE).
INFINITE = (9223372036, 854775807)


def duration_from_ns(ns: int) -> tuple[int, int]:
    """(sec, nsec) of a duration in ns, as rmw_time_t holds it (rclpy's Infinite: INT64_MAX ns -> INFINITE)."""
    ns = max(0, int(ns))
    return ns // 10**9, ns % 10**9


@dataclass(frozen=True)
class OfferedQos:
    """The QoS profile a publisher offered, as rosbag2 records it per topic. Policies are rmw's integer
    values (rclpy's HistoryPolicy, ReliabilityPolicy, DurabilityPolicy, LivelinessPolicy: the same numbers
    from Humble to Kilted; 3 or 4 is UNKNOWN, what the middleware reports for a policy it does not share,
    e.g. Fast DDS for history), durations (sec, nsec)."""

    history: int = 1  # KEEP_LAST
    depth: int = 10
    reliability: int = 1  # RELIABLE
    durability: int = 2  # VOLATILE
    deadline: tuple[int, int] = (0, 0)  # (0, 0): unspecified
    lifespan: tuple[int, int] = (0, 0)
    liveliness: int = 1  # AUTOMATIC
    liveliness_lease_duration: tuple[int, int] = (0, 0)
    avoid_ros_namespace_conventions: bool = False

    def to_rosbags(self):
        """rosbags' Qos (an unknown policy value becomes UNKNOWN)."""
        from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

        def policy(kind, value: int):
            try:
                return kind(int(value))
            except ValueError:
                return kind.UNKNOWN

        return Qos(policy(QosHistory, self.history), max(0, int(self.depth)),
                   policy(QosReliability, self.reliability), policy(QosDurability, self.durability),
                   QosTime(*self.deadline), QosTime(*self.lifespan), policy(QosLiveliness, self.liveliness),
                   QosTime(*self.liveliness_lease_duration), bool(self.avoid_ros_namespace_conventions))


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


def _set_distro(metadata_yaml: str, distro: str, top: str | None) -> str:
    """``metadata_yaml`` with its ros_distro set (under ``top`` when given), dumped as rosbags dumps it."""
    from io import StringIO

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    data = yaml.load(metadata_yaml)
    (data[top] if top else data)["ros_distro"] = distro
    out = StringIO()
    yaml.dump(data, out)
    return out.getvalue().strip() if top is None else out.getvalue()


def _writer(path: Path, version: BagVersion, distro: str):
    """A rosbags Writer (MCAP) whose metadata (metadata.yaml and the copy inside the MCAP file) names
    ``distro`` as its ros_distro, where rosbags writes "rosbags"."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    class DistroWriter(Writer):
        def close(self) -> None:
            storage = self.storage
            if storage is not None:
                close_storage = storage.close

                def close_with_distro(version: int, metadata: str) -> None:
                    close_storage(version, _set_distro(metadata, distro, None))

                # this bag's storage only: rosbags has no hook for the metadata it writes
                storage.close = close_with_distro  # type: ignore[method-assign]
            super().close()
            tmp = self.metapath.with_suffix(".yaml.tmp")
            tmp.write_text(_set_distro(self.metapath.read_text("utf8"), distro, "rosbag2_bagfile_information"),
                           "utf8")
            tmp.replace(self.metapath)

    return DistroWriter(path, version=version, storage_plugin=StoragePlugin.MCAP)


class BagWriter:
    """A rosbag2 bag (MCAP storage, metadata.yaml) written one serialised message at a time.

    ``topics`` maps topic names to message types (``sensor_msgs/msg/JointState``,
    ``dvrk_ident/msg/PlayerStatus``, ...); a topic's connection is added to the
    bag with its first message, so topics that never published are not in it.
    Gaps are counted on ``main_topic`` (``gap_threshold`` in s, 0 = automatic).
    A message of one of the ``stamped_topics`` (types that start with a std_msgs/Header) with
    ``header.stamp`` 0 is not written, only counted (:attr:`invalid_counts`).
    ``offered_qos(topic)``, asked when a topic's first message arrives, gives the QoS profiles its
    publishers offered (recorded per topic, as rosbag2 does); ``ros_distro`` (None: :func:`detect_ros_distro`)
    is the distribution named in the metadata and sets its version (:func:`bag_version`).
    The bag directory must not exist: a recording is never overwritten.
    """

    def __init__(self, path: Path | str, topics: Mapping[str, str] | None = None, *, main_topic: str | None = None,
                 gap_threshold: float = 0.0, custom_data: Mapping[str, str] | None = None, typestore=None,
                 stamped_topics: Iterable[str] = (), ros_distro: str | None = None,
                 offered_qos: Callable[[str], Sequence[OfferedQos]] | None = None) -> None:
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
            stamped_type = self._topics.get(topic)
            if stamped_type is None:
                raise DataError(f"{topic}: a stamped topic that is not recorded")
            fields = self._store.fielddefs[stamped_type][1]
            if not fields or fields[0][1][-1] != "std_msgs/msg/Header":
                raise DataError(f"{topic}: {stamped_type} does not start with a std_msgs/Header")
            self._invalid[topic] = 0
        self.main_topic = main_topic
        self._gaps = GapCounter(gap_threshold)
        self._custom_data = dict(custom_data or {})
        self._offered_qos = offered_qos
        self.ros_distro = detect_ros_distro() if ros_distro is None else ros_distro
        self.version = bag_version(self.ros_distro)
        self._writer_error = WriterError
        writer = _writer(self.path, self.version, self.ros_distro)
        try:
            writer.open()
        except (OSError, WriterError) as exc:
            raise DataError(f"{self.path}: cannot create the bag: {exc}") from exc
        self._writer = writer
        self._open = True
        self._files: list[str] = []  # the storage files of the bag (metadata.yaml's relative_file_paths)

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
        return not self._open

    def gaps(self) -> GapStats:
        """Inter-arrival gaps of the main topic so far."""
        return self._gaps.stats()

    def write(self, topic: str, data: bytes, stamp_ns: int) -> bool:
        """Append one serialised (CDR) message received at ``stamp_ns`` (ns since the epoch); False (not
        written, counted) for a message of a stamped topic with header.stamp 0."""
        if topic in self._invalid and cdr_stamp_is_zero(data):
            if not self._open:
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
        if not self._open:
            raise DataError(f"{self.path}: the bag is closed")
        msgtype = self._topics.get(topic)
        if msgtype is None:
            raise DataError(f"{self.path}: topic {topic} was not added to the recording")
        profiles = [qos.to_rosbags() for qos in self._offered_qos(topic)] if self._offered_qos else []
        connection = self._writer.add_connection(topic, msgtype, typestore=self._store,
                                                 offered_qos_profiles=profiles)
        self._connections[topic] = connection
        return connection

    def close(self, custom_data: Mapping[str, str] | None = None) -> None:
        """Finish the MCAP file and write metadata.yaml (gap figures and ``custom_data`` in its custom_data).
        Idempotent."""
        if not self._open:
            return
        self._open = False
        writer = self._writer
        self._connections.clear()
        gaps = self._gaps.stats()
        custom = {**self._custom_data, "dvrk_ident.gap_topic": self.main_topic or "",
                  "dvrk_ident.gap_count": str(gaps.count), "dvrk_ident.max_gap": f"{gaps.max_gap:.6f}",
                  "dvrk_ident.gap_threshold": f"{gaps.threshold:.6f}",
                  "dvrk_ident.invalid_samples": json.dumps(self._invalid), **(custom_data or {})}
        try:
            for key, value in custom.items():
                writer.set_custom_data(key, str(value))
            self._files = [Path(writer.storage.path).name] if writer.storage is not None else []
            writer.close()
        except (OSError, self._writer_error) as exc:
            raise DataError(f"{self.path}: cannot finish the bag: {exc}") from exc

    def rename(self, suffix: str) -> Path:
        """Move the closed bag to its name + ``suffix`` (``-2``, ``-3``... after it where that exists); the
        new path."""
        if self._open:
            raise DataError(f"{self.path}: close the bag before renaming it")
        target = self.path.with_name(self.path.name + suffix)
        k = 2
        while target.exists():
            target = self.path.with_name(f"{self.path.name}{suffix}-{k}")
            k += 1
        try:
            self.path.rename(target)
        except OSError as exc:
            raise DataError(f"{self.path}: cannot rename to {target.name}: {exc}") from exc
        self.path = target
        return target

    def remove(self) -> list[str]:
        """Delete the closed bag: its metadata.yaml, its storage file and its directory. Nothing else is
        touched; the names of files another program put there are returned (the directory then stays)."""
        if self._open:
            raise DataError(f"{self.path}: close the bag before removing it")
        for name in ["metadata.yaml", *self._files]:
            (self.path / name).unlink(missing_ok=True)
        left = sorted(p.name for p in self.path.iterdir()) if self.path.is_dir() else []
        if not left and self.path.is_dir():
            self.path.rmdir()
        return left

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
