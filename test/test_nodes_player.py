"""The trajectory_player against a simulated arm under /clock, over its PlayTrajectory action or
autostart: a short Fourier trajectory to the end, bad goals (beyond the limits, missing file, other
arm) that command nothing, a cancel mid-way; an arm that is not ready (DISABLED, not homed, homing):
nothing reaches it, one log line says why, the player plays once the arm is homed or refuses after
ready_timeout; a fault or a homing in the middle of a trajectory ends it at once; home_arm homes the
arm and plays a pose grid (its own move_jp keep the arm busy: not a reason to stop); bad tracking
limits refused at start. The ROS-free parts (tracking limits, move completion) are tested first.
And the /identify service's answer for a missing data file."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers.processes import output_of, running
from helpers.ros_probe import Probe

from dvrk_ident_ros.arm.player_phase import PlayerPhase

ARM = "PSM1"
PSM_NAMES = ["yaw", "pitch", "insertion", "roll", "wrist_pitch", "wrist_yaw"]
# action_msgs/GoalStatus
STATUS_SUCCEEDED, STATUS_CANCELED, STATUS_ABORTED = 4, 5, 6


def _trajectory(path, periods: int = 1, amplitude: float = 0.03, yaw_center: float | None = None) -> str:
    """A rest-to-rest Fourier trajectory around the PSM's home (motor coordinates, 0.5 Hz, 3 harmonics).

    Slow (at most about 0.17 rad/s in dVRK joint space): the simulated time runs on while the player
    is starved of CPU for a moment on a loaded machine, and the tracking limit (0.15) must not trip."""
    from dvrk_ident_ros.excitation.files import save_trajectory
    from dvrk_ident_ros.excitation.fourier import rest_to_rest
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.sim.config import load_sim_config

    model = load_model("psm")
    center = model.motor_from_dvrk(load_sim_config("psm").home)  # where the simulated PSM starts
    if yaw_center is not None:
        center[0] = yaw_center
    rng = np.random.default_rng(5)
    a_free = rng.uniform(-amplitude, amplitude, (2, 7))
    b_free = rng.uniform(-amplitude, amplitude, (2, 7))
    a_free[:, 2] *= 0.1  # insertion: m/s
    b_free[:, 2] *= 0.1
    a_free[:, 5:] *= 0.3  # the last two motors: the jaw angle moves about 2.5 times as fast
    b_free[:, 5:] *= 0.3
    traj = rest_to_rest(0.5, center, a_free, b_free)
    save_trajectory(path, traj, arm="psm", periods=periods, description_hash=model.description.content_hash,
                    note="test_nodes_player")
    return str(path)


def _limit_error(path: str) -> str:
    """What the player's checks say about a trajectory ("" if it is inside the limits)."""
    from dvrk_ident_ros.errors import SafetyError
    from dvrk_ident_ros.excitation.files import load_trajectory
    from dvrk_ident_ros.excitation.playback import FourierPlayback
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.safety import CommandChecker

    model = load_model("psm")
    trajectory, meta = load_trajectory(path, arm="psm", joints=model.dof)
    try:
        FourierPlayback(trajectory, model, CommandChecker(model, None), periods=int(meta["periods"]))
    except SafetyError as exc:
        return str(exc)
    return ""


def _sim(*params: str, arm: str = ARM, initial_state: str = "HOMED") -> list[str]:
    """The simulated arm under /clock at twice real time; by default ready (HOMED)."""
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.simulated_arm", "--ros-args", "-p", f"arm:={arm}",
           "-p", "publish_clock:=true", "-p", "real_time_factor:=2.0", "-p", "noise:=false",
           "-p", f"initial_state:={initial_state}"]
    for p in params:
        cmd += ["-p", p]
    return cmd


def _player(*params: str, arm: str = ARM) -> list[str]:
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.trajectory_player", "--ros-args", "-p", f"arm:={arm}",
           "-p", "use_sim_time:=true"]
    for p in params:
        cmd += ["-p", p]
    return cmd


