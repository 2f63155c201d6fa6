"""The recorder (issues 8, 17): the ROS-free streaming bag writer (stamp-0 samples left out and counted,
the arm's operating state recorded), and the node across processes, alone and against the simulated arm."""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from helpers.processes import output_of, running

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.data.bags import load_bag, read_joint_states
from dvrk_ident_ros.data.interfaces import JOINT_STATE, OPERATING_STATE, PLAYER_STATUS, typestore
from dvrk_ident_ros.data.recording import BAG_VERSION, BagWriter, GapCounter, detect_ros_distro
from dvrk_ident_ros.errors import DataError

MEASURED, JAW, STATUS = "/PSM1/measured_js", "/PSM1/jaw/measured_js", "/dvrk_ident/PSM1/player_status"
TOPICS = {MEASURED: JOINT_STATE, JAW: JOINT_STATE, STATUS: PLAYER_STATUS}
T0 = 1_700_000_000 * 10**9


def _joint_state(k: int, joints: int, valid: bool = True) -> bytes:
    """Sample k (stamp 1000 s + k ms); not ``valid``: stamp 0, as the dVRK marks invalid data."""
    store = typestore()
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    stamp = Time(sec=1000 + k // 1000, nanosec=(k % 1000) * 10**6) if valid else Time(sec=0, nanosec=0)
    msg = store.types[JOINT_STATE](
        header=Header(stamp=stamp, frame_id=""),
        name=[f"j{i}" for i in range(joints)], position=np.arange(joints) + float(k),
        velocity=np.full(joints, 0.5), effort=np.full(joints, -1.0 * k))
    return bytes(store.serialize_cdr(msg, JOINT_STATE))


def _player_status(phase: PlayerPhase) -> bytes:
    store = typestore()
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    msg = store.types[PLAYER_STATUS](header=Header(stamp=Time(sec=0, nanosec=0), frame_id=""), arm="PSM1",
                                     trajectory_file="traj.csv", phase=phase, progress=0.5, pose_index=0,
                                     pose_count=0, direction=0)
    return bytes(store.serialize_cdr(msg, PLAYER_STATUS))


def test_writer_streams_a_bag_that_reads_back(tmp_path):
    from rosbags.rosbag2 import Reader

    with BagWriter(tmp_path / "bag", TOPICS, main_topic=MEASURED) as bag:
        bag.write(STATUS, _player_status(PlayerPhase.PLAYING), T0)
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
    assert (status[0].arm, status[0].phase, status[0].progress) == ("PSM1", PlayerPhase.PLAYING, 0.5)
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


def _operating_state(state: str, homed: bool, busy: bool = False) -> bytes:
    store = typestore()
    if OPERATING_STATE not in store.types:
        pytest.skip("crtk_msgs is not installed (make setup builds its stand-in)")
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    msg = store.types[OPERATING_STATE](header=Header(stamp=Time(sec=1, nanosec=0), frame_id=""), state=state,
                                       is_homed=homed, is_busy=busy)
    return bytes(store.serialize_cdr(msg, OPERATING_STATE))


def test_writer_leaves_stamp0_samples_out_and_records_the_operating_state(tmp_path):
    """Stamp-0 samples of the stamped topics are counted, not written (metadata says how many); the
    operating state reads back and tells the loader when the arm was ready."""
    from dvrk_ident_ros.data.bags import arm_readiness, read_joint_state_topic
    from dvrk_ident_ros.data.interfaces import cdr_stamp_is_zero

    assert cdr_stamp_is_zero(_joint_state(5, 6, valid=False)) and not cdr_stamp_is_zero(_joint_state(0, 6))
    state = "/PSM1/operating_state"
    topics = {**TOPICS, state: OPERATING_STATE}
    with BagWriter(tmp_path / "bag", topics, main_topic=MEASURED, stamped_topics=[MEASURED, JAW]) as bag:
        assert bag.write(state, _operating_state("DISABLED", False), T0)
        for k in range(100):
            valid = not 20 <= k < 50
            if k == 50:
                bag.write(state, _operating_state("ENABLED", True), T0 + k * 10**6 - 1)
            assert bag.write(MEASURED, _joint_state(k, 6, valid), T0 + k * 10**6) is valid
            bag.write(JAW, _joint_state(k, 1, valid and k != 70), T0 + k * 10**6 + 1000)
        assert bag.counts == {MEASURED: 70, JAW: 69, STATUS: 0, state: 2}
        assert bag.invalid_counts == {MEASURED: 30, JAW: 31}
    info = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert yaml.safe_load(info["custom_data"]["dvrk_ident.invalid_samples"]) == {MEASURED: 30, JAW: 31}
    assert info["custom_data"]["dvrk_ident.gap_count"] == "1"  # the 30 ms without data
    read = read_joint_state_topic(tmp_path / "bag", MEASURED)
    assert read.invalid == 0 and np.array_equal(read.position[:, 0], [k for k in range(100) if not 20 <= k < 50])
    readiness = arm_readiness(tmp_path / "bag", MEASURED)
    assert list(readiness.ready) == [False, True]
    assert np.array_equal(readiness.mask(read.logged), read.position[:, 0] >= 50)
    with pytest.raises(DataError, match="does not start with a std_msgs/Header"):
        BagWriter(tmp_path / "other", {"/x": "std_msgs/msg/String"}, stamped_topics=["/x"])
    with pytest.raises(DataError, match="not recorded"):
        BagWriter(tmp_path / "third", TOPICS, stamped_topics=["/y"])
    assert not (tmp_path / "other").exists() and not (tmp_path / "third").exists()


def test_recorded_and_stamped_topics(ros_env):
    from dvrk_ident_ros.nodes.recorder import recorded_topics, stamped_topics

    topics = recorded_topics("MTML", extra_topics=["/MTML/gravity_compensation/setpoint_js", "/other/js"])
    assert topics["/MTML/operating_state"] == OPERATING_STATE
    assert stamped_topics("MTML", topics) == ["/MTML/measured_js", "/MTML/setpoint_js", "/MTML/gripper/measured_js",
                                              "/MTML/gravity_compensation/setpoint_js"]
    assert "/PSM1/operating_state" not in recorded_topics("PSM1", operating_state=False)  # no crtk_msgs
    assert stamped_topics("PSM1", recorded_topics("PSM1", record_setpoint=False)) == [MEASURED, JAW]


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


#: The keys of one offered QoS profile in rosbag2's metadata (Humble to Kilted).
QOS_KEYS = {"history", "depth", "reliability", "durability", "deadline", "lifespan", "liveliness",
            "liveliness_lease_duration", "avoid_ros_namespace_conventions"}
#: rmw's names of the policies (rmw/qos_string_conversions), as metadata version 9 writes them.
RMW_NAMES = {"history": {"system_default", "keep_last", "keep_all", "unknown"},
             "reliability": {"system_default", "reliable", "best_effort", "unknown", "best_available"},
             "durability": {"system_default", "transient_local", "volatile", "unknown", "best_available"},
             "liveliness": {"system_default", "automatic", "manual_by_topic", "unknown", "best_available"}}


def _check_profile(profile: dict, names: bool) -> None:
    """One offered QoS profile as rosbag2 parses it: every key; policies named (version 9) or rmw's integers
    (version 8, Humble); durations {sec, nsec} of integers."""
    assert set(profile) == QOS_KEYS, profile
    for policy, allowed in RMW_NAMES.items():
        if names:
            assert profile[policy] in allowed, (policy, profile)
        else:
            assert isinstance(profile[policy], int) and 0 <= profile[policy] <= 5, (policy, profile)
    assert isinstance(profile["depth"], int) and isinstance(profile["avoid_ros_namespace_conventions"], bool)
    for duration in ("deadline", "lifespan", "liveliness_lease_duration"):
        value = profile[duration]
        assert set(value) == {"sec", "nsec"} and all(isinstance(v, int) and v >= 0 for v in value.values())
        assert value["nsec"] < 10**9, value


def test_metadata_names_the_distro_and_the_offered_qos(tmp_path):
    """metadata.yaml as `ros2 bag info` of each distribution reads it: ros_distro is the distribution, not
    "rosbags"; every topic carries its publishers' offered QoS profiles (a YAML list with the policies named
    from Jazzy on, version 9; a YAML string of integer policies for Humble, version 8); rosbags reads them
    back unchanged."""
    from rosbags.rosbag2 import Reader

    from dvrk_ident_ros.data.recording import INFINITE, OfferedQos

    offered = {MEASURED: [OfferedQos(history=3, depth=0, deadline=INFINITE, lifespan=INFINITE,
                                     liveliness_lease_duration=INFINITE)],  # what Fast DDS reports
               STATUS: [OfferedQos(durability=1, depth=1), OfferedQos(reliability=2)]}  # two publishers
    for distro, version in (("kilted", 9), ("jazzy", 9), ("humble", 8)):
        path = tmp_path / distro
        with BagWriter(path, TOPICS, main_topic=MEASURED, ros_distro=distro,
                       offered_qos=lambda topic: offered[topic]) as bag:
            bag.write(MEASURED, _joint_state(0, 6), T0)
            bag.write(STATUS, _player_status(PlayerPhase.PLAYING), T0 + 1)
        info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        assert (info["version"], info["ros_distro"]) == (version, distro)
        topics = {t["topic_metadata"]["name"]: t["topic_metadata"] for t in info["topics_with_message_count"]}
        assert set(topics) == {MEASURED, STATUS}  # JAW never published
        for topic, meta in topics.items():
            assert meta["type_description_hash"].startswith("RIHS01_") and meta["serialization_format"] == "cdr"
            profiles = meta["offered_qos_profiles"]
            if version == 8:
                assert isinstance(profiles, str)  # Humble's rosbag2 reads the profiles as a string
                profiles = yaml.safe_load(profiles)
            assert isinstance(profiles, list) and len(profiles) == len(offered[topic])
            for profile in profiles:
                _check_profile(profile, names=version == 9)
        status = yaml.safe_load(topics[STATUS]["offered_qos_profiles"]) if version == 8 else \
            topics[STATUS]["offered_qos_profiles"]
        if version == 9:
            assert topics[MEASURED]["offered_qos_profiles"][0]["history"] == "unknown"
            assert topics[MEASURED]["offered_qos_profiles"][0]["deadline"] == {"sec": 9223372036, "nsec": 854775807}
            assert [(p["durability"], p["reliability"]) for p in status] == [("transient_local", "reliable"),
                                                                             ("volatile", "best_effort")]
        else:
            assert [(p["durability"], p["reliability"]) for p in status] == [(1, 1), (2, 2)]
        assert f"ros_distro: {distro}".encode() in (path / f"{distro}.mcap").read_bytes()  # the copy in the MCAP
        with Reader(path) as reader:
            qos = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
        assert qos == {topic: [q.to_rosbags() for q in profiles] for topic, profiles in offered.items()}


def test_the_ros_distribution_is_read_not_assumed(tmp_path, monkeypatch):
    """ROS_DISTRO first (every ROS setup script sets it); else the distribution of the installed rclpy (its
    version: the ros-* wheels set no ROS_DISTRO); else "" (unknown), never a guess."""
    from importlib import metadata

    from dvrk_ident_ros.data import recording
    from dvrk_ident_ros.data.recording import bag_version, detect_ros_distro

    assert detect_ros_distro({"ROS_DISTRO": "Humble "}) == "humble"
    monkeypatch.setattr(metadata, "version", lambda name: "9.1.2" if name == "rclpy" else "0")
    assert detect_ros_distro({}) == "kilted"

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    share = tmp_path / "opt" / "share" / "rclpy"
    share.mkdir(parents=True)
    (share / "package.xml").write_text("<package format='3'>\n  <name>rclpy</name>\n  <version>3.3.16</version>\n")
    assert detect_ros_distro({"AMENT_PREFIX_PATH": f"/nowhere:{tmp_path / 'opt'}"}) == "humble"
    (share / "package.xml").write_text("<package><version>8.0.0</version></package>")  # a Rolling between releases
    assert detect_ros_distro({"AMENT_PREFIX_PATH": str(tmp_path / "opt")}) == ""
    assert detect_ros_distro({}) == ""
    assert [bag_version(d) for d in ("humble", "iron", "jazzy", "kilted", "")] == [8, 8, 9, 9, 9]
    assert recording.RCLPY_DISTROS[7] == "jazzy"


def test_recording_outcomes_follow_the_arms_player():
    """Complete, failed, incomplete, empty or recorded (no player), from the phases of the arm's own player."""
    from dvrk_ident_ros.data.outcome import PlayerRuns, recording_outcome

    def outcome(phases, expect_player=True):
        runs = PlayerRuns()
        for phase in phases:
            runs.add(PlayerPhase[phase])
        return recording_outcome(runs, expect_player, "PSM1")

    complete = outcome(["IDLE", "RAMP_IN", "PLAYING", "PLAYING", "DONE"])
    assert (complete.kind, complete.suffix, complete.keep) == ("complete", "", True)
    assert complete.reason == "the PSM1 player completed 1 run(s)"
    assert outcome(["MOVING", "SETTLING", "SAMPLING", "MOVING", "DONE"]).kind == "complete"  # a pose grid
    aborted = outcome(["RAMP_IN", "PLAYING", "ABORTED"])
    assert (aborted.kind, aborted.suffix, aborted.keep) == ("failed", "-FAILED", True)
    assert "the PSM1 player aborted" in aborted.reason
    retried = outcome(["PLAYING", "ABORTED", "RAMP_IN", "PLAYING", "DONE"])  # action goals
    assert retried.kind == "complete" and retried.reason.endswith("; 1 run(s) aborted")
    stopped = outcome(["RAMP_IN", "PLAYING", "PLAYING"])
    assert (stopped.kind, stopped.suffix) == ("incomplete", "-INCOMPLETE") and "last phase PLAYING" in stopped.reason
    paused = outcome(["IDLE", "RAMP_IN", "RAMP_IN", "ABORTED"])  # the arm paused during the ramp-in: it moved
    assert (paused.kind, paused.suffix, paused.keep) == ("failed", "-FAILED", True)
    assert "aborted, before any data (during RAMP_IN)" in paused.reason
    assert outcome(["MOVING", "SETTLING", "ABORTED"]).kind == "failed"  # a grid stopped before its first sample
    assert outcome(["RAMP_IN"]).kind == "incomplete"  # the recording stopped during the ramp-in
    refused = outcome(["ABORTED"])  # refused before any motion (the arm never ready)
    assert (refused.kind, refused.keep) == ("empty", False) and "its last status ABORTED" in refused.reason
    never = outcome([])  # exited on a missing file before any status
    assert (never.kind, never.keep) == ("empty", False) and "no status from it" in never.reason
    assert (outcome([], expect_player=False).kind, outcome([], expect_player=False).keep) == ("recorded", True)
    assert outcome(["IDLE", "ABORTED"], expect_player=False).keep  # a player around that never played: kept
    assert outcome(["PLAYING", "ABORTED"], expect_player=False).suffix == "-FAILED"  # a player seen: named


def test_writer_renames_or_removes_only_its_own_bag(tmp_path):
    with BagWriter(tmp_path / "bag", TOPICS, main_topic=MEASURED) as bag:
        bag.write(MEASURED, _joint_state(0, 6), T0)
        with pytest.raises(DataError, match="close the bag before"):
            bag.rename("-FAILED")
    (tmp_path / "bag-FAILED").mkdir()  # taken: the next free name
    assert bag.rename("-FAILED") == tmp_path / "bag-FAILED-2" and not (tmp_path / "bag").exists()
    assert read_joint_states(bag.path, MEASURED)[1].shape == (1, 6)  # still a bag after the move
    with BagWriter(tmp_path / "empty", TOPICS) as empty:
        pass
    assert empty.remove() == [] and not (tmp_path / "empty").exists()
    with BagWriter(tmp_path / "shared", TOPICS) as shared:
        pass
    (tmp_path / "shared" / "notes.txt").write_text("a person's")
    assert shared.remove() == ["notes.txt"] and sorted(p.name for p in (tmp_path / "shared").iterdir()) == ["notes.txt"]


def _recorder(bag_path, *params: str, arm: str = "PSM1") -> list[str]:
    args = [sys.executable, "-m", "dvrk_ident_ros.nodes.recorder", "--ros-args", "-p", f"arm:={arm}",
            "-p", f"bag_path:={bag_path}"]
    for p in params:
        args += ["-p", p]
    return args


@pytest.mark.ros
def test_node_records_every_message_and_finalises_on_sigint(ros_env, rclpy_context, tmp_path):
    """500 samples at about 1 kHz, none lost; 40 stamp-0 samples before them counted, not recorded; the
    arm's operating state (transient_local, published before the recorder starts) in the bag."""
    import rclpy
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from sensor_msgs.msg import JointState

    from dvrk_ident.msg import PlayerStatus, RecorderStatus
    from dvrk_ident_ros.ros.messages import crtk_messages
    from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS

    crtk = crtk_messages()
    if crtk is None:
        pytest.skip("crtk_msgs is not installed (make setup builds its stand-in)")
    node = rclpy.create_node("recorder_test_publisher", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    measured = node.create_publisher(JointState, MEASURED, STATE_QOS)
    jaw = node.create_publisher(JointState, JAW, STATE_QOS)
    # offered transient_local where the recorder requests volatile: the bag must record what was offered
    latched = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    player = node.create_publisher(PlayerStatus, STATUS, latched)
    arm_state = node.create_publisher(crtk.OperatingState, "/PSM1/operating_state", EVENT_QOS)
    arm_state.publish(crtk.OperatingState(state="DISABLED", is_homed=False, is_busy=False))
    statuses: list[RecorderStatus] = []
    node.create_subscription(RecorderStatus, "/dvrk_ident/PSM1/recorder_status", statuses.append, 10)
    bag_path = tmp_path / "bag"
    count, invalid = 500, 40

    def figures() -> tuple[dict, dict]:
        last = statuses[-1]
        return (dict(zip(last.topics, last.message_counts, strict=True)),
                dict(zip(last.topics, last.invalid_counts, strict=True)))

    with running(_recorder(bag_path), ros_env) as proc:
        deadline = time.monotonic() + 20.0
        while (not statuses or measured.get_subscription_count() < 1 or jaw.get_subscription_count() < 1
               or player.get_subscription_count() < 1) and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.05)
        assert statuses, f"no recorder status:\n{output_of(proc)}"
        assert statuses[-1].recording and statuses[-1].bag_path == str(bag_path)
        zero = JointState(name=[f"j{i}" for i in range(6)], position=[0.0] * 6, velocity=[0.0] * 6, effort=[0.0] * 6)
        jaw_zero = JointState(name=["jaw"], position=[0.0], velocity=[0.0], effort=[0.0])
        for _ in range(invalid):  # the arm not ready: zeros with stamp 0
            measured.publish(zero)
            jaw.publish(jaw_zero)
            time.sleep(1e-3)
        arm_state.publish(crtk.OperatingState(state="ENABLED", is_homed=True, is_busy=False))
        time.sleep(0.1)
        player.publish(PlayerStatus(arm="PSM1", trajectory_file="traj.csv", phase=PlayerPhase.PLAYING))
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
        player.publish(PlayerStatus(arm="PSM1", trajectory_file="traj.csv", phase=PlayerPhase.DONE))
        assert measured.wait_for_all_acked(Duration(seconds=5))
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.1)
            counts, dropped = figures()
            if counts.get(MEASURED) == count and counts.get(JAW) == count and counts.get(STATUS) == 2:
                break
        counts, dropped = figures()
        assert dropped == {MEASURED: invalid, JAW: invalid, "/PSM1/setpoint_js": 0, "/PSM1/jaw/setpoint_js": 0,
                           "/PSM1/operating_state": 0, STATUS: 0}
        assert counts["/PSM1/operating_state"] == 2 and statuses[-1].operating_state == "ENABLED, homed"
    node.destroy_node()
    out = output_of(proc)
    assert proc.returncode == 0, out
    assert "closed" in out and f"{MEASURED} {count}" in out, out
    assert f"not recorded (header.stamp 0, arm not ready): {MEASURED} {invalid}, {JAW} {invalid}" in out, out
    assert "PSM1: DISABLED, not homed (PSM1 is DISABLED: power on and home it" in out, out
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
        states = [typestore().deserialize_cdr(raw, c.msgtype).state
                  for c, _, raw in reader.messages() if c.topic == "/PSM1/operating_state"]
    assert phases == [PlayerPhase.PLAYING, PlayerPhase.DONE]
    assert states == ["DISABLED", "ENABLED"]
    assert "bag complete: the PSM1 player completed 1 run(s)" in out, out
    info = yaml.safe_load((bag_path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["ros_distro"] == detect_ros_distro() != "rosbags"
    assert info["custom_data"]["dvrk_ident.outcome"] == "complete"
    offered = {t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"]
               for t in info["topics_with_message_count"]}
    assert set(offered) == {MEASURED, JAW, STATUS, "/PSM1/operating_state"}
    for topic, profiles in offered.items():  # one publisher each: the test's node
        assert len(profiles) == 1 and profiles[0]["reliability"] == "reliable", (topic, profiles)
    assert offered[STATUS][0]["durability"] == "transient_local"  # offered, not the recorder's request
    assert offered["/PSM1/operating_state"][0]["durability"] == "transient_local"
    assert offered[MEASURED][0]["durability"] == "volatile"
    assert statuses[-1].outcome == ""  # while recording


@pytest.mark.ros
def test_node_on_sim_time_writes_one_clock(ros_env, rclpy_context, tmp_path):
    """On sim time (collect.launch.py sim:=true), the arm's latched operating state reaches the recorder
    before the first /clock: it is written at that clock's time, not the wall clock's (a bag of 57 years)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    from dvrk_ident_ros.ros.messages import crtk_messages
    from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS

    crtk = crtk_messages()
    if crtk is None:
        pytest.skip("crtk_msgs is not installed (make setup builds its stand-in)")
    node = rclpy.create_node("recorder_clock_test", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    arm_state = node.create_publisher(crtk.OperatingState, "/PSM1/operating_state", EVENT_QOS)
    arm_state.publish(crtk.OperatingState(state="ENABLED", is_homed=True, is_busy=False))
    measured = node.create_publisher(JointState, MEASURED, STATE_QOS)
    clock = node.create_publisher(Clock, "/clock", 10)
    bag_path = tmp_path / "bag"
    with running(_recorder(bag_path, "use_sim_time:=true"), ros_env) as proc:
        deadline = time.monotonic() + 20.0
        while (measured.get_subscription_count() < 1 or clock.get_subscription_count() < 1) \
                and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.05)
        assert measured.get_subscription_count() == 1, output_of(proc)
        time.sleep(1.0)  # the latched state is delivered; no /clock yet
        msg = JointState(name=[f"j{i}" for i in range(6)], position=[0.0] * 6, velocity=[0.0] * 6, effort=[0.0] * 6)
        for k in range(50):
            t = 5.0 + k * 0.01
            clock.publish(Clock(clock=rclpy.time.Time(nanoseconds=round(t * 1e9)).to_msg()))
            msg.header.stamp = rclpy.time.Time(nanoseconds=round(t * 1e9)).to_msg()
            time.sleep(0.005)
            measured.publish(msg)
            time.sleep(0.005)
        time.sleep(0.5)
    node.destroy_node()
    out = output_of(proc)
    assert proc.returncode == 0, out
    from rosbags.rosbag2 import Reader

    with Reader(bag_path) as reader:
        stamps = {c.topic: [] for c in reader.connections}
        for c, stamp, _ in reader.messages():
            stamps[c.topic].append(stamp * 1e-9)
    counts = {topic: len(v) for topic, v in stamps.items()}
    assert counts["/PSM1/operating_state"] == 1 and counts[MEASURED] >= 40, counts
    every = [t for ts in stamps.values() for t in ts]
    assert 5.0 <= min(every) and max(every) < 5.6, (min(every), max(every))
    assert stamps["/PSM1/operating_state"][0] <= min(stamps[MEASURED])  # written first, at the first clock
    info = yaml.safe_load((bag_path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["duration"]["nanoseconds"] < 1e9, info["duration"]


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


@pytest.mark.ros
def test_node_against_the_simulated_arm_from_disabled_to_homed(ros_env, rclpy_context, tmp_path):
    """The simulated MTML starts DISABLED (stamp-0 zeros) and is homed through state_command: the bag holds
    its operating states, the stamp-0 samples are counted (status, exit line, metadata) and none is in the
    bag or loaded as data."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from dvrk_ident.msg import RecorderStatus
    from dvrk_ident_ros.data.bags import arm_readiness, read_joint_state_topic
    from dvrk_ident_ros.model.description import load_description
    from dvrk_ident_ros.ros.messages import crtk_messages

    crtk = crtk_messages()
    if crtk is None:
        pytest.skip("crtk_msgs is not installed (make setup builds its stand-in)")
    measured, state_topic = "/MTML/measured_js", "/MTML/operating_state"
    node = rclpy.create_node("recorder_sim_test", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    console = node.create_publisher(crtk.StringStamped, "/MTML/state_command", 10)
    statuses: list[RecorderStatus] = []
    node.create_subscription(RecorderStatus, "/dvrk_ident/MTML/recorder_status", statuses.append, 10)

    def figures(topic: str) -> tuple[int, int]:
        last = statuses[-1]
        return (dict(zip(last.topics, last.message_counts, strict=True)).get(topic, 0),
                dict(zip(last.topics, last.invalid_counts, strict=True)).get(topic, 0))

    def spin_until(condition, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and sim.poll() is None and recorder.poll() is None:
            executor.spin_once(timeout_sec=0.05)
            if statuses and condition():
                return True
        return False

    bag_path = tmp_path / "bag"
    sim_cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.simulated_arm", "--ros-args", "-p", "arm:=MTML",
               "-p", "initial_state:=DISABLED", "-p", "homing_time:=0.5", "-p", "noise:=false"]
    rec_cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.recorder", "--ros-args", "-p", "arm:=MTML",
               "-p", f"bag_path:={bag_path}"]
    with running(sim_cmd, ros_env) as sim, running(rec_cmd, ros_env) as recorder:
        assert spin_until(lambda: figures(measured)[1] >= 20 and statuses[-1].operating_state == "DISABLED, not homed"
                          and console.get_subscription_count() > 0, 20.0), \
            f"no stamp-0 samples counted: {statuses[-1:]}\n{output_of(sim)}\n{output_of(recorder)}"
        assert figures(measured)[0] == 0  # nothing recorded while the arm is DISABLED
        console.publish(crtk.StringStamped(string="home"))
        assert spin_until(lambda: statuses[-1].operating_state == "ENABLED, homed" and figures(measured)[0] >= 30,
                          15.0), f"not homed: {statuses[-1:]}\n{output_of(sim)}\n{output_of(recorder)}"
    node.destroy_node()
    out = output_of(recorder)
    assert recorder.returncode == 0, out
    assert "MTML: DISABLED, not homed (MTML is DISABLED" in out and "MTML: ENABLED, homed" in out, out
    assert f"bag recorded: recorded without a player: {bag_path}" in out, out  # alone (teleoperation): kept as is
    line = next(x for x in out.splitlines() if "not recorded (header.stamp 0, arm not ready)" in x)
    dropped = int(line.split(f"arm not ready): {measured} ")[1].split(",")[0].split(";")[0])
    assert dropped >= 20, line
    info = yaml.safe_load((bag_path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert yaml.safe_load(info["custom_data"]["dvrk_ident.invalid_samples"])[measured] == dropped
    read = read_joint_state_topic(bag_path, measured)
    assert read.invalid == 0 and np.all(read.t > 0)  # no stamp-0 sample in the bag
    from rosbags.rosbag2 import Reader

    with Reader(bag_path) as reader:
        states = [typestore().deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages()
                  if c.topic == state_topic]
    states = [(s.state, s.is_homed, s.is_busy) for s in states]
    assert states[0] == ("DISABLED", False, False) and states[-1] == ("ENABLED", True, False), states
    assert ("ENABLED", True, True) in states, states  # homing (an MTM says homed meanwhile, its data valid)
    data = load_bag(bag_path, load_description("mtm").dvrk_from_motor)
    assert data.samples == int(np.sum(arm_readiness(bag_path, measured).mask(read.logged))) >= 25


@pytest.mark.ros
def test_node_removes_a_bag_without_its_player_and_names_a_failed_one(ros_env, rclpy_context, tmp_path):
    """Two recorders expecting their arm's player (as collect.launch.py starts them): the MTML player never
    plays (it exited on a missing file), so its bag, 1 s of arm states, is removed; the PSM1 player aborts
    mid-run, so its bag is renamed -FAILED, says so in its metadata and still loads (the partial window)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from dvrk_ident.msg import PlayerStatus, RecorderStatus
    from dvrk_ident_ros.ros.qos import STATE_QOS

    node = rclpy.create_node("recorder_outcome_test", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    states = {arm: node.create_publisher(JointState, f"/{arm}/measured_js", STATE_QOS) for arm in ("MTML", "PSM1")}
    player = node.create_publisher(PlayerStatus, STATUS, 10)
    last: dict[str, RecorderStatus] = {}
    for arm in ("MTML", "PSM1"):
        node.create_subscription(RecorderStatus, f"/dvrk_ident/{arm}/recorder_status",
                                 lambda msg, arm=arm: last.__setitem__(arm, msg), 10)
    mtml_bag, psm_bag = tmp_path / "mtml", tmp_path / "psm"

    def written(arm: str) -> int:
        """measured_js samples the arm's recorder reports written (its status, about once a second)."""
        status = last.get(arm)
        topic = f"/{arm}/measured_js"
        return int(status.message_counts[list(status.topics).index(topic)]) if status and topic in status.topics else 0

    def spin_until(condition, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not condition():
            executor.spin_once(timeout_sec=0.05)
        return condition()

    def publish_states(first: int, count: int) -> None:
        for k in range(first, first + count):
            msg = JointState(name=[f"j{i}" for i in range(6)], position=[float(k)] + [0.0] * 5, velocity=[0.0] * 6,
                             effort=[0.0] * 6)
            msg.header.stamp = node.get_clock().now().to_msg()
            for publisher in states.values():
                publisher.publish(msg)
            time.sleep(0.005)

    with running(_recorder(mtml_bag, "expect_player:=true", arm="MTML"), ros_env) as mtml, \
            running(_recorder(psm_bag, "expect_player:=true"), ros_env) as psm:
        assert spin_until(lambda: set(last) == {"MTML", "PSM1"} and player.get_subscription_count() > 0
                          and all(p.get_subscription_count() > 0 for p in states.values()), 20.0), \
            f"recorders not ready ({sorted(last)})"
        publish_states(0, 50)
        player.publish(PlayerStatus(arm="PSM1", trajectory_file="traj.csv", phase=PlayerPhase.PLAYING))
        time.sleep(0.05)
        publish_states(50, 50)
        player.publish(PlayerStatus(arm="PSM1", trajectory_file="traj.csv", phase=PlayerPhase.ABORTED))
        time.sleep(0.05)  # as after PLAYING: the window ends when the status arrives, not when it was sent
        publish_states(100, 20)
        # on a loaded machine the recorders may take a while: stop them once both wrote every sample
        assert spin_until(lambda: written("MTML") == 120 and written("PSM1") == 120, 30.0), \
            f"samples written: MTML {written('MTML')}, PSM1 {written('PSM1')} of 120"
        time.sleep(0.3)
    node.destroy_node()
    out_mtml, out_psm = output_of(mtml), output_of(psm)
    assert mtml.returncode == 0 and psm.returncode == 0, out_mtml + out_psm
    assert "bag empty: the MTML player never moved the arm (no status from it): nothing in the bag is a run; " \
           f"removed {mtml_bag}" in out_mtml, out_mtml
    assert not mtml_bag.exists() and f"closed {mtml_bag}: /MTML/measured_js 120" in out_mtml, out_mtml
    failed = tmp_path / "psm-FAILED"
    assert f"bag failed: the PSM1 player aborted: 1 run(s) stopped before the end, none completed; renamed " \
           f"{psm_bag} to {failed}" in out_psm, out_psm
    assert not psm_bag.exists()
    info = yaml.safe_load((failed / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["custom_data"]["dvrk_ident.outcome"] == "failed"
    assert info["custom_data"]["dvrk_ident.outcome_reason"].startswith("the PSM1 player aborted")
    data = load_bag(failed, np.eye(6))
    assert 40 <= data.samples <= 50 and np.all((data.q[:, 0] >= 50) & (data.q[:, 0] < 100)), data.q[:, 0]
