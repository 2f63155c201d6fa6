"""The recorder (issue 8): the ROS-free streaming bag writer, and the node across processes."""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from helpers.processes import output_of, running

from dvrk_ident_ros.data.bags import load_bag, read_joint_states
from dvrk_ident_ros.data.interfaces import JOINT_STATE, PLAYER_STATUS, typestore
from dvrk_ident_ros.data.recording import BAG_VERSION, BagWriter, GapCounter
from dvrk_ident_ros.errors import DataError

MEASURED, JAW, STATUS = "/PSM1/measured_js", "/PSM1/jaw/measured_js", "/dvrk_ident/player_status"
TOPICS = {MEASURED: JOINT_STATE, JAW: JOINT_STATE, STATUS: PLAYER_STATUS}
T0 = 1_700_000_000 * 10**9


def _joint_state(k: int, joints: int) -> bytes:
    store = typestore()
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    msg = store.types[JOINT_STATE](
        header=Header(stamp=Time(sec=1000 + k // 1000, nanosec=(k % 1000) * 10**6), frame_id=""),
        name=[f"j{i}" for i in range(joints)], position=np.arange(joints) + float(k),
        velocity=np.full(joints, 0.5), effort=np.full(joints, -1.0 * k))
    return bytes(store.serialize_cdr(msg, JOINT_STATE))


def _player_status(phase: int) -> bytes:
    store = typestore()
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    msg = store.types[PLAYER_STATUS](header=Header(stamp=Time(sec=0, nanosec=0), frame_id=""), arm="PSM1",
                                     trajectory_file="traj.csv", phase=phase, progress=0.5, pose_index=0,
                                     pose_count=0, direction=0)
    return bytes(store.serialize_cdr(msg, PLAYER_STATUS))


def test_writer_streams_a_bag_that_reads_back(tmp_path):
    from rosbags.rosbag2 import Reader

    with BagWriter(tmp_path / "bag", TOPICS, main_topic=MEASURED) as bag:
        bag.write(STATUS, _player_status(2), T0)
        for k in range(300):
            bag.write(MEASURED, _joint_state(k, 6), T0 + k * 10**6)
            bag.write(JAW, _joint_state(k, 1), T0 + k * 10**6 + 1000)
        assert bag.counts == {MEASURED: 300, JAW: 300, STATUS: 1}
    assert bag.closed
    info = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert (info["version"], info["storage_identifier"], info["message_count"]) == (BAG_VERSION, "mcap", 601)
    assert info["custom_data"]["dvrk_ident.gap_count"] == "0"
    with Reader(tmp_path / "bag") as reader:
        assert {c.topic: (c.msgtype, c.msgcount) for c in reader.connections} == {
            MEASURED: (JOINT_STATE, 300), JAW: (JOINT_STATE, 300), STATUS: (PLAYER_STATUS, 1)}
        stamps = [stamp for c, stamp, _ in reader.messages() if c.topic == MEASURED]
        status = [typestore().deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages() if c.topic == STATUS]
    assert stamps == [T0 + k * 10**6 for k in range(300)]
    assert (status[0].arm, status[0].phase, status[0].progress) == ("PSM1", 2, 0.5)
    t, q, qd, tau, names = read_joint_states(tmp_path / "bag", MEASURED)
    assert np.allclose(t, 1000 + np.arange(300) * 1e-3) and names == [f"j{i}" for i in range(6)]
    assert np.allclose(q[:, 0], np.arange(300)) and np.allclose(qd, 0.5) and np.allclose(tau[:, 0], -np.arange(300))
    data = load_bag(tmp_path / "bag", np.eye(7))  # the PSM jaw joins as the 7th joint
    assert data.samples == 300 and np.allclose(data.q[:, 6], np.arange(300))


def test_writer_refuses_to_overwrite_and_reports_bad_input(tmp_path):
    with BagWriter(tmp_path / "bag", TOPICS, main_topic=MEASURED) as bag:
        bag.write(MEASURED, _joint_state(0, 6), T0)
    before = sorted((p.name, p.stat().st_size) for p in (tmp_path / "bag").iterdir())
    with pytest.raises(DataError, match="exists already: not overwriting"):
        BagWriter(tmp_path / "bag", TOPICS)
    assert sorted((p.name, p.stat().st_size) for p in (tmp_path / "bag").iterdir()) == before
    (tmp_path / "file").write_text("")
    with pytest.raises(DataError, match="cannot create the bag"):
        BagWriter(tmp_path / "file" / "bag", TOPICS)
    with pytest.raises(DataError, match="unknown message type"):
        BagWriter(tmp_path / "other", {MEASURED: "nope/msg/Nothing"})
    bag = BagWriter(tmp_path / "third", TOPICS)
    with pytest.raises(DataError, match="was not added"):
        bag.write("/elsewhere", _joint_state(0, 6), T0)
    bag.close()
    bag.close()  # idempotent
    with pytest.raises(DataError, match="closed"):
        bag.write(MEASURED, _joint_state(0, 6), T0)
    assert (tmp_path / "third" / "metadata.yaml").is_file()


def test_gap_counting():
    fixed = GapCounter(threshold=0.0025)
    for t in [0, 1, 2, 6, 7, 8, 20, 5, 6]:  # ms; 5 after 20: a restarted clock, not an interval
        fixed.add(t * 10**6)
    stats = fixed.stats()
    assert (stats.count, stats.max_gap, stats.threshold) == (2, pytest.approx(0.012), pytest.approx(0.0025))
    auto = GapCounter(warmup=50)
    stamps = np.cumsum(np.full(200, 10**6))
    stamps[120:] += 4 * 10**6  # one 5 ms interval
    stamps[150:] += 2 * 10**6  # one 3 ms interval
    for s in stamps[:40]:
        auto.add(int(s))
    assert auto.stats().count == 0 and auto.stats().threshold == pytest.approx(0.0025)  # provisional
    for s in stamps[40:]:
        auto.add(int(s))
    assert (auto.stats().count, auto.stats().max_gap) == (2, pytest.approx(0.005))
    with pytest.raises(DataError, match="gap threshold"):
        GapCounter(threshold=-1.0)


def test_writer_counts_gaps_of_the_main_topic_only(tmp_path):
    with BagWriter(tmp_path / "bag", TOPICS, main_topic=MEASURED, gap_threshold=0.002) as bag:
        for k in [0, 1, 2, 5, 6]:
            bag.write(MEASURED, _joint_state(k, 6), T0 + k * 10**6)
            bag.write(JAW, _joint_state(k, 1), T0 + 3 * k * 10**6)
    assert (bag.gaps().count, bag.gaps().max_gap) == (1, pytest.approx(0.003))
    info = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["custom_data"]["dvrk_ident.gap_count"] == "1"


def _recorder(bag_path, *params: str) -> list[str]:
    args = [sys.executable, "-m", "dvrk_ident_ros.nodes.recorder", "--ros-args", "-p", "arm:=PSM1",
            "-p", f"bag_path:={bag_path}"]
    for p in params:
        args += ["-p", p]
    return args


@pytest.mark.ros
def test_node_records_every_message_and_finalises_on_sigint(ros_env, rclpy_context, tmp_path):
    import rclpy
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from dvrk_ident.msg import PlayerStatus, RecorderStatus
    from dvrk_ident_ros.nodes.common import STATE_QOS

    node = rclpy.create_node("recorder_test_publisher", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    measured = node.create_publisher(JointState, MEASURED, STATE_QOS)
    jaw = node.create_publisher(JointState, JAW, STATE_QOS)
    player = node.create_publisher(PlayerStatus, STATUS, 10)
    statuses: list[RecorderStatus] = []
    node.create_subscription(RecorderStatus, "/dvrk_ident/recorder_status", statuses.append, 10)
    bag_path = tmp_path / "bag"
    count = 500
    with running(_recorder(bag_path), ros_env) as proc:
        deadline = time.monotonic() + 20.0
        while (not statuses or measured.get_subscription_count() < 1 or jaw.get_subscription_count() < 1
               or player.get_subscription_count() < 1) and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.05)
        assert statuses, f"no recorder status:\n{output_of(proc)}"
        assert statuses[-1].recording and statuses[-1].bag_path == str(bag_path)
        player.publish(PlayerStatus(arm="PSM1", trajectory_file="traj.csv", phase=PlayerStatus.PHASE_PLAYING))
        time.sleep(0.1)  # as the player does: its PLAYING status, then the motion (another topic: no ordering)
        msg = JointState(name=[f"j{i}" for i in range(6)], velocity=[0.0] * 6, effort=[0.0] * 6)
        jaw_msg = JointState(name=["jaw"], velocity=[0.0], effort=[0.0])
        start = time.monotonic()
        for k in range(count):  # about 1 kHz: the pace the recorder is for
            msg.header.stamp = jaw_msg.header.stamp = node.get_clock().now().to_msg()
            msg.position = [float(k)] + [0.0] * 5
            jaw_msg.position = [float(k)]
            measured.publish(msg)
            jaw.publish(jaw_msg)
            time.sleep(max(0.0, start + (k + 1) * 1e-3 - time.monotonic()))
        time.sleep(0.1)
        player.publish(PlayerStatus(arm="PSM1", trajectory_file="traj.csv", phase=PlayerStatus.PHASE_DONE))
        assert measured.wait_for_all_acked(Duration(seconds=5))
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.1)
            counts = dict(zip(statuses[-1].topics, statuses[-1].message_counts, strict=True))
            if counts.get(MEASURED) == count and counts.get(JAW) == count and counts.get(STATUS) == 2:
                break
    node.destroy_node()
    out = output_of(proc)
    assert proc.returncode == 0, out
    assert "closed" in out and f"{MEASURED} {count}" in out, out
    assert (bag_path / "metadata.yaml").is_file()
    _, q, _, _, _ = read_joint_states(bag_path, MEASURED)
    assert np.array_equal(q[:, 0], np.arange(count)), "messages lost or reordered"
    assert np.array_equal(read_joint_states(bag_path, JAW)[1][:, 0], np.arange(count))
    data = load_bag(bag_path, np.eye(7))
    assert data.samples == count
    from rosbags.rosbag2 import Reader

    with Reader(bag_path) as reader:
        phases = [typestore().deserialize_cdr(raw, c.msgtype).phase
                  for c, _, raw in reader.messages() if c.topic == STATUS]
    assert phases == [PlayerStatus.PHASE_PLAYING, PlayerStatus.PHASE_DONE]


@pytest.mark.ros
def test_node_refuses_an_existing_bag_and_bad_parameters(ros_env, tmp_path):
    (tmp_path / "bag").mkdir()
    for params, message in [((), "exists already"), (("gap_threshold:=-1.0",), "gap_threshold"),
                            (("extra_topics:=[1, 2]",), "extra_topics")]:
        bag = tmp_path / "bag" if not params else tmp_path / "new"
        proc = subprocess.run(_recorder(bag, *params), env=ros_env, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert message in proc.stdout
        assert not (tmp_path / "new").exists()