@contextlib.contextmanager
def _running_in(cwd, cmd: list[str], env: dict[str, str]):
    """``running`` with another working directory."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _lines_with(out: str, text: str) -> list[str]:
    return [line for line in out.splitlines() if text in line]


NOT_READY_WARNING = "ignored, arm not ready"  # the simulated arm's warning for a command it does not obey


class _Bench:
    """The test's side: an action client, everything the player commands or reports, the arm's
    operating state, and the console's state commands."""

    def __init__(self, rclpy_context, name: str, arm: str = ARM):
        from crtk_msgs.msg import OperatingState, StringStamped
        from rcl_interfaces.msg import Log
        from rclpy.action import ActionClient
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Empty

        from dvrk_ident.action import PlayTrajectory
        from dvrk_ident.msg import PlayerStatus
        from dvrk_ident_ros.arm.registry import player_status_topic

        self.arm = arm
        self.probe = Probe(rclpy_context, name)
        self.client = ActionClient(self.probe.node, PlayTrajectory, f"/{arm}/play_trajectory")
        self.servo_jp = self.probe.collect(JointState, f"/{arm}/servo_jp")
        self.move_jp = self.probe.collect(JointState, f"/{arm}/move_jp")
        self.jaw_servo_jp = self.probe.collect(JointState, f"/{arm}/jaw/servo_jp")
        self.jaw_move_jp = self.probe.collect(JointState, f"/{arm}/jaw/move_jp")
        self.measured = self.probe.collect(JointState, f"/{arm}/measured_js")
        self.status = self.probe.collect(PlayerStatus, player_status_topic(arm))
        # transient_local as /rosout's publishers: a line logged before the match still arrives
        self.rosout = self.probe.collect(Log, "/rosout", QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        # transient_local as the dVRK's event topics, deep enough that the test misses no change
        events = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.states = self.probe.collect(OperatingState, f"/{arm}/operating_state", events)
        self._string_stamped = StringStamped
        self._state_command = self.probe.node.create_publisher(StringStamped, f"/{arm}/state_command", 10)
        self._inject_fault = self.probe.node.create_publisher(Empty, f"/{arm}/simulation/inject_fault", 10)

    def commands(self) -> int:
        """Every motion command the player sent (servo_jp, move_jp, the jaw's)."""
        return len(self.servo_jp) + len(self.move_jp) + len(self.jaw_servo_jp) + len(self.jaw_move_jp)

    def state(self):
        """The arm's last operating state (None before the first)."""
        return self.states[-1][1] if self.states else None

    def wait_state(self, condition, timeout: float = 15.0, proc=None) -> bool:
        return self.probe.spin_until(lambda: self.state() is not None and condition(self.state()), timeout, proc)

    def state_command(self, command: str, sim) -> None:
        """What the console does: /<ARM>/state_command (once the simulated arm listens)."""
        assert self.probe.wait_for_graph(sim, subscribers=[self._state_command], settle=0.1), output_of(sim)
        self._state_command.publish(self._string_stamped(string=command))

    def inject_fault(self, sim) -> None:
        from std_msgs.msg import Empty

        assert self.probe.wait_for_graph(sim, subscribers=[self._inject_fault], settle=0.0), output_of(sim)
        self._inject_fault.publish(Empty())

    def logged(self, words: str, node: str = "trajectory_player") -> bool:
        """A node's /rosout line with these words has arrived."""
        return any(words in m.msg and m.name == node for _, m in self.rosout)

    def wait_player_has_state(self, player, timeout: float = 40.0) -> None:
        """The player hears the arm's operating state (transient_local: the last one arrives on matching)."""
        def matched() -> bool:
            infos = self.probe.node.get_subscriptions_info_by_topic(f"/{self.arm}/operating_state")
            return any(info.node_name == "trajectory_player" for info in infos)

        assert self.probe.spin_until(matched, timeout, player), f"player not up\n{output_of(player)}"
        self.probe.spin_for(1.0)  # delivery of the arm's last state

    def wait_player_listens(self, player, timeout: float = 40.0) -> None:
        """The player process is up: it subscribes the arm's state."""
        def listens() -> bool:
            infos = self.probe.node.get_subscriptions_info_by_topic(f"/{self.arm}/measured_js")
            return any(info.node_name == "trajectory_player" for info in infos)

        assert self.probe.spin_until(listens, timeout, player), f"player not up\n{output_of(player)}"

    def wait_ready(self, sim, player) -> None:
        def player_listens() -> bool:
            infos = self.probe.node.get_subscriptions_info_by_topic(f"/{ARM}/measured_js")
            return any(info.node_name == "trajectory_player" for info in infos)

        start = time.monotonic()
        ok = (self.probe.spin_until(self.client.server_is_ready, 40.0, player)
              and self.probe.spin_until(lambda: len(self.measured) > 20 and player_listens(), 40.0, sim))
        print(f"\nsimulator and player up after {time.monotonic() - start:.1f} s", end="")
        assert ok, f"not ready\nsimulator:\n{output_of(sim)}\nplayer:\n{output_of(player)}"
        assert sim.poll() is None and player.poll() is None

    def send(self, trajectory_file: str, arm: str = ARM, feedback: list | None = None):
        """Send a goal; its goal handle (None if refused)."""
        from dvrk_ident.action import PlayTrajectory

        goal = PlayTrajectory.Goal(trajectory_file=trajectory_file, arm=arm, speed_scale=0.0)
        future = self.client.send_goal_async(
            goal, feedback_callback=None if feedback is None else lambda msg: feedback.append(msg.feedback))
        assert self.probe.spin_until(future.done, 15.0), "no answer to the goal"
        handle = future.result()
        return handle if handle.accepted else None

    def result(self, handle, timeout: float = 30.0):
        future = handle.get_result_async()
        assert self.probe.spin_until(future.done, timeout), "no result"
        return future.result().status, future.result().result

    def play(self, trajectory_file: str, feedback: list | None = None, timeout: float = 30.0):
        """Send a goal and wait for its result; retried while the player has no recent state yet."""
        deadline = time.monotonic() + 20.0
        while True:
            handle = self.send(trajectory_file, feedback=feedback)
            assert handle is not None, "goal refused"
            status, result = self.result(handle, timeout)
            if "no recent" not in result.message or time.monotonic() > deadline:
                return status, result
            self.probe.spin_for(0.5)

    def close(self) -> None:
        self.client.destroy()
        self.probe.close()


@pytest.mark.ros
def test_player_plays_a_trajectory_to_the_end(ros_env, rclpy_context, tmp_path):
    from dvrk_ident.action import PlayTrajectory

    path = _trajectory(tmp_path / "short.yaml")
    assert _limit_error(path) == ""
    bench = _Bench(rclpy_context, "player_test_play")
    feedback: list = []
    with running(_sim(), ros_env) as sim, running(_player(), ros_env) as player:
        bench.wait_ready(sim, player)
        start = time.monotonic()
        status, result = bench.play(path, feedback=feedback)
        elapsed = time.monotonic() - start
        bench.probe.spin_until(lambda: bench.status and bench.status[-1][1].phase == PlayerPhase.DONE, 5.0)
        bench.probe.spin_for(0.3)
        sent_after = len(bench.servo_jp)
        bench.probe.spin_for(0.3)
        assert sim.poll() is None and player.poll() is None
        final = np.array(bench.measured[-1][1].position)
        assert len(bench.servo_jp) == sent_after, "the player kept streaming after the end"
    out = output_of(player)
    bench.close()
    summary = _lines_with(out, ": done (")
    print(f"\nplayer: {result.message}, {result.duration:.2f} s of simulated time in {elapsed:.2f} s, "
          f"{result.commands_sent} commands, max tracking error {result.max_tracking_error:.4f}\n"
          + (summary[0] if summary else out))
    assert result.outcome == PlayTrajectory.Result.OUTCOME_SUCCEEDED, result.message
    assert status == STATUS_SUCCEEDED and result.message == "done"
    assert result.commands_sent > 0
    # ramp (at least 0.5 s) + one 2 s period, timed by /clock, which does not wait for a starved player: the
    # duration is longer by the time the trajectory was held, which the player's final line gives
    held = re.search(r"\(trajectory held ([\d.]+) s\)", summary[0]) if summary else None
    assert held, out
    played = result.duration - float(held.group(1))
    assert 2.49 <= played < 3.5, (result.duration, summary[0])
    assert len(bench.servo_jp) >= 0.9 * result.commands_sent
    # the stream follows stream_rate (500 Hz) on /clock too: setpoints stamped on a 2 ms grid of simulated time
    # (with /clock every 10 ms, as before, never closer than 10 ms); a player starved on a loaded machine
    # misses ticks (/clock runs on without it), hence the percentile
    intervals = np.diff([stamp_of(m) for _, m in bench.servo_jp])
    assert np.percentile(intervals, 10) < 0.0021, np.percentile(intervals, [10, 50, 90])
    assert np.all(np.isclose(intervals / 0.002, np.round(intervals / 0.002), atol=0.01)), "off the 2 ms grid"
    assert result.max_tracking_error < 0.15
    assert feedback, "no feedback"
    progress = [f.progress for f in feedback]
    assert all(0.0 <= p <= 1.0 for p in progress) and progress == sorted(progress)
    assert {PlayerPhase.RAMP_IN, PlayerPhase.PLAYING} <= {f.phase for f in feedback}
    assert all(len(f.tracking_error) == 7 for f in feedback)
    assert bench.status[-1][1].phase == PlayerPhase.DONE and bench.status[-1][1].trajectory_file == path
    last = bench.servo_jp[-1][1]
    assert len(last.position) == 6 and list(last.name) == PSM_NAMES
    assert np.max(np.abs(final - np.array(last.position))) < 0.02  # the arm at the trajectory's end


@pytest.mark.ros
def test_player_refuses_bad_goals_and_commands_nothing(ros_env, rclpy_context, tmp_path):
    from dvrk_ident.action import PlayTrajectory

    beyond = _trajectory(tmp_path / "beyond.yaml", yaw_center=3.0)
    missing = str(tmp_path / "missing.yaml")
    good = _trajectory(tmp_path / "good.yaml")
    bench = _Bench(rclpy_context, "player_test_bad")
    elsewhere = tmp_path / "elsewhere"  # the player's working directory: no config/ there
    elsewhere.mkdir()
    with running(_sim(), ros_env) as sim, _running_in(elsewhere, _player(), ros_env) as player:
        bench.wait_ready(sim, player)
        bench.probe.spin_for(0.3)
        before = bench.commands()
        status, result = bench.play(beyond)
        assert result.outcome in (PlayTrajectory.Result.OUTCOME_REJECTED_LIMITS,
                                  PlayTrajectory.Result.OUTCOME_FAILED), result.message
        assert status == STATUS_ABORTED
        assert result.message == _limit_error(beyond), result.message
        assert "outside" in result.message
        assert result.commands_sent == 0
        status, result = bench.play(missing)
        assert (status, result.outcome) == (STATUS_ABORTED, PlayTrajectory.Result.OUTCOME_FAILED)
        assert result.message == f"trajectory file {missing} does not exist", result.message
        assert bench.send(good, arm="PSM2") is None, "a goal for another arm was accepted"
        bench.probe.spin_for(0.5)
        assert bench.commands() == before == 0, "the player commanded the arm"
        # a package-relative path (as the launch files take it) is found in the package's share
        feedback: list = []
        handle = bench.send("config/trajectories/psm_fourier.yaml", feedback=feedback)
        assert handle is not None, "goal refused"
        result_future = handle.get_result_async()
        assert bench.probe.spin_until(lambda: result_future.done() or bool(feedback), 30.0)
        assert not result_future.done(), result_future.result().result.message
        handle.cancel_goal_async()
        assert bench.probe.spin_until(result_future.done, 10.0), "the cancel was not answered"
        played = bench.status[-1][1].trajectory_file
        assert sim.poll() is None and player.poll() is None
    out = output_of(player)
    bench.close()
    assert "goal refused: for PSM2" in out, out
    missing_lines = _lines_with(out, "missing.yaml")
    assert len(missing_lines) == 1 and missing_lines[0].count("missing.yaml") == 1, out  # the path named once
    assert result_future.result().status == STATUS_CANCELED
    assert played.startswith("/") and played.endswith("config/trajectories/psm_fourier.yaml"), played


@pytest.mark.ros
def test_player_cancel_mid_way(ros_env, rclpy_context, tmp_path):
    from dvrk_ident.action import PlayTrajectory

    path = _trajectory(tmp_path / "long.yaml", periods=3)  # 6 s of simulated time after the ramp
    assert _limit_error(path) == ""
    bench = _Bench(rclpy_context, "player_test_cancel")
    feedback: list = []
    with running(_sim(), ros_env) as sim, running(_player(), ros_env) as player:
        bench.wait_ready(sim, player)
        deadline = time.monotonic() + 20.0
        while True:  # until the player has state (the goal is not failed for "no recent measured_js")
            handle = bench.send(path, feedback=feedback)
            assert handle is not None
            result_future = handle.get_result_async()

            def playing_or_done(done=result_future.done) -> bool:
                return done() or any(f.phase == PlayerPhase.PLAYING for f in feedback)

            bench.probe.spin_until(playing_or_done, 20.0)
            if not result_future.done() or "no recent" not in result_future.result().result.message \
                    or time.monotonic() > deadline:
                break
            bench.probe.spin_for(0.5)
        assert not result_future.done(), result_future.result().result.message
        cancel = handle.cancel_goal_async()
        assert bench.probe.spin_until(lambda: cancel.done() and result_future.done(), 10.0)
        status, result = result_future.result().status, result_future.result().result
        bench.probe.spin_for(0.3)
        sent_after = len(bench.servo_jp)
        bench.probe.spin_for(0.3)
        assert len(bench.servo_jp) == sent_after, "the player kept streaming after the cancel"
        # its last word: the last setpoint again at velocity 0 (the dVRK's PID keeps a servo_jp's velocity)
        last, before = bench.servo_jp[-1][1], bench.servo_jp[-2][1]
        assert np.all(np.asarray(last.velocity) == 0.0) and np.any(np.asarray(before.velocity) != 0.0)
        assert np.allclose(last.position, before.position, rtol=0, atol=1e-9)
        assert sim.poll() is None and player.poll() is None
        # Ctrl-C while a goal plays: the goal ends aborted (the action protocol's canceled needs a cancel
        # request), its result says canceled by the shutdown, and the node exits cleanly
        feedback.clear()
        handle = bench.send(path, feedback=feedback)
        assert handle is not None
        interrupted = handle.get_result_async()
        assert bench.probe.spin_until(lambda: any(f.phase == PlayerPhase.PLAYING for f in feedback), 20.0)
        player.send_signal(signal.SIGINT)
        assert bench.probe.spin_until(lambda: interrupted.done() and player.poll() is not None, 10.0), \
            output_of(player)
        out = output_of(player)
    bench.close()
    assert len(cancel.result().goals_canceling) == 1
    assert (status, result.outcome) == (STATUS_CANCELED, PlayTrajectory.Result.OUTCOME_CANCELED), result.message
    assert result.commands_sent > 0 and result.duration < 6.0
    assert bench.status[-1][1].phase == PlayerPhase.ABORTED
    shutdown = interrupted.result()
    assert (shutdown.status, shutdown.result.outcome) == (STATUS_ABORTED, PlayTrajectory.Result.OUTCOME_CANCELED), \
        shutdown.result.message
    assert "Traceback" not in out and "RCLError" not in out and "invalid transition" not in out, out


@pytest.mark.ros
def test_a_tracking_abort_leaves_the_arm_at_rest_where_it_is(ros_env, rclpy_context, tmp_path):
    """Tracking limits no arm meets: the run aborts at the first check, and the player's last servo_jp holds
    the measured pose at velocity 0 (not the setpoint the arm could not follow, nor its velocity)."""
    from dvrk_ident.action import PlayTrajectory

    path = _trajectory(tmp_path / "short.yaml")
    bench = _Bench(rclpy_context, "player_test_tracking")
    with running(_sim(), ros_env) as sim, \
            running(_player("tracking_error_limit:=[1e-7,1e-7,1e-7,1e-7,1e-7,1e-7,1e-7]"), ros_env) as player:
        bench.wait_ready(sim, player)
        status, result = bench.play(path)
        bench.probe.spin_for(0.5)
        measured, speed = (np.array(getattr(bench.measured[-1][1], f)) for f in ("position", "velocity"))
    bench.close()
    assert (status, result.outcome) == (STATUS_ABORTED, PlayTrajectory.Result.OUTCOME_ABORTED_TRACKING), \
        result.message
    assert "stopped at the measured pose, velocity 0" in result.message, result.message
    last = bench.servo_jp[-1][1]  # (the ramp's first setpoints, before it, may be at rest too)
    assert np.all(np.asarray(last.velocity) == 0.0) and len(bench.servo_jp) == result.commands_sent
    # the arm came to rest about there: under that setpoint by the weight its PID carries without an integral
    # term (the dVRK's PSM PID: about 12 mrad on the yaw)
    assert np.max(np.abs(np.asarray(last.position) - measured)) < 0.02
    assert np.max(np.abs(speed)) < 0.01, speed


@pytest.mark.ros
def test_a_moment_of_ready_before_a_homing_move_commands_nothing(ros_env, rclpy_context, tmp_path):
    """An MTM homed again says ENABLED, homed, not busy for a control cycle before its homing move (busy),
    its data valid throughout, and it takes commands then: the player plays only once the arm has said
    ready for READY_SETTLE without a break (a stand-in arm: the flash here lasts 100 ms, longer than a
    real one, so that a player starting on the first "ready" would surely be caught)."""
    from crtk_msgs.msg import OperatingState
    from sensor_msgs.msg import JointState

    from dvrk_ident_ros.ros.arm_monitor import READY_SETTLE
    from dvrk_ident_ros.ros.messages import fill_joint_state
    from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS
    from dvrk_ident_ros.sim.config import load_sim_config

    path = _trajectory(tmp_path / "short.yaml")
    probe = Probe(rclpy_context, "stand_in_psm")
    node = probe.node
    operating = node.create_publisher(OperatingState, f"/{ARM}/operating_state", EVENT_QOS)
    measured = node.create_publisher(JointState, f"/{ARM}/measured_js", STATE_QOS)
    jaw = node.create_publisher(JointState, f"/{ARM}/jaw/measured_js", STATE_QOS)
    servo = probe.collect(JointState, f"/{ARM}/servo_jp")
    home = load_sim_config("psm").home

    def publish_state() -> None:
        stamp = node.get_clock().now().to_msg()
        measured.publish(fill_joint_state(JointState(), stamp, PSM_NAMES, home[:6]))
        jaw.publish(fill_joint_state(JointState(), stamp, ["jaw"], home[6:]))

    node.create_timer(0.01, publish_state)

    def say(busy: bool) -> None:
        operating.publish(OperatingState(state="ENABLED", is_homed=True, is_busy=busy))

    say(True)  # homing
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.trajectory_player", "--ros-args", "-p", f"arm:={ARM}",
           "-p", "autostart:=true", "-p", "wait_for_recorder:=false", "-p", f"trajectory_file:={path}"]
    with running(cmd, ros_env) as player:
        assert probe.spin_until(lambda: node.count_subscribers(f"/{ARM}/measured_js") > 0, 30.0, player)
        probe.spin_for(1.0)
        say(False)  # the moment before the homing move
        flash_start = time.monotonic()
        probe.spin_for(0.1)
        say(True)
        flash = time.monotonic() - flash_start
        if flash > READY_SETTLE - 0.05:  # this process was too slow to make the flash shorter than the settle
            pytest.skip(f"the stand-in's ready flash lasted {flash:.2f} s (a loaded machine): nothing to judge")
        probe.spin_for(1.5)
        assert not servo and player.poll() is None, output_of(player)
        say(False)  # homed
        ready_at = time.monotonic()
        assert probe.spin_until(lambda: bool(servo), 10.0, player), output_of(player)
        first = servo[0][0] - ready_at
    probe.node.destroy_node()
    assert READY_SETTLE <= first < READY_SETTLE + 2.0, first


