"""The trajectory player's decisions without ROS (dvrk_ident_ros/excitation/player.py): waiting for the arm,
home_arm and its resend, the recorder, each tick of a stream (stall hold, tracking checks, stale state), the
arm's own move_jp, the end of a run (coming to rest) and what a refused file says."""
from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import REPO_ROOT

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.arm.samples import SampleKind
from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import save_grid, save_trajectory
from dvrk_ident_ros.excitation.fourier import rest_to_rest
from dvrk_ident_ros.excitation.holds import holds_grid
from dvrk_ident_ros.excitation.player import (
    HOME_RESEND,
    QUIET_START,
    TRACKING_CHECK_EVERY,
    PlayerCore,
    records_arm,
)
from dvrk_ident_ros.excitation.player_plan import PlanLoader, PlanOptions, cannot_play
from dvrk_ident_ros.excitation.player_session import PlayerConfig, PlayOutcome, Waiting
from dvrk_ident_ros.sim.config import load_sim_config

ARM = "PSM1"
RATE = 100.0  # Hz: a period of 10 ms
READY = OperatingStatus("ENABLED", is_homed=True, is_busy=False)
DISABLED = OperatingStatus("DISABLED")
HOME = load_sim_config("psm").home  # dVRK joints, the jaw last


def _never_sent(command: str) -> bool:
    raise AssertionError(f"{command} sent")


def _trajectory(path) -> str:
    """A slow rest-to-rest PSM trajectory around the simulated PSM's home (as test_nodes_player.py's)."""
    plans = PlanLoader(ARM, PlanOptions())
    center = plans.model.motor_from_dvrk(HOME)
    rng = np.random.default_rng(5)
    a_free, b_free = rng.uniform(-0.03, 0.03, (2, 7)), rng.uniform(-0.03, 0.03, (2, 7))
    a_free[:, 2] *= 0.1
    b_free[:, 2] *= 0.1
    save_trajectory(path, rest_to_rest(0.5, center, a_free, b_free), arm="psm", periods=1,
                    description_hash=plans.model.description.content_hash, note="test_player_core")
    return str(path)


def _core(*, home_arm: bool = False, limit: object = (), steady: float = 0.0) -> PlayerCore:
    config = PlayerConfig(stream_rate=RATE, stale_timeout=0.5, ready_timeout=10.0, recorder_timeout=5.0,
                          home_arm=home_arm)
    return PlayerCore(PlanLoader(ARM, PlanOptions()), config, list(limit), steady=lambda: steady)


def _sample(core: PlayerCore, now: float, q=HOME) -> None:
    """A fresh measured_js stamped ``now`` (and the jaw) arrived at ``now``."""
    q = np.asarray(q, dtype=float)
    sec, nanosec = int(now), round((now - int(now)) * 1e9)
    assert core.samples.on_sample(sec, nanosec, list(q[:6]), now) is SampleKind.VALID
    core.samples.on_jaw(sec, nanosec, [float(q[6])])


def _started(core: PlayerCore, path: str, now: float = 100.0) -> None:
    """Begin and start a request on a ready, settled arm with a recorder (its last state from a period ago)."""
    core.begin(path, 1.0)
    _sample(core, now - 0.01)
    step = core.wait(1.0, now, READY, "", True, True, _never_sent)
    assert step.started and step.finish is None, step


def test_the_outcomes_are_the_actions():
    text = (REPO_ROOT / "action" / "PlayTrajectory.action").read_text()
    outcomes = {name: int(value) for name, value in re.findall(r"uint8 OUTCOME_(\w+)=(\d+)", text)}
    assert outcomes == {o.name: o.value for o in PlayOutcome}


def test_a_file_that_cannot_be_played_is_refused_naming_it(tmp_path):
    core = _core()
    with pytest.raises(DataError, match="does not exist") as err:
        core.begin(str(tmp_path / "nowhere.yaml"), 1.0)
    assert core.session is None
    assert cannot_play(str(tmp_path / "nowhere.yaml"), err.value).startswith("cannot play: ")
    assert cannot_play("x.yaml", ValueError("bad")) == "cannot play x.yaml: bad"
    grid = holds_grid(ARM, core.plans.grid_checker, poses=2)
    grid.pop("kind")  # an MLSE grid: for the MTMs only
    save_grid(tmp_path / "mlse.yaml", grid)
    with pytest.raises(DataError, match="MLSE pose grids are for the MTMs, not the PSM1"):
        core.begin(str(tmp_path / "mlse.yaml"), 1.0)


def test_one_request_at_a_time_and_for_this_arm(tmp_path):
    core = _core()
    assert core.refusal("") == core.refusal(ARM) == ""
    assert core.refusal("PSM2") == "for PSM2, this player drives PSM1"
    core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)
    assert core.refusal(ARM).startswith("already playing ")
    with pytest.raises(DataError, match="busy: already playing"):
        core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)


