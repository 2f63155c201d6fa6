"""The package's own message definitions for reading and writing bags without ROS.

rosbags (de)serialises messages from their .msg text: the definitions are read
from the package's ``msg/`` directory (source tree or installed share) and
registered with a typestore next to the standard ROS 2 types, with the dVRK's
``crtk_msgs/msg/OperatingState`` where crtk_msgs is installed (its .msg file,
else its Python message class): a bag then carries the installed definition.
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from dvrk_ident_ros.environment import find_share_directory
from dvrk_ident_ros.errors import EnvironmentSetupError

PLAYER_STATUS = "dvrk_ident/msg/PlayerStatus"
JOINT_STATE = "sensor_msgs/msg/JointState"
OPERATING_STATE = "crtk_msgs/msg/OperatingState"


class Stamp(Protocol):
    """A builtin_interfaces/Time, rclpy's or rosbags'."""

    sec: int
    nanosec: int


class Header(Protocol):
    """A std_msgs/Header, rclpy's or rosbags'."""

    stamp: Stamp
    frame_id: str


class PlayerStatusMessage(Protocol):
    """A dvrk_ident/msg/PlayerStatus (msg/PlayerStatus.msg) as rosbags deserialises it."""

    header: Header
    arm: str
    trajectory_file: str
    phase: int
    progress: float
    pose_index: int
    pose_count: int
    direction: int


def stamp_seconds(stamp: Stamp) -> float:
    """A builtin_interfaces/Time (rclpy's or rosbags') in seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def cdr_stamp_is_zero(data: bytes | memoryview) -> bool:
    """True when a serialised message that starts with a std_msgs/Header has ``header.stamp`` 0 (the
    dVRK's mark of invalid data), read without deserialising: after the 4-byte CDR encapsulation
    header come ``stamp.sec`` (int32) and ``stamp.nanosec`` (uint32); zero is zero in either byte order."""
    return len(data) >= 12 and not any(data[4:12])


_ROSIDL_TYPES = {"boolean": "bool", "octet": "byte"}


def crtk_definition(name: str = "OperatingState") -> str | None:
    """The installed ``crtk_msgs/msg/<name>`` definition (.msg text); None where crtk_msgs is absent.

    Read from ``share/crtk_msgs/msg/<name>.msg`` of this prefix or of AMENT_PREFIX_PATH, else built from
    the Python message class's fields (scalars, strings and std_msgs/Header, which is all crtk uses)."""
    for prefix in [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]:
        path = Path(prefix) / "share" / "crtk_msgs" / "msg" / f"{name}.msg"
        if prefix and path.is_file():
            return path.read_text()
    try:
        from crtk_msgs import msg as crtk
    except ImportError:
        return None
    cls = getattr(crtk, name, None)
    if cls is None:
        return None
    return "".join(f"{_ROSIDL_TYPES.get(kind, kind)} {field}\n"
                   for field, kind in cls.get_fields_and_field_types().items())


@lru_cache(maxsize=1)
def typestore():
    """A Jazzy typestore with dvrk_ident's messages registered."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    share = find_share_directory()
    msg_dir = share / "msg" if share is not None else None
    if msg_dir is None or not msg_dir.is_dir():
        raise EnvironmentSetupError("cannot find dvrk_ident's msg/ directory (is the package installed?)")
    types = {}
    for path in sorted(msg_dir.glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(), f"dvrk_ident/msg/{path.stem}"))
    crtk = crtk_definition()
    if crtk is not None:
        types.update(get_types_from_msg(crtk, OPERATING_STATE))
    store.register(types)
    return store


def bag_typestore(connections):
    """A Jazzy typestore that reads the given bag connections: their own definitions (the bag's schema)
    registered for every type the standard store lacks; None for a connection without one."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    for connection in connections:
        msgdef = getattr(connection.msgdef, "data", "")
        if connection.msgtype not in store.types and msgdef:
            types.update(get_types_from_msg(msgdef, connection.msgtype))
    if types:
        store.register(types)
    return store
