"""The simulated arm node's ROS-free cores: its stamps, the joint topics over the arm's joints (the PSM's jaw),
the freeze hook, the pacing policy of its loops, its log texts and its set-up from the parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.errors import ArmNotReadyError, DvrkIdentError
from dvrk_ident_ros.sim.arm import SERVO_CLOCK, Sample, SimulatedArm
from dvrk_ident_ros.sim.arm_setup import console_chain, initial_position
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.freeze import FROZEN_STAMP_JITTER, StateFreeze
from dvrk_ident_ros.sim.joint_topics import JointTopics, jaw_value
from dvrk_ident_ros.sim.node_reports import NOT_READY_EVERY, NotReadyWarnings, servo_summary, startup_line
from dvrk_ident_ros.sim.pacing import (
    WALL_DELAY,
    WALL_MAX_LAG,
    WALL_STALL,
    ClockTicks,
    RealTimePacer,
    StepCarry,
    WallClockSchedule,
    clock_pacer,
    wall_clock_schedule,
)
from dvrk_ident_ros.sim.stamps import DELIVERY, EVENT_STEP_NS, SIM_EPOCH, StampClock, split_seconds


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _no_wall() -> int:
    raise AssertionError("the wall clock is not read under /clock")


# -- stamps ---------------------------------------------------------------------------------
def test_split_seconds_rounds_to_the_nanosecond():
    assert split_seconds(1.5) == (1, 500_000_000)
    assert split_seconds(2.9999999999) == (3, 0)
    assert split_seconds(0.0) == (0, 0)


def test_events_under_clock_are_stamped_after_their_instant_and_strictly_increasing():
    stamps = StampClock(simulated=True)
    first = stamps.event(0.25, _no_wall)
    assert first == (1, 250_000_000 + EVENT_STEP_NS)  # SIM_EPOCH + 0.25 s, one step after the instant
    second = stamps.event(0.25, _no_wall)  # the same instant: one step after the last event
    assert second == (1, 250_000_000 + 2 * EVENT_STEP_NS)
    assert stamps.event(0.5, _no_wall) == (1, 500_000_000 + EVENT_STEP_NS)


def test_events_on_the_wall_clock_take_its_time_and_never_go_back():
    stamps = StampClock(simulated=False, origin=1000.0)
    assert stamps.event(3.0, lambda: 5_000_000_123) == (5, 123)
    assert stamps.event(3.0, lambda: 4_000_000_000) == (5, 123 + EVENT_STEP_NS)  # the wall clock went back
    assert stamps.event(3.0, lambda: 6_000_000_000) == (6, 0)


def test_command_time_is_the_stamp_on_simulated_time_and_none_for_stamp_zero():
    stamps = StampClock(simulated=True)
    assert stamps.command_time(0, 0) is None  # the bridge's mark of invalid data: obeyed at once
    assert stamps.command_time(3, 500_000_000) == pytest.approx(3.5 - SIM_EPOCH)
    stamps.origin = 100.0
    assert stamps.command_time(100, 250_000_000) == pytest.approx(0.25)


def test_reception_is_the_stamp_plus_delivery_never_after_it_was_taken_up():
    simulated = StampClock(simulated=True)
    assert simulated.reception_time(served=1e9, stamp=2.0, sim_time=2.01) == pytest.approx(2.0 + DELIVERY)
    assert simulated.reception_time(served=1e9, stamp=2.0, sim_time=2.0002) == 2.0002  # taken up before that
    assert simulated.reception_time(served=1e9, stamp=None, sim_time=2.0) == 2.0
    far = 2.0 - SERVO_CLOCK - 0.01  # on another clock: when it was taken up
    assert simulated.reception_time(served=1e9, stamp=far, sim_time=2.0) == 2.0
    wall = StampClock(simulated=False, origin=1000.0)  # simulated time is the wall's, origin behind
    assert wall.reception_time(served=1005.0, stamp=4.99, sim_time=-1.0) == pytest.approx(4.99 + DELIVERY)
    assert wall.reception_time(served=1005.0, stamp=None, sim_time=-1.0) == pytest.approx(5.0)


# -- the joint topics -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def psm_config():
    return load_sim_config("PSM1")


def _psm(config, **kwargs) -> tuple[SimulatedArm, JointTopics]:
    spec = arm_spec("PSM1")
    sim = SimulatedArm(config, spec.variant("PSM1"), noise=False, **kwargs)
    return sim, JointTopics(sim, spec)


def test_psm_with_its_tool_publishes_six_joints_and_the_jaw_apart(psm_config):
    sim, joints = _psm(psm_config)
    assert (joints.arm_joints, joints.jaw, joints.has_jaw) == (6, 6, True)
    assert joints.state_topics() == ["measured_js", "setpoint_js", "gravity_compensation/setpoint_js",
                                     "jaw/measured_js", "jaw/setpoint_js"]
    sample = sim.sample()
    builtin = np.arange(7.0)
    states = {s.topic: s for s in joints.states(sample, builtin)}
    assert [s.topic for s in joints.states(sample, builtin)] == ["measured_js", "setpoint_js", "jaw/measured_js",
                                                                  "jaw/setpoint_js",
                                                                  "gravity_compensation/setpoint_js"]
    assert list(states["measured_js"].names) == sim.names[:6]
    assert np.array_equal(states["measured_js"].position, sample.position[:6])
    assert np.array_equal(states["jaw/measured_js"].position, sample.position[6:])
    assert states["setpoint_js"].velocity is None
    assert np.array_equal(states["gravity_compensation/setpoint_js"].effort, builtin[:6])
    assert all(s.valid for s in states.values()) and joints.cartesian_valid(sample)


def test_psm_without_its_tool_publishes_seven_joints_and_an_invalid_jaw(psm_config):
    _, joints = _psm(psm_config, tool_engaged=False)
    assert (joints.arm_joints, joints.has_jaw) == (7, False)
    sample = Sample(True, *(np.full(7, 0.5) for _ in range(5)))
    states = {s.topic: s for s in joints.states(sample, np.zeros(7))}
    assert len(states["measured_js"].position) == 7
    assert np.array_equal(states["jaw/measured_js"].position, [0.0]) and not states["jaw/measured_js"].valid
    assert states["measured_js"].valid and not joints.cartesian_valid(sample)


def test_invalid_sample_is_invalid_on_every_topic(psm_config):
    _, joints = _psm(psm_config)
    zeros = np.zeros(7)
    sample = Sample(False, zeros, zeros, zeros, zeros, zeros)
    assert not any(s.valid for s in joints.states(sample, zeros)) and not joints.cartesian_valid(sample)


def test_mtm_has_no_jaw_and_a_gripper_topic():
    spec = arm_spec("MTML")
    sim = SimulatedArm(load_sim_config("MTML"), spec.variant("MTML"), noise=False)
    joints = JointTopics(sim, spec)
    assert (joints.arm_joints, joints.jaw, joints.has_jaw) == (7, 7, False)
    assert joints.state_topics()[-1] == "gripper/measured_js"
    gripper = [s for s in joints.states(sim.sample(), np.zeros(7)) if s.topic == "gripper/measured_js"]
    assert len(gripper) == 1 and list(gripper[0].position) == [0.0] and gripper[0].effort is None
    assert np.array_equal(joints.with_jaw([1.0] * 7, np.zeros(7)), np.ones(7))


def test_with_jaw_completes_the_arm_joints_only(psm_config):
    _, joints = _psm(psm_config)
    reference = np.arange(7.0)
    assert np.array_equal(joints.with_jaw([9.0] * 6, reference), [9.0] * 6 + [6.0])
    assert np.array_equal(joints.with_jaw([9.0] * 3, reference), [9.0] * 3)  # refused later by the checks


def test_jaw_value_takes_one_finite_value():
    assert jaw_value([0.25], "position") == 0.25
    with pytest.raises(DvrkIdentError, match="jaw position: 2 values, expected 1"):
        jaw_value([0.1, 0.2], "position")
    with pytest.raises(DvrkIdentError, match="jaw velocity: nan"):
        jaw_value([math.nan], "velocity")


def test_servo_jp_of_the_arm_joints_leaves_the_jaw_setpoint(psm_config):
    sim, joints = _psm(psm_config)
    q_ref = sim.servo_reference()[0].copy()
    goal = q_ref[:6] + 0.002
    joints.servo_jp(goal, [], None, sim.time)
    after = sim.servo_reference()[0]
    assert np.allclose(after[:6], goal) and after[6] == q_ref[6]
    joints.jaw_servo_jp([q_ref[6] + 0.01], [], None, sim.time)
    after = sim.servo_reference()[0]
    assert np.allclose(after[:6], goal) and after[6] == pytest.approx(q_ref[6] + 0.01)


def test_servo_jr_is_relative_to_the_stream_s_setpoint(psm_config):
    sim, joints = _psm(psm_config)
    q_ref = sim.servo_reference()[0].copy()
    joints.servo_jr([0.001] * 6, [], None, sim.time)
    assert np.allclose(sim.servo_reference()[0][:6], q_ref[:6] + 0.001)
    with pytest.raises(DvrkIdentError):
        joints.servo_jr([math.nan] * 6, [], None, sim.time)


def test_servo_jf_of_the_arm_joints_keeps_the_last_jaw_effort(psm_config):
    sim, joints = _psm(psm_config)
    joints.jaw_servo_jf([0.05])  # position mode: kept for the next servo_jf
    assert sim.mode != "effort" and joints.jaw_effort == 0.05
    joints.servo_jf([0.0] * 6)
    assert sim.mode == "effort" and sim.effort_command[6] == pytest.approx(0.05)
    joints.jaw_servo_jf([-0.02])  # effort mode: applied at once, the arm joints' efforts kept
    assert sim.effort_command[6] == pytest.approx(-0.02) and np.allclose(sim.effort_command[:6], 0.0)


def test_move_jp_of_the_arm_joints_keeps_the_jaw_goal(psm_config):
    sim, joints = _psm(psm_config)
    jaw = sim.q_ref[6]
    joints.move_jr([0.01] + [0.0] * 5)
    start = sim.q_ref[0]
    sim.advance(1.0)
    assert sim.q_ref[0] == pytest.approx(start + 0.01, abs=1e-6) and sim.q_ref[6] == pytest.approx(jaw)


def test_commands_to_an_arm_not_ready_are_ignored(psm_config):
    _, joints = _psm(psm_config, initial_state="DISABLED")
    for command in (lambda: joints.servo_jp([0.0] * 6, [], None, 0.0), lambda: joints.move_jp([0.0] * 6),
                    lambda: joints.jaw_move_jp([0.0]), lambda: joints.servo_jf([0.0] * 6)):
        with pytest.raises(ArmNotReadyError):
            command()


# -- the freeze hook --------------------------------------------------------------------------
def _current(calls: list[int]):
    def current():
        calls.append(1)
        zeros = np.zeros(2)
        return Sample(True, zeros, zeros, zeros, zeros, zeros), np.ones(2)
    return current


def test_freeze_repeats_one_sample_with_a_jittered_stamp_for_its_duration():
    freeze, calls = StateFreeze(seed=3), []
    assert freeze.frozen(1.0, 5.0, _current(calls)) is None and not calls  # no freeze: the caller samples
    freeze.ask(0.1)
    first = freeze.frozen(1.0, 5.0, _current(calls))
    assert first is not None and len(calls) == 1
    assert abs(first.stamp - 5.0) <= FROZEN_STAMP_JITTER and np.array_equal(first.builtin, np.ones(2))
    later = freeze.frozen(1.05, 5.05, _current(calls))
    assert later is not None and later.sample is first.sample and len(calls) == 1  # the same sample again
    assert abs(later.stamp - 5.0) <= FROZEN_STAMP_JITTER and later.stamp != first.stamp
    assert freeze.frozen(1.1, 5.1, _current(calls)) is None and freeze.thawed
    assert freeze.frozen(1.11, 5.11, _current(calls)) is None and not freeze.thawed


@pytest.mark.parametrize("seconds", [-1.0, math.nan, math.inf])
def test_freeze_wants_a_duration(seconds):
    with pytest.raises(DvrkIdentError, match="freeze_state"):
        StateFreeze(seed=0).ask(seconds)


# -- pacing: the node's policy, its steps and ticks, its warnings --------------------------------
def test_wall_clock_policy():
    fast = wall_clock_schedule(100.0)
    assert (fast.period, fast.stall, fast.max_lag, fast.delay) == (0.01, WALL_STALL, WALL_MAX_LAG, WALL_DELAY)
    slow = wall_clock_schedule(4.0)  # two periods are longer than WALL_STALL, but never beyond WALL_MAX_LAG
    assert slow.stall == WALL_MAX_LAG
    assert wall_clock_schedule(10.0).stall == pytest.approx(0.2)


def test_clock_policy_slips_after_two_state_periods_of_simulated_time():
    assert clock_pacer(100.0, 1.0).max_lag == pytest.approx(0.02)
    assert clock_pacer(100.0, 0.5).max_lag == pytest.approx(0.04)
    assert clock_pacer(100.0, 0.0).max_lag == pytest.approx(0.02)


def test_step_carry_takes_whole_steps_and_carries_the_rest():
    carry = StepCarry(1.0 / 1500.0)
    assert carry.steps_for(0.01) == 15
    taken = [carry.steps_for(0.001) for _ in range(1000)]
    assert set(taken) == {1, 2} and sum(taken) == 1500 and carry.steps == 1515


def test_clock_ticks_publish_a_state_every_period():
    ticks = ClockTicks(500.0, 100.0, SIM_EPOCH)
    due = [ticks.tick() for _ in range(10)]
    assert due == [False, False, False, False, True] * 2
    assert ticks.elapsed == pytest.approx(0.02) and ticks.stamp == pytest.approx(SIM_EPOCH + 0.02)
    uneven = ClockTicks(300.0, 100.0, SIM_EPOCH)  # ticks of 3.33 ms: a state at the first tick past each period
    assert sum(uneven.tick() for _ in range(300)) == 99  # the 100th is due a few ns after the 300th tick


def test_stalls_are_reported_once_each():
    clock = FakeClock()
    schedule = WallClockSchedule(0.01, max_lag=0.5, stall=0.05, clock=clock)
    clock.now += 0.01
    schedule.due()
    assert schedule.stall_report() is None
    clock.now += 0.11  # 0.1 s late
    schedule.due()
    report = schedule.stall_report()
    assert report is not None and "1 stalls over 50 ms so far" in report and "not simulated" not in report
    assert schedule.stall_report() is None  # said once
    clock.now += 1.0
    schedule.due()
    report = schedule.stall_report()
    assert report is not None and "2 stalls" in report and "1 over 0.5 s not simulated" in report
    schedule.restart()
    assert schedule.stall_report() is None


def test_slips_are_reported_once_each():
    clock = FakeClock()
    pacer = RealTimePacer(1.0, max_lag=0.02, clock=clock)
    assert pacer.slip_report() is None
    clock.now += 0.2
    assert pacer.delay(0.01) == 0.0
    report = pacer.slip_report()
    assert report is not None and report.startswith("behind real time: 1 slips, 0.190 s")
    assert pacer.slip_report() is None
    assert pacer.summary() == "1 slips, 0.190 s of wall time not replayed"


# -- reports ------------------------------------------------------------------------------------
def test_not_ready_warnings_are_throttled_per_topic_and_count_the_ones_held_back():
    warnings, asked = NotReadyWarnings(), []

    def reason() -> str:
        asked.append(1)
        return "MTML is DISABLED"

    assert warnings.warning("servo_jp", 10.0, reason) == "servo_jp: ignored, arm not ready: MTML is DISABLED"
    assert warnings.warning("servo_jp", 10.5, reason) is None
    assert warnings.warning("servo_jp", 11.0, reason) is None
    assert warnings.warning("move_jp", 11.0, reason) is not None  # another topic: its own throttle
    assert len(asked) == 2
    again = warnings.warning("servo_jp", 10.0 + NOT_READY_EVERY, reason)
    assert again == "servo_jp: ignored, arm not ready: MTML is DISABLED (+2 more since the last report)"
    assert warnings.warning("servo_jp", 10.0 + 2 * NOT_READY_EVERY, reason) == \
        "servo_jp: ignored, arm not ready: MTML is DISABLED"


def test_servo_summary():
    assert servo_summary([], "arrival", 0, 0) == ""
    assert servo_summary([], "stamp", 0, 3) == "; 3 state samples not published"
    by_stamp = servo_summary([0.001, 0.002, 0.003], "stamp", 4, 0)
    assert by_stamp.startswith("; 3 servo_jp obeyed 2.0 ms after their stamps (median; p99 3.0 ms, max 3.0 ms)")
    assert by_stamp.endswith(", 4 stale")
    on_arrival = servo_summary([0.0, 0.0, 0.0, 0.004], "arrival", 0, 1)
    assert on_arrival.startswith("; 4 servo_jp taken on arrival, 25.0 % after the instant they reached the arm")
    assert on_arrival.endswith("; 1 state samples not published")


def test_startup_line():
    wall = startup_line("PSM1", "psm", "2.4", "psm_true.json", "HOMED", False, None, 100.0, 1500.0, None, 1.0,
                        "arrival")
    assert wall == ("simulated PSM1 (psm, dVRK 2.4, true parameters psm_true.json): HOMED, built-in gravity "
                    "compensation off; state at 100 Hz, physics at 1500 Hz, wall-clock time; servo_jp taken on "
                    "arrival")
    clock = startup_line("ECM", "ecm", "2.4", "e.json", "HOMED", True, "shipped with the console", 100.0, 1500.0,
                         500.0, 0.0, "stamp")
    assert "on (the console's chain shipped with the console)" in clock
    assert "publishing /clock at 500 Hz (real-time factor max); servo_jp taken at its stamp" in clock


# -- set-up ------------------------------------------------------------------------------------------
def test_initial_position():
    spec = arm_spec("PSM1")
    assert initial_position((), spec, 7) is None and initial_position((0.0,), spec, 7) is None
    assert np.array_equal(initial_position((0.1,) * 7, spec, 7), [0.1] * 7)
    with pytest.raises(DvrkIdentError, match="initial_position: 3 values, the PSM has 7 joints"):
        initial_position((0.1,) * 3, spec, 7)


def test_console_chain_choice():
    psm, ecm, mtm = arm_spec("PSM1"), arm_spec("ECM"), arm_spec("MTML")
    assert console_chain("none", ecm, "2.4") is None and console_chain(" None ", psm, "2.4") is None
    assert console_chain("", psm, "2.4") is None  # a Classic PSM: the console loads none
    default = console_chain("", ecm, "2.4")
    assert default is not None and len(default.links) == 4  # the Classic ECM's, its endoscope's mass
    assert console_chain("", ecm, "2.3") is None
    assert len(console_chain(str(psm.console_gc), psm, "2.4").links) == 7
    with pytest.raises(DvrkIdentError, match="the console compensates no MTM"):
        console_chain(str(psm.console_gc), mtm, "2.4")
    with pytest.raises(DvrkIdentError, match="4 links, the PSM's chain has 7"):
        console_chain(str(ecm.console_gc), psm, "2.4")