def test_an_arm_not_ready_waits_says_why_once_and_is_refused_after_ready_timeout(tmp_path):
    core = _core()
    core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)
    reason = DISABLED.not_ready_reason(ARM)
    step = core.wait(0.1, 100.0, DISABLED, reason, False, True, _never_sent)
    assert [(line.warning, line.text) for line in step.lines] == \
        [(True, f"waiting for the arm before playing {core.session.trajectory_file}: {reason} (up to 10 s)")]
    assert not step.started and step.finish is None
    assert core.wait(5.0, 100.0, DISABLED, reason, False, True, _never_sent).lines == ()  # said once
    end = core.wait(10.5, 100.0, DISABLED, reason, False, True, _never_sent).finish
    assert end is not None and end.outcome == PlayOutcome.ARM_NOT_READY
    assert end.message == f"PSM1 not ready after 10 s: {reason}"


def test_no_state_yet_is_said_only_after_a_quiet_start(tmp_path):
    core = _core()
    core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)
    assert core.wait(0.0, 100.0, READY, "", True, True, _never_sent).lines == ()  # ready, but no measured_js
    assert core.wait(QUIET_START / 2, 100.0, READY, "", True, True, _never_sent).lines == ()
    lines = core.wait(QUIET_START + 0.1, 100.0, READY, "", True, True, _never_sent).lines
    assert len(lines) == 1 and "no recent /PSM1/measured_js" in lines[0].text


def test_home_arm_enables_then_homes_and_resends_only_after_home_resend(tmp_path):
    core = _core(home_arm=True)
    core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)
    sent: list[str] = []

    def send(command: str) -> bool:
        sent.append(command)
        return True

    def wait(steady: float, status: OperatingStatus):
        return core.wait(steady, 100.0, status, status.not_ready_reason(ARM), False, True, send)

    lines = wait(0.0, DISABLED).lines
    assert sent == ["enable"] and not lines[0].warning and "home_arm: the player powers it on" in lines[0].text
    assert lines[-1].text == "home_arm: enable (PSM1 DISABLED, not homed)"
    wait(HOME_RESEND - 0.1, DISABLED)
    assert sent == ["enable"]  # the arm may still act on it
    wait(HOME_RESEND + 0.1, DISABLED)
    assert sent == ["enable", "enable"]  # it did not: sent again
    enabled = OperatingStatus("ENABLED")
    wait(HOME_RESEND + 0.2, enabled)
    assert sent[-1] == "home"  # another state: its own command at once
    wait(HOME_RESEND + 0.3, OperatingStatus("ENABLED", is_busy=True))  # homing
    wait(HOME_RESEND + 0.4, OperatingStatus("FAULT"))  # for a person to clear
    assert sent == ["enable", "enable", "home"]
    core.config = PlayerConfig(RATE, 0.5, 10.0, 5.0, home_arm=False)
    wait(100.0, DISABLED)
    assert sent == ["enable", "enable", "home"]  # without home_arm: never


def test_a_ready_arm_waits_to_settle_then_for_the_recorder(tmp_path):
    core = _core()
    core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)
    _sample(core, 100.0)
    assert core.wait(1.0, 100.0, READY, "", False, False, _never_sent) == Waiting()  # not settled: nothing yet
    step = core.wait(2.0, 100.0, READY, "", True, False, _never_sent)
    assert [line.text for line in step.lines] == \
        ["waiting for the recorder (/dvrk_ident/PSM1/recorder_status) before playing"]
    assert not step.started and not core.session.started
    assert core.wait(6.9, 100.0, READY, "", True, False, _never_sent).finish is None
    end = core.wait(7.1, 100.0, READY, "", True, False, _never_sent).finish  # recorder_timeout from ready
    assert end is not None and end.outcome == PlayOutcome.FAILED and "no recorder writing" in end.message


def test_the_recorder_must_write_the_arms_state():
    assert records_arm(ARM, True, ["/PSM1/measured_js", "/PSM1/jaw/measured_js"], [3, 0])
    assert not records_arm(ARM, True, ["/PSM1/measured_js"], [0])
    assert not records_arm(ARM, False, ["/PSM1/measured_js"], [3])
    assert not records_arm(ARM, True, ["/PSM2/measured_js"], [3])


