"""Node ``trajectory_player``: plays an excitation trajectory or a pose grid on one arm.

A Fourier trajectory is streamed on ``/<ARM>/servo_jp`` at ``stream_rate``
after a quintic ramp from the current pose; a pose grid goes through
``move_jp`` with settle time and sampling windows. The plan is checked against
the limits at 1 kHz before any motion and every command again before it is
sent. The player aborts on tracking error, stale state or cancel, publishes
its PlayerStatus on ``/dvrk_ident/<ARM>/player_status`` (for the recorder of
that arm) and serves the ``/<ARM>/play_trajectory`` action
(dvrk_ident/action/PlayTrajectory). Trajectory files (the ``trajectory_file``
parameter, an action goal's path) are found as every path a user names is
(:func:`dvrk_ident_ros.files.resolve_package_file`: absolute, relative to the
working directory, or in the package's share).

Exit status with ``autostart`` (it plays ``trajectory_file`` and exits, which
ends ``collect.launch.py``): 0 played to the end; 1 aborted after motion began
(tracking error, stale state, the arm no longer ready, shutdown); 2 refused
before any motion (missing or bad file, limits, the arm not ready within
``ready_timeout``, no recorder within ``recorder_timeout``, bad parameters).
With ``wait_for_recorder`` (the default) it first waits for the recorder on
``/dvrk_ident/<ARM>/recorder_status`` to report ``measured_js`` messages
written, so no pose or period is played before the bag records it.

Stream timing (``dvrk_ident_ros/excitation/streaming.py``). The timer runs on
the node's clock (the wall clock, or /clock with use_sim_time: then it cannot
tick more often than /clock advances, so the simulator's ``clock_rate`` must
be at least ``stream_rate``) with absolute deadlines: no drift, and a late
tick is not followed by a burst. Each setpoint is stamped with its tick's
time. When the process stalls for more than two periods, the trajectory is
held (its time origin moves on): the next setpoint continues from the last one
instead of jumping along the trajectory, and the trajectory ends that much
later; a throttled warning says so. The tracking check compares a measured
state with the setpoint the arm had been sent at the state's stamp. The final
log line gives the stream's interval median and p99, missed periods, stalls
and time held. Early in the stream the player warns once when the arm's state
arrives below 150 Hz by its stamps (the bridge's default 100 Hz: the recorded
efforts alias; :mod:`dvrk_ident_ros.arm.state_rate`).

The arm (docs/lab-procedure.md; :mod:`dvrk_ident_ros.arm.state`):
nothing is commanded until ``/<ARM>/operating_state`` says ENABLED,
homed and not busy (the player refuses to start where crtk_msgs is absent:
valid stamps alone do not tell a ready arm), the player says once what it
waits for and refuses after ``ready_timeout``; with
``home_arm`` it sends ``enable`` and ``home`` itself. A ``measured_js`` with
stamp 0 (the bridge's mark of invalid data) is never the current pose nor a
fresh sample; nor is one with the last valid sample's stamp (the arm's control
loop has stopped, and the bridge republishes its last sample). Mid-run, the
arm leaving that state (FAULT, PAUSED, DISABLED, someone homing or moving it;
the arm's busy flag during the player's own ``move_jp`` is expected) ends the
run at once with the reason. A pose grid's ``move_jp`` is over when the arm
says so (``goal_reached``, ``is_busy`` going false).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

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
from dvrk_ident_ros.arm.registry import arm_spec, player_status_topic, recorder_status_topic
from dvrk_ident_ros.arm.samples import ArmSamples, SampleKind
from dvrk_ident_ros.arm.state import CrtkState, OperatingStatus
from dvrk_ident_ros.arm.state_rate import IDENTIFICATION_RATE, low_rate_advice
from dvrk_ident_ros.errors import DataError, DvrkIdentError, SafetyError
from dvrk_ident_ros.excitation import playback
from dvrk_ident_ros.excitation.files import GRID_FORMAT, load_grid, load_trajectory
from dvrk_ident_ros.excitation.holds import HOLDS_KIND
from dvrk_ident_ros.excitation.streaming import StreamClock
from dvrk_ident_ros.files import read_document, resolve_package_file
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.parameters.settings import TrajectoryPlayerSettings
from dvrk_ident_ros.parameters.trajectory_player import SCHEMA as PARAMETERS
from dvrk_ident_ros.ros.arm_monitor import ArmStateMonitor
from dvrk_ident_ros.ros.messages import check_arm_name, fill_joint_state
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import run, shutdown_requested
from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS, STATUS_QOS
from dvrk_ident_ros.safety import CommandChecker

Result = PlayTrajectory.Result
TRACKING_CHECK_EVERY = 4  # ticks: the tracking error is checked at a quarter of the stream rate
QUIET_START = 2.0  # s: "nothing heard from the arm yet" is not worth a log line before discovery had this long
HOME_RESEND = 5.0  # s: home_arm repeats a state command the arm did not act on after this long
NO_CLOCK_WARNING = 5.0  # s (steady): with use_sim_time, a /clock still missing after this long is reported
IDLE_RATE = 50.0  # Hz: the timer's rate while nothing moves (waiting for a goal, the arm, the recorder)
STALL_PERIODS = 2.0  # a gap between ticks longer than this many periods is a stall: the trajectory is held
STALL_WARN_EVERY = 5.0  # s: at most one stall warning in this time
RATE_CHECK_TICKS = 100  # ticks after which a stream far slower than stream_rate is reported (once)
RESULT_DELIVERY = 0.2  # s: spun after a shutdown ended a goal, so that its result reaches the client
OTHER_CLOCK = 1.0  # s: a state stamp this far from the node's clock is on another clock: its arrival time is used
#: The arm's state: only the newest sample matters to the player (a slow player skips, never queues, samples); best
#: effort: a stalled player never holds back the arm's reliable publisher (Fast DDS then refuses its samples).
LATEST_STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


@dataclass
class Session:
    """One play request: waits until the arm is ready (``started`` false, nothing sent), then plays."""

    plan: playback.FourierPlayback | playback.GridPlayback
    kind: str  # "fourier" | "grid"
    trajectory_file: str
    requested: float  # steady time of the request: ready_timeout runs from here
    goal_handle: ServerGoalHandle | None  # neither is generic in Jazzy's rclpy
    future: Future  # of a PlayTrajectory.Result
    monitor: playback.TrackingMonitor
    started: bool = False
    start: float = 0.0  # node-clock time the motion began
    duration: float = 0.0
    ready_since: float | None = None  # steady time the arm was first ready: recorder_timeout runs from here
    waiting_for: str = ""  # the last reason logged while waiting
    reason: str = ""  # the current reason for waiting, and since when (steady)
    reason_since: float = 0.0
    commands_sent: int = 0
    last_servo: np.ndarray | None = None  # the last servo_jp position sent (a Fourier stream)
    clock: StreamClock | None = None  # the Fourier stream's timing
    max_error: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per joint, over the tracking checks
    rate_checked: bool = False
    ticks: int = 0
    last_tick: float | None = None  # node-clock time of the previous tick while playing
    resumed_at: float | None = None  # node-clock time the player last came back from a stall of its own
    last_phase: PlayerPhase | None = None  # the last status's (sent again at once when it changes)
    skipped: list[str] = field(default_factory=list)

    @property
    def stream_clock(self) -> StreamClock:
        """``clock``, set when a Fourier plan starts."""
        if self.clock is None:
            raise DvrkIdentError(f"{self.trajectory_file}: no stream clock (not a started Fourier trajectory)")
        return self.clock


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
        self.ramp_speed = settings.ramp_in_speed
        tracking_limit = settings.tracking_error_limit  # [] = the arm's; checked against the arm below
        self.stale_timeout = settings.stale_timeout
        self.speed_scale = settings.speed_scale
        self.periods = settings.periods
        self.pose_stride = settings.pose_stride
        self.sweep_stride = settings.sweep_stride
        self.wait_for_recorder = settings.wait_for_recorder
        self.recorder_timeout = settings.recorder_timeout
        self.ready_timeout = settings.ready_timeout
        self.home_arm = settings.home_arm
        self.spec = arm_spec(self.arm)  # the arm family's traits (jaw, pose grids: the arm registry)
        self.family = self.spec.model
        self.model = load_model(self.family)
        description = self.model.description
        self.names = list(description.dvrk_joint_names)
        self.tracking_limits = playback.tracking_limits(tracking_limit, description.tracking_error, self.names,
                                                        f"the arm description {description.path.name}")
        variant = self.spec.variant(self.arm)
        self.checker = CommandChecker(self.model, variant)  # excitation limits (as `trajectory check`)
        self.grid_checker = CommandChecker(self.model, variant, section="hardware")  # pose grids
        self.arm_joints = self.spec.arm_joints  # on measured_js: all but the jaw
        self.jaw = self.spec.jaw_index  # the jaw's index (on /<ARM>/jaw/*), or None
        # the arm's pose and the freshness of its state (fresh_at: on the node's clock; stamp: when measured)
        self.samples = ArmSamples(self.arm, self.spec)
        self.q = self.samples.q
        self.session: Session | None = None
        self.exit_code: int | None = None
        self._autostarted = False
        self._move = playback.MoveWatch()
        self._home_sent: tuple[str, OperatingStatus | None, float] | None = None  # command, for which state, when
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
        self.recorder_topic = recorder_status_topic(self.arm)
        self._status = self.create_publisher(PlayerStatus, self.status_topic, STATUS_QOS)
        self._recorder_ready = not (self.autostart and self.wait_for_recorder)
        if not self._recorder_ready:
            self.create_subscription(RecorderStatus, self.recorder_topic, self._on_recorder, 10)
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, LATEST_STATE_QOS)
        self._action = ActionServer(self, PlayTrajectory, f"/{self.arm}/play_trajectory", self._execute,
                                    goal_callback=self._goal, cancel_callback=lambda _: CancelResponse.ACCEPT)
        if self.autostart:  # a file that cannot be played: refused at start (exit status 2), before any waiting
            try:
                self._plan(resolve_package_file(self.trajectory_file, "trajectory file"), self.speed_scale)
            except DvrkIdentError as exc:
                raise DvrkIdentError(_cannot_play(self.trajectory_file, exc)) from exc
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

    # -- state in ----------------------------------------------------------------------
    def _on_state(self, msg: JointState) -> None:
        now = self.now()  # 0 with use_sim_time before /clock: the pose is taken, no freshness
        stamp = msg.header.stamp
        kind = self.samples.on_sample(stamp.sec, stamp.nanosec, msg.position, now or None)
        session = self.session if self.session is not None and self.session.started else None
        if kind is SampleKind.INVALID:  # the arm is powered off, not homed or faulted
            if session is not None:
                self._abort_not_ready(self.arm_state.reason() or self.samples.invalid_reason())
        elif kind is SampleKind.MALFORMED:
            self.get_logger().warning(f"measured_js rejected: {self.samples.last_malformed} (expected "
                                      f"{self.arm_joints} finite positions)", throttle_duration_sec=1.0)
        elif kind is SampleKind.VALID and now and session is not None \
                and isinstance(session.plan, playback.GridPlayback):
            session.plan.on_sample()
        # REPEATED (the arm's loop stalled behind a live bridge): no fresh state, the stale check runs on

    def _on_jaw(self, msg: JointState) -> None:
        self.samples.on_jaw(msg.header.stamp.sec, msg.header.stamp.nanosec, msg.position)  # invalid: ignored

    def _on_arm_change(self, old: OperatingStatus | None, new: OperatingStatus) -> None:
        self._move.on_busy(new.is_busy)
        s = self.session
        if s is not None and s.started and not self._may_run(new):
            self._abort_not_ready(new.not_ready_reason(self.arm))

    def _on_goal_reached(self, msg: Bool) -> None:
        self._move.on_goal_reached(bool(msg.data))

    def _may_run(self, status: OperatingStatus | None) -> bool:
        """The arm may go on being commanded: ready, or busy with the player's own move_jp."""
        if status is None:
            return False
        return status.ready or (status.state == CrtkState.ENABLED.value and status.is_homed and status.is_busy
                                and self._move.busy_is_ours)

    def _abort_not_ready(self, reason: str) -> None:
        self._finish(Result.OUTCOME_ARM_NOT_READY, f"aborted: the arm is no longer ready: {reason}")

    def _on_recorder(self, msg: RecorderStatus) -> None:
        """Ready once a recorder writes this arm's measured_js and hears the player's status topic."""
        counts = dict(zip(msg.topics, msg.message_counts, strict=False))
        if msg.recording and counts.get(f"/{self.arm}/measured_js", 0) > 0 \
                and self._status.get_subscription_count() > 0:
            if not self._recorder_ready:
                self.get_logger().info(f"recorder ready: {msg.bag_path}")
            self._recorder_ready = True

    def not_ready_reason(self) -> str:
        """Why the arm may not be commanded now ('' when it may): its operating state, then its data."""
        reason = self.arm_state.reason()
        if reason:
            return reason
        return self.samples.reason(self.now(), self.stale_timeout)

    # -- sessions ----------------------------------------------------------------------
    def _set_speed_scale(self, value: float) -> None:
        """Run time: the speed of the next play without its own (a run under way keeps its plan, and every plan
        is checked against the limits before any motion)."""
        self.speed_scale = value

    def _plan(self, path: Path, speed_scale: float) -> tuple[playback.FourierPlayback | playback.GridPlayback, str]:
        raw = read_document(path)
        if isinstance(raw, dict) and raw.get("format") == GRID_FORMAT:
            if not self.spec.gc_fits and raw.get("kind") != HOLDS_KIND:  # MLSE grids collect an MTM's gc fit
                raise DataError(f"{path}: MLSE pose grids are for the MTMs, not the {self.arm} (static holds for "
                                f"its gravity refit: dvrk-ident trajectory holds --arm {self.arm})")
            grid = load_grid(path, arm=self.arm)
            return playback.GridPlayback(grid, self.grid_checker, pose_stride=self.pose_stride,
                                         sweep_stride=self.sweep_stride), "grid"
        trajectory, meta = load_trajectory(path, arm=self.family, joints=self.model.dof)
        try:
            periods = self.periods or int(meta.get("periods") or 1)
        except (TypeError, ValueError):
            raise DataError(f"{path}: periods {meta.get('periods')!r} is not a whole number") from None
        return playback.FourierPlayback(trajectory, self.model, self.checker, periods=periods,
                                        speed_scale=speed_scale, ramp_speed=self.ramp_speed), "fourier"

    def start_session(self, path: str, speed_scale: float, goal_handle=None) -> Session:
        """Find the file (:func:`resolve_package_file`), load and check the plan (DataError at once, naming
        the file once); it plays once the arm is ready (:meth:`_wait`)."""
        if self.session is not None:
            raise DataError(f"busy: already playing {self.session.trajectory_file}")
        resolved = resolve_package_file(path, "trajectory file")
        plan, kind = self._plan(resolved, speed_scale or self.speed_scale)
        path = str(resolved)
        skipped = list(getattr(plan, "skipped", []))
        if skipped:
            self.get_logger().warning(f"{len(skipped)} poses outside the {self.arm}'s limits left out "
                                      f"(first: {skipped[0]})")
        self.session = Session(plan, kind, path, time.monotonic(), goal_handle, Future(),
                               playback.TrackingMonitor(self.names, self.tracking_limits), skipped=skipped,
                               max_error=np.zeros(self.model.dof))
        return self.session

    def _wait(self, s: Session) -> None:
        """A session not started yet: start it once the arm is ready (and the recorder records it), say once
        what it waits for, home the arm with home_arm, refuse after ready_timeout (recorder_timeout)."""
        steady = time.monotonic()
        reason = self.not_ready_reason()
        if reason != s.reason:
            s.reason, s.reason_since = reason, steady
        if reason:
            status = self.arm_state.status
            said_by_arm = status is not None and not status.ready  # else: its data (may be on the way)
            if reason != s.waiting_for and (said_by_arm or steady - s.reason_since > QUIET_START):
                s.waiting_for = reason
                line = f"waiting for the arm before playing {s.trajectory_file}: {reason}"
                if self.home_arm:  # expected: the player acts on it
                    self.get_logger().info(f"{line} (home_arm: the player powers it on and homes it; "
                                           f"up to {self.ready_timeout:g} s)")
                else:
                    self.get_logger().warning(f"{line} (up to {self.ready_timeout:g} s)")
            self._home(status)
            if steady - s.requested > self.ready_timeout:
                self._finish(Result.OUTCOME_ARM_NOT_READY, f"{self.arm} not ready after {self.ready_timeout:g} s: "
                                                           f"{reason}")
            return
        if not self.arm_state.settled(steady):  # not the one-cycle "ready" before a homing move
            return
        if s.ready_since is None:
            s.ready_since = steady
            if s.waiting_for:
                invalid = self.samples.invalid
                ignored = f"; {invalid} measured_js with stamp 0 ignored" if invalid else ""
                self.get_logger().info(f"{self.arm} ready ({self._describe_state()}{ignored})")
        if not self._recorder_ready:
            if s.waiting_for != "recorder":
                s.waiting_for = "recorder"
                self.get_logger().info(f"waiting for the recorder ({self.recorder_topic}) before playing")
            if steady - s.ready_since > self.recorder_timeout:
                self._finish(Result.OUTCOME_FAILED,
                             f"no recorder writing /{self.arm}/measured_js after {self.recorder_timeout:.0f} s: "
                             "start the recorder, or set wait_for_recorder:=false to play without one")
            return
        now = self.now()
        try:
            s.duration = s.plan.start(now, self.q.copy())
        except SafetyError as exc:
            return self._finish(Result.OUTCOME_REJECTED_LIMITS, f"refused: {exc}")
        s.start, s.started = now, True
        self._stream(True)
        if s.kind == "fourier":
            s.clock = StreamClock(1.0 / self.stream_rate, STALL_PERIODS)
        self._move = playback.MoveWatch()  # nothing of an earlier session's move counts
        if self.arm_state.status is not None:
            self._move.on_busy(self.arm_state.status.is_busy)
        self.get_logger().info(f"playing {s.trajectory_file} ({s.kind}, about {s.duration:.1f} s)")

    def _describe_state(self) -> str:
        status = self.arm_state.status
        return status.describe() if status is not None else "valid measured_js"

    def _home(self, status: OperatingStatus | None) -> None:
        """home_arm: enable a DISABLED arm, home an ENABLED idle one; nothing else (a fault is for a person to
        look at and clear, a PAUSED arm was paused by a person, a busy one is homing or moving)."""
        if not self.home_arm or status is None:
            return
        if status.state == CrtkState.DISABLED.value:
            command = "enable"
        elif status.state == CrtkState.ENABLED.value and not status.is_homed and not status.is_busy:
            command = "home"
        else:
            return
        steady = time.monotonic()
        if self._home_sent is not None and self._home_sent[:2] == (command, status) \
                and steady - self._home_sent[2] < HOME_RESEND:
            return
        if self.arm_state.send(command):
            self._home_sent = (command, status, steady)
            self.get_logger().info(f"home_arm: {command} ({self.arm} {status.describe()})")

    def _stream(self, on: bool) -> None:
        """The timer at stream_rate while the arm is commanded, at IDLE_RATE otherwise (a node that waits
        for goals costs little, on /clock too)."""
        if on != self._streaming:
            self._streaming = on
            self._timer.timer_period_ns = round(1e9 / (self.stream_rate if on else min(IDLE_RATE, self.stream_rate)))
            self._timer.reset()

    def _finish(self, outcome: int, message: str) -> None:
        s = self.session
        if s is None:
            return
        self.session = None
        self._stream(False)
        if outcome != Result.OUTCOME_SUCCEEDED:
            message += self._come_to_rest(s, outcome)
        duration = self.now() - s.start if s.started else 0.0
        result = Result(outcome=outcome, message=message, duration=duration,
                        max_tracking_error=s.monitor.max_error, commands_sent=s.commands_sent)
        phase = PlayerPhase.DONE if outcome == Result.OUTCOME_SUCCEEDED else PlayerPhase.ABORTED
        self._publish_status(s, phase, 1.0 if phase == PlayerPhase.DONE else 0.0)
        # one severity per call site (rclpy refuses a call site whose severity changes)
        if not s.started:
            line = f"cannot play {s.trajectory_file}: {message} (nothing sent)"
            if outcome == Result.OUTCOME_CANCELED:
                self.get_logger().info(line)
            else:
                self.get_logger().error(line)
        else:
            line = (f"{s.trajectory_file}: {message} ({duration:.1f} s, {s.commands_sent} commands, "
                    f"max tracking error {s.monitor.max_error:.4f}; per joint "
                    + " ".join(f"{e:.4f}" for e in s.max_error)
                    + (f"; {s.clock.stats().describe()}" if s.clock is not None else "") + ")")
            if outcome == Result.OUTCOME_SUCCEEDED:
                self.get_logger().info(line)
            else:
                self.get_logger().error(line)
        if s.goal_handle is not None:
            if outcome == Result.OUTCOME_SUCCEEDED:
                s.goal_handle.succeed()
            elif outcome == Result.OUTCOME_CANCELED and s.goal_handle.is_cancel_requested:
                s.goal_handle.canceled()
            else:  # the action protocol ends a goal nobody asked to cancel (a shutdown) as aborted
                s.goal_handle.abort()
        s.future.set_result(result)
        if self.autostart:  # 2: refused before any motion (as for a bad configuration); 1: aborted
            self.exit_code = 0 if outcome == Result.OUTCOME_SUCCEEDED else 1 if s.started else 2

    def _come_to_rest(self, s: Session, outcome: int) -> str:
        """A stream ended early: one last servo_jp at zero velocity (the dVRK's PID keeps the last servo_jp's
        velocity until the next command), at the measured pose after a tracking abort (the arm stops pushing
        towards a setpoint it could not follow), else at the last setpoint; checked against the limits like
        every command. Nothing to an arm that is not ready (it ignores commands then); an arm whose stamp repeats
        (its loop stalled) gets it, to take when its loop runs again. Returns what it did."""
        if s.last_servo is None or not self._may_run(self.arm_state.status) \
                or self.samples.last not in (SampleKind.VALID, SampleKind.REPEATED):
            return ""
        at_measured = outcome == Result.OUTCOME_ABORTED_TRACKING
        try:
            q = self.checker.position(self.q.copy() if at_measured else s.last_servo, "the stop's setpoint")
        except SafetyError:
            q, at_measured = s.last_servo, False
        self._send_position(q, np.zeros(len(q)), move=False)
        s.commands_sent += 1
        return f"; stopped at {'the measured pose' if at_measured else 'the last setpoint'}, velocity 0"

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
        s = self.session
        if s is None:
            self._idle_ticks += 1
            if self.autostart and not self._autostarted and self._idle_ticks > 1:
                self._autostarted = True
                try:
                    self.start_session(self.trajectory_file, self.speed_scale)
                except DvrkIdentError as exc:
                    self.get_logger().error(_cannot_play(self.trajectory_file, exc))
                    self.exit_code = 2
            return
        if s.goal_handle is not None and s.goal_handle.is_cancel_requested:
            return self._finish(Result.OUTCOME_CANCELED, "canceled")
        if not s.started:
            return self._wait(s)
        clock_now = self.get_clock().now()
        now = clock_now.nanoseconds * 1e-9
        s.ticks += 1
        since_last_tick, s.last_tick = (0.0 if s.last_tick is None else now - s.last_tick), now
        if since_last_tick > 0.5 * self.stale_timeout:  # this player stalled: the arm's state may wait behind this tick
            s.resumed_at = now
        try:
            if not self._may_run(self.arm_state.status):  # the state callback aborts first; a safety net
                return self._abort_not_ready(self.arm_state.reason())
            state_time = self.samples.fresh_at
            if state_time is None:  # started: a valid state had arrived
                return self._finish(Result.OUTCOME_ABORTED_STALE, f"no valid /{self.arm}/measured_js")
            # stale: no state for stale_timeout, counted from the player's own last stall if that came later (the
            # arm's silence, not the player's); a player stalling again and again still stops at 3 x stale_timeout
            age = now - state_time
            if now - max(state_time, s.resumed_at or state_time) > self.stale_timeout \
                    or age > 3.0 * self.stale_timeout:
                repeated = f": {self.samples.repeated_reason()}" if self.samples.last is SampleKind.REPEATED else ""
                return self._finish(Result.OUTCOME_ABORTED_STALE,
                                    f"/{self.arm}/measured_js stale for {age:.3f} s "
                                    f"(now {now:.3f}, last state {state_time:.3f}){repeated}")
            if isinstance(s.plan, playback.FourierPlayback):
                clock = s.stream_clock
                sp = s.plan.step(clock.tick(now))
                self._check_stream(s)
                if s.ticks % TRACKING_CHECK_EVERY == 0:
                    # the setpoint the arm had been sent at the instant the state was measured
                    measured_at = self.samples.stamp
                    if abs(measured_at - now) > OTHER_CLOCK:  # stamped on another clock: when it arrived
                        measured_at = state_time
                    expected = s.plan.step(clock.setpoint_time(min(measured_at, now))).servo_position
                    try:
                        s.monitor.check(expected, self.q)
                    finally:
                        s.max_error = np.maximum(s.max_error, s.monitor.error)
                self._send_position(sp.servo_position, sp.velocity, move=False, stamp=clock_now.to_msg())
                s.last_servo = sp.servo_position
                s.commands_sent += 1
            else:
                if self._move.failed:
                    raise SafetyError("pose not reached: the arm reports its move_jp interrupted "
                                      "(goal_reached false)")
                sp = s.plan.step(now, self.q, self._move.done)
                if sp.move_goal is not None:
                    self._move.sent()
                    self._send_position(sp.move_goal, None, move=True)
                    s.commands_sent += 1
        except SafetyError as exc:
            outcome = Result.OUTCOME_ABORTED_TRACKING if "tracking" in str(exc) or "not reached" in str(exc) \
                else Result.OUTCOME_REJECTED_LIMITS
            return self._finish(outcome, f"aborted: {exc}")
        if sp.phase == PlayerPhase.DONE:
            return self._finish(Result.OUTCOME_SUCCEEDED, "done")
        # every phase change (the recorder's sampling windows start there), and at about 50 Hz
        if sp.phase != s.last_phase or s.ticks % max(1, round(self.stream_rate / 50)) == 0:
            s.last_phase = sp.phase
            self._publish_status(s, sp.phase, sp.progress, sp)

    def _check_stream(self, s: Session) -> None:
        """Say when the stream stalled (throttled), and once: when the arm's state arrives too slowly for an
        identification recording (arm/state_rate.py), or the stream runs far slower than stream_rate."""
        clock = s.stream_clock
        if clock.stalled:
            self.get_logger().warning(
                f"stream stalled {1e3 * clock.last_gap:.0f} ms (the player was not scheduled): trajectory held, the "
                f"next setpoint continues from the last one ({clock.stalls} stalls, {clock.held:.3f} s held so far)",
                throttle_duration_sec=STALL_WARN_EVERY)
        if not s.rate_checked and clock.ticks >= RATE_CHECK_TICKS:
            s.rate_checked = True
            state_rate = self.samples.stamp_rate.rate()
            if state_rate is not None and state_rate < IDENTIFICATION_RATE:
                self.get_logger().warning(f"/{self.arm}/measured_js arrives at {state_rate:.0f} Hz by its stamps: "
                                          f"{low_rate_advice(state_rate)}; the dVRK bridge's default is 100 Hz")
            if clock.missed >= clock.ticks:
                stats = clock.stats()
                hint = (": under /clock the player ticks at most as often as /clock advances (the simulator's "
                        "clock_rate must be at least stream_rate)") if self.get_parameter("use_sim_time").value \
                    else ""
                # the rate the deadlines were met at (the median interval can be on time between long stalls)
                effective = self.stream_rate * clock.ticks / (clock.ticks + clock.missed)
                self.get_logger().warning(f"the stream runs at about {effective:.0f} Hz, not {self.stream_rate:g} Hz "
                                          f"({clock.missed} periods missed in {clock.ticks} ticks, interval median "
                                          f"{1e3 * stats.median:.1f} ms){hint}")

    def _publish_status(self, s: Session, phase: PlayerPhase, progress: float, sp=None) -> None:
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
            self.get_logger().error(_cannot_play(request.trajectory_file, exc))
            goal_handle.abort()
            return Result(outcome=Result.OUTCOME_FAILED, message=str(exc))
        result = await session.future
        if result is None:
            raise DvrkIdentError(f"{request.trajectory_file}: the play ended without a result")
        result.bag_path = request.bag_path
        return result

    def spin(self, executor) -> None:
        while rclpy.ok() and self.exit_code is None and not shutdown_requested():
            executor.spin_once(timeout_sec=0.1)
        if self.session is not None:
            self._finish(Result.OUTCOME_CANCELED, "shutdown")
            end = time.monotonic() + RESULT_DELIVERY
            while rclpy.ok() and time.monotonic() < end:  # the goal's result on its way to the client
                executor.spin_once(timeout_sec=0.02)

    def close(self) -> None:
        if self.session is not None:
            self._finish(Result.OUTCOME_CANCELED, "node shut down")
        time.sleep(0.05)


def _cannot_play(path: str, exc: Exception) -> str:
    """The log line for a file that cannot be played, naming it once (the loaders' messages name it)."""
    message = str(exc)
    name = Path(str(path).strip()).name
    return f"cannot play: {message}" if name and name in message else f"cannot play {path}: {message}"


def main(args: list[str] | None = None) -> int:
    holder: list[TrajectoryPlayerNode] = []

    def factory() -> TrajectoryPlayerNode:
        holder.append(TrajectoryPlayerNode())
        return holder[0]

    status = run(factory, args, executor="events")  # fastest dispatch where rclpy has it
    return holder[0].exit_code or status if holder else status


if __name__ == "__main__":
    sys.exit(main())
