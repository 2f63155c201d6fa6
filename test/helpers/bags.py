"""Synthetic rosbag2 bags for the loader tests, written with rosbags as the recorder writes them (MCAP,
metadata version 9), from events [(log time s, topic, message type, message)]."""
from __future__ import annotations

from pathlib import Path

from dvrk_ident_ros.arm.player_phase import PlayerPhase


def header(x: float):
    """A std_msgs/Header stamped ``x`` seconds (0.0: the dVRK's mark of invalid data)."""
    from dvrk_ident_ros.data.interfaces import typestore

    store = typestore()
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    return Header(stamp=Time(sec=int(x), nanosec=round((x - int(x)) * 1e9)), frame_id="")


def player_status(x: float, arm: str, phase: PlayerPhase, trajectory_file: str = "t.yaml", pose_index: int = 0,
                  pose_count: int = 0, direction: int = 0):
    """A dvrk_ident/msg/PlayerStatus of ``arm``'s player, stamped ``x``."""
    from dvrk_ident_ros.data.interfaces import PLAYER_STATUS, typestore

    return typestore().types[PLAYER_STATUS](header=header(x), arm=arm, trajectory_file=trajectory_file, phase=phase,
                                            progress=0.0, pose_index=pose_index, pose_count=pose_count,
                                            direction=direction)


def write_events(path: Path, events) -> Path:
    """A bag of [(log time s, topic, msgtype, message)], written in log-time order (stable: events of one
    time keep their order); a topic's connection is added with its first message."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    from dvrk_ident_ros.data.interfaces import typestore

    store = typestore()
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for x, topic, msgtype, msg in sorted(events, key=lambda e: e[0]):
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=store)
            writer.write(connections[topic], round(x * 1e9), store.serialize_cdr(msg, msgtype))
    return path
