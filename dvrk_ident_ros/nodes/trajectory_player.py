"""Node ``trajectory_player``: plays an excitation trajectory or a pose grid on one arm.

Serves ``/<ARM>/play_trajectory`` (dvrk_ident/action/PlayTrajectory; with ``autostart`` it plays
``trajectory_file`` and exits), streams ``servo_jp`` or sends ``move_jp``, publishes its PlayerStatus on
``/dvrk_ident/<ARM>/player_status``. What it does and its exit status: docs/nodes.md ("The trajectory
player", "Playback on the wall clock"). Its decisions are ROS-free: :mod:`dvrk_ident_ros.excitation.player`
(waiting, each tick, the end), :mod:`dvrk_ident_ros.excitation.player_plan` (the file and its limits); this
node turns them into messages.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from dvrk_ident.action import PlayTrajectory
from dvrk_ident.msg import PlayerStatus, RecorderStatus
from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.arm.registry import player_status_topic, recorder_status_topic
from dvrk_ident_ros.arm.samples import SampleKind
from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.excitation.player import STALL_WARN_EVERY, PlayerCore, records_arm
from dvrk_ident_ros.excitation.player_plan import PlanLoader, PlanOptions, cannot_play
from dvrk_ident_ros.excitation.player_session import LogLine, PlayerConfig, PlayOutcome, Session, arm_not_ready
from dvrk_ident_ros.parameters.settings import TrajectoryPlayerSettings
from dvrk_ident_ros.parameters.trajectory_player import SCHEMA as PARAMETERS
from dvrk_ident_ros.ros.arm_monitor import ArmStateMonitor
from dvrk_ident_ros.ros.messages import check_arm_name, fill_joint_state
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import run, shutdown_requested
from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS, STATUS_QOS

Result = PlayTrajectory.Result
NO_CLOCK_WARNING = 5.0  # s (steady): with use_sim_time, a /clock still missing after this long is reported
IDLE_RATE = 50.0  # Hz: the timer's rate while nothing moves (waiting for a goal, the arm, the recorder)
RESULT_DELIVERY = 0.2  # s: spun after a shutdown ended a goal, so that its result reaches the client
#: The arm's state: only the newest sample matters to the player (a slow player skips, never queues, samples); best
#: effort: a stalled player never holds back the arm's reliable publisher (Fast DDS then refuses its samples).
LATEST_STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


class TrajectoryPlayerNode(Node):
    def __init__(self) -> None:
        super().__init__("trajectory_player")
        # types and ranges checked there (timeouts > 0, stream_rate 1..2000 Hz, speed_scale (0, 1])
        params = declare_parameters(self, PARAMETERS, on_change={"speed_scale": self._set_speed_scale})
        settings = TrajectoryPlayerSettings.from_values(params)
        self.arm = check_arm_name(settings.arm)
        self.trajectory_file = settings.trajectory_file
        self.autostart = settings.autostart
        self.stream_rate = settings.stream_rate
        self.speed_scale = settings.speed_scale
        self.home_arm = settings.home_arm
        self.plans = PlanLoader(self.arm, PlanOptions(periods=settings.periods, ramp_speed=settings.ramp_in_speed,
                                                      pose_stride=settings.pose_stride,
                                                      sweep_stride=settings.sweep_stride))
        config = PlayerConfig(stream_rate=self.stream_rate, stale_timeout=settings.stale_timeout,
                              ready_timeout=settings.ready_timeout, recorder_timeout=settings.recorder_timeout,
                              home_arm=self.home_arm)
        # tracking_error_limit [] = the arm's; checked against the arm there
        self.core = PlayerCore(self.plans, config, settings.tracking_error_limit,
                               uses_sim_time=lambda: bool(self.get_parameter("use_sim_time").value))
        self.names, self.tracking_limits = self.core.names, self.core.tracking_limits
        self.arm_joints = self.plans.spec.arm_joints  # on measured_js: all but the jaw
        self.jaw = self.plans.spec.jaw_index  # the jaw's index (on /<ARM>/jaw/*), or None
        # the arm's pose and the freshness of its state (fresh_at: on the node's clock; stamp: when measured)
        self.samples = self.core.samples
        self.exit_code: int | None = None
        self._autostarted = False
        self._handle: ServerGoalHandle | None = None  # the session's goal (none with autostart); not generic
        self._future: Future | None = None  # of the session's PlayTrajectory.Result
        self.arm_state = ArmStateMonitor(self, self.arm, on_change=self._on_arm_change)
        self.arm_state.require()
        self.create_subscription(Bool, f"/{self.arm}/goal_reached", self._on_goal_reached, EVENT_QOS)
        self._pub_servo = self.create_publisher(JointState, f"/{self.arm}/servo_jp", STATE_QOS)
        self._pub_move = self.create_publisher(JointState, f"/{self.arm}/move_jp", 10)
        if self.jaw is not None:
            self._pub_jaw_servo = self.create_publisher(JointState, f"/{self.arm}/jaw/servo_jp", STATE_QOS)
            self._pub_jaw_move = self.create_publisher(JointState, f"/{self.arm}/jaw/move_jp", 10)
            self.create_subscription(JointState, f"/{self.arm}/jaw/measured_js", self._on_jaw, LATEST_STATE_QOS)
        self.status_topic = player_status_topic(self.arm)
        self._status = self.create_publisher(PlayerStatus, self.status_topic, STATUS_QOS)
        self._recorder_ready = not (self.autostart and settings.wait_for_recorder)
        if not self._recorder_ready:
            self.create_subscription(RecorderStatus, recorder_status_topic(self.arm), self._on_recorder, 10)
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, LATEST_STATE_QOS)
        self._action = ActionServer(self, PlayTrajectory, f"/{self.arm}/play_trajectory", self._execute,
                                    goal_callback=self._goal, cancel_callback=lambda _: CancelResponse.ACCEPT)
        if self.autostart:  # a file that cannot be played: refused at start (exit status 2), before any waiting
            try:
                self.plans.load(self.trajectory_file, self.speed_scale)
            except DvrkIdentError as exc:
                raise DvrkIdentError(cannot_play(self.trajectory_file, exc)) from exc
        self._timer = self.create_timer(1.0 / min(IDLE_RATE, self.stream_rate), self._tick)
        self._streaming = False
        self._sim_time = bool(self.get_parameter("use_sim_time").value)
        if self._sim_time:  # on the steady clock: says so when /clock never comes (the timer above would not tick)
            self._clock_watch = self.create_timer(NO_CLOCK_WARNING, self._check_clock,
                                                  clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._idle_ticks = 0
        limits = ", ".join(f"{n} {v:g}" for n, v in zip(self.names, self.tracking_limits, strict=True))
        self.get_logger().info(f"{self.arm}: player ready (action /{self.arm}/play_trajectory"
                               + (f", autostart {self.trajectory_file}" if self.autostart else "")
                               + (", home_arm" if self.home_arm else "")
                               + f"; stream {self.stream_rate:g} Hz on the "
                               + ("/clock" if self._sim_time else "wall clock")
                               + f"; status on {self.status_topic}; tracking limits {limits})")

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _check_clock(self) -> None:
        """use_sim_time without /clock: nothing happens (the node's time stands at 0); say so, once."""
        self._clock_watch.cancel()
        if self.get_clock().now().nanoseconds == 0:
            self.get_logger().warning(f"use_sim_time is true and no /clock after {NO_CLOCK_WARNING:g} s: the player "
                                      "waits for it (is the simulator publishing /clock? set use_sim_time:=false "
                                      "for a real arm)")

    def _say(self, lines: tuple[LogLine, ...]) -> None:
        for line in lines:  # one severity per call site (rclpy refuses a call site whose severity changes)
            if line.warning:
                self.get_logger().warning(line.text)
            else:
                self.get_logger().info(line.text)

    # -- state in ----------------------------------------------------------------------
    def _on_state(self, msg: JointState) -> None:
        now = self.now()  # 0 with use_sim_time before /clock: the pose is taken, no freshness
        stamp = msg.header.stamp
        kind = self.samples.on_sample(stamp.sec, stamp.nanosec, msg.position, now or None)
        if kind is SampleKind.MALFORMED:
            self.get_logger().warning(f"measured_js rejected: {self.samples.last_malformed} (expected "
                                      f"{self.arm_joints} finite positions)", throttle_duration_sec=1.0)
        elif self.core.sample_arrived(kind, bool(now)):  # stamp 0 mid-run: the arm is powered off, not homed, faulted
            self._abort_not_ready(self.arm_state.reason() or self.samples.invalid_reason())

    def _on_jaw(self, msg: JointState) -> None:
        self.samples.on_jaw(msg.header.stamp.sec, msg.header.stamp.nanosec, msg.position)  # invalid: ignored

    def _on_arm_change(self, old: OperatingStatus | None, new: OperatingStatus) -> None:
        reason = self.core.arm_changed(new)
        if reason is not None:
            self._abort_not_ready(reason)

    def _on_goal_reached(self, msg: Bool) -> None:
        self.core.move.on_goal_reached(bool(msg.data))

    def _abort_not_ready(self, reason: str) -> None:
        end = arm_not_ready(reason)
        self._finish(end.outcome, end.message)

    def _on_recorder(self, msg: RecorderStatus) -> None:
        """Ready once a recorder writes this arm's measured_js and hears the player's status topic."""
        if records_arm(self.arm, msg.recording, msg.topics, msg.message_counts) \
                and self._status.get_subscription_count() > 0:
            if not self._recorder_ready:
                self.get_logger().info(f"recorder ready: {msg.bag_path}")
            self._recorder_ready = True

    # -- sessions ----------------------------------------------------------------------
    def _set_speed_scale(self, value: float) -> None:
        """Run time: the speed of the next play without its own (a run under way keeps its plan, and every plan
        is checked against the limits before any motion)."""
        self.speed_scale = value

    def start_session(self, path: str, speed_scale: float, goal_handle: ServerGoalHandle | None = None) -> Future:
        """Find the file, load and check the plan (DataError at once, naming the file once); it plays once the arm
        is ready (:meth:`_wait`). Returns the future of its result."""
        session = self.core.begin(path, speed_scale or self.speed_scale)
        if session.skipped:
            self.get_logger().warning(f"{len(session.skipped)} poses outside the {self.arm}'s limits left out "
                                      f"(first: {session.skipped[0]})")
        self._handle, self._future = goal_handle, Future()
        return self._future

    def _wait(self) -> None:
        """A session not started yet: the core's decision (:meth:`PlayerCore.wait`) carried out."""
        steady = time.monotonic()
        step = self.core.wait(steady, self.now(), self.arm_state.status, self.arm_state.reason(),
                              self.arm_state.settled(steady), self._recorder_ready, self.arm_state.send)
        if step.started:
            self._stream(True)
        self._say(step.lines)
        if step.finish is not None:
            self._finish(step.finish.outcome, step.finish.message)

    def _stream(self, on: bool) -> None:
        """The timer at stream_rate while the arm is commanded, at IDLE_RATE otherwise (a node that waits
        for goals costs little, on /clock too)."""
        if on != self._streaming:
            self._streaming = on
            self._timer.timer_period_ns = round(1e9 / (self.stream_rate if on else min(IDLE_RATE, self.stream_rate)))
            self._timer.reset()

    def _finish(self, outcome: PlayOutcome, message: str) -> None:
        handle, future = self._handle, self._future
        end = self.core.finish(outcome, message, self.now(), self.arm_state.status)
        if end is None:
            return
        self._handle = self._future = None
        self._stream(False)
        if end.rest is not None:  # a stream ended early comes to rest (velocity 0)
            self._send_position(end.rest, np.zeros(len(end.rest)), move=False)
        s = end.session
        result = Result(outcome=int(outcome), message=end.message, duration=end.duration,
                        max_tracking_error=s.monitor.max_error, commands_sent=s.commands_sent)
        self._publish_status(s, end.phase, 1.0 if end.phase == PlayerPhase.DONE else 0.0)
        if end.failed:  # one severity per call site (rclpy refuses a call site whose severity changes)
            self.get_logger().error(end.line)
        else:
            self.get_logger().info(end.line)
        if handle is not None:
            if outcome == PlayOutcome.SUCCEEDED:
                handle.succeed()
            elif outcome == PlayOutcome.CANCELED and handle.is_cancel_requested:
                handle.canceled()
            else:  # the action protocol ends a goal nobody asked to cancel (a shutdown) as aborted
                handle.abort()
        if future is not None:
            future.set_result(result)
        if self.autostart:  # 2: refused before any motion (as for a bad configuration); 1: aborted
            self.exit_code = end.exit_code

    # -- the stream --------------------------------------------------------------------
    def _send_position(self, q: np.ndarray, velocity: np.ndarray | None, move: bool, stamp=None) -> None:
        """servo_jp (move_jp) and the jaw's; ``stamp``: the instant the setpoint is for (default now)."""
        stamp = stamp if stamp is not None else self.get_clock().now().to_msg()
        n = self.arm_joints
        pub = self._pub_move if move else self._pub_servo
        pub.publish(fill_joint_state(JointState(), stamp, self.names[:n], q[:n],
                                     None if velocity is None else velocity[:n]))
        if self.jaw is not None:
            jaw = self._pub_jaw_move if move else self._pub_jaw_servo
            jaw.publish(fill_joint_state(JointState(), stamp, ["jaw"], q[self.jaw:]))

    def _tick(self) -> None:
        s = self.core.session
        if s is None:
            self._idle_ticks += 1
            if self.autostart and not self._autostarted and self._idle_ticks > 1:
                self._autostarted = True
                try:
                    self.start_session(self.trajectory_file, self.speed_scale)
                except DvrkIdentError as exc:
                    self.get_logger().error(cannot_play(self.trajectory_file, exc))
                    self.exit_code = 2
            return
        if self._handle is not None and self._handle.is_cancel_requested:
            return self._finish(PlayOutcome.CANCELED, "canceled")
        if not s.started:
            return self._wait()
        clock_now = self.get_clock().now()
        step = self.core.tick(clock_now.nanoseconds * 1e-9, self.arm_state.status, self.arm_state.reason())
        if step.stall:
            self.get_logger().warning(step.stall, throttle_duration_sec=STALL_WARN_EVERY)
        self._say(step.lines)
        if step.servo is not None:  # stamped with its tick's time
            self._send_position(step.servo.servo_position, step.servo.velocity, move=False, stamp=clock_now.to_msg())
        if step.move_goal is not None:
            self._send_position(step.move_goal, None, move=True)
        if step.finish is not None:
            return self._finish(step.finish.outcome, step.finish.message)
        if step.status is not None:
            self._publish_status(s, step.status.phase, step.status.progress, step.status)

    def _publish_status(self, s: Session, phase: PlayerPhase, progress: float, sp=None) -> None:
        status = PlayerStatus(arm=self.arm, trajectory_file=s.trajectory_file, phase=phase, progress=float(progress))
        status.header.stamp = self.get_clock().now().to_msg()
        if sp is not None:
            status.pose_index, status.pose_count, status.direction = sp.pose_index, sp.pose_count, sp.direction
        self._status.publish(status)
        if self._handle is not None and sp is not None:
            feedback = PlayTrajectory.Feedback(progress=float(progress), elapsed=self.now() - s.start, phase=phase,
                                               pose_index=sp.pose_index, pose_count=sp.pose_count,
                                               max_tracking_error=float(np.max(s.monitor.error, initial=0.0)),
                                               tracking_error=s.monitor.error.tolist())
            self._handle.publish_feedback(feedback)

    # -- the action --------------------------------------------------------------------
    def _goal(self, request) -> GoalResponse:
        refusal = self.core.refusal(request.arm)
        if refusal:
            self.get_logger().warning(f"goal refused: {refusal}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    async def _execute(self, goal_handle):
        request = goal_handle.request
        try:
            future = self.start_session(request.trajectory_file, request.speed_scale, goal_handle)
        except DvrkIdentError as exc:
            self.get_logger().error(cannot_play(request.trajectory_file, exc))
            goal_handle.abort()
            return Result(outcome=Result.OUTCOME_FAILED, message=str(exc))
        result = await future
        if result is None:
            raise DvrkIdentError(f"{request.trajectory_file}: the play ended without a result")
        result.bag_path = request.bag_path
        return result

    def spin(self, executor) -> None:
        while rclpy.ok() and self.exit_code is None and not shutdown_requested():
            executor.spin_once(timeout_sec=0.1)
        if self.core.session is not None:
            self._finish(PlayOutcome.CANCELED, "shutdown")
            end = time.monotonic() + RESULT_DELIVERY
            while rclpy.ok() and time.monotonic() < end:  # the goal's result on its way to the client
                executor.spin_once(timeout_sec=0.02)

    def close(self) -> None:
        if self.core.session is not None:
            self._finish(PlayOutcome.CANCELED, "node shut down")
        time.sleep(0.05)


def main(args: list[str] | None = None) -> int:
    holder: list[TrajectoryPlayerNode] = []

    def factory() -> TrajectoryPlayerNode:
        holder.append(TrajectoryPlayerNode())
        return holder[0]

    status = run(factory, args, executor="events")  # fastest dispatch where rclpy has it
    return holder[0].exit_code or status if holder else status


if __name__ == "__main__":
    sys.exit(main())
