"""rosbag2 recordings (MCAP, as the recorder writes them) load into motor space."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.bags import header, player_status, write_events

from dvrk_ident_ros.arm.player_phase import PlayerPhase
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


def test_samples_repeating_a_stamp_are_one_sample(tmp_path):
    """The bridge behind a stalled arm loop publishes its last sample again, its stamp converted anew (give or
    take microseconds): one sample, said."""
    A = load_description("mtm").dvrk_from_motor
    rng = np.random.default_rng(2)
    t, q, qd, tau = _signals(rng, 40, 7)
    repeat = np.r_[np.arange(20), [19, 19, 19], np.arange(20, 40)]  # sample 19 three more times
    stamps = t[repeat] + np.r_[np.zeros(20), [3e-6, -2e-6, 4e-6], np.zeros(20)]
    bag = write_joint_state_bag(tmp_path / "bag", {"/MTML/measured_js": (stamps, q[repeat], qd[repeat],
                                                                          tau[repeat])})
    data = load_dataset(bag, dvrk_from_motor=A)
    assert data.samples == 40 and np.allclose(data.t, t) and np.allclose(data.q @ A.T, q)
    assert "3 repeating the previous sample's stamp" in data.source, data.source
    # new samples 50 us apart (a publisher bursting after a stall), each with its own positions: all kept
    burst = t.copy()
    burst[10:20] = t[10] + 5e-5 * np.arange(10)
    bag = write_joint_state_bag(tmp_path / "burst", {"/MTML/measured_js": (burst, q, qd, tau)})
    data = load_dataset(bag, dvrk_from_motor=A)
    assert data.samples == 40 and "previous sample's stamp" not in data.source, data.source


def _bag_with_player_status(path, t, q, qd, tau, status):
    """A bag as the recorder writes it: /MTML/measured_js plus its player's status [(time, phase)] on its
    per-arm topic."""
    from dvrk_ident_ros.data.interfaces import PLAYER_STATUS

    events = _joint_states("/MTML/measured_js", t, q, qd, tau)
    events += [(x, "/dvrk_ident/MTML/player_status", PLAYER_STATUS, player_status(x, "MTML", phase))
               for x, phase in status]
    return write_events(path, events)


def test_bag_of_the_player_keeps_only_the_excitation(tmp_path):
    """Ramp-in, waiting and what follows a run are not data: only the longest PLAYING window is kept."""
    from dvrk_ident_ros.data.bags import load_bag, playing_windows

    A = load_description("mtm").dvrk_from_motor
    rng = np.random.default_rng(2)
    t, q, qd, tau = _signals(rng, 400, 7)  # 1000.0 .. 1001.995 s at 200 Hz
    ramp_in, playing, done = PlayerPhase.RAMP_IN, PlayerPhase.PLAYING, PlayerPhase.DONE
    status = [(1000.1, ramp_in), (1000.5, playing), (1000.6, playing), (1001.0, done), (1001.1, ramp_in),
              (1001.2, playing), (1001.3, done)]
    bag = _bag_with_player_status(tmp_path / "bag", t, q, qd, tau, status)
    assert np.allclose(playing_windows(bag), [(1000.5, 1001.0), (1001.2, 1001.3)])
    data = load_dataset(bag, dvrk_from_motor=A)
    inside = (t >= 1000.5) & (t <= 1001.0)
    assert np.allclose(data.t, t[inside]) and np.allclose(data.q @ A.T, q[inside])
    assert "PLAYING windows" in data.source
    assert load_bag(bag, A, playing_only=False).samples == 400
    late = _bag_with_player_status(tmp_path / "late", t, q, qd, tau, [(1005.0, PlayerPhase.PLAYING)])
    with pytest.raises(DataError, match="no /MTML/measured_js samples while the player was playing"):
        load_dataset(late, dvrk_from_motor=A)


def test_only_the_player_of_the_bags_own_arm_cuts_it(tmp_path):
    """Two players' statuses in one bag (per-arm topics, or the global topic of older bags): the MTML bag is cut
    only by the MTML player; the PSM1 player's PLAYING windows (longer, elsewhere) are never used."""
    from dvrk_ident_ros.arm.registry import player_status_topic
    from dvrk_ident_ros.data.bags import LEGACY_PLAYER_STATUS_TOPIC, load_bag, playing_windows, read_player_status
    from dvrk_ident_ros.data.interfaces import PLAYER_STATUS

    A = load_description("mtm").dvrk_from_motor
    t, q, qd, tau = _signals(np.random.default_rng(5), 400, 7)  # 1000.0 .. 1001.995 s
    mtml = [(1000.2, PlayerPhase.RAMP_IN), (1000.3, PlayerPhase.PLAYING), (1000.6, PlayerPhase.DONE)]
    psm1 = [(1000.05, PlayerPhase.PLAYING), (1001.9, PlayerPhase.DONE)]  # a longer window: it would win if it counted
    states = _joint_states("/MTML/measured_js", t, q, qd, tau)

    def statuses(arm, timeline, topic):
        return [(x, topic, PLAYER_STATUS, player_status(x, arm, phase)) for x, phase in timeline]

    per_arm = write_events(tmp_path / "per_arm", states + statuses("MTML", mtml, player_status_topic("MTML"))
                           + statuses("PSM1", psm1, player_status_topic("PSM1")))
    # recorded before the per-arm topics: both players on the global topic, the arm written in any case
    legacy = write_events(tmp_path / "legacy", states + statuses("mtml", mtml, LEGACY_PLAYER_STATUS_TOPIC)
                          + statuses("PSM1", psm1, LEGACY_PLAYER_STATUS_TOPIC))
    inside = (t >= 1000.3) & (t <= 1000.6)
    for bag, topic in ((per_arm, "/dvrk_ident/MTML/player_status"), (legacy, LEGACY_PLAYER_STATUS_TOPIC)):
        assert np.allclose(playing_windows(bag), [(1000.3, 1000.6)])
        read_topic, read = read_player_status(bag, "mtml")
        assert read_topic == topic and [m.phase for _, m in read] == [phase for _, phase in mtml]
        data = load_bag(bag, A)
        assert np.allclose(data.t, t[inside]) and "1 PLAYING windows of the MTML player" in data.source
        assert np.allclose(playing_windows(bag, "PSM1"), [(1000.05, 1001.9)])  # read for its own arm: its own
    # only another arm's player in the bag: nothing cuts it
    other = write_events(tmp_path / "other", states + statuses("PSM1", psm1, player_status_topic("PSM1"))
                         + statuses("PSM1", psm1, LEGACY_PLAYER_STATUS_TOPIC))
    assert playing_windows(other) == [] and load_bag(other, A).samples == 400