def _wall_sim(*params: str, arm: str = ARM) -> list[str]:
    """The simulated arm on the wall clock (no /clock, as a real arm runs); ready (HOMED)."""
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.simulated_arm", "--ros-args", "-p", f"arm:={arm}",
           "-p", "noise:=false", "-p", "initial_state:=HOMED"]
    for p in params:
        cmd += ["-p", p]
    return cmd


def _stop_for(proc, seconds: float) -> None:
    """A stalled process: SIGSTOP, then SIGCONT ``seconds`` later."""
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(proc.pid, signal.SIGCONT)


@pytest.mark.ros
def test_wall_clock_stream_holds_the_trajectory_through_stalls(ros_env, rclpy_context, tmp_path):
    """On the wall clock (as with a real arm) the player streams at stream_rate, each setpoint stamped with
    its tick's time. Stopped for 0.8 s (a stalled process), it sends nothing to catch up and its next
    setpoint continues from the last one (the trajectory is held; a warning, and the final line counts the
    stall), and its own stall, longer than stale_timeout, is not the arm's silence; the simulated arm stopped
    for 0.12 s catches up and says so. The trajectory plays to the end."""
    import re

    path = _trajectory(tmp_path / "two.yaml", periods=2)  # 0.5 s ramp + 4 s
    bench = _Bench(rclpy_context, "player_test_wall")
    player_cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.trajectory_player", "--ros-args", "-p", f"arm:={ARM}",
                  "-p", "autostart:=true", "-p", "wait_for_recorder:=false", "-p", f"trajectory_file:={path}",
                  "-p", "stale_timeout:=0.6"]  # above the arm's own stall below, under the player's
    with running(_wall_sim(), ros_env) as sim:
        assert bench.probe.spin_until(lambda: len(bench.measured) > 10, 40.0, sim), output_of(sim)
        with running(player_cmd, ros_env) as player:
            assert bench.probe.spin_until(lambda: any(m.phase == PlayerPhase.PLAYING for _, m in bench.status), 40.0,
                                          player), output_of(player)
            bench.probe.spin_for(0.5)
            _stop_for(player, 0.8)
            bench.probe.spin_for(0.5)
            _stop_for(sim, 0.12)
            assert bench.probe.spin_until(lambda: player.poll() is not None, 40.0), "the player did not finish"
            code = player.wait()
        bench.probe.spin_for(0.3)
        assert sim.poll() is None
    out, sim_out = output_of(player), output_of(sim)
    stamps = np.array([stamp_of(m) for _, m in bench.servo_jp])
    positions = np.array([m.position for _, m in bench.servo_jp])
    bench.close()
    final = _lines_with(out, ": done (")
    print("\n" + (final[0] if final else out) + "\n" + _lines_with(sim_out, "simulated on the wall clock")[0])
    assert code == 0, out
    intervals = np.diff(stamps)
    assert abs(np.median(intervals) - 0.002) < 2e-4, np.median(intervals)  # stream_rate, on the wall clock
    gap = int(np.argmax(intervals))
    assert intervals[gap] > 0.25  # the player's stall
    steps = np.max(np.abs(np.diff(positions, axis=0)), axis=1)
    usual = np.percentile(steps, 99)
    assert steps[gap] < 3 * usual + 1e-4, (steps[gap], usual)  # the next setpoint continues from the last one
    assert np.all(intervals > 0), "setpoints out of order: a burst"
    held = re.search(r"(\d+) stalls \(trajectory held ([\d.]+) s\)", final[0])
    assert held and int(held.group(1)) >= 1 and float(held.group(2)) > 0.25, final[0]
    median = re.search(r"stream 500 Hz: \d+ ticks, interval median ([\d.]+) ms", final[0])
    assert median and abs(float(median.group(1)) - 2.0) < 0.2, final[0]  # the player's own figure, as the stamps'
    assert "stream stalled" in out, out
    assert "behind the wall clock" in sim_out, sim_out  # the arm's own stall, caught up
    line = _lines_with(sim_out, "simulated on the wall clock")[0]
    assert int(re.search(r"(\d+) stalls over", line).group(1)) >= 1, line


