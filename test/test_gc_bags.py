"""Pose-grid bags as the player and recorder write them load into averaged poses."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.data.interfaces import JOINT_STATE, PLAYER_STATUS, typestore
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import save_grid
from dvrk_ident_ros.gc.data import load_poses


def _grid(tmp_path):
    sweeps = []
    for joint, aux in ((6, 0.3), (6, -0.3)):
        for direction in ("positive", "negative"):
            poses = np.zeros((4, 7))
            poses[:, joint - 1] = np.linspace(-0.5, 0.5, 4)[:: 1 if direction == "positive" else -1]
            poses[:, 4] = aux
            sweeps.append({"estimated_joint": joint, "auxiliary_joint": 5, "auxiliary_value": aux,
                           "direction": direction, "poses": poses.tolist()})
    return save_grid(tmp_path / "grid.yaml", {"arm": "MTML", "coordinates": "dvrk", "units": "rad",
                                              "settle_time": 0.1, "samples_per_pose": 5, "sweeps": sweeps})


def _write_bag(path, grid_path, poses, skip_pose=None):
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore()
    Status, JointState = store.types[PLAYER_STATUS], store.types[JOINT_STATE]
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]

    def header(t):
        return Header(stamp=Time(sec=int(t), nanosec=int((t - int(t)) * 1e9)), frame_id="")

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        cs = w.add_connection("/dvrk_ident/player_status", PLAYER_STATUS, typestore=store)
        cj = w.add_connection("/MTML/measured_js", JOINT_STATE, typestore=store)
        t = 10.0
        rng = np.random.default_rng(0)
        for index, q in enumerate(poses):
            for phase, count in ((3, 3), (5, 5)):  # moving, then sampling
                msg = Status(header=header(t), arm="MTML", trajectory_file=str(grid_path), phase=phase,
                             progress=0.0, pose_index=index, pose_count=len(poses), direction=1)
                w.write(cs, int(t * 1e9), store.serialize_cdr(msg, PLAYER_STATUS))
                for _ in range(count):
                    t += 0.01
                    if phase == 5 and index == skip_pose:
                        continue
                    effort = 0.1 * np.sin(q) + 0.001 * rng.normal(size=7)
                    js = JointState(header=header(t), name=[f"j{i}" for i in range(7)], position=q.astype(float),
                                    velocity=np.zeros(7), effort=effort)
                    w.write(cj, int(t * 1e9), store.serialize_cdr(js, JOINT_STATE))
    return path


def test_pose_bag_loads_averaged_poses(tmp_path):
    grid_path = _grid(tmp_path)
    import yaml

    grid = yaml.safe_load(grid_path.read_text())
    poses = np.array([p for s in grid["sweeps"] for p in s["poses"]])
    data = load_poses(_write_bag(tmp_path / "bag", grid_path, poses, skip_pose=5))
    assert len(data.q) == len(poses) - 1 and data.dropped == 1
    assert np.allclose(data.q, np.delete(poses, 5, axis=0))
    assert np.allclose(data.tau, 0.1 * np.sin(data.q), atol=0.003)
    assert set(data.joint) == {6}
    assert list(data.direction[:4]) == [1, 1, 1, 1] and list(data.direction[4:7]) == [-1, -1, -1]
    assert set(np.round(data.auxiliary, 6)) == {0.3, -0.3}


def test_bag_without_player_status_is_refused(tmp_path):
    from dvrk_ident_ros.data.bags import write_joint_state_bag

    t = np.arange(5) * 0.01
    bag = write_joint_state_bag(tmp_path / "bag", {"/MTML/measured_js": (t, np.zeros((5, 7)), np.zeros((5, 7)),
                                                                         np.zeros((5, 7)))})
    with pytest.raises(DataError, match="not a pose-grid recording"):
        load_poses(bag)
