"""The trajectory_player against a simulated PSM1 under /clock, over its PlayTrajectory action:
a short Fourier trajectory to the end, bad goals (beyond the limits, missing file, other arm) that
command nothing, a cancel mid-way; and the /identify service's answer for a missing data file."""
from __future__ import annotations

import sys
import time

import numpy as np
import pytest
from helpers.processes import output_of, running
from helpers.ros_probe import Probe

ARM = "PSM1"
PSM_NAMES = ["yaw", "pitch", "insertion", "roll", "wrist_pitch", "wrist_yaw"]
# action_msgs/GoalStatus
STATUS_SUCCEEDED, STATUS_CANCELED, STATUS_ABORTED = 4, 5, 6
# PlayerStatus.PHASE_*
PHASE_RAMP_IN, PHASE_PLAYING, PHASE_DONE, PHASE_ABORTED = 1, 2, 7, 8


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


def _sim() -> list[str]:
    return [sys.executable, "-m", "dvrk_ident_ros.nodes.simulated_arm", "--ros-args", "-p", f"arm:={ARM}",
            "-p", "publish_clock:=true", "-p", "real_time_factor:=2.0", "-p", "noise:=false"]


def _player(*params: str) -> list[str]:
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.trajectory_player", "--ros-args", "-p", f"arm:={ARM}",
           "-p", "use_sim_time:=true"]
    for p in params:
        cmd += ["-p", p]
    return cmd


class _Bench:
    """The test's side: an action client, and everything the player commands or reports."""

    def __init__(self, rclpy_context, name: str):
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState

        from dvrk_ident.action import PlayTrajectory
        from dvrk_ident.msg import PlayerStatus

        self.probe = Probe(rclpy_context, name)
        self.client = ActionClient(self.probe.node, PlayTrajectory, f"/{ARM}/play_trajectory")
        self.servo_jp = self.probe.collect(JointState, f"/{ARM}/servo_jp")
        self.move_jp = self.probe.collect(JointState, f"/{ARM}/move_jp")
        self.jaw_servo_jp = self.probe.collect(JointState, f"/{ARM}/jaw/servo_jp")
        self.measured = self.probe.collect(JointState, f"/{ARM}/measured_js")
        self.status = self.probe.collect(PlayerStatus, "/dvrk_ident/player_status")

    def commands(self) -> int:
        return len(self.servo_jp) + len(self.move_jp) + len(self.jaw_servo_jp)

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
        bench.probe.spin_until(lambda: bench.status and bench.status[-1][1].phase == PHASE_DONE, 5.0)
        bench.probe.spin_for(0.3)
        sent_after = len(bench.servo_jp)
        bench.probe.spin_for(0.3)
        assert sim.poll() is None and player.poll() is None
        final = np.array(bench.measured[-1][1].position)
        assert len(bench.servo_jp) == sent_after, "the player kept streaming after the end"
    bench.close()
    print(f"\nplayer: {result.message}, {result.duration:.2f} s of simulated time in {elapsed:.2f} s, "
          f"{result.commands_sent} commands, max tracking error {result.max_tracking_error:.4f}")
    assert result.outcome == PlayTrajectory.Result.OUTCOME_SUCCEEDED, result.message
    assert status == STATUS_SUCCEEDED and result.message == "done"
    assert result.commands_sent > 0
    # ramp (at least 0.5 s) + one 2 s period, timed by /clock
    assert 2.49 <= result.duration < 4.0, result.duration
    assert len(bench.servo_jp) >= 0.9 * result.commands_sent
    assert result.max_tracking_error < 0.15
    assert feedback, "no feedback"
    progress = [f.progress for f in feedback]
    assert all(0.0 <= p <= 1.0 for p in progress) and progress == sorted(progress)
    assert {PHASE_RAMP_IN, PHASE_PLAYING} <= {f.phase for f in feedback}
    assert all(len(f.tracking_error) == 7 for f in feedback)
    assert bench.status[-1][1].phase == PHASE_DONE and bench.status[-1][1].trajectory_file == path
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
    with running(_sim(), ros_env) as sim, running(_player(), ros_env) as player:
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
        assert "missing.yaml" in result.message and "no such file" in result.message, result.message
        assert bench.send(good, arm="PSM2") is None, "a goal for another arm was accepted"
        bench.probe.spin_for(0.5)
        assert bench.commands() == before == 0, "the player commanded the arm"
        assert sim.poll() is None and player.poll() is None
    out = output_of(player)
    bench.close()
    assert "goal refused: for PSM2" in out, out


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
                return done() or any(f.phase == PHASE_PLAYING for f in feedback)

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
        assert sim.poll() is None and player.poll() is None
    bench.close()
    assert len(cancel.result().goals_canceling) == 1
    assert (status, result.outcome) == (STATUS_CANCELED, PlayTrajectory.Result.OUTCOME_CANCELED), result.message
    assert result.commands_sent > 0 and result.duration < 6.0
    assert bench.status[-1][1].phase == PHASE_ABORTED


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