def _joint_states(topic, t, q, qd, tau, invalid=()):
    """JointState events; the samples in ``invalid`` as the dVRK sends them when not ready: zeros, stamp 0."""
    from dvrk_ident_ros.data.interfaces import JOINT_STATE, typestore

    JointState = typestore().types[JOINT_STATE]
    events = []
    for k, x in enumerate(t):
        zero = k in invalid
        msg = JointState(header=header(0.0 if zero else x), name=[f"j{i}" for i in range(q.shape[1])],
                         position=q[k] * (not zero), velocity=qd[k] * (not zero), effort=tau[k] * (not zero))
        events.append((x, topic, JOINT_STATE, msg))
    return events


def _operating_states(topic, states):
    """crtk_msgs/OperatingState events [(log time, state, is_homed, is_busy)]."""
    from dvrk_ident_ros.data.interfaces import OPERATING_STATE, typestore

    if OPERATING_STATE not in typestore().types:
        pytest.skip("crtk_msgs is not installed (make setup builds its stand-in)")
    OperatingState = typestore().types[OPERATING_STATE]
    return [(x, topic, OPERATING_STATE, OperatingState(header=header(x), state=state, is_homed=homed, is_busy=busy))
            for x, state, homed, busy in states]


def test_stamp0_samples_and_samples_while_not_ready_are_not_data(tmp_path):
    """Stamp-0 samples (zeros) in the middle are skipped and counted; with the arm's operating_state in the
    bag, so are the samples before the first state and while the arm was not ENABLED or not homed."""
    from dvrk_ident_ros.data.bags import arm_readiness, load_bag, read_joint_state_topic

    A = load_description("mtm").dvrk_from_motor
    rng = np.random.default_rng(3)
    t, q, qd, tau = _signals(rng, 400, 7)  # 1000.0 .. 1001.995 s at 200 Hz
    invalid = set(range(100, 150))  # 1000.5 .. 1000.745 s
    states = _joint_states("/MTML/measured_js", t, q, qd, tau, invalid)
    plain = write_events(tmp_path / "plain", states)
    read = read_joint_state_topic(plain, "/MTML/measured_js")
    assert read.invalid == 50 and len(read.t) == 350 and not np.any(read.position == 0.0)
    data = load_bag(plain, A)
    valid = np.array([k not in invalid for k in range(400)])
    assert np.allclose(data.t, t[valid]) and np.allclose(data.q @ A.T, q[valid])
    assert "50 samples with header.stamp 0 skipped" in data.source

    # ready from 1000.02; FAULT at 1001.0, homing at 1001.25 (ENABLED, not homed, busy), homed at 1001.5,
    # PAUSED at 1001.8, resumed at 1001.9; busy while homed (the arm's own move) from 1001.6 is data
    timeline = [(1000.02, "ENABLED", True, False), (1001.0, "FAULT", False, False),
                (1001.25, "ENABLED", False, True), (1001.5, "ENABLED", True, False),
                (1001.6, "ENABLED", True, True), (1001.8, "PAUSED", True, False), (1001.9, "ENABLED", True, False)]
    bag = write_events(tmp_path / "states", states + _operating_states("/MTML/operating_state", timeline))
    ready = arm_readiness(bag, "/MTML/measured_js")
    assert ready.topic == "/MTML/operating_state" and list(ready.ready) == [True, False, False, True, True, False,
                                                                           True]
    data = load_bag(bag, A)
    expected = valid & (t >= 1000.02) & ~((t >= 1001.0) & (t < 1001.5)) & ~((t >= 1001.8) & (t < 1001.9))
    assert np.allclose(data.t, t[expected]) and np.allclose(data.tau, tau[expected] @ A)
    not_ready = int(np.sum(valid & ~expected))
    assert not_ready == 4 + 100 + 20
    assert f"50 samples with header.stamp 0 and {not_ready} while operating_state said the arm was not ready " \
           "skipped" in data.source


def test_bags_without_data_are_refused(tmp_path):
    from dvrk_ident_ros.data.bags import load_bag

    A = load_description("mtm").dvrk_from_motor
    t, q, qd, tau = _signals(np.random.default_rng(4), 20, 7)
    never = write_events(tmp_path / "never", _joint_states("/MTML/measured_js", t, q, qd, tau, set(range(20))))
    with pytest.raises(DataError, match=r"all 20 samples of /MTML/measured_js have header\.stamp 0"):
        load_bag(never, A)
    states = _joint_states("/MTML/measured_js", t, q, qd, tau)
    disabled = write_events(tmp_path / "disabled", states + _operating_states(
        "/MTML/operating_state", [(999.0, "DISABLED", False, False)]))
    with pytest.raises(DataError, match="no /MTML/measured_js sample while /MTML/operating_state said the arm"):
        load_bag(disabled, A)
