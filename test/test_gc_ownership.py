"""Who has the arm (gc/runtime/ownership.py, ROS-free): the gravity compensation's decisions off its control path,
as the node feeds them (samples at 100 Hz, operating states, readings of the dVRK's own compensation), against fakes of
the node's publishers and of its operating-state monitor: what is published, in which order, and what is said."""
from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.gc.runtime.fit_check import FitVerdict
from dvrk_ident_ros.gc.runtime.held_effort import FIT_SAMPLES, HeldEffort
from dvrk_ident_ros.gc.runtime.ownership import ArmOwnership
from dvrk_ident_ros.gc.runtime.supervisor import CompensationState, CompensationSupervisor, SupervisorSettings
from dvrk_ident_ros.gc.runtime.takeover_guard import GUARD_STOP, MTM_GUARD_LIMIT, TakeoverGuard

PERIOD = 0.01
JOINTS = 7
POSE = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
ENABLED = OperatingStatus(state="ENABLED", is_homed=True, is_busy=False)
DISABLED = OperatingStatus(state="DISABLED", is_homed=True, is_busy=False)


class _Arm:
    """The operating-state monitor: ready (and settled) or not."""

    def __init__(self) -> None:
        self.ready = True
        self.status: OperatingStatus | None = ENABLED

    def settled(self, now: float) -> bool:
        return self.ready

    def reason(self) -> str:
        return "MTML is not ready"


class _Outputs:
    """The node's publishers, log and exit, recorded in order."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []
        self.logs: list[tuple[int, str]] = []
        self.subscribed = self.published = True

    def zero_command(self) -> None:
        self.sent.append(("servo_jf", 0.0))

    def set_builtin(self, on: bool) -> None:
        self.sent.append(("use_gravity_compensation", on))

    def hold(self) -> None:
        self.sent.append(("hold",))

    def stop_watchdog(self) -> None:
        pass

    def log(self, level: int, text: str) -> None:
        self.logs.append((level, text))

    def exit(self, status: int) -> None:
        self.sent.append(("exit", status))

    def flag_subscribed(self) -> bool:
        return self.subscribed

    def readings_published(self) -> bool:
        return self.published

    def said(self, level: int) -> str:
        return "\n".join(text for lv, text in self.logs if lv == level)


class _Refusing:
    """A fit check whose file never fits (the arm's effort 1 N m off on the shoulder)."""

    def check(self, q, effort) -> FitVerdict:
        zero = (0.0,) * JOINTS
        distance = (0.0, 1.0) + (0.0,) * (JOINTS - 2)
        return FitVerdict(False, 5.0, (0.2,) * JOINTS, distance, tuple(effort), zero, zero)


class _Run:
    def __init__(self, tmp_path, monkeypatch, *, found_on: bool = True, fit_check=None, guard: bool = False):
        monkeypatch.setenv("ROS_HOME", str(tmp_path))
        self.arm, self.out = _Arm(), _Outputs()
        self.sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.5))
        law = SimpleNamespace(clamp=lambda values: [max(-1.0, min(1.0, v)) for v in values], total=[0.0] * JOINTS)
        self.held = HeldEffort("MTML", JOINTS, fit_check)
        self.own = ArmOwnership("MTML", law, self.sup, self.arm, self.out, self.held,
                                TakeoverGuard(MTM_GUARD_LIMIT) if guard else None,
                                disable_builtin=True, has_builtin=True)
        self.t = 0.0
        self.own.on_reading(found_on)  # the dVRK's own compensation as found

    def sample(self, q=POSE) -> bool:
        """One valid sample while the node does not command; True: the node commands from it."""
        self.t += PERIOD
        self.held.record([0.5] * JOINTS, self.t)
        started = self.own.may_start(self.t, self.t, q, [0.0] * JOINTS, [f"j{i + 1}" for i in range(JOINTS)])
        if started:
            self.sup.command(self.t, self.t)
        return started

    def take_over(self) -> None:
        for _ in range(100):
            if self.sample():
                return
            if ("use_gravity_compensation", False) in self.out.sent:
                self.own.on_reading(False)  # the arm switched its own compensation off
        raise AssertionError(f"never taken: {self.out.logs}")

    def net_state(self) -> dict:
        return json.loads(self.own.net_path.read_text())


def test_a_take_over_turns_the_builtin_off_first_and_ramps_in_from_the_arms_effort(tmp_path, monkeypatch):
    run = _Run(tmp_path, monkeypatch)
    run.take_over()
    assert run.out.sent == [("use_gravity_compensation", False)]
    assert run.own.ramp_from == [0.5] * JOINTS  # the arm's own effort, clamped to the law's limits
    assert "compensating MTML: ramp-in over 0.5 s from the arm's own effort" in run.out.said(logging.INFO)
    assert "was on before this node took over" in run.out.said(logging.INFO)
    assert run.own.names == [f"j{i + 1}" for i in range(JOINTS)] and run.own.waiting == ""
    assert run.net_state()["owned"] is True and run.net_state()["restore_flag"] is True


