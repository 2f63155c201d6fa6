"""The package's own message definitions for reading and writing bags without ROS.

rosbags (de)serialises messages from their .msg text: the definitions are read
from the package's ``msg/`` directory (source tree or installed share) and
registered with a typestore next to the standard ROS 2 types.
"""
from __future__ import annotations

from functools import lru_cache

from dvrk_ident_ros.environment import find_share_directory
from dvrk_ident_ros.errors import EnvironmentSetupError

PLAYER_STATUS = "dvrk_ident/msg/PlayerStatus"
JOINT_STATE = "sensor_msgs/msg/JointState"
PHASE_PLAYING = 2  # PlayerStatus.PHASE_PLAYING: a Fourier trajectory streaming
PHASE_SAMPLING = 5  # PlayerStatus.PHASE_SAMPLING: a pose-grid sampling window


def stamp_seconds(stamp) -> float:
    """A builtin_interfaces/Time (rclpy's or rosbags') in seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


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
    store.register(types)
    return store
