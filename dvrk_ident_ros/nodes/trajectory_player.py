"""Node ``trajectory_player``: plays an excitation trajectory or a pose grid on one arm.

A Fourier trajectory is streamed on ``/<ARM>/servo_jp`` at ``stream_rate``
(timed by the node clock, so it follows /clock with use_sim_time) after a
quintic ramp from the current pose; a pose grid goes through ``move_jp``
with settle time and sampling windows. The plan is checked against the limits
at 1 kHz before any motion and every command again before it is sent. The
player aborts on tracking error, stale state or cancel, publishes
``/dvrk_ident/player_status`` (for the recorder) and serves the
``/<ARM>/play_trajectory`` action (dvrk_ident/action/PlayTrajectory). With
``autostart`` it plays ``trajectory_file`` once the state arrives and exits
(status 0 on success), which ends ``collect.launch.py``; with
``wait_for_recorder`` (the default) it first waits for the recorder to report
``measured_js`` messages written, so no pose or period is played before the bag
records it, and refuses to play after ``recorder_timeout`` seconds without one.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState

from dvrk_ident.action import PlayTrajectory
from dvrk_ident.msg import PlayerStatus, RecorderStatus
from dvrk_ident_ros.data.interfaces import stamp_seconds
from dvrk_ident_ros.errors import DataError, DvrkIdentError, SafetyError
from dvrk_ident_ros.excitation import playback
from dvrk_ident_ros.excitation.files import GRID_FORMAT, load_grid, load_trajectory
from dvrk_ident_ros.files import read_document
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.nodes.common import (
    STATE_QOS,
    arm_family,
    check_arm_name,
    declare,
    fill_joint_state,
    run,
    shutdown_requested,
)
from dvrk_ident_ros.safety import CommandChecker

Result = PlayTrajectory.Result
TRACKING_CHECK_EVERY = 4  # ticks: the tracking error is checked at a quarter of the stream rate


@dataclass
class Session:
    plan: object
    kind: str  # "fourier" | "grid"
    trajectory_file: str
    start: float
    duration: float
    goal_handle: object | None
    future: Future
    monitor: playback.TrackingMonitor
    commands_sent: int = 0
    last_setpoint: np.ndarray | None = None
    ticks: int = 0
    last_phase: int = -1
    skipped: list[str] = field(default_factory=list)


class TrajectoryPlayerNode(Node):
    def __init__(self) -> None:
        super().__init__("trajectory_player")
        self.arm = check_arm_name(declare(self, "arm", "PSM1"))
        self.trajectory_file = str(declare(self, "trajectory_file", ""))
        self.autostart = bool(declare(self, "autostart", False))
        self.stream_rate = float(declare(self, "stream_rate", 500.0))
        self.ramp_speed = float(declare(self, "ramp_in_speed", 0.2))
        self.tracking_limit = float(declare(self, "tracking_error_limit", 0.15))
        self.stale_timeout = float(declare(self, "stale_timeout", 0.1))
        self.speed_scale = float(declare(self, "speed_scale", 1.0))
        self.periods = int(declare(self, "periods", 0))
        self.pose_stride = int(declare(self, "pose_stride", 1))
        self.sweep_stride = int(declare(self, "sweep_stride", 1))
        self.pose_tolerance = float(declare(self, "pose_tolerance", 0.02))
        self.wait_for_recorder = bool(declare(self, "wait_for_recorder", True))
        self.recorder_timeout = float(declare(self, "recorder_timeout", 15.0))
        if self.recorder_timeout <= 0.0:
            raise DvrkIdentError(f"recorder_timeout {self.recorder_timeout} s: expected > 0")
        if not 1.0 <= self.stream_rate <= 2000.0:
            raise DvrkIdentError(f"stream_rate {self.stream_rate} Hz: expected 1..2000 Hz")
        self.family = arm_family(self.arm)
        self.model = load_model(self.family)
        variant = self.arm if self.family == "mtm" else None
        self.checker = CommandChecker(self.model, variant)  # excitation limits (as `trajectory check`)
        self.grid_checker = CommandChecker(self.model, variant, section="hardware")  # pose grids
        self.names = list(self.model.description.dvrk_joint_names)
        self.arm_joints = 6 if self.family == "psm" else 7
        self.q = np.zeros(self.model.dof)
        self._state_time: float | None = None  # node-clock time the last state arrived
        self._state_stamp = 0.0  # its header stamp: the time the positions were measured
        self._jaw_seen = self.family != "psm"
        self.session: Session | None = None
        self.exit_code: int | None = None
        self._pub_servo = self.create_publisher(JointState, f"/{self.arm}/servo_jp", STATE_QOS)
        self._pub_move = self.create_publisher(JointState, f"/{self.arm}/move_jp", 10)
        if self.family == "psm":
            self._pub_jaw_servo = self.create_publisher(JointState, f"/{self.arm}/jaw/servo_jp", STATE_QOS)
            self._pub_jaw_move = self.create_publisher(JointState, f"/{self.arm}/jaw/move_jp", 10)
            self.create_subscription(JointState, f"/{self.arm}/jaw/measured_js", self._on_jaw, STATE_QOS)
        self._status = self.create_publisher(PlayerStatus, "/dvrk_ident/player_status", 10)
        self._recorder_ready = not (self.autostart and self.wait_for_recorder)
        self._waiting_since: float | None = None  # steady time the autostart began waiting for the recorder
        if not self._recorder_ready:
            self.create_subscription(RecorderStatus, "/dvrk_ident/recorder_status", self._on_recorder, 10)
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, STATE_QOS)
        self._action = ActionServer(self, PlayTrajectory, f"/{self.arm}/play_trajectory", self._execute,
                                    goal_callback=self._goal, cancel_callback=lambda _: CancelResponse.ACCEPT)
        self.create_timer(1.0 / self.stream_rate, self._tick)
        self._idle_ticks = 0
        self._rejections = 0
        self.get_logger().info(f"{self.arm}: player ready (action /{self.arm}/play_trajectory"
                               + (f", autostart {self.trajectory_file}" if self.autostart else "") + ")")

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -- state in ----------------------------------------------------------------------
    def _on_state(self, msg: JointState) -> None:
        n = self.arm_joints
        if len(msg.position) != n or not all(np.isfinite(msg.position)):
            self._rejections += 1
            self.get_logger().warning(f"measured_js rejected: {len(msg.position)} positions (expected {n}) or NaN",
                                      throttle_duration_sec=1.0)
            return
        self.q[:n] = msg.position
        now = self.now()
        if now == 0.0:  # use_sim_time and no /clock yet: no time to stamp the state with
            return
        self._state_time = now
        stamp = stamp_seconds(msg.header.stamp)
        self._state_stamp = stamp if stamp > 0 else now
        if self.session is not None and self.session.kind == "grid":
            self.session.plan.on_sample()

    def _on_jaw(self, msg: JointState) -> None:
        if len(msg.position) == 1 and np.isfinite(msg.position[0]):
            self.q[6] = msg.position[0]
            self._jaw_seen = True

    def _on_recorder(self, msg: RecorderStatus) -> None:
        """Ready once a recorder writes this arm's measured_js and hears the player's status topic."""
        counts = dict(zip(msg.topics, msg.message_counts, strict=False))
        if msg.recording and counts.get(f"/{self.arm}/measured_js", 0) > 0 \
                and self._status.get_subscription_count() > 0:
            if not self._recorder_ready:
                self.get_logger().info(f"recorder ready: {msg.bag_path}")
            self._recorder_ready = True

    def _autostart_ready(self) -> bool:
        """The state arrives and, with wait_for_recorder, a recorder records it (DataError after the timeout)."""
        if not self._state_ready():
            return False
        if self._recorder_ready:
            return True
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
            self.get_logger().info("waiting for the recorder (/dvrk_ident/recorder_status) before playing")
        if now - self._waiting_since > self.recorder_timeout:
            raise DataError(f"no recorder writing /{self.arm}/measured_js after {self.recorder_timeout:.0f} s: "
                            "start the recorder, or set wait_for_recorder:=false to play without one")
        return False

    def _state_ready(self) -> bool:
        return self._state_time is not None and self._jaw_seen

    # -- sessions ----------------------------------------------------------------------
    def _plan(self, path: str, speed_scale: float):
        if not path:
            raise DataError("no trajectory file given")
        if not Path(path).is_file():
            raise DataError(f"{path}: no such file")
        raw = read_document(Path(path))
        if isinstance(raw, dict) and raw.get("format") == GRID_FORMAT:
            if self.family != "mtm":
                raise DataError(f"{path}: pose grids are for the MTMs, not the {self.arm}")
            grid = load_grid(path, arm=self.arm)
            return playback.GridPlayback(grid, self.grid_checker, pose_stride=self.pose_stride,
                                         sweep_stride=self.sweep_stride,
                                         tolerance=self.pose_tolerance), "grid"
        trajectory, meta = load_trajectory(path, arm=self.family, joints=self.model.dof)
        try:
            periods = self.periods or int(meta.get("periods") or 1)
        except (TypeError, ValueError):
            raise DataError(f"{path}: periods {meta.get('periods')!r} is not a whole number") from None
        return playback.FourierPlayback(trajectory, self.model, self.checker, periods=periods,
                                        speed_scale=speed_scale, ramp_speed=self.ramp_speed), "fourier"

    def start_session(self, path: str, speed_scale: float, goal_handle=None) -> Session:
        if self.session is not None:
            raise DataError(f"busy: already playing {self.session.trajectory_file}")
        if not self._state_ready() or self.now() - self._state_time > self.stale_timeout:
            raise DataError(f"no recent /{self.arm}/measured_js: is the arm (or the simulator) running?")
        plan, kind = self._plan(path, speed_scale or self.speed_scale)
        start = self.now()
        duration = plan.start(start, self.q.copy())
        skipped = list(getattr(plan, "skipped", []))
        if skipped:
            self.get_logger().warning(f"{len(skipped)} poses outside the {self.arm}'s limits left out "
                                      f"(first: {skipped[0]})")
        self.session = Session(plan, kind, path, start, duration, goal_handle, Future(),
                               playback.TrackingMonitor(self.names, self.tracking_limit), skipped=skipped)
        self.get_logger().info(f"playing {path} ({kind}, about {duration:.1f} s)")
        return self.session

    def _finish(self, outcome: int, message: str) -> None:
        s = self.session
        if s is None:
            return
        self.session = None
        result = Result(outcome=outcome, message=message, duration=self.now() - s.start,
                        max_tracking_error=s.monitor.max_error, commands_sent=s.commands_sent)
        phase = playback.DONE if outcome == Result.OUTCOME_SUCCEEDED else playback.ABORTED
        self._publish_status(s, phase, 1.0 if phase == playback.DONE else 0.0)
        log = self.get_logger().info if outcome == Result.OUTCOME_SUCCEEDED else self.get_logger().error
        log(f"{s.trajectory_file}: {message} ({result.duration:.1f} s, {s.commands_sent} commands, "
            f"max tracking error {s.monitor.max_error:.4f})")
        if s.goal_handle is not None:
            if outcome == Result.OUTCOME_SUCCEEDED:
                s.goal_handle.succeed()
            elif outcome == Result.OUTCOME_CANCELED:
                s.goal_handle.canceled()
            else:
                s.goal_handle.abort()
        s.future.set_result(result)
        if self.autostart:
            self.exit_code = 0 if outcome == Result.OUTCOME_SUCCEEDED else 1

    # -- the stream --------------------------------------------------------------------
    def _send_position(self, q: np.ndarray, velocity: np.ndarray | None, move: bool) -> None:
        stamp = self.get_clock().now().to_msg()
        n = self.arm_joints
        pub = self._pub_move if move else self._pub_servo
        pub.publish(fill_joint_state(JointState(), stamp, self.names[:n], q[:n],
                                     None if velocity is None else velocity[:n]))
        if n == 6:
            jaw = self._pub_jaw_move if move else self._pub_jaw_servo
            jaw.publish(fill_joint_state(JointState(), stamp, ["jaw"], q[6:]))

    def _tick(self) -> None:
        s = self.session
        if s is None:
            self._idle_ticks += 1
            if self.autostart and self.exit_code is None and self._idle_ticks > 1:
                try:
                    if self._autostart_ready():
                        self.start_session(self.trajectory_file, self.speed_scale)
                except DvrkIdentError as exc:
                    self.get_logger().error(f"cannot play {self.trajectory_file}: {exc}")
                    self.exit_code = 2
            return
        now = self.now()
        s.ticks += 1
        try:
            if s.goal_handle is not None and s.goal_handle.is_cancel_requested:
                return self._finish(Result.OUTCOME_CANCELED, "canceled")
            if now - self._state_time > self.stale_timeout:
                return self._finish(Result.OUTCOME_ABORTED_STALE,
                                    f"/{self.arm}/measured_js stale for {now - self._state_time:.3f} s "
                                    f"(now {now:.3f}, last state {self._state_time:.3f})")
            if s.kind == "fourier":
                sp = s.plan.step(now)
                if s.ticks % TRACKING_CHECK_EVERY == 0:
                    # the setpoint of the instant the state was measured, not of now
                    measured_at = min(self._state_stamp, now) if self._state_stamp >= s.start else now
                    s.monitor.check(s.plan.step(measured_at).position, self.q)
                self._send_position(sp.position, sp.velocity, move=False)
                s.commands_sent += 1
            else:
                sp = s.plan.step(now, self.q)
                if sp.move_goal is not None:
                    self._send_position(sp.move_goal, None, move=True)
                    s.commands_sent += 1
        except SafetyError as exc:
            outcome = Result.OUTCOME_ABORTED_TRACKING if "tracking" in str(exc) or "not reached" in str(exc) \
                else Result.OUTCOME_REJECTED_LIMITS
            return self._finish(outcome, f"aborted: {exc}")
        if sp.phase == playback.DONE:
            return self._finish(Result.OUTCOME_SUCCEEDED, "done")
        # every phase change (the recorder's sampling windows start there), and at about 50 Hz
        if sp.phase != s.last_phase or s.ticks % max(1, round(self.stream_rate / 50)) == 0:
            s.last_phase = sp.phase
            self._publish_status(s, sp.phase, sp.progress, sp)

    def _publish_status(self, s: Session, phase: int, progress: float, sp=None) -> None:
        status = PlayerStatus(arm=self.arm, trajectory_file=s.trajectory_file, phase=phase, progress=float(progress))
        status.header.stamp = self.get_clock().now().to_msg()
        if sp is not None:
            status.pose_index, status.pose_count, status.direction = sp.pose_index, sp.pose_count, sp.direction
        self._status.publish(status)
        if s.goal_handle is not None and sp is not None:
            feedback = PlayTrajectory.Feedback(progress=float(progress), elapsed=self.now() - s.start, phase=phase,
                                               pose_index=sp.pose_index, pose_count=sp.pose_count,
                                               max_tracking_error=float(np.max(s.monitor.error, initial=0.0)),
                                               tracking_error=s.monitor.error.tolist())
            s.goal_handle.publish_feedback(feedback)

    # -- the action --------------------------------------------------------------------
    def _goal(self, request) -> GoalResponse:
        if self.session is not None:
            self.get_logger().warning(f"goal refused: already playing {self.session.trajectory_file}")
            return GoalResponse.REJECT
        if request.arm and request.arm != self.arm:
            self.get_logger().warning(f"goal refused: for {request.arm}, this player drives {self.arm}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    async def _execute(self, goal_handle):
        request = goal_handle.request
        try:
            session = self.start_session(request.trajectory_file, request.speed_scale, goal_handle)
        except DvrkIdentError as exc:
            goal_handle.abort()
            return Result(outcome=Result.OUTCOME_FAILED, message=str(exc))
        result = await session.future
        result.bag_path = request.bag_path
        return result

    def spin(self, executor) -> None:
        while rclpy.ok() and self.exit_code is None and not shutdown_requested():
            executor.spin_once(timeout_sec=0.1)
        if self.session is not None:
            self._finish(Result.OUTCOME_CANCELED, "shutdown")

    def close(self) -> None:
        if self.session is not None:
            self._finish(Result.OUTCOME_CANCELED, "node shut down")
        time.sleep(0.05)


def main(args: list[str] | None = None) -> int:
    holder: list[TrajectoryPlayerNode] = []

    def factory() -> TrajectoryPlayerNode:
        holder.append(TrajectoryPlayerNode())
        return holder[0]

    status = run(factory, args)
    return holder[0].exit_code or status if holder else status


if __name__ == "__main__":
    sys.exit(main())
