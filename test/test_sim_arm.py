"""The simulated arm's core (no ROS): commands, checks, holding, hysteresis, playback; the operating
state (homing, faults, readiness), move_jp clipping and goal-reached events, the built-in gravity
compensation by dVRK version, the measured effort's current quantisation."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.errors import ArmNotReadyError, DvrkIdentError, SafetyError
from dvrk_ident_ros.sim.arm import SimulatedArm
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.operating import Action, OperatingMachine

#: rad (m): how far the simulated PSM rests from its setpoint: the dVRK's PSM PID has no integral term, and the
#: yaw carries about 1.4 N m at Kp 120 N m/rad (test_pid_holds_the_home_pose_sagging_as_the_dvrk_s_does)
PID_SAG = 0.02


@pytest.fixture(scope="module")
def mtm_config():
    return load_sim_config("mtm")


@pytest.fixture(scope="module")
def psm_config():
    return load_sim_config("psm")


def test_true_parameters_are_physically_consistent(mtm_config, psm_config):
    from dvrk_ident_ros.model.physical import pseudo_inertia

    for config in (mtm_config, psm_config):
        layout = config.model.layout
        for start in layout.inertial_blocks.values():
            assert np.linalg.eigvalsh(pseudo_inertia(config.delta[start:start + 10])).min() > -1e-12
        M = config.model.mass_matrix(config.model.motor_from_dvrk(config.home)[None], config.delta)[0]
        assert np.linalg.eigvalsh(M).min() > 1e-5  # the inertia floor: M is well conditioned for 1.5 kHz


def test_pid_holds_the_home_pose_sagging_as_the_dvrk_s_does(psm_config):
    """The dVRK's PSM PID has no integral term: at rest the arm sags until Kp (q_ref - q) carries the static
    torques (the true model's gravity, computed apart from the servo); the yaw sags most (about 12 mrad)."""
    arm = SimulatedArm(psm_config, noise=False)
    arm.advance(2.0)
    sag = psm_config.home - arm.q
    assert np.max(np.abs(sag)) < 0.02
    held = psm_config.gains.kp * sag
    assert np.allclose(held, arm.static_torque(arm.state.q), atol=2e-3), (held, arm.static_torque(arm.state.q))
    assert np.max(np.abs(held)) > 0.5  # the PID carries the arm's weight, not a feed-forward


def test_true_static_torques_through_servo_jf_keep_the_arm_still(psm_config):
    arm = SimulatedArm(psm_config, noise=False)
    arm.advance(3.0)  # settle under the PID
    arm.servo_jf(arm.static_torque(arm.state.q))
    q0 = arm.q.copy()
    arm.advance(1.0)
    assert np.max(np.abs(arm.q - q0)) < 2e-3


def test_builtin_compensation_holds_the_mtm_with_zero_effort(mtm_config):
    arm = SimulatedArm(mtm_config, "MTML", noise=False)
    arm.use_gravity_compensation(True)
    arm.servo_jf(np.zeros(7))
    q0 = arm.q.copy()
    arm.advance(1.0)
    assert np.max(np.abs(arm.q - q0)) < 1e-6
    arm.use_gravity_compensation(False)  # and without it, the arm falls
    arm.advance(0.5)
    assert np.max(np.abs(arm.q - q0)) > 0.05


def test_move_jp_reaches_the_goal_and_is_busy_meanwhile(psm_config):
    arm = SimulatedArm(psm_config, noise=False)
    goal = psm_config.home + np.array([0.2, -0.1, 0.02, 0.3, 0.2, -0.2, 0.1])
    duration = arm.move_jp(goal)
    arm.advance(duration / 2)
    assert arm.busy
    arm.advance(duration / 2 + 1.0)
    assert not arm.busy
    assert np.max(np.abs(arm.q - goal)) < PID_SAG


@pytest.mark.parametrize("command", [
    lambda a: a.servo_jp(np.zeros(6)),
    lambda a: a.servo_jp(np.full(7, np.nan)),
    lambda a: a.servo_jp(np.array([3.0, 0, 0.12, 0, 0, 0, 0.5])),
    lambda a: a.move_jp(np.array([0, 0, np.nan, 0, 0, 0, 0.5])),
    lambda a: a.move_jp(np.zeros(6)),
    lambda a: a.servo_jf(np.full(7, np.nan)),
    lambda a: a.servo_jf(np.array([100.0, 0, 0, 0, 0, 0, 0])),
    lambda a: a.servo_jp(np.array([0.5, 0, 0.12, 0, 0, 0, 0.5])),  # a jump: not a stream
])
def test_bad_commands_are_rejected_and_change_nothing(psm_config, command):
    arm = SimulatedArm(psm_config, noise=False)
    arm.advance(0.5)
    before = (arm.mode, arm.q_ref.copy(), arm.effort_command.copy())
    with pytest.raises(SafetyError) as raised:
        command(arm)
    assert not isinstance(raised.value, ArmNotReadyError)
    assert arm.mode == before[0] and np.array_equal(arm.q_ref, before[1])
    assert np.array_equal(arm.effort_command, before[2])
    assert not arm.busy and arm.pop_goal_events() == []


def test_hysteresis_makes_the_holding_torque_depend_on_the_approach(mtm_config):
    """What MLSE models: the same pose reached from above and from below needs different torques."""
    pose = np.array([0.0, 0.3, 0.0, 0.0, 1.0, 0.0, 0.0])
    efforts = []
    for side in (+1, -1):
        arm = SimulatedArm(mtm_config, "MTML", noise=False)
        arm.move_jp(pose - side * 0.15)
        arm.advance(3.0)
        arm.advance(arm.move_jp(pose) + 2.0)
        efforts.append(arm.effort.copy())
    gap = efforts[0] - efforts[1]
    # the wrist platform's cable: z saturates at +-1 either way, the gap is 2 x the amplitude (0.015 N m at q4 = 0);
    # on the heavy joints the PID's settling partly reverses the hysteresis, the gap is smaller but there
    assert gap[3] == pytest.approx(2 * 0.015, rel=0.2)
    assert np.all(np.abs(gap[3:6]) > 5e-3)
    assert np.linalg.norm(gap[:3]) > 5e-3


def test_streamed_setpoints_are_followed(psm_config):
    from dvrk_ident_ros.excitation.files import load_trajectory
    from dvrk_ident_ros.excitation.playback import FourierPlayback
    from dvrk_ident_ros.model.description import config_directory
    from dvrk_ident_ros.safety import CommandChecker

    arm = SimulatedArm(psm_config, noise=False)
    traj, _ = load_trajectory(config_directory() / "trajectories" / "psm_fourier.yaml", arm="psm")
    plan = FourierPlayback(traj, psm_config.model, CommandChecker(psm_config.model), periods=1)
    total = plan.start(0.0, arm.q)
    t, worst = 0.0, 0.0
    while t < total:
        sp = plan.step(t)
        arm.servo_jp(sp.position, sp.velocity)
        arm.advance(0.01)  # 100 Hz stream, first-order hold in between
        t += 0.01
        worst = max(worst, float(np.max(np.abs(plan.step(t).position - arm.q))))
    assert worst < 0.05


# -- operating state ---------------------------------------------------------------------------------

def _status(arm: SimulatedArm) -> tuple[str, bool, bool]:
    s = arm.status
    return s.state, s.is_homed, s.is_busy


def test_state_machine_follows_the_crtk_commands():
    m = OperatingMachine("DISABLED", homing_time=1.0)
    assert (m.state.value, m.is_homed, m.commandable, m.data_valid) == ("DISABLED", False, False, False)
    m.command("enable")
    assert (m.state.value, m.is_homed, m.commandable) == ("ENABLED", False, False)
    m.command("home")
    m.start_homing(10.0, 0.2)  # a short move: the homing still lasts homing_time
    assert m.homing and m.status().is_busy and not m.is_homed
    assert not m.update(10.9) and m.homing
    assert m.update(11.0) and (m.is_homed, m.homing, m.commandable, m.data_valid) == (True, False, True, True)
    m.command("pause")
    assert (m.state.value, m.is_homed, m.commandable, m.data_valid) == ("PAUSED", True, False, True)
    m.command("resume")
    assert m.commandable
    # homed and ENABLED: nothing to do, as the dVRK (dvrk_python's home() sends it and returns at once on a homed
    # arm: a new homing would swallow the script's next move); unhomed, it homes again
    assert m.command("home") == Action.NONE and m.is_homed
    m.command("unhome")
    m.command("home")
    assert not m.is_homed
    m.start_homing(20.0, 3.0)  # a long move: the homing lasts as long
    assert m.command("home") == Action.NONE and m.homing  # homing: it goes on
    assert not m.update(21.5) and m.update(23.0)
    m.command("unhome")
    assert (m.state.value, m.is_homed) == ("ENABLED", False)
    m.fault("test")
    assert (m.state.value, m.is_homed, m.fault_reason) == ("FAULT", False, "test")
    m.command("resume")  # not PAUSED: nothing
    assert m.state.value == "FAULT"
    m.command("enable")  # clears the fault, not homed
    assert (m.state.value, m.is_homed, m.fault_reason) == ("ENABLED", False, "")
    m.command("disable")
    m.command("home")  # from DISABLED: enables first
    assert m.state.value == "ENABLED" and not m.is_homed
    with pytest.raises(DvrkIdentError, match="unknown state command"):
        m.command("power_on")
    for bad in ({"initial_state": "READY"}, {"homing_time": -1.0}):
        with pytest.raises(DvrkIdentError):
            OperatingMachine(**bad)
    assert OperatingMachine("HOMED").commandable and OperatingMachine("FAULT").state.value == "FAULT"
    mtm = OperatingMachine("ENABLED", homing_time=1.0, homed_while_homing=True)  # the dVRK's MTM
    mtm.command("home")
    mtm.start_homing(0.0, 0.5)
    status = mtm.status()
    assert (status.is_homed, status.is_busy, mtm.data_valid, mtm.commandable) == (True, True, True, False)
    assert not status.ready  # homed, but busy: not to be commanded
    assert mtm.update(1.0) and mtm.commandable and mtm.status().ready


def test_homing_moves_home_busy_for_homing_time(psm_config):
    start = psm_config.home + np.array([0.05, -0.05, 0.005, 0.05, 0.05, -0.05, 0.05])
    arm = SimulatedArm(psm_config, noise=False, initial_position=start, initial_state="DISABLED", homing_time=0.5)
    assert _status(arm) == ("DISABLED", False, False) and not arm.sample().valid
    arm.advance(0.2)
    assert np.max(np.abs(arm.q - start)) < PID_SAG  # a DISABLED arm holds where it is
    arm.state_command("home")
    assert _status(arm) == ("ENABLED", False, True)
    arm.advance(0.25)
    assert 0.2 < np.abs(arm.q[3] - start[3]) / 0.05 < 0.8  # on its way home (the roll: it carries no weight)
    arm.advance(0.23)
    assert _status(arm) == ("ENABLED", False, True) and not arm.sample().valid
    arm.advance(0.04)
    assert _status(arm) == ("ENABLED", True, False) and arm.sample().valid and arm.ready
    arm.advance(0.5)
    assert np.max(np.abs(arm.q - psm_config.home)) < PID_SAG
    assert arm.pop_goal_events() == []  # homing is not a move_jp


def test_homing_from_far_lasts_as_long_as_the_move_speeds_need(mtm_config):
    start = mtm_config.home.copy()
    start[0] = 0.5  # 15/8 x 0.5 rad / 0.6 rad/s: 1.5625 s, more than homing_time
    arm = SimulatedArm(mtm_config, "MTML", noise=False, initial_position=start, initial_state="ENABLED",
                       homing_time=0.2)
    arm.state_command("home")
    arm.advance(1.5)
    assert _status(arm) == ("ENABLED", True, True) and arm.sample().valid  # an MTM: homed while it homes
    arm.advance(0.1)
    assert _status(arm) == ("ENABLED", True, False)


@pytest.mark.parametrize("command", ["servo_jf", "servo_jp", "move_jp"])
def test_a_command_during_the_mtm_s_homing_move_faults_the_arm(mtm_config, command):
    """The MTM's data is valid and it says homed (busy) during its homing move; the dVRK takes a command then
    (and a servo_jf faults it): the simulated arm faults on any, so that a node that sends one is seen."""
    arm = SimulatedArm(mtm_config, "MTML", noise=False, initial_state="DISABLED", homing_time=1.0)
    arm.state_command("home")
    arm.advance(0.3)
    assert _status(arm) == ("ENABLED", True, True) and arm.sample().valid
    with pytest.raises(ArmNotReadyError, match="faulted"):
        getattr(arm, command)(np.zeros(7) if command == "servo_jf" else arm.q.copy())
    assert _status(arm) == ("FAULT", False, False) and arm.operating.fault_reason == f"{command} while homing"
    assert arm.mode == "position" and not arm.busy  # the homing stopped, the arm holds
    arm.advance(1.0)
    assert _status(arm) == ("FAULT", False, False) and not arm.sample().valid
    arm.state_command("enable")
    assert _status(arm) == ("ENABLED", False, False)


def test_tracking_error_faults_the_arm_and_it_holds(psm_config):
    goal = psm_config.home + np.array([0.3, 0, 0, 0, 0, 0, 0])
    step = psm_config.home + np.array([0.2, 0, 0, 0, 0, 0, 0])  # a servo_jp step: 0.2 rad of error at once
    arm = SimulatedArm(psm_config, noise=False)
    assert arm.tracking_limit[2] == pytest.approx(0.05) and arm.tracking_limit[0] == pytest.approx(0.5)
    arm.advance(arm.move_jp(goal) + 0.2)  # the default limit: ordinary tracking never faults
    arm.servo_jp(step)
    arm.advance(0.5)
    assert _status(arm) == ("ENABLED", True, False) and arm.pop_goal_events() == [True]
    tight = SimulatedArm(psm_config, noise=False, fault_tracking_error=0.1)
    tight.advance(0.2)
    assert _status(tight) == ("ENABLED", True, False)
    tight.servo_jp(step)
    tight.advance(0.01)
    assert _status(tight) == ("FAULT", False, False)
    assert tight.operating.fault_reason.startswith("tracking error: yaw ")
    held = tight.q.copy()
    tight.advance(0.5)
    assert tight.mode == "position" and np.max(np.abs(tight.q - held)) < 0.02  # it holds where it faulted
    assert abs(tight.q[0] - psm_config.home[0]) < 0.05
    with pytest.raises(DvrkIdentError):
        SimulatedArm(psm_config, fault_tracking_error=0.0)


def test_a_fault_cuts_a_move_short(psm_config):
    arm = SimulatedArm(psm_config, noise=False)
    arm.move_jp(psm_config.home + np.array([0.3, 0, 0, 0, 0, 0, 0]))
    arm.advance(0.2)
    arm.inject_fault("test")
    assert _status(arm) == ("FAULT", False, False) and arm.pop_goal_events() == [False]
    held = arm.q.copy()
    arm.advance(0.5)
    assert np.max(np.abs(arm.q - held)) < 0.02 and not arm.sample().valid


@pytest.mark.parametrize("initial, command", [
    ("DISABLED", None), ("ENABLED", None), ("FAULT", None), ("HOMED", "pause"), ("HOMED", "unhome"),
])
def test_commands_are_ignored_when_the_arm_is_not_ready(psm_config, initial, command):
    arm = SimulatedArm(psm_config, noise=False, initial_state=initial)
    if command:
        arm.state_command(command)
    arm.advance(0.1)
    before = (arm.mode, arm.q_ref.copy(), arm.effort_command.copy())
    step = arm.q_ref + np.array([0.05, 0, 0, 0, 0, 0, 0])
    for call in (lambda: arm.servo_jp(step), lambda: arm.move_jp(step), lambda: arm.servo_jf(np.zeros(7)),
                 arm.hold):
        with pytest.raises(ArmNotReadyError, match="arm not ready"):
            call()
    assert arm.mode == before[0] and np.array_equal(arm.q_ref, before[1])
    assert np.array_equal(arm.effort_command, before[2]) and not arm.busy
    assert arm.not_ready_reason("PSM1").startswith("PSM1 is ")
    sample = arm.sample()
    paused = command == "pause"
    assert sample.valid == paused  # PAUSED: homed, the data stays valid
    if not paused:
        assert not any(np.any(v) for v in (sample.position, sample.velocity, sample.effort,
                                           sample.setpoint_position, sample.setpoint_effort))


def test_psm_without_a_tool_ignores_commands(psm_config):
    arm = SimulatedArm(psm_config, noise=False, tool_engaged=False)
    assert arm.status.ready and not arm.ready and arm.not_ready_reason("PSM2") == "PSM2 has no tool engaged"
    with pytest.raises(ArmNotReadyError, match="no tool engaged"):
        arm.servo_jp(arm.q_ref)
    assert arm.sample().valid


def test_move_jp_clips_beyond_the_limits_and_reports_the_goal(mtm_config):
    arm = SimulatedArm(mtm_config, "MTML", noise=False)
    beyond = mtm_config.home.copy()
    beyond[5] = 2.0  # wrist_yaw: the hardware limit is about 0.716 rad
    clipped = arm.checker.clamp_position(beyond)
    assert 0.6 < clipped[5] < 0.8
    duration = arm.move_jp(beyond)
    arm.advance(duration / 2)
    assert arm.status.is_busy and arm.pop_goal_events() == []
    arm.advance(duration / 2 + 0.5)
    assert not arm.status.is_busy and arm.pop_goal_events() == [True]
    assert np.max(np.abs(arm.q - clipped)) < 5e-3
    arm.move_jp(mtm_config.home)
    arm.advance(0.1)
    arm.servo_jp(arm.q_ref)  # cuts the move short
    assert arm.pop_goal_events() == [False] and not arm.busy


def test_builtin_gravity_compensation_at_start_by_dvrk_version(mtm_config, psm_config):
    assert SimulatedArm(mtm_config, "MTML", dvrk_version="2.4").builtin_gravity_compensation
    mtm23 = SimulatedArm(mtm_config, "MTML", dvrk_version="2.3", initial_state="DISABLED")
    assert not mtm23.builtin_gravity_compensation
    assert not np.any(mtm23.builtin_compensation_effort())
    mtm23.use_gravity_compensation(True)  # accepted in any state
    assert mtm23.builtin_gravity_compensation and np.any(mtm23.builtin_compensation_effort())
    assert not SimulatedArm(psm_config, dvrk_version="2.4").builtin_gravity_compensation
    with pytest.raises(DvrkIdentError, match="dvrk_version"):
        SimulatedArm(mtm_config, "MTML", dvrk_version="2.5")


def test_measured_effort_is_current_quantised_the_setpoint_effort_is_the_pids(psm_config):
    resolution = psm_config.noise.effort_resolution
    assert resolution is not None and np.all(resolution > 0)
    arm = SimulatedArm(psm_config, seed=3)
    arm.advance(0.5)
    measured = []
    for _ in range(20):
        arm.advance(0.01)
        sample = arm.sample()
        assert np.array_equal(sample.setpoint_effort, arm.effort)  # the PID's command, exact
        measured.append(sample.effort)
    counts = psm_config.model.motor_torque_from_dvrk(np.array(measured)) / resolution
    assert np.max(np.abs(counts - np.round(counts))) < 1e-6  # whole ADC steps in motor coordinates
    exact = SimulatedArm(psm_config, noise=False)
    exact.advance(0.5)
    counts = psm_config.model.motor_torque_from_dvrk(exact.sample().effort) / resolution
    assert np.max(np.abs(counts - np.round(counts))) > 1e-3  # noise off: no quantisation either


# -- servo_jp as the dVRK takes it: on arrival, held as it came ------------------------------------------------------

def test_on_arrival_a_setpoint_is_taken_and_held_as_the_dvrk_does(psm_config):
    """mtsIntuitiveResearchKitArm::servo_jp stores the goal and its velocity; the PID takes them at its next
    period and holds them: no stamp, no interpolation, the velocity is the PID's velocity setpoint until the
    next command (so a stream's late sample reaches the arm as a step)."""
    assert SimulatedArm(psm_config, noise=False).servo_timing == "stamp"  # the default, gentler
    arm = SimulatedArm(psm_config, noise=False, servo_timing="arrival")
    start = arm.q_ref.copy()
    goal = start + np.where(np.arange(7) == 0, 0.01, 0.0)
    speed = np.where(np.arange(7) == 0, 0.5, 0.0)
    arm.servo_jp(goal, speed, at=arm.time + 0.01)  # a stamp ahead: ignored, taken now
    assert arm.pending_servo == 0 and np.array_equal(arm.q_ref, goal)
    arm.advance(0.02)  # 30 control periods later: not carried forward, the velocity still the setpoint's
    reference, velocity = arm._reference()
    assert np.array_equal(reference, goal) and np.array_equal(velocity, speed)
    arm.servo_jp(goal, at=arm.time - 0.5)  # a stamp in the past is no older setpoint either: taken
    assert arm.stale_servo == 0 and not np.any(arm._reference()[1])
    with pytest.raises(DvrkIdentError, match="servo_timing"):
        SimulatedArm(psm_config, servo_timing="interpolated")


def test_on_arrival_a_setpoint_waits_for_the_instant_it_reached_the_arm(psm_config):
    """``received`` (the node's: the sender's stamp plus the delivery, never after the simulator took it up): a
    setpoint that reached the arm ahead of the simulated time waits for that instant, then is held as it came
    (no carry forward); one that reached it before now is taken at once; a reception time on another clock is
    no reception time."""
    arm = SimulatedArm(psm_config, noise=False, servo_timing="arrival")
    start = arm.q_ref.copy()
    goal = start + np.where(np.arange(7) == 0, 0.01, 0.0)
    speed = np.where(np.arange(7) == 0, 0.5, 0.0)
    arm.servo_jp(goal, speed, received=arm.time + 0.003)
    assert arm.pending_servo == 1 and np.array_equal(arm.q_ref, start)
    arm.advance(0.002)
    assert arm.pending_servo == 1 and np.array_equal(arm._reference()[0], start)  # not yet
    arm.advance(0.002)
    assert arm.pending_servo == 0 and np.array_equal(arm._reference()[0], goal)
    arm.advance(0.02)
    assert np.array_equal(arm._reference()[0], goal)  # held as it came
    later = goal + np.where(np.arange(7) == 0, 0.01, 0.0)
    arm.servo_jp(later, speed, received=arm.time - 0.004)  # reached the arm 4 ms ago: taken now, not carried
    assert arm.pending_servo == 0 and np.array_equal(arm._reference()[0], later)
    arm.servo_jp(goal, received=arm.time + 5.0)  # another clock: taken now
    assert arm.pending_servo == 0 and np.array_equal(arm._reference()[0], goal)


# -- a stamped stream (servo_timing "stamp"): obeyed at the stamps' instants, the PSM's arm and jaw streams merged --

def test_stamped_setpoints_are_obeyed_at_their_stamps(psm_config):
    arm = SimulatedArm(psm_config, noise=False, servo_timing="stamp")
    start = arm.q_ref.copy()
    goal = start + np.where(np.arange(7) == 2, 0.001, 0.01)
    jaw = start.copy()
    jaw[6] += 0.02
    arm.servo_jp(jaw, at=arm.time + 0.01, joints=[6])  # the jaw's command arrives first ...
    arm.servo_jp(goal, at=arm.time + 0.01, joints=np.arange(6))  # ... then the arm's, for the same instant
    assert arm.pending_servo == 2 and np.allclose(arm.q_ref, start)  # nothing obeyed before its stamp
    reference, _ = arm.servo_reference()
    assert np.allclose(reference[:6], goal[:6]) and reference[6] == pytest.approx(jaw[6])
    arm.advance(0.005)
    assert np.allclose(arm.q_ref, start)
    arm.advance(0.006)
    assert arm.pending_servo == 0
    assert np.allclose(arm.q_ref[:6], goal[:6]) and arm.q_ref[6] == pytest.approx(jaw[6])
    arm.servo_jp(goal, at=arm.time - 1.0)  # a stamp in the past: obeyed at once
    assert arm.pending_servo == 0
    arm.servo_jp(goal, at=arm.time + 5.0)  # further ahead than any stream: another clock, obeyed at once
    assert arm.pending_servo == 0
    dropped = arm.q + np.where(np.arange(7) == 0, 0.05, 0.0)
    arm.servo_jp(dropped, at=arm.time + 0.1)
    arm.hold()  # a hold (or move_jp, servo_jf, a state change) drops what is pending
    held = arm.q_ref.copy()
    assert arm.pending_servo == 0
    arm.advance(0.2)
    assert np.allclose(arm.q_ref, held) and abs(arm.q_ref[0] - dropped[0]) > 0.04


def test_a_stream_that_stops_is_held_after_about_one_interval(psm_config):
    arm = SimulatedArm(psm_config, noise=False, servo_timing="stamp")
    q0 = arm.q_ref.copy()
    speed = np.where(np.arange(7) == 0, 0.5, 0.0)  # yaw at 0.5 rad/s, streamed every 2 ms
    for k in range(10):
        arm.servo_jp(q0 + speed * 0.002 * k, speed, at=arm.time + 0.002 if k else None)
        arm.advance(0.002)
    last = q0 + speed * 0.018
    arm.advance(0.0015)
    reference, velocity = arm._reference()
    assert 0.0 < reference[0] - last[0] <= 0.5 * 0.002 and velocity[0] == 0.5  # carried forward in between
    arm.advance(0.05)  # the stream stopped: held 1.5 intervals (3 ms) past the last setpoint, velocity 0
    reference, velocity = arm._reference()
    assert reference[0] == pytest.approx(last[0] + 0.5 * 0.003, abs=2e-4)
    assert velocity[0] == 0.0


def test_a_psm_jaw_move_joins_the_arms_move_as_the_dvrks_jaw_move_jp(psm_config):
    """move_jp of the six arm joints, then jaw/move_jp (the player's order for a pose): one move to both goals,
    no goal-reached false for the joined move, one true at its end; a wrist goal clipped against the jaw's old
    value is asked again with the new one (the dVRK clips each command's own joints)."""
    from dvrk_ident_ros.excitation.holds import random_poses

    arm = SimulatedArm(psm_config, "PSM1", noise=False)
    poses = random_poses(arm.checker, 3, np.random.default_rng(5), fraction=0.5)
    for pose in poses:
        arm.move_joints(np.append(pose[:6], arm.q_ref[6]), np.arange(6))  # the jaw as it is
        arm.move_joints(pose, [6])
        for _ in range(round(4.0 / arm.dt)):
            arm.step()
        assert arm.pop_goal_events() == [True]
        assert np.abs(arm.q_ref - pose).max() < 1e-12 and np.abs(arm.q - pose).max() < PID_SAG
    # the third pose's wrist yaw with the second pose's jaw is outside the blades' coupled limits
    clipped = arm.checker.clamp_position(np.append(poses[2][:6], poses[1][6]))
    assert np.abs(clipped[:6] - poses[2][:6]).max() > 0.01


def _states(events) -> list[tuple[str, bool, bool]]:
    return [(e.state, e.is_homed, e.is_busy) for e in events]


def test_every_accepted_state_command_is_answered_by_an_event_changed_or_not(mtm_config):
    """The console publishes operating_state on every accepted state_command (the dVRK Python client's enable()
    on an enabled arm and disable() on a disabled one wait for it), and once at start."""
    arm = SimulatedArm(mtm_config, "MTML", noise=False)
    assert _states(arm.pop_status_events()) == [("ENABLED", True, False)]  # the state at start
    arm.state_command("enable")
    assert _states(arm.pop_status_events()) == [("ENABLED", True, False)]
    arm.state_command("disable")
    arm.state_command("disable")
    assert _states(arm.pop_status_events()) == [("DISABLED", False, False)] * 2
    with pytest.raises(DvrkIdentError):
        arm.state_command("dance")
    assert arm.pop_status_events() == []  # refused: no event
    arm.advance(0.1)
    assert arm.pop_status_events() == []  # nothing happened


def test_a_move_is_busy_at_its_start_and_idle_at_its_end_one_event_each(psm_config):
    """Each move_jp starts with a busy event, a move_jp that replaces a running one too (no idle between them),
    and the arm's idle event comes once, at the end of the last; a jaw move likewise."""
    arm = SimulatedArm(psm_config, "PSM1", noise=False)
    arm.pop_status_events()
    home = arm.q.copy()
    goal = home.copy()
    goal[0] += 0.2
    duration = arm.move_jp(goal)
    assert _states(arm.pop_status_events()) == [("ENABLED", True, True)]
    arm.advance(duration / 2)
    assert arm.pop_status_events() == []
    arm.move_jp(home)  # replaces the running move
    assert _states(arm.pop_status_events()) == [("ENABLED", True, True)]
    arm.advance(duration + 0.2)
    assert _states(arm.pop_status_events()) == [("ENABLED", True, False)]
    arm.move_jp(arm.q_ref)  # a move to where the setpoint is: still a busy event, then idle
    arm.advance(0.2)
    assert _states(arm.pop_status_events()) == [("ENABLED", True, True), ("ENABLED", True, False)]
    jaw = arm.q_ref.copy()
    jaw[6] = 0.5
    arm.move_joints(jaw, [6])
    arm.advance(2.0)
    assert _states(arm.pop_status_events()) == [("ENABLED", True, True), ("ENABLED", True, False)]


def test_homing_and_a_fault_are_events(psm_config):
    arm = SimulatedArm(psm_config, "PSM1", noise=False, initial_state="DISABLED", homing_time=0.5)
    arm.pop_status_events()
    arm.state_command("home")
    assert _states(arm.pop_status_events()) == [("ENABLED", False, True)]
    arm.advance(5.0)
    assert _states(arm.pop_status_events()) == [("ENABLED", True, False)]
    arm.inject_fault("test")
    assert _states(arm.pop_status_events()) == [("FAULT", False, False)]


def test_the_trajectory_ratio_scales_the_moves_and_a_tool_can_be_emulated(psm_config):
    """trajectory_j/set_ratio in (0, 1] slows the moves from the next one on (0.5: twice as long); anything else
    is refused and changes nothing. emulate_tool_present engages a PSM's tool (and disengages it)."""
    arm = SimulatedArm(psm_config, "PSM1", noise=False)
    goal = arm.q.copy()
    goal[0] += 0.3
    full = arm.move_jp(goal)
    arm.advance(full + 0.1)
    arm.set_trajectory_ratio(0.5)
    assert arm.move_jp(arm.home) == pytest.approx(2 * full)
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(DvrkIdentError, match="set_ratio"):
            arm.set_trajectory_ratio(bad)
    assert arm.trajectory_ratio == 0.5
    bare = SimulatedArm(psm_config, "PSM1", noise=False, tool_engaged=False)
    with pytest.raises(ArmNotReadyError, match="no tool engaged"):
        bare.move_jp(goal)
    bare.emulate_tool_present(True)
    bare.move_jp(goal)
    bare.emulate_tool_present(False)
    assert not bare.ready
    arm.free()  # crtk free: effort mode at 0 N m
    assert arm.mode == "effort" and not arm.effort_command.any()
    arm.hold()
    assert arm.mode == "position"


@pytest.mark.parametrize("version", ["2.4", "2.3"])
def test_teleoperation_does_to_the_mtm_what_the_console_does(mtm_config, psm_config, version):
    """Enable: the MTM's own compensation on and every joint in effort mode at 0 N m (body/servo_cf zero, the
    orientation unlocked), so it floats; clutch (teleoperation enabled): the same; disable: hold in 2.4 (the
    PID at the pose), nothing in 2.3. A PSM's clutch holds it; the clutch outside teleoperation does nothing."""
    mtm = SimulatedArm(mtm_config, "MTML", noise=False, dvrk_version=version)
    mtm.use_gravity_compensation(False)
    mtm.clutch(True)  # not teleoperated: nothing
    assert mtm.mode == "position" and not mtm.builtin_gravity_compensation
    mtm.teleop(True)
    assert mtm.builtin_gravity_compensation and mtm.mode == "effort" and not mtm.effort_command.any()
    q0 = mtm.q.copy()
    mtm.advance(1.0)
    assert np.max(np.abs(mtm.q - q0)) < 0.05  # floats where the hand leaves it (the exact static torques)
    mtm.use_gravity_compensation(False)
    mtm.hold()
    mtm.clutch(True)
    assert mtm.builtin_gravity_compensation and mtm.mode == "effort"
    mtm.teleop(False)
    assert mtm.mode == ("position" if version == "2.4" else "effort")
    psm = SimulatedArm(psm_config, "PSM1", noise=False, dvrk_version=version)
    psm.teleop(True)
    assert psm.mode == "position"
    goal = psm.q.copy()
    goal[0] += 0.3
    psm.move_jp(goal)
    psm.advance(0.2)
    psm.clutch(True)  # held where it is: the move stops
    assert not psm.busy and np.allclose(psm.q_ref, psm.q)
