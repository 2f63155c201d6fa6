"""rosbag2 recordings (MCAP, as the recorder writes them) load into motor space."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.data.bags import write_joint_state_bag
from dvrk_ident_ros.data.loaders import load_dataset
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.description import load_description


def _signals(rng, n, joints):
    t = 1000.0 + np.arange(n) / 200.0
    return t, rng.normal(size=(n, joints)), rng.normal(size=(n, joints)), rng.normal(size=(n, joints))


def test_psm_bag_with_separate_jaw_converts_to_motor_space(tmp_path):
    A = load_description("psm").dvrk_from_motor
    rng = np.random.default_rng(0)
    t, q, qd, tau = _signals(rng, 50, 7)
    bag = write_joint_state_bag(tmp_path / "bag", {
        "/PSM1/measured_js": (t, q[:, :6], qd[:, :6], tau[:, :6]),
        "/PSM1/jaw/measured_js": (t, q[:, 6:], qd[:, 6:], tau[:, 6:]),
    })
    data = load_dataset(bag, dvrk_from_motor=A)
    assert data.samples == 50
    assert np.allclose(data.q @ A.T, q) and np.allclose(data.qd @ A.T, qd)
    assert np.allclose(data.tau, tau @ A)  # tau^m = A^T tau^d
    assert np.allclose(data.t, t)


def test_bag_errors(tmp_path):
    A = load_description("mtm").dvrk_from_motor
    rng = np.random.default_rng(1)
    t, q, qd, tau = _signals(rng, 10, 6)
    bag = write_joint_state_bag(tmp_path / "bag", {"/MTML/measured_js": (t, q, qd, tau)})
    with pytest.raises(DataError, match="has 6 joints, the arm has 7"):
        load_dataset(bag, dvrk_from_motor=A)
    with pytest.raises(DataError, match="coupling matrix"):
        load_dataset(bag)
    two = write_joint_state_bag(tmp_path / "two", {"/MTML/measured_js": (t, q, qd, tau),
                                                   "/MTMR/measured_js": (t, q, qd, tau)})
    with pytest.raises(DataError, match="expected one /<ARM>/measured_js topic"):
        load_dataset(two, dvrk_from_motor=A)


def _bag_with_player_status(path, t, q, qd, tau, status):
    """A bag as the recorder writes it: /MTML/measured_js plus the player's status [(time, phase)]."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    from dvrk_ident_ros.data.interfaces import PLAYER_STATUS, typestore

    store = typestore()
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    JointState, PlayerStatus = store.types["sensor_msgs/msg/JointState"], store.types[PLAYER_STATUS]

    def header(x):
        return Header(stamp=Time(sec=int(x), nanosec=round((x - int(x)) * 1e9)), frame_id="")

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        states = writer.add_connection("/MTML/measured_js", "sensor_msgs/msg/JointState", typestore=store)
        player = writer.add_connection("/dvrk_ident/player_status", PLAYER_STATUS, typestore=store)
        events = [(x, 0, k) for k, x in enumerate(t)] + [(x, 1, k) for k, (x, _) in enumerate(status)]
        for x, kind, k in sorted(events):
            if kind == 0:
                msg = JointState(header=header(x), name=[f"j{i}" for i in range(7)], position=q[k], velocity=qd[k],
                                 effort=tau[k])
                writer.write(states, int(x * 1e9), store.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
            else:
                msg = PlayerStatus(header=header(x), arm="MTML", trajectory_file="t.yaml", phase=status[k][1],
                                   progress=0.0, pose_index=0, pose_count=0, direction=0)
                writer.write(player, int(x * 1e9), store.serialize_cdr(msg, PLAYER_STATUS))
    return path


def test_bag_of_the_player_keeps_only_the_excitation(tmp_path):
    """Ramp-in, waiting and ramp-out are not data: only the longest PLAYING window is kept."""
    from dvrk_ident_ros.data.bags import load_bag, playing_windows

    A = load_description("mtm").dvrk_from_motor
    rng = np.random.default_rng(2)
    t, q, qd, tau = _signals(rng, 400, 7)  # 1000.0 .. 1001.995 s at 200 Hz
    status = [(1000.1, 1), (1000.5, 2), (1000.6, 2), (1001.0, 6), (1001.2, 2), (1001.3, 7)]
    bag = _bag_with_player_status(tmp_path / "bag", t, q, qd, tau, status)
    assert np.allclose(playing_windows(bag), [(1000.5, 1001.0), (1001.2, 1001.3)])
    data = load_dataset(bag, dvrk_from_motor=A)
    inside = (t >= 1000.5) & (t <= 1001.0)
    assert np.allclose(data.t, t[inside]) and np.allclose(data.q @ A.T, q[inside])
    assert "PLAYING windows" in data.source
    assert load_bag(bag, A, playing_only=False).samples == 400
    late = _bag_with_player_status(tmp_path / "late", t, q, qd, tau, [(1005.0, 2)])
    with pytest.raises(DataError, match="no /MTML/measured_js samples while the player was playing"):
        load_dataset(late, dvrk_from_motor=A)