def test_nothing_is_sent_while_nothing_subscribes_the_flag(tmp_path, monkeypatch):
    run = _Run(tmp_path, monkeypatch)
    run.out.subscribed = False
    assert not any(run.sample() for _ in range(50))
    assert run.out.sent == [] and "nothing subscribes /MTML/use_gravity_compensation" in run.own.waiting


def test_an_arm_that_stops_being_ready_gets_no_command_and_its_flag_back(tmp_path, monkeypatch):
    run = _Run(tmp_path, monkeypatch)
    run.take_over()
    run.arm.ready, run.arm.status = False, DISABLED
    run.own.on_operating_state(DISABLED, 0.5)
    assert run.sup.state == CompensationState.STOPPED
    assert ("servo_jf", 0.0) not in run.out.sent  # not even a zero: a not-ready arm ignores it, a homing one faults
    assert run.out.sent[-1] == ("use_gravity_compensation", True)  # back on, as found
    assert ("hold",) not in run.out.sent and run.own.idle_expected
    assert run.net_state()["owned"] is False


def test_teleoperation_turning_the_builtin_on_gets_one_zero_command_and_no_fight(tmp_path, monkeypatch):
    run = _Run(tmp_path, monkeypatch)
    run.take_over()
    sent = len(run.out.sent)
    run.own.on_reading(True)  # someone else turned it on
    assert run.out.sent[sent:] == [("servo_jf", 0.0)]
    assert run.sup.state == CompensationState.STOPPED and "turned on by someone else" in run.own.waiting
    assert not any(run.sample() for _ in range(20))  # not while it is on
    assert run.out.sent[sent:] == [("servo_jf", 0.0)]  # and the flag is left alone
    run.own.on_reading(False)
    assert any(run.sample() for _ in range(200))  # taken again once it is off


@pytest.mark.parametrize("found_on, hold", [(True, False), (False, True)])
def test_an_outage_holds_the_arm_only_where_the_builtin_does_not_carry_it(tmp_path, monkeypatch, found_on, hold):
    run = _Run(tmp_path, monkeypatch, found_on=found_on)
    run.take_over()
    sent = len(run.out.sent)
    run.own.hand_over_after_outage(run.t + 2.0)
    expected = [("use_gravity_compensation", found_on)] + ([("hold",)] if hold else [])
    assert run.out.sent[sent:] == expected
    assert "stale: handed back" in run.own.waiting


def test_a_file_that_does_not_fit_is_refused_before_anything_is_sent(tmp_path, monkeypatch):
    run = _Run(tmp_path, monkeypatch, fit_check=_Refusing())
    assert not any(run.sample() for _ in range(FIT_SAMPLES))
    assert run.out.sent == [("exit", 2)]
    assert run.own.waiting.startswith("refused: ") and "fit_check:=false" in run.out.said(logging.ERROR)


def test_a_fade_after_a_late_state_ends_the_guards_watch(tmp_path, monkeypatch):
    """The watchdog begins a fade between samples: the arm's motion from then on is the outage's, and the samples
    after it (ramping in again) must not blame the file for it."""
    run = _Run(tmp_path, monkeypatch, guard=True)
    run.take_over()
    assert run.own.guard is not None and run.own.guard.watching
    run.own.fading()
    assert not run.own.guard.watching
    fallen = [POSE[0], POSE[1] + 0.3, *POSE[2:]]
    assert run.own.guard.check(fallen, run.t + 0.5) == -1


def test_the_guard_holds_the_arm_before_the_flag_goes_back_and_exits_2(tmp_path, monkeypatch):
    run = _Run(tmp_path, monkeypatch, guard=True)
    run.take_over()
    assert run.own.guard is not None and run.own.guard.watching
    moved = [POSE[0], POSE[1] + 0.3, *POSE[2:]]
    joint = run.own.guard.check(moved, run.t + PERIOD)
    assert joint == 1
    sent = len(run.out.sent)
    run.own.pulled_away(moved, joint)
    assert run.out.sent[sent:] == [("hold",), ("use_gravity_compensation", True), ("exit", 2)]
    assert GUARD_STOP in run.own.waiting and "j2 moved +0.300 rad" in run.own.waiting


# -- a PSM's fit probe (gc/runtime/fit_probe.py): the arm held from both sides of its pose before the take-over --------
PSM_POSE = [0.1, -0.2, 0.12, 0.3, 0.0, 0.1]
PSM_LOWER, PSM_UPPER = [-1.0, -0.8, 0.0, -2.0, -1.5, -1.5], [1.0, 0.8, 0.24, 2.0, 1.5, 1.5]
BUSY = OperatingStatus(state="ENABLED", is_homed=True, is_busy=True)
MOVE_TIME = 0.2