@pytest.mark.ros
@pytest.mark.parametrize("how", ["silent", "frozen"])
def test_an_arm_silent_for_stale_timeout_ends_the_run_at_rest(ros_env, rclpy_context, tmp_path, how):
    """The arm's state stops for 1.5 s (stale_timeout 0.4 s, above what a loaded machine stalls the simulator):
    the simulated arm stopped (silent), or its control loop stalled behind a live bridge (frozen: measured_js goes
    on, every message the last sample, stamp and all). The player ends the run (ABORTED_STALE, the age named, and
    for a frozen arm the repeated stamp) and its last servo_jp holds the last setpoint at velocity 0."""
    from std_msgs.msg import Float64

    from dvrk_ident.action import PlayTrajectory

    path = _trajectory(tmp_path / "long.yaml", periods=3)
    bench = _Bench(rclpy_context, f"player_test_stale_{how}")
    freeze = bench.probe.node.create_publisher(Float64, f"/{ARM}/simulation/freeze_state", 1)
    with running(_wall_sim(), ros_env) as sim, \
            running(_player("use_sim_time:=false", "stale_timeout:=0.4"), ros_env) as player:
        bench.wait_ready(sim, player)
        feedback: list = []
        handle = bench.send(path, feedback=feedback)
        assert handle is not None
        result_future = handle.get_result_async()
        assert bench.probe.spin_until(lambda: any(f.phase == PlayerPhase.PLAYING for f in feedback), 30.0, player)
        if how == "silent":
            _stop_for(sim, 1.5)
        else:
            freeze.publish(Float64(data=1.5))
        assert bench.probe.spin_until(result_future.done, 10.0, player), output_of(player)
        # the result and the last servo_jp travel on two topics: on a loaded machine the result came first by more
        # than 0.3 s once (a sample the middleware must send again waits for its next heartbeat)
        bench.probe.spin_until(lambda: bench.servo_jp and not np.any(bench.servo_jp[-1][1].velocity), 5.0)
        bench.probe.spin_for(0.3)
        assert sim.poll() is None, output_of(sim)
    status, result = result_future.result().status, result_future.result().result
    bench.close()
    assert (status, result.outcome) == (STATUS_ABORTED, PlayTrajectory.Result.OUTCOME_ABORTED_STALE), result.message
    assert "/PSM1/measured_js stale for" in result.message and "stopped at the last setpoint, velocity 0" \
        in result.message, result.message
    assert ("repeats one stamp" in result.message) == (how == "frozen"), result.message
    last, before = bench.servo_jp[-1][1], bench.servo_jp[-2][1]
    assert np.all(np.asarray(last.velocity) == 0.0) and np.any(np.asarray(before.velocity) != 0.0)
    assert np.allclose(last.position, before.position, rtol=0, atol=1e-9)