def test_a_stall_holds_the_trajectory(tmp_path):
    core = _core()
    _started(core, _trajectory(tmp_path / "t.yaml"))
    s = core.session
    plan_times = []
    for now in (100.0, 100.01, 100.02):
        _sample(core, now)
        step = core.tick(now, READY, "")
        assert step.stall == "" and step.finish is None and step.servo is not None
        plan_times.append(now)
    _sample(core, 100.3)
    step = core.tick(100.3, READY, "")  # 28 periods late: held, two periods on from the last setpoint
    assert step.stall.startswith("stream stalled 280 ms") and "1 stalls" in step.stall
    assert s.stream_clock.held == pytest.approx(0.28 - 0.02)
    assert np.allclose(step.servo.servo_position, s.plan.step(100.04).servo_position)
    assert not np.allclose(step.servo.servo_position, s.plan.step(100.3).servo_position)
    _sample(core, 100.31)
    step = core.tick(100.31, READY, "")  # on schedule again: the trajectory that much later
    assert step.stall == ""
    assert np.allclose(step.servo.servo_position, s.plan.step(100.31 - s.stream_clock.held).servo_position)
    assert s.commands_sent == 5 and np.array_equal(s.last_servo, step.servo.servo_position)


def test_tracking_is_checked_every_few_ticks_and_the_run_ends_at_the_measured_pose(tmp_path):
    core = _core(limit=[0.05] * 7)
    _started(core, _trajectory(tmp_path / "t.yaml"))
    s = core.session
    off = HOME + np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0])  # pitch 0.1 rad from every setpoint
    for k in range(1, TRACKING_CHECK_EVERY):
        now = 100.0 + 0.01 * k
        _sample(core, now, off)
        step = core.tick(now, READY, "")
        assert step.finish is None and step.servo is not None, k
    now = 100.0 + 0.01 * TRACKING_CHECK_EVERY
    _sample(core, now, off)
    step = core.tick(now, READY, "")
    assert step.finish is not None and step.finish.outcome == PlayOutcome.ABORTED_TRACKING
    assert step.finish.message.startswith("aborted: tracking error on pitch")
    assert step.servo is None and s.commands_sent == TRACKING_CHECK_EVERY - 1  # nothing sent on that tick
    assert s.max_error[1] == pytest.approx(0.1, abs=0.01)
    end = core.finish(step.finish.outcome, step.finish.message, now, READY)
    assert core.session is None and end is not None
    assert np.allclose(end.rest, off)  # stops pushing towards a setpoint it could not follow
    assert end.message.endswith("; stopped at the measured pose, velocity 0")
    assert end.failed and end.exit_code == 1 and end.phase == PlayerPhase.ABORTED
    assert s.commands_sent == TRACKING_CHECK_EVERY  # the stop counts


def test_a_stale_state_ends_the_run_and_an_arm_not_ready_gets_nothing(tmp_path):
    core = _core()
    _started(core, _trajectory(tmp_path / "t.yaml"))  # the last state at 99.99
    assert core.tick(100.0, READY, "").finish is None
    # the player's own stall (the arm's state may wait behind it): stale_timeout counts from its end
    assert core.tick(100.6, READY, "").finish is None
    assert core.tick(100.8, READY, "").finish is None
    assert core.tick(101.0, READY, "").finish is None
    step = core.tick(101.2, READY, "")  # 0.6 s since the player resumed (stale_timeout 0.5)
    assert step.finish is not None and step.finish.outcome == PlayOutcome.ABORTED_STALE
    assert step.finish.message.startswith("/PSM1/measured_js stale for 1.210 s")
    end = core.finish(step.finish.outcome, step.finish.message, 101.2, DISABLED)
    assert end is not None and end.rest is None and "stopped" not in end.message  # it ignores commands now


def test_a_request_ended_before_motion_sends_nothing(tmp_path):
    core = _core()
    core.begin(_trajectory(tmp_path / "t.yaml"), 1.0)
    end = core.finish(PlayOutcome.CANCELED, "canceled", 5.0, READY)
    assert end is not None and end.rest is None and end.duration == 0.0
    assert end.line.endswith(": canceled (nothing sent)") and not end.failed and end.exit_code == 2
    assert core.finish(PlayOutcome.CANCELED, "again", 5.0, READY) is None


def test_the_players_own_move_jp_keeps_the_arm_busy_someone_elses_ends_the_run(tmp_path):
    core = _core()
    save_grid(tmp_path / "holds.yaml", holds_grid(ARM, core.plans.grid_checker, poses=2, settle=0.1, samples=1))
    _started(core, str(tmp_path / "holds.yaml"))
    step = core.tick(100.0, READY, "")
    assert step.move_goal is not None and step.servo is None and step.status.phase == PlayerPhase.MOVING
    busy = OperatingStatus("ENABLED", is_homed=True, is_busy=True)
    assert core.arm_changed(busy) is None  # its own move_jp
    assert core.tick(100.01, busy, "").finish is None
    core.move.on_goal_reached(True)
    assert core.arm_changed(READY) is None
    assert core.tick(100.02, READY, "").status.phase == PlayerPhase.SETTLING
    assert core.arm_changed(busy) == busy.not_ready_reason(ARM)  # moved by someone else
    assert core.sample_arrived(SampleKind.INVALID, True)  # stamp 0 mid-run ends it too
    assert not core.sample_arrived(SampleKind.REPEATED, True)