class _PsmRun:
    """A Classic PSM (no compensation of its own) whose move_jp takes MOVE_TIME busy; at rest its effort is the
    model's torque plus ``offset`` plus or minus ``friction`` by the side it came from (the PID, no integral)."""

    def __init__(self, tmp_path, monkeypatch, compensation, offset: float = 0.0, friction: float = 0.02):
        """``offset`` on the yaw (N m)."""
        from dvrk_ident_ros.gc.runtime.fit_check import ModelFitCheck

        monkeypatch.setenv("ROS_HOME", str(tmp_path))
        self.arm, self.out = _Arm(), _Outputs()
        self.out.move_jp = self._move  # type: ignore[attr-defined]
        self.sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.5))
        self.law, self.offset, self.friction = compensation, offset, friction
        self.held = HeldEffort("PSM1", 6, ModelFitCheck(compensation))
        self.own = ArmOwnership("PSM1", compensation, self.sup, self.arm, self.out, self.held, None,
                                disable_builtin=True, has_builtin=False, probe_limits=(PSM_LOWER, PSM_UPPER))
        self.t, self.setpoint, self.side, self.busy_until = 0.0, list(PSM_POSE), 1.0, None
        self.own.on_reading(False)  # its gravity_compensation/setpoint_js: all zero

    def _move(self, goal: list[float]) -> None:
        self.out.sent.append(("move_jp", list(goal)))
        self.side = 1.0 if goal[0] >= self.setpoint[0] else -1.0  # coming from below: the PID pushes up
        self.setpoint, self.busy_until = list(goal), self.t + MOVE_TIME
        self.set_state(BUSY)

    def set_state(self, status: OperatingStatus) -> None:
        self.arm.status, self.arm.ready = status, status.ready
        self.own.on_operating_state(status, 0.0)

    def sample(self) -> bool:
        self.t += PERIOD
        if self.busy_until is not None and self.t >= self.busy_until:
            self.busy_until = None
            self.set_state(ENABLED)
        torque = self.law.compute([*self.setpoint, 0.0], [0.0] * 7)[:6]
        effort = [t + self.side * self.friction for t in torque]
        effort[0] += self.offset
        self.held.record(effort, self.t, self.setpoint)
        started = self.own.may_start(self.t, self.t, self.setpoint, [0.0] * 6, [f"j{i + 1}" for i in range(6)])
        if started:
            self.sup.command(self.t, self.t)
        return started

    def moves(self) -> list[list[float]]:
        return [s[1] for s in self.out.sent if s[0] == "move_jp"]


def test_a_psm_is_held_from_above_and_below_before_a_model_that_fits_takes_it_over(
        tmp_path, monkeypatch, psm_compensation):
    run = _PsmRun(tmp_path, monkeypatch, psm_compensation)
    assert any(run.sample() for _ in range(3000)), (run.own.waiting, run.out.logs[-3:])
    moves = run.moves()
    assert len(moves) == 4 and moves[1] == moves[3] == PSM_POSE  # above, back, below, back
    assert moves[0][0] > PSM_POSE[0] > moves[2][0] and moves[0][3:] == PSM_POSE[3:]  # the wrist stays
    assert ("exit", 2) not in run.out.sent and run.t > 4 * 2.0  # each hold settled before it counted
    assert "fits PSM1 at its pose reached from both sides" in run.out.said(logging.INFO)
    assert not run.out.said(logging.WARNING), "the probe's own moves are not the arm being busy on its own"
    assert run.own._probe is None  # the next take-over probes its own pose


def test_a_psm_model_outside_the_efforts_it_rests_under_from_both_sides_is_refused(
        tmp_path, monkeypatch, psm_compensation):
    run = _PsmRun(tmp_path, monkeypatch, psm_compensation, offset=0.08)  # beyond the friction of 0.02
    assert not any(run.sample() for _ in range(3000))
    assert len(run.moves()) == 4 and run.out.sent[-1] == ("exit", 2)
    assert "joint 1 rests under" in run.own.waiting and "reached from both sides" in run.own.waiting
    # at the pose alone (fit_probe:=false: probe_limits None) the same model passes: its band is the yaw's
    # identified static friction wide, up to a tolerance of 0.1 N m
    alone = _PsmRun(tmp_path, monkeypatch, psm_compensation, offset=0.08)
    alone.own.probe_limits = None
    assert any(alone.sample() for _ in range(300)) and not alone.moves()


def test_a_psm_that_faults_during_the_probe_is_probed_again_from_the_start(tmp_path, monkeypatch, psm_compensation):
    run = _PsmRun(tmp_path, monkeypatch, psm_compensation)
    while len(run.moves()) < 2:
        run.sample()
    run.busy_until = None
    run.set_state(DISABLED)
    run.sample()
    run.set_state(ENABLED)
    run.own.on_reading(False)
    assert any(run.sample() for _ in range(3000))
    moves = run.moves()
    assert len(moves) == 6 and moves[2] == moves[0]  # the probe began again: above first