@pytest.mark.ros
def test_identify_reports_a_missing_data_file(ros_env, rclpy_context, tmp_path):
    from dvrk_ident.srv import Identify

    probe = Probe(rclpy_context, "identify_test_client")
    client = probe.node.create_client(Identify, "/identify")
    missing = tmp_path / "no_such_bag"
    out_dir = tmp_path / "results"
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.identification_service", "--ros-args",
           "-p", f"output_directory:={out_dir}"]
    with running(cmd, ros_env) as proc:
        assert probe.spin_until(client.service_is_ready, 30.0, proc), output_of(proc)
        future = client.call_async(Identify.Request(arm="psm", method="ols", data_files=[str(missing)]))
        assert probe.spin_until(future.done, 20.0, proc), output_of(proc)
        response = future.result()
        assert proc.poll() is None
    out = output_of(proc)
    probe.close()
    assert response.success is False
    assert str(missing) in response.message and "\n" not in response.message, response.message
    assert response.result_file == "" and response.solver_status == "not_run"
    assert not out_dir.exists(), "a failed request wrote results"
    assert "/identify failed" in out, out


@pytest.mark.ros
def test_autostart_waits_for_the_recorder_and_refuses_without_one(ros_env, rclpy_context, tmp_path):
    """collect.launch.py's player: nothing is played before a recorder writes the state; none within
    recorder_timeout is a clear error (exit status 2) and not one command."""
    path = _trajectory(tmp_path / "short.yaml")
    bench = _Bench(rclpy_context, "player_test_autostart")
    player_cmd = _player("autostart:=true", f"trajectory_file:={path}", "recorder_timeout:=3.0")
    with running(_sim(), ros_env) as sim, running(player_cmd, ros_env) as player:
        assert bench.probe.spin_until(lambda: player.poll() is not None, 40.0), "the player did not give up"
        code = player.wait()
        assert sim.poll() is None
    out = output_of(player)
    commands = bench.commands()
    bench.close()
    assert code == 2, out
    assert "no recorder writing /PSM1/measured_js after 3 s" in out, out
    assert commands == 0, "the player commanded the arm without a recorder"


# -- ROS-free: tracking limits per joint, move completion ----------------------------------------

def test_tracking_limits_per_joint_in_the_joints_units():
    from dvrk_ident_ros.errors import DataError, SafetyError
    from dvrk_ident_ros.excitation.playback import TrackingMonitor, tracking_limits
    from dvrk_ident_ros.model.description import load_description

    psm, mtm = load_description("psm"), load_description("mtm")
    names = list(psm.dvrk_joint_names)
    assert len(psm.tracking_error) == 7 and len(mtm.tracking_error) == 7
    # metres, under the dVRK's own tracking fault (0.05 m), not the 0.15-0.4 of a revolute joint
    assert psm.tracking_error[names.index("insertion")] < 0.05
    limits = tracking_limits([], psm.tracking_error, names, "psm.yaml")
    assert limits.tolist() == list(psm.tracking_error)
    given = [0.3, 0.3, 0.04, 0.3, 0.3, 0.3, 0.3]
    assert tracking_limits(given, psm.tracking_error, names, "psm.yaml").tolist() == given
    for bad, words in (([0.1, 0.2], "2 values for 7 joints"), (0.3, "expected a list of 7 limits"),
                       ([0.1, 0.1, -0.01, 0.1, 0.1, 0.1, 0.1], "numbers > 0"),
                       ([0.1, 0.1, float("nan"), 0.1, 0.1, 0.1, 0.1], "numbers > 0")):
        with pytest.raises(DataError, match=words):
            tracking_limits(bad, psm.tracking_error, names, "psm.yaml")
    with pytest.raises(DataError, match="gives no tracking_error"):
        tracking_limits([], (), names, "custom.yaml")

    monitor = TrackingMonitor(names, limits)
    setpoint = np.array([0.0, 0.0, 0.12, 0.0, 0.0, 0.0, 0.5])
    monitor.check(setpoint + np.array([0.1, -0.1, 0.01, 0.1, 0.1, 0.1, 0.1]), setpoint)  # inside every limit
    with pytest.raises(SafetyError, match=r"tracking error on insertion: 0\.0450 above 0\.0400"):
        monitor.check(setpoint + np.array([0.01, 0.0, 0.045, 0.0, 0.0, 0.0, 0.0]), setpoint)  # 4.5 cm of insertion


def test_stream_clock_follows_the_clock_and_holds_the_trajectory_through_a_stall():
    from dvrk_ident_ros.excitation.streaming import StreamClock

    period = 0.002
    clock = StreamClock(period, stall_periods=2.0)
    t = 100.0
    assert clock.tick(t) == t  # the first tick: plan time = clock time
    for k in range(1, 200):  # jitter: ticks up to 0.9 period late, on the absolute deadlines
        t = 100.0 + k * period + (0.0018 if k % 7 == 0 else 0.0003)
        assert clock.tick(t) == pytest.approx(t)
        assert not clock.stalled
    assert clock.missed == 0  # late ticks, no deadline without one
    t += 1.9 * period
    assert clock.tick(t) == pytest.approx(t)  # 1.9 periods: late, not a stall, no deadline missed
    assert clock.missed == 0 and clock.stalls == 0
    last_clock, last_plan = t, t
    resume = last_clock + 0.05  # the process stalled 50 ms
    plan = clock.tick(resume)
    assert clock.stalled and clock.stalls == 1
    assert plan == pytest.approx(last_plan + 2 * period)  # two periods on, at most: continues from the last one
    assert clock.held == pytest.approx(0.05 - 2 * period)
    assert clock.missed == 24  # 25 periods without a tick: 24 deadlines missed
    assert clock.tick(resume + period) == pytest.approx(resume + period - clock.held)
    # what the arm was following at a state's stamp: the last setpoint sent, carried forward one period at most
    assert clock.setpoint_time(last_clock + 0.0005) == pytest.approx(last_plan + 0.0005)
    assert clock.setpoint_time(last_clock + 0.03) == pytest.approx(last_plan + period)  # in the stall: held
    assert clock.setpoint_time(resume + 0.0001) == pytest.approx(plan + 0.0001)
    assert clock.setpoint_time(resume - 0.0001) == pytest.approx(last_plan + period)  # just before it: still held
    assert clock.setpoint_time(0.0) == 100.0  # before the stream: its first setpoint (the arm's pose)
    stats = clock.stats()
    assert stats.ticks == 203 and stats.stalls == 1 and stats.missed == 24
    assert stats.median == pytest.approx(period, abs=period / 20)
    assert stats.worst == pytest.approx(0.05) and stats.p99 <= stats.worst
    assert "stream 500 Hz: 203 ticks" in stats.describe() and "1 stalls (trajectory held 0.046 s)" in stats.describe()


def test_stream_clock_refuses_bad_settings():
    from dvrk_ident_ros.errors import DataError
    from dvrk_ident_ros.excitation.streaming import StreamClock

    for period, stall in ((0.0, 2.0), (float("nan"), 2.0), (0.002, 0.5)):
        with pytest.raises(DataError):
            StreamClock(period, stall)


