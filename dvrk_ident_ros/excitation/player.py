"""What the trajectory player does with a play request, tick by tick (ROS-free).

The ``trajectory_player`` node (docs/nodes.md) turns these decisions into messages. A request
(:class:`Session`) first waits (:meth:`PlayerCore.wait`): for the arm (ENABLED, homed, idle, with valid
fresh samples; ``home_arm`` enables and homes it, a state command the arm did not act on sent again after
HOME_RESEND), for READY_SETTLE of it, for the recorder; it is refused after ``ready_timeout`` (from the
request) or ``recorder_timeout`` (from the arm's being ready). Then each tick (:meth:`PlayerCore.tick`)
ends the run on an arm no longer ready or a stale state, else commands the plan's next setpoint: a Fourier
stream on :class:`~dvrk_ident_ros.excitation.streaming.StreamClock` (a stall holds the trajectory), its
tracking checked every TRACKING_CHECK_EVERY ticks against the setpoint the arm had been sent at the
state's stamp; a pose grid's move_jp. A run that ends early comes to rest (:meth:`PlayerCore.finish`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.arm.registry import recorder_status_topic
from dvrk_ident_ros.arm.samples import ArmSamples, SampleKind
from dvrk_ident_ros.arm.state import CrtkState, OperatingStatus
from dvrk_ident_ros.arm.state_rate import IDENTIFICATION_RATE, low_rate_advice
from dvrk_ident_ros.errors import DataError, DvrkIdentError, SafetyError
from dvrk_ident_ros.excitation.playback import (
    FourierPlayback,
    GridPlayback,
    MoveWatch,
    TrackingMonitor,
    tracking_limits,
)
from dvrk_ident_ros.excitation.player_plan import PlanLoader
from dvrk_ident_ros.excitation.player_session import (
    Ending,
    Finish,
    LogLine,
    PlayerConfig,
    PlayOutcome,
    Session,
    Tick,
    Waiting,
    arm_not_ready,
)
from dvrk_ident_ros.excitation.streaming import StreamClock

TRACKING_CHECK_EVERY = 4  # ticks: the tracking error is checked at a quarter of the stream rate
QUIET_START = 2.0  # s: "nothing heard from the arm yet" is not worth a log line before discovery had this long
HOME_RESEND = 5.0  # s: home_arm repeats a state command the arm did not act on after this long
STALL_PERIODS = 2.0  # a gap between ticks longer than this many periods is a stall: the trajectory is held
STALL_WARN_EVERY = 5.0  # s: at most one stall warning in this time
RATE_CHECK_TICKS = 100  # ticks after which a stream far slower than stream_rate is reported (once)
OTHER_CLOCK = 1.0  # s: a state stamp this far from the node's clock is on another clock: its arrival time is used
STATUS_RATE = 50.0  # Hz: the player's status between phase changes


def records_arm(arm: str, recording: bool, topics: Sequence[str], counts: Sequence[int]) -> bool:
    """A recorder's status says it writes the arm's measured_js (it must also hear the player's status)."""
    return recording and dict(zip(topics, counts, strict=False)).get(f"/{arm}/measured_js", 0) > 0


class PlayerCore:
    """The player's one request at a time (``session``), the arm's samples (``samples``, fed by the node) and
    its own move_jp (``move``, told the arm's busy flag and goal_reached by the node)."""

    def __init__(self, plans: PlanLoader, config: PlayerConfig, tracking_limit: object,
                 uses_sim_time: Callable[[], bool] = lambda: False, steady: Callable[[], float] = time.monotonic):
        self.arm = plans.arm
        self.plans = plans
        self.config = config
        description = plans.model.description
        self.names = list(description.dvrk_joint_names)
        self.tracking_limits = tracking_limits(tracking_limit, description.tracking_error, self.names,
                                               f"the arm description {description.path.name}")
        self.samples = ArmSamples(self.arm, plans.spec)
        self.move = MoveWatch()
        self.session: Session | None = None
        self._uses_sim_time = uses_sim_time  # read when the stream's rate is reported
        self._steady = steady
        self._home_sent: tuple[str, OperatingStatus | None, float] | None = None  # command, for which state, when

    @property
    def playing(self) -> Session | None:
        """The session whose motion has begun (None while none, or while it waits)."""
        return self.session if self.session is not None and self.session.started else None

    # -- requests --------------------------------------------------------------------------
    def refusal(self, arm: str) -> str:
        """Why a goal for ``arm`` ("" for this player's) is refused ("" when it is accepted)."""
        if self.session is not None:
            return f"already playing {self.session.trajectory_file}"
        if arm and arm != self.arm:
            return f"for {arm}, this player drives {self.arm}"
        return ""

    def begin(self, path: str, speed_scale: float) -> Session:
        """Load and check the plan (DataError at once, naming the file once); it plays once the arm is ready."""
        if self.session is not None:
            raise DataError(f"busy: already playing {self.session.trajectory_file}")
        loaded = self.plans.load(path, speed_scale)
        self.session = Session(loaded.plan, loaded.kind, loaded.path, self._steady(),
                               TrackingMonitor(self.names, self.tracking_limits),
                               skipped=list(getattr(loaded.plan, "skipped", [])),
                               max_error=np.zeros(self.plans.model.dof))
        return self.session

    # -- the arm -----------------------------------------------------------------------------
    def may_run(self, status: OperatingStatus | None) -> bool:
        """The arm may go on being commanded: ready, or busy with the player's own move_jp."""
        if status is None:
            return False
        return status.ready or (status.state == CrtkState.ENABLED.value and status.is_homed and status.is_busy
                                and self.move.busy_is_ours)

    def arm_changed(self, new: OperatingStatus) -> str | None:
        """The arm's operating state changed: the reason a run under way ends now (None: it goes on)."""
        self.move.on_busy(new.is_busy)
        if self.playing is not None and not self.may_run(new):
            return new.not_ready_reason(self.arm)
        return None

    def sample_arrived(self, kind: SampleKind, timed: bool) -> bool:
        """A measured_js was sorted (``timed``: the node had a time): True when it ends the run under way (stamp
        0: the arm is not ready); a valid one counts toward a pose grid's sampling window. A repeated one is no
        fresh state: the stale check runs on."""
        s = self.playing
        if s is None:
            return False
        if kind is SampleKind.INVALID:
            return True
        if kind is SampleKind.VALID and timed and isinstance(s.plan, GridPlayback):
            s.plan.on_sample()
        return False

    # -- waiting ----------------------------------------------------------------------------
    def wait(self, steady: float, now: float, status: OperatingStatus | None, arm_reason: str, settled: bool,
             recorder_ready: bool, send_command: Callable[[str], bool]) -> Waiting:
        """A session not started: start it once the arm is ready (``arm_reason`` "", fresh samples at ``now``
        on the node's clock, ``settled``) and the recorder records it; say once what it waits for, home the arm
        with home_arm (``send_command``: a state command; False if not sent), refuse after ready_timeout
        (recorder_timeout). ``steady``: time.monotonic()."""
        s, config = self._session(), self.config
        lines: list[LogLine] = []
        reason = arm_reason or self.samples.reason(now, config.stale_timeout)
        if reason != s.reason:
            s.reason, s.reason_since = reason, steady
        if reason:
            said_by_arm = status is not None and not status.ready  # else: its data (may be on the way)
            if reason != s.waiting_for and (said_by_arm or steady - s.reason_since > QUIET_START):
                s.waiting_for = reason
                line = f"waiting for the arm before playing {s.trajectory_file}: {reason}"
                if config.home_arm:  # expected: the player acts on it
                    lines.append(LogLine(f"{line} (home_arm: the player powers it on and homes it; up to "
                                         f"{config.ready_timeout:g} s)"))
                else:
                    lines.append(LogLine(f"{line} (up to {config.ready_timeout:g} s)", warning=True))
            lines += self._home(status, steady, send_command)
            if steady - s.requested > config.ready_timeout:
                return Waiting(tuple(lines), finish=Finish(
                    PlayOutcome.ARM_NOT_READY, f"{self.arm} not ready after {config.ready_timeout:g} s: {reason}"))
            return Waiting(tuple(lines))
        if not settled:  # not the one-cycle "ready" before a homing move
            return Waiting()
        if s.ready_since is None:
            s.ready_since = steady
            if s.waiting_for:
                invalid = self.samples.invalid
                ignored = f"; {invalid} measured_js with stamp 0 ignored" if invalid else ""
                state = status.describe() if status is not None else "valid measured_js"
                lines.append(LogLine(f"{self.arm} ready ({state}{ignored})"))
        if not recorder_ready:
            if s.waiting_for != "recorder":
                s.waiting_for = "recorder"
                lines.append(LogLine(f"waiting for the recorder ({recorder_status_topic(self.arm)}) before playing"))
            if steady - s.ready_since > config.recorder_timeout:
                return Waiting(tuple(lines), finish=Finish(
                    PlayOutcome.FAILED, f"no recorder writing /{self.arm}/measured_js after "
                                        f"{config.recorder_timeout:.0f} s: start the recorder, or set "
                                        "wait_for_recorder:=false to play without one"))
            return Waiting(tuple(lines))
        try:
            s.duration = s.plan.start(now, self.samples.q.copy())
        except SafetyError as exc:
            return Waiting(tuple(lines), finish=Finish(PlayOutcome.REJECTED_LIMITS, f"refused: {exc}"))
        s.start, s.started = now, True
        if s.kind == "fourier":
            s.clock = StreamClock(1.0 / config.stream_rate, STALL_PERIODS)
        self.move = MoveWatch()  # nothing of an earlier session's move counts
        if status is not None:
            self.move.on_busy(status.is_busy)
        lines.append(LogLine(f"playing {s.trajectory_file} ({s.kind}, about {s.duration:.1f} s)"))
        return Waiting(tuple(lines), started=True)

    def _session(self) -> Session:
        if self.session is None:
            raise DvrkIdentError("no play request")
        return self.session

    def _home(self, status: OperatingStatus | None, steady: float, send_command: Callable[[str], bool]
              ) -> list[LogLine]:
        """home_arm: enable a DISABLED arm, home an ENABLED idle one; nothing else (a fault is for a person to
        look at and clear, a PAUSED arm was paused by a person, a busy one is homing or moving). The same
        command for the same state again only after HOME_RESEND."""
        if not self.config.home_arm or status is None:
            return []
        if status.state == CrtkState.DISABLED.value:
            command = "enable"
        elif status.state == CrtkState.ENABLED.value and not status.is_homed and not status.is_busy:
            command = "home"
        else:
            return []
        if self._home_sent is not None and self._home_sent[:2] == (command, status) \
                and steady - self._home_sent[2] < HOME_RESEND:
            return []
        if not send_command(command):
            return []
        self._home_sent = (command, status, steady)
        return [LogLine(f"home_arm: {command} ({self.arm} {status.describe()})")]

    # -- playing ------------------------------------------------------------------------------
    def tick(self, now: float, status: OperatingStatus | None, arm_reason: str) -> Tick:
        """One tick at ``now`` (the node's clock, s) of the run under way (``arm_reason``: why the arm may not
        be commanded, from its operating state)."""
        s, config = self._session(), self.config
        s.ticks += 1
        since_last_tick, s.last_tick = (0.0 if s.last_tick is None else now - s.last_tick), now
        if since_last_tick > 0.5 * config.stale_timeout:  # this player stalled: the arm's state may wait behind
            s.resumed_at = now
        stall, lines = "", list[LogLine]()
        try:
            if not self.may_run(status):  # the node's state callback ends the run first; a safety net
                return Tick(finish=arm_not_ready(arm_reason))
            state_time = self.samples.fresh_at
            if state_time is None:  # started: a valid state had arrived
                return Tick(finish=Finish(PlayOutcome.ABORTED_STALE, f"no valid /{self.arm}/measured_js"))
            stale = self._stale(s, now, state_time)
            if stale is not None:
                return Tick(finish=stale)
            if isinstance(s.plan, FourierPlayback):
                clock = s.stream_clock
                sp = s.plan.step(clock.tick(now))
                stall, lines = self._check_stream(s)
                if s.ticks % TRACKING_CHECK_EVERY == 0:
                    self._check_tracking(s, s.plan, now, state_time)
                s.last_servo = sp.servo_position
                s.commands_sent += 1
                servo, move_goal = sp, None
            else:
                if self.move.failed:
                    raise SafetyError("pose not reached: the arm reports its move_jp interrupted "
                                      "(goal_reached false)")
                sp = s.plan.step(now, self.samples.q, self.move.done)
                servo, move_goal = None, sp.move_goal
                if move_goal is not None:
                    self.move.sent()
                    s.commands_sent += 1
        except SafetyError as exc:
            outcome = PlayOutcome.ABORTED_TRACKING if "tracking" in str(exc) or "not reached" in str(exc) \
                else PlayOutcome.REJECTED_LIMITS
            return Tick(stall, tuple(lines), finish=Finish(outcome, f"aborted: {exc}"))
        if sp.phase == PlayerPhase.DONE:
            return Tick(stall, tuple(lines), servo, move_goal, finish=Finish(PlayOutcome.SUCCEEDED, "done"))
        # every phase change (the recorder's sampling windows start there), and at about STATUS_RATE
        published = None
        if sp.phase != s.last_phase or s.ticks % max(1, round(config.stream_rate / STATUS_RATE)) == 0:
            s.last_phase = published = sp.phase
        return Tick(stall, tuple(lines), servo, move_goal, status=None if published is None else sp)

    def _stale(self, s: Session, now: float, state_time: float) -> Finish | None:
        """No fresh state (the last at ``state_time``) for stale_timeout, counted from the player's own last
        stall if that came later (the arm's silence, not the player's); a player stalling again and again still
        stops at 3 x stale_timeout."""
        timeout = self.config.stale_timeout
        age = now - state_time
        if now - max(state_time, s.resumed_at or state_time) > timeout or age > 3.0 * timeout:
            repeated = f": {self.samples.repeated_reason()}" if self.samples.last is SampleKind.REPEATED else ""
            return Finish(PlayOutcome.ABORTED_STALE, f"/{self.arm}/measured_js stale for {age:.3f} s "
                                                     f"(now {now:.3f}, last state {state_time:.3f}){repeated}")
        return None

    def _check_tracking(self, s: Session, plan: FourierPlayback, now: float, state_time: float) -> None:
        """The measured pose (arrived at ``state_time``) against the setpoint the arm had been sent at the
        instant it was measured; SafetyError above a joint's limit."""
        measured_at = self.samples.stamp
        if abs(measured_at - now) > OTHER_CLOCK:  # stamped on another clock: when it arrived
            measured_at = state_time
        expected = plan.step(s.stream_clock.setpoint_time(min(measured_at, now))).servo_position
        try:
            s.monitor.check(expected, self.samples.q)
        finally:
            s.max_error = np.maximum(s.max_error, s.monitor.error)

    def _check_stream(self, s: Session) -> tuple[str, list[LogLine]]:
        """The stall warning (throttled by the node) when the stream stalled, and once: the arm's state
        arriving too slowly for an identification recording (arm/state_rate.py), the stream far slower than
        stream_rate."""
        clock, rate = s.stream_clock, self.config.stream_rate
        stall = ""
        if clock.stalled:
            stall = (f"stream stalled {1e3 * clock.last_gap:.0f} ms (the player was not scheduled): trajectory "
                     f"held, the next setpoint continues from the last one ({clock.stalls} stalls, "
                     f"{clock.held:.3f} s held so far)")
        lines = []
        if not s.rate_checked and clock.ticks >= RATE_CHECK_TICKS:
            s.rate_checked = True
            state_rate = self.samples.stamp_rate.rate()
            if state_rate is not None and state_rate < IDENTIFICATION_RATE:
                lines.append(LogLine(f"/{self.arm}/measured_js arrives at {state_rate:.0f} Hz by its stamps: "
                                     f"{low_rate_advice(state_rate)}; the dVRK bridge's default is 100 Hz",
                                     warning=True))
            if clock.missed >= clock.ticks:
                stats = clock.stats()
                hint = (": under /clock the player ticks at most as often as /clock advances (the simulator's "
                        "clock_rate must be at least stream_rate)") if self._uses_sim_time() else ""
                # the rate the deadlines were met at (the median interval can be on time between long stalls)
                effective = rate * clock.ticks / (clock.ticks + clock.missed)
                lines.append(LogLine(f"the stream runs at about {effective:.0f} Hz, not {rate:g} Hz ({clock.missed} "
                                     f"periods missed in {clock.ticks} ticks, interval median "
                                     f"{1e3 * stats.median:.1f} ms){hint}", warning=True))
        return stall, lines

    # -- the end ------------------------------------------------------------------------------
    def finish(self, outcome: PlayOutcome, message: str, now: float, status: OperatingStatus | None
               ) -> Ending | None:
        """End the session (None when there is none) at ``now`` (the node's clock): a stream that ends early
        comes to rest (:meth:`_rest`); what the result, the log and the exit status say."""
        s = self.session
        if s is None:
            return None
        self.session = None
        rest = None
        if outcome != PlayOutcome.SUCCEEDED:
            rest, said = self._rest(s, outcome, status)
            message += said
        duration = now - s.start if s.started else 0.0
        if not s.started:
            line = f"cannot play {s.trajectory_file}: {message} (nothing sent)"
            failed = outcome != PlayOutcome.CANCELED
        else:
            line = (f"{s.trajectory_file}: {message} ({duration:.1f} s, {s.commands_sent} commands, "
                    f"max tracking error {s.monitor.max_error:.4f}; per joint "
                    + " ".join(f"{e:.4f}" for e in s.max_error)
                    + (f"; {s.clock.stats().describe()}" if s.clock is not None else "") + ")")
            failed = outcome != PlayOutcome.SUCCEEDED
        # 2: refused before any motion (as for a bad configuration); 1: aborted
        exit_code = 0 if outcome == PlayOutcome.SUCCEEDED else 1 if s.started else 2
        return Ending(s, outcome, message, duration, rest, line, failed, exit_code)

    def _rest(self, s: Session, outcome: PlayOutcome, status: OperatingStatus | None
              ) -> tuple[np.ndarray | None, str]:
        """A stream ended early: one last servo_jp at zero velocity (the dVRK's PID keeps the last servo_jp's
        velocity until the next command), at the measured pose after a tracking abort (the arm stops pushing
        towards a setpoint it could not follow), else at the last setpoint; checked against the limits like
        every command. Nothing to an arm that is not ready (it ignores commands then); an arm whose stamp repeats
        (its loop stalled) gets it, to take when its loop runs again. Returns it (None: none) and what it did."""
        if s.last_servo is None or not self.may_run(status) \
                or self.samples.last not in (SampleKind.VALID, SampleKind.REPEATED):
            return None, ""
        at_measured = outcome == PlayOutcome.ABORTED_TRACKING
        try:
            q = self.plans.checker.position(self.samples.q.copy() if at_measured else s.last_servo,
                                            "the stop's setpoint")
        except SafetyError:
            q, at_measured = s.last_servo, False
        s.commands_sent += 1
        return q, f"; stopped at {'the measured pose' if at_measured else 'the last setpoint'}, velocity 0"