def test_description_tracking_error_is_checked_and_not_hashed(tmp_path):
    import yaml

    from dvrk_ident_ros.errors import DescriptionError
    from dvrk_ident_ros.model.description import config_directory, load_description

    raw = yaml.safe_load((config_directory() / "psm.yaml").read_text())
    installed = load_description("psm")
    raw["tracking_error"]["insertion"] = 0.01
    (tmp_path / "psm.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    changed = load_description(tmp_path / "psm.yaml")
    assert changed.tracking_error[2] == 0.01
    assert changed.content_hash == installed.content_hash  # identification results stay valid
    del raw["tracking_error"]["jaw"]
    (tmp_path / "psm.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(DescriptionError, match="tracking_error"):
        load_description(tmp_path / "psm.yaml")


def test_move_completion_from_the_arms_events():
    from dvrk_ident_ros.excitation.playback import MoveWatch

    watch = MoveWatch()
    watch.on_goal_reached(True)  # an earlier move's event (transient_local): not ours
    assert not watch.done and not watch.busy_is_ours
    watch.on_busy(False)
    watch.sent()
    assert watch.busy_is_ours and not watch.done
    watch.on_busy(False)  # the arm has not started yet: not done
    assert not watch.done
    watch.on_busy(True)
    assert watch.busy_is_ours and not watch.done
    watch.on_goal_reached(True)  # before the idle state arrives: done, its busy still ours
    assert watch.done and watch.busy_is_ours
    watch.on_busy(False)
    assert watch.done and not watch.busy_is_ours
    watch.on_busy(True)  # someone else moves the arm now
    assert not watch.busy_is_ours

    watch.sent()  # busy then idle, the goal_reached event lost or late: done as well
    watch.on_busy(True)
    watch.on_busy(False)
    assert watch.done and not watch.busy_is_ours
    watch.sent()  # goal_reached alone (the busy state coalesced away)
    watch.on_goal_reached(True)
    assert watch.done and not watch.busy_is_ours
    watch.sent()
    watch.on_busy(True)
    watch.on_goal_reached(False)  # the arm's move cut short
    assert watch.failed and not watch.done


def test_grid_pose_reached_when_the_arm_says_so():
    from dvrk_ident_ros.excitation.playback import GridPlayback
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.safety import CommandChecker

    model = load_model("mtm")
    grid = {"settle_time": 0.1, "samples_per_pose": 1,
            "sweeps": [{"estimated_joint": 6, "direction": "positive", "poses": [[0, 0, 0, 0, 0, 0.1, 0]]}]}
    far = np.zeros(7)  # 0.1 rad from the pose: outside the tolerance
    plan = GridPlayback(grid, CommandChecker(model, "MTML", section="hardware"), tolerance=0.02)
    plan.start(0.0, far)
    assert plan.step(0.0, far).move_goal is not None
    assert plan.step(0.1, far, reached=False).phase == PlayerPhase.MOVING
    # the arm's word (it may have clipped the goal)
    assert plan.step(0.2, far, reached=True).phase == PlayerPhase.SETTLING
    plan = GridPlayback(grid, CommandChecker(model, "MTML", section="hardware"), tolerance=0.02)
    plan.start(0.0, far)
    plan.step(0.0, far)
    assert plan.step(0.1, far).phase == PlayerPhase.MOVING  # no word from the arm: the tolerance decides
    assert plan.step(0.2, np.array([0, 0, 0, 0, 0, 0.095, 0])).phase == PlayerPhase.SETTLING


# -- the arm not ready: nothing reaches it ---------------------------------------------------------

@pytest.mark.ros
def test_autostart_waits_for_the_arm_and_plays_once_homed(ros_env, rclpy_context, tmp_path):
    """DISABLED, then ENABLED not homed, then homing (ENABLED, busy): not one command reaches the arm,
    one log line says each reason; once the console (the test) has homed the arm the player plays."""
    path = _trajectory(tmp_path / "short.yaml")
    bench = _Bench(rclpy_context, "player_test_wait")
    player_cmd = _player("autostart:=true", "wait_for_recorder:=false", f"trajectory_file:={path}",
                         "ready_timeout:=60.0")
    start = time.monotonic()
    with running(_sim("homing_time:=1.0", initial_state="DISABLED"), ros_env) as sim, \
            running(player_cmd, ros_env) as player:
        bench.wait_player_listens(player)
        assert bench.wait_state(lambda st: st.state == "DISABLED", proc=sim), output_of(sim)
        bench.probe.spin_for(1.5)
        assert bench.commands() == 0 and player.poll() is None
        bench.state_command("enable", sim)
        assert bench.wait_state(lambda st: st.state == "ENABLED" and not st.is_homed, proc=sim), output_of(sim)
        bench.probe.spin_for(1.0)
        assert bench.commands() == 0 and player.poll() is None
        bench.state_command("home", sim)
        assert bench.probe.spin_until(lambda: any(m.is_busy for _, m in bench.states), 15.0, sim), output_of(sim)
        sent_while_homing = bench.commands()
        assert bench.wait_state(lambda st: st.is_homed and not st.is_busy, proc=sim), output_of(sim)
        assert bench.probe.spin_until(lambda: player.poll() is not None, 30.0), "the player did not finish"
        code = player.wait()
        bench.probe.spin_for(0.2)
        assert sim.poll() is None
    out, sim_out = output_of(player), output_of(sim)
    commands = bench.commands()
    bench.close()
    print(f"\nwaited, homed and played in {time.monotonic() - start:.1f} s, {commands} commands")
    assert code == 0, out
    assert sent_while_homing == 0
    assert commands > 100, out
    assert NOT_READY_WARNING not in sim_out, sim_out  # nothing reached the arm before it was ready
    for reason in ("PSM1 is DISABLED: power on and home it from the console",
                   "PSM1 is ENABLED but not homed: home it from the console",
                   "PSM1 is homing: wait until it is homed"):
        assert len(_lines_with(out, reason)) == 1, out
    assert "state_command" not in out and "home_arm" not in out  # the player did not home it itself


@pytest.mark.ros
def test_player_refuses_after_ready_timeout_with_the_reason(ros_env, rclpy_context, tmp_path):
    """A goal for a DISABLED arm, then for one not homed, fails after ready_timeout with the reason
    (OUTCOME_ARM_NOT_READY); autostart while the arm homes exits with status 2 and the reason."""
    from dvrk_ident.action import PlayTrajectory

    path = _trajectory(tmp_path / "short.yaml")
    bench = _Bench(rclpy_context, "player_test_timeout")
    # generous timeouts: the player must have heard the arm's state before it gives up (discovery on a loaded
    # machine can take a few seconds), so that its reason is the arm's, not "no operating_state yet"
    autostart = _player("autostart:=true", "wait_for_recorder:=false", f"trajectory_file:={path}",
                        "ready_timeout:=5.0")
    results = []
    with running(_sim("homing_time:=60.0", initial_state="DISABLED"), ros_env) as sim, \
            running(_player("ready_timeout:=3.0"), ros_env) as player:
        assert bench.probe.spin_until(bench.client.server_is_ready, 40.0, player), output_of(player)
        assert bench.wait_state(lambda st: st.state == "DISABLED", proc=sim), output_of(sim)
        bench.wait_player_has_state(player)
        for command, state in (("", "DISABLED"), ("enable", "ENABLED")):
            if command:
                bench.state_command(command, sim)
                assert bench.wait_state(lambda st, s=state: st.state == s, proc=sim), output_of(sim)
            started = time.monotonic()
            handle = bench.send(path)
            assert handle is not None, "goal refused"
            results.append((*bench.result(handle, 20.0), time.monotonic() - started))
        bench.state_command("home", sim)
        assert bench.wait_state(lambda st: st.is_busy and not st.is_homed, proc=sim), output_of(sim)
        with running(autostart, ros_env) as auto:
            assert bench.probe.spin_until(lambda: auto.poll() is not None, 40.0), "autostart did not give up"
            code = auto.wait()
        bench.probe.spin_for(0.2)
        assert sim.poll() is None and player.poll() is None
    auto_out, sim_out = output_of(auto), output_of(sim)
    commands = bench.commands()
    bench.close()
    refused = PlayTrajectory.Result.OUTCOME_ARM_NOT_READY
    (status0, result0, took0), (status1, result1, took1) = results
    print(f"\nrefused after {took0:.1f} s and {took1:.1f} s: {result0.message!r}; {result1.message!r}")
    assert (status0, result0.outcome) == (STATUS_ABORTED, refused), result0.message
    assert result0.message == "PSM1 not ready after 3 s: PSM1 is DISABLED: power on and home it from the console"
    assert (status1, result1.outcome) == (STATUS_ABORTED, refused), result1.message
    assert result1.message.endswith("PSM1 is ENABLED but not homed: home it from the console")
    assert 2.9 < took0 < 15.0 and 2.9 < took1 < 15.0
    assert result0.commands_sent == result1.commands_sent == 0
    assert code == 2, auto_out
    assert len(_lines_with(auto_out, "PSM1 is homing: wait until it is homed")) == 2, auto_out  # waiting, refused
    assert len(_lines_with(auto_out, "not ready after 5 s: PSM1 is homing")) == 1, auto_out
    assert commands == 0, "the player commanded an arm that was not ready"
    assert NOT_READY_WARNING not in sim_out, sim_out


# -- the arm leaves the ready state mid-run ----------------------------------------------------------

@pytest.mark.ros
def test_player_stops_at_once_on_a_fault_or_a_homing_mid_run(ros_env, rclpy_context, tmp_path):
    """A FAULT in the middle of a trajectory ends it at once with the reason, then nothing is sent;
    the same when someone unhomes the arm mid-run; the player plays again once the arm is homed."""
    from dvrk_ident.action import PlayTrajectory

    path = _trajectory(tmp_path / "long.yaml", periods=3)  # 6 s of simulated time after the ramp
    bench = _Bench(rclpy_context, "player_test_fault")
    outcomes = []
    with running(_sim("homing_time:=1.0"), ros_env) as sim, running(_player(), ros_env) as player:
        bench.wait_ready(sim, player)
        for disturb, words in (("fault", "PSM1 is in FAULT"), ("unhome", "not homed")):
            feedback: list = []
            handle = bench.send(path, feedback=feedback)
            assert handle is not None
            result_future = handle.get_result_async()
            assert bench.probe.spin_until(
                lambda f=feedback, r=result_future: r.done() or any(x.phase == PlayerPhase.PLAYING for x in f), 20.0)
            assert not result_future.done(), result_future.result().result.message
            if disturb == "fault":
                bench.inject_fault(sim)
                assert bench.wait_state(lambda st: st.state == "FAULT", 5.0, sim), output_of(sim)
            else:  # a person unhomes it to home it again (a homed arm takes home as done)
                bench.state_command("unhome", sim)
                assert bench.wait_state(lambda st: not st.is_homed, 5.0, sim), output_of(sim)
            disturbed_at = stamp_of(bench.state())
            assert bench.probe.spin_until(result_future.done, 5.0), "the player did not stop"
            bench.probe.spin_for(0.5)
            last = max(stamp_of(m) for _, m in bench.servo_jp)
            sent = len(bench.servo_jp)
            bench.probe.spin_for(0.3)
            assert len(bench.servo_jp) == sent, "the player kept streaming"
            assert bench.status[-1][1].phase == PlayerPhase.ABORTED
            outcomes.append((result_future.result().status, result_future.result().result, words,
                             last - disturbed_at))
            # the console clears the fault (or lets the homing end) and homes the arm for the next run
            bench.state_command("home", sim)
            assert bench.wait_state(lambda st: st.state == "ENABLED" and st.is_homed and not st.is_busy,
                                    15.0, sim), output_of(sim)
        # the player carries on once the arm is ready again
        status, result = bench.play(_trajectory(tmp_path / "short.yaml"))
        assert sim.poll() is None and player.poll() is None
    bench.close()
    assert (status, result.outcome) == (STATUS_SUCCEEDED, PlayTrajectory.Result.OUTCOME_SUCCEEDED), result.message
    for status, result, words, after in outcomes:
        print(f"\n{result.message!r}: last servo_jp {after * 1000:.0f} ms (simulated) after the arm's state")
        assert (status, result.outcome) == (STATUS_ABORTED, PlayTrajectory.Result.OUTCOME_ARM_NOT_READY)
        # the arm's reason: its operating state or, when its data (stamp 0, sent just after the state on
        # another topic) arrives first, the invalid data's
        assert result.message.startswith("aborted: the arm is no longer ready: "), result.message
        assert words in result.message or "measured_js has stamp 0" in result.message, result.message
        assert result.commands_sent > 0
        # at once: commands already on their way when the state changed, no more (0.4 s of simulated time at
        # twice real time: the margin of a loaded machine, where the player may take the event late)
        assert after < 0.4, after


def stamp_of(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


@pytest.mark.ros
def test_without_crtk_msgs_no_node_commands_the_arm(ros_env, tmp_path):
    """Where crtk_msgs is absent the arm's operating state cannot be read, and valid stamps alone do not
    tell a ready arm (a real MTM's data is valid while it homes): the player and the gravity compensation
    refuse to start (exit status 2, one line saying why), before any command."""
    from test_nodes_gc import _gc_file, _gc_node

    hidden = tmp_path / "no_crtk" / "crtk_msgs"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("crtk_msgs hidden by the test")\n')
    env = dict(ros_env, PYTHONPATH=os.pathsep.join([str(hidden.parent), ros_env["PYTHONPATH"]]))
    path = _trajectory(tmp_path / "long.yaml")
    gc_file, _ = _gc_file(tmp_path)
    with running(_player("autostart:=true", "wait_for_recorder:=false", f"trajectory_file:={path}"), env) as player, \
            running(_gc_node(gc_file), env) as gc:
        codes = player.wait(timeout=60), gc.wait(timeout=60)
    outputs = output_of(player), output_of(gc)
    assert codes == (2, 2), outputs
    for out, arm in zip(outputs, (ARM, "MTML"), strict=True):
        errors = _lines_with(out, "error:")
        assert len(errors) == 1 and f"crtk_msgs is not installed: the {arm}'s operating state" in errors[0], out


# -- home_arm: the player powers the arm on and homes it; a pose grid through move_jp -----------------

@pytest.mark.ros
def test_home_arm_homes_a_disabled_arm_and_plays_a_grid(ros_env, rclpy_context, tmp_path):
    """home_arm from DISABLED: enable, home; then (the test stands in for the recorder, so that it hears
    every command) a pose grid: move_jp to each pose, completion from the arm's goal_reached / is_busy
    (the arm is busy during the player's own moves: no abort)."""
    import yaml

    from dvrk_ident.msg import RecorderStatus
    from dvrk_ident_ros.arm.registry import recorder_status_topic

    grid = {"format": "dvrk_ident.pose_grid/1", "kind": "pose_grid", "arm": "MTML", "coordinates": "dvrk",
            "units": "rad", "settle_time": 0.2, "samples_per_pose": 5,
            "sweeps": [{"estimated_joint": 6, "auxiliary_joint": 5, "auxiliary_value": 0.0, "direction": "positive",
                        "poses": [[0, 0, 0, 0, 0, 0.05, 0], [0, 0, 0, 0, 0, 0.15, 0], [0, 0, 0, 0, 0, 0.25, 0]]}]}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    bench = _Bench(rclpy_context, "player_test_home_arm", arm="MTML")
    recorder = bench.probe.node.create_publisher(RecorderStatus, recorder_status_topic("MTML"), 10)
    player_cmd = _player("autostart:=true", f"trajectory_file:={path}", "home_arm:=true", "ready_timeout:=30.0",
                         "recorder_timeout:=30.0", arm="MTML")
    start = time.monotonic()
    with running(_sim("homing_time:=1.0", arm="MTML", initial_state="DISABLED"), ros_env) as sim, \
            running(player_cmd, ros_env) as player:
        assert bench.wait_state(lambda st: st.state == "ENABLED" and st.is_homed and not st.is_busy, 40.0, player), \
            f"the player did not home the arm\n{output_of(player)}"
        assert bench.probe.wait_for_graph(player, publishers=["/MTML/move_jp"], subscribers=[recorder])
        before_recorder = bench.commands()
        status = RecorderStatus(recording=True, bag_path="test", topics=["/MTML/measured_js"], message_counts=[1])
        deadline = time.monotonic() + 40.0
        while player.poll() is None and time.monotonic() < deadline:
            recorder.publish(status)
            bench.probe.spin_for(0.2)
        code = player.wait(timeout=10)
        bench.probe.spin_for(0.3)
        assert sim.poll() is None
        final = bench.state()
    out, sim_out = output_of(player), output_of(sim)
    moves = [np.array(m.position) for _, m in bench.move_jp]
    servo = len(bench.servo_jp)
    states = [(m.state, m.is_homed, m.is_busy) for _, m in bench.states]
    bench.close()
    print(f"\nhomed and played 3 poses in {time.monotonic() - start:.1f} s; states {states}")
    assert code == 0, out
    assert before_recorder == 0, "the player moved the arm before the recorder recorded it"
    assert "home_arm: enable" in out and "home_arm: home" in out, out
    assert len(_lines_with(out, "MTML is DISABLED")) == 1, out
    assert len(moves) == 3 and servo == 0, out
    assert np.allclose(moves[2], [0, 0, 0, 0, 0, 0.25, 0])
    homed = states[states.index(("ENABLED", True, False)):]  # (an MTM says homed, busy, while it homes)
    assert homed.count(("ENABLED", True, True)) == 3, f"the arm was not busy with each move_jp: {states}"
    assert (final.state, final.is_homed, final.is_busy) == ("ENABLED", True, False)
    assert NOT_READY_WARNING not in sim_out, sim_out


@pytest.mark.ros
def test_a_psm_plays_its_static_holds_and_refuses_an_mlse_grid(ros_env, rclpy_context, tmp_path):
    """A PSM's static holds (dvrk-ident trajectory holds: the data of its gravity refit) through the player:
    move_jp of the six joints and the jaw's to each pose, the poses reached; an MTM's MLSE grid is refused with
    the way to the PSM's holds."""
    from dvrk_ident_ros.excitation.files import save_grid
    from dvrk_ident_ros.excitation.holds import holds_grid
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.safety import CommandChecker

    checker = CommandChecker(load_model("psm"), "PSM1", section="hardware")
    grid = holds_grid("PSM1", checker, poses=3, seed=5, fraction=0.5, settle=0.3, samples=10,
                       approach="random")
    path = save_grid(tmp_path / "psm1_holds.yaml", grid)
    mlse = dict(grid, kind="pose_grid")
    mlse_path = save_grid(tmp_path / "mlse.yaml", mlse)
    from dvrk_ident.msg import RecorderStatus
    from dvrk_ident_ros.arm.registry import recorder_status_topic

    bench = _Bench(rclpy_context, "player_test_psm_holds", arm="PSM1")
    recorder = bench.probe.node.create_publisher(RecorderStatus, recorder_status_topic("PSM1"), 10)
    with running(_sim(arm="PSM1"), ros_env) as sim, \
            running(_player("autostart:=true", f"trajectory_file:={path}", arm="PSM1"), ros_env) as player, \
            running(_player("autostart:=true", "wait_for_recorder:=false", f"trajectory_file:={mlse_path}",
                            arm="PSM1"), ros_env) as refused:
        # the test stands in for the recorder: the player moves once this probe hears its commands
        assert bench.probe.wait_for_graph(player, publishers=["/PSM1/move_jp", "/PSM1/jaw/move_jp"],
                                          subscribers=[recorder]), output_of(player)
        status = RecorderStatus(recording=True, bag_path="test", topics=["/PSM1/measured_js"], message_counts=[1])
        deadline = time.monotonic() + 90.0
        while player.poll() is None and time.monotonic() < deadline:
            recorder.publish(status)
            bench.probe.spin_for(0.2)
        assert player.poll() is not None, "the holds did not end"
        bench.probe.spin_for(0.3)
        codes = player.wait(timeout=10), refused.wait(timeout=30)
        assert sim.poll() is None
    out, refused_out = output_of(player), output_of(refused)
    moves = [np.array(m.position) for _, m in bench.move_jp]
    jaw_moves = [np.array(m.position) for _, m in bench.jaw_move_jp]
    last = np.array(bench.measured[-1][1].position)  # six joints (the jaw on its own topic)
    bench.close()
    assert codes == (0, 2), (out, refused_out)
    assert len(moves) == 3 and all(len(m) == 6 for m in moves) and len(jaw_moves) == 3, out
    poses = np.array(grid["sweeps"][0]["poses"])
    assert np.allclose(np.hstack([moves, jaw_moves]), poses)
    errors = _lines_with(refused_out, "error:")
    assert len(errors) == 1 and "dvrk-ident trajectory holds --arm PSM1" in errors[0], refused_out
    assert np.abs(last - poses[-1, :6]).max() < 0.02, (last, poses[-1])  # the last hold's pose reached


# -- bad tracking limits: refused at start --------------------------------------------------------

@pytest.mark.ros
def test_player_refuses_bad_tracking_limits_at_start(ros_env, tmp_path):
    """Bad parameters, and with autostart a missing trajectory file: exit status 2, one line naming the
    problem (the file's path once)."""
    bad = {"tracking_error_limit:=[0.1,0.2]": "2 values for 7 joints",
           "tracking_error_limit:=0.3": "expected a list of 7 limits",
           "tracking_error_limit:=[0.15,0.15,-0.02,0.15,0.15,0.15,0.15]": "numbers > 0",
           "ready_timeout:=0.0": "ready_timeout 0.0 s: expected > 0"}
    missing = tmp_path / "missing.yaml"
    procs = {}
    with contextlib.ExitStack() as stack:
        for param in bad:
            procs[param] = stack.enter_context(running(_player(param), ros_env))
        no_file = stack.enter_context(running(_player("autostart:=true", f"trajectory_file:={missing}"), ros_env))
        codes = {param: proc.wait(timeout=60) for param, proc in procs.items()}
        no_file_code = no_file.wait(timeout=60)
    for param, words in bad.items():
        out = output_of(procs[param])
        errors = _lines_with(out, "error:")
        assert codes[param] == 2, out
        assert len(errors) == 1 and words in errors[0], out
    out = output_of(no_file)
    assert no_file_code == 2, out
    lines = _lines_with(out, "missing.yaml")  # refused at start (no /clock needed), the path named once
    assert lines == [f"error: cannot play: trajectory file {missing} does not exist"], out
