"""Node ``gravity_compensation``: event-driven torques for every ``measured_js`` sample.

On each ``/<ARM>/measured_js`` it computes the compensation from that very
sample (a gc JSON through the MLSE law, or an identified model's gravity,
springs and cable) and publishes ``/<ARM>/servo_jf`` at once, then the
detailed diagnostics (``~/diagnostics``, GravityCompensationDiagnostics); the
ROS tools' summary goes to ``/diagnostics`` (diagnostic_msgs/DiagnosticArray,
about 1 Hz: OK while compensating or idle on purpose, WARN while fading, with a
torque clamped or while waiting, ERROR when an outage stopped it). Safety:
NaN / wrong-length samples are rejected (logged, no command), torques are
clamped, ramp in over ``ramp_in_time``. The ramp-in of a take-over starts from the arm's
own commanded effort (``/<ARM>/setpoint_js``: its PID's, with the dVRK's own
compensation as feed-forward while that is on), read before that compensation
is turned off: the arm keeps its holding torque and is handed to the model's
(from 0 N m the simulated MTM's tip fell 0.4 m on average over a 1 s ramp-in;
5 mm from its own effort). Without a fresh setpoint_js: from 0 N m.

The arm's state (docs/lab-procedure.md; :mod:`dvrk_ident_ros.arm.state`):

- Nothing is sent (no ``servo_jf``, no ``use_gravity_compensation``) until the
  arm is ENABLED, homed and not busy (``/<ARM>/operating_state``; the node
  refuses to start where crtk_msgs is absent), has said so for READY_SETTLE
  (the take-over's checks, in order: :mod:`dvrk_ident_ros.gc.takeover`),
  and its samples are valid: a sample
  with ``header.stamp`` 0 is never commanded from and never re-arms the
  watchdog. What the node waits for is logged once per reason.
- When the arm stops being ready (operating_state, or a stamp-0 sample) the
  node stops at once without another command (a not-ready arm ignores effort
  commands, a homing one faults on them) and hands the flag back. It ramps in
  again once the arm is ready (after ``resume_after``, as after any hand-over).
- The dVRK's own compensation (``/<ARM>/gravity_compensation/setpoint_js``,
  all-zero effort: off; :class:`~dvrk_ident_ros.gc.supervisor.BuiltinCompensation`):
  turned off before the first command, and the node commands only once that
  topic says it is off; handed back as it was found before the first take-over
  (2.3: off stays off, 2.4: back on) at a hand-over and at exit. Where that
  leaves the arm without the dVRK's own compensation (2.3's default, or an arm
  whose flag cannot be read), the exit and an outage's hand-over also send
  ``/<ARM>/hold``: the arm's own PID holds it where it is (an MTM left in
  effort mode at 0 N m falls). Never at a stop for a not-ready arm. Someone else
  turning it on while the node commands (teleoperation does when it enables):
  the node sends one zero command and stops, says so once, leaves the flag
  alone (no fight, at exit too), and ramps in again once the topic says it is
  off again. An arm that publishes no readings (a PSM of older dVRKs): the flag
  is turned off as before, and never turned on (the node cannot know it was);
  an MTM without readings is warned about once.

Jitter and outages (:class:`~dvrk_ident_ros.gc.supervisor.CompensationSupervisor`):
a late sample (no state for ``stale_periods - 1`` periods, 90 ms at 100 Hz by
default) starts a fade over ``fade_out_time``, whose commands follow the
state's own period; the next sample ramps back in from where the fade got to.
Only a state stale for ``handover_after`` s (and faded to zero) hands the arm
back to the dVRK's own compensation, logged once at WARN; after any hand-over
the node takes the arm again only once the state has been fresh for
``resume_after`` s: the built-in compensation is toggled at most once per real
outage. A sample that repeats the previous one (its stamp within 0.2 ms, its
positions the same: arm_samples.REPEAT_TOLERANCE) is no fresh sample either: the
arm's control loop has stopped behind a live bridge (which publishes its last
sample on its own period), so nothing is commanded from it and the watchdog
fades out as for a silent arm. Late samples, stale events and repeated stamps
are logged at most once a second each and counted (diagnostics, the exit line).

Exit (SIGINT/SIGTERM: :func:`~dvrk_ident_ros.ros.process.run` calls
:meth:`GravityCompensationNode.close`): the torques fade out over
``fade_out_time`` (samples still arriving are answered at the falling scale;
without samples the watchdog commands at the state's period), end with exactly
0 N m, then the flag is handed back, then the process exits; a hard deadline
of ``fade_out_time`` + 0.5 s ends the fade with a zero command whatever
happens.

The watchdog is a deadline, not a tick: one steady-clock timer that every valid,
fresh sample re-arms (``Timer.reset``, under a microsecond) to
:meth:`~dvrk_ident_ros.gc.supervisor.CompensationSupervisor.deadline` after it.
It only fires when the state is late; it then ticks at the state's period while
fading, once more for the hand-over, and is cancelled once stopped. A 1 kHz
watchdog tick in rclpy costs about 13 % of a core on its own. (Created, then
cancelled at once: ``create_timer(..., autostart=False)`` is Jazzy and later.)
The checks of the arm's state on the control path are a few attribute reads;
the readiness, the flag and the subscriber checks run only while not
commanding.
"""
from __future__ import annotations

import gc
import math
import os
import sys
import time
from collections import deque

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty

from dvrk_ident.msg import GravityCompensationDiagnostics
from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.arm.state import OperatingStatus, stamp_is_valid
from dvrk_ident_ros.gc.compensation import load_compensation
from dvrk_ident_ros.gc.fit_check import fit_check_for
from dvrk_ident_ros.gc.health import STATE_NAMES, compensation_health
from dvrk_ident_ros.gc.safety_net import NetState, state_path, write_state
from dvrk_ident_ros.gc.supervisor import (
    BuiltinCompensation,
    CompensationState,
    CompensationSupervisor,
    SupervisorSettings,
)
from dvrk_ident_ros.gc.takeover import TakeOverGate
from dvrk_ident_ros.gc.takeover_guard import GUARD_LIMITS, GUARD_STOP, TakeoverGuard
from dvrk_ident_ros.nodes.diagnostics import REPORT_PERIOD, DiagnosticsPublisher, Throttle
from dvrk_ident_ros.parameters.gravity_compensation import SCHEMA as PARAMETERS
from dvrk_ident_ros.parameters.settings import GravityCompensationSettings
from dvrk_ident_ros.ros.arm_monitor import READY_SETTLE, ArmStateMonitor
from dvrk_ident_ros.ros.messages import check_arm_name
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import request_exit, run
from dvrk_ident_ros.ros.qos import CONTROL_STATE_QOS, STATE_QOS

#: s: a stamp-0 stream while the operating state says ready is reported after this long (a sample in flight
#: when the arm turns ready is no news)
INVALID_REPORT_AFTER = 1.0
#: s (or 3 state periods, the longer): a setpoint_js this recent is the arm's effort now
ARM_EFFORT_FRESH = 0.1
#: s: the exit's fade ends with a zero command at the latest this long after fade_out_time
EXIT_MARGIN = 0.5
#: s: at most one log line per kind of event (late state, fade to zero) this often
LOG_EVERY = 1.0
#: the arm's efforts (setpoint_js samples) averaged for the fit check: 0.2 s at the dVRK's 100 Hz
FIT_SAMPLES = 20


class GravityCompensationNode(Node):
    def __init__(self) -> None:
        super().__init__("gravity_compensation")
        params = declare_parameters(self, PARAMETERS, on_change={
            "torque_limit_scale": self._set_torque_limit_scale, "publish_diagnostics": self._set_publish_diagnostics})
        settings = GravityCompensationSettings.from_values(params)
        self.arm = check_arm_name(settings.arm)
        self.parameter_file = settings.parameter_file
        supervision = SupervisorSettings(
            ramp_in_time=settings.ramp_in_time, fade_out_time=settings.fade_out_time,
            stale_periods=settings.stale_periods, handover_after=settings.handover_after,
            resume_after=settings.resume_after)
        self.disable_builtin = settings.disable_builtin
        self.publish_diagnostics = settings.publish_diagnostics
        self.law = load_compensation(self.parameter_file, self.arm, blend=settings.blend,
                                     blend_travel=settings.blend_travel)  # the core's factory
        self.model_kind = self.law.kind.reported_as
        self.torque_limit_scale = settings.torque_limit_scale  # in (0, 1]: checked by the schema
        self.law.scale_limits(self.torque_limit_scale)
        self.spec = arm_spec(self.arm)
        # the fit check (gc/fit_check.py) of an MLSE file before every take-over, on the mean of the arm's own
        # efforts (setpoint_js) over the last FIT_SAMPLES samples while it held itself
        tolerance = settings.fit_tolerance
        self.fit_check = fit_check_for(self.law, self.spec.family, tolerance) if settings.fit_check else None
        # and after it: the arm stays where it was taken over while no one moves it (gc/takeover_guard.py)
        limits = GUARD_LIMITS.get(self.spec.family.upper())
        self.guard = (TakeoverGuard(limits) if settings.fit_check and limits is not None
                      and len(limits) == self.spec.arm_joints else None)
        self._held_efforts: deque[list[float]] = deque(maxlen=FIT_SAMPLES)
        self._fit_unchecked_said = False
        self.joints = self.spec.arm_joints  # commanded on servo_jf: all but the jaw
        self._law_dof = len(self.law.total)
        self.supervisor = CompensationSupervisor(supervision)
        self.builtin = BuiltinCompensation()
        self.gate = TakeOverGate(self.arm, self.supervisor, self.builtin, disable_builtin=self.disable_builtin,
                                 has_builtin=self.spec.builtin_gravity_compensation)
        # what the safety net (node gc_safety_net, started beside this one) needs if this process dies without
        # handing the arm back: written at every take-over and hand-over (gc/safety_net.py)
        self._net_path = state_path(self.arm)
        self._net_owned: bool | None = None
        self._note_ownership()
        self._q = [0.0] * self._law_dof  # the last sample commanded from (the fade-out's), padded for the PSM's jaw
        self._qd = [0.0] * self._law_dof
        self._q_in = [0.0] * self._law_dof  # the sample being checked; swapped with _q once commanded from
        self._qd_in = [0.0] * self._law_dof
        self._zeros = [0.0] * self._law_dof
        self._q_fresh = [0.0] * self._law_dof  # the last fresh sample's positions (a repeat has them again)
        self.rejected = 0
        self.answered = 0
        self.invalid = 0  # samples with stamp 0 (the arm's mark of invalid data)
        self.repeated = 0  # samples with the previous sample's stamp (the arm's loop stalled): not fresh
        self.fade_commands = 0  # commands of the node's own (fades), not answers to a sample
        # the arm's own commanded effort (setpoint_js) while the node does not command, and what a take-over
        # ramps in from (bumpless: the PID's effort, with the dVRK's own compensation, read before it goes off)
        self._arm_effort = [0.0] * self.joints
        self._arm_effort_at = -math.inf
        self._take_over_from: list[float] | None = None
        self._ramp_from: list[float] | None = None
        self._waiting = ""  # what the node waits for, as last logged ("" while commanding)
        self._idle_expected = False  # the node waits on purpose (the arm not ready, teleoperation has it)
        self._invalid_since: float | None = None
        self._started_once = False
        self._saturated_seen = [False] * self.joints  # joints clamped since the last /diagnostics report
        self._names: list[str] = []
        self._throttle = Throttle(LOG_EVERY)
        self._servo_jf = self.create_publisher(JointState, f"/{self.arm}/servo_jf", STATE_QOS)
        self._builtin = self.create_publisher(Bool, f"/{self.arm}/use_gravity_compensation", 10)
        self._hold = self.create_publisher(Empty, f"/{self.arm}/hold", 10)
        self._diagnostics = self.create_publisher(GravityCompensationDiagnostics, "~/diagnostics", 10)
        self._report = DiagnosticsPublisher(self, f"dvrk_ident: gravity_compensation {self.arm}", self.arm)
        self._command = JointState()
        self._diag = GravityCompensationDiagnostics()
        self._diag.parameter_source = self.parameter_file
        self._diag.model_kind = self.model_kind
        # Watchdog: a steady-clock deadline timer on the same executor (independent of /clock), armed by the
        # first sample. One Python thread only: a watchdog thread would cost the hot path up to a GIL switch
        # interval (5 ms). Created, then cancelled (Humble has no autostart=False).
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._watchdog = self.create_timer(1.0, self._on_watchdog, clock=steady)
        self._watchdog.cancel()
        self.create_timer(REPORT_PERIOD, self._publish_report, clock=steady)
        self.monitor = ArmStateMonitor(self, self.arm, on_change=self._on_operating_state)
        self.monitor.require()
        self.create_subscription(JointState, self.gate.readings_topic, self._on_builtin, CONTROL_STATE_QOS)
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, CONTROL_STATE_QOS)
        # raw: while the node commands, the arm's setpoint_js is not needed, and not even deserialised
        self.create_subscription(JointState, f"/{self.arm}/setpoint_js", self._on_arm_setpoint, CONTROL_STATE_QOS,
                                 raw=True)
        self.get_logger().info(
            f"{self.arm}: {self.model_kind} compensation from {self.parameter_file}; waiting for "
            f"/{self.arm}/measured_js (ramp-in {settings.ramp_in_time:g} s, watchdog {settings.stale_periods:g} "
            f"periods, fade-out {settings.fade_out_time:g} s, hand-over after {settings.handover_after:g} s "
            f"stale, resume after {settings.resume_after:g} s fresh)")

    # -- run-time parameters (the schema's runtime ones; the executor's thread, as the hot path) ----
    def _set_torque_limit_scale(self, value: float) -> None:
        """The clamp of the next command: the file's (or the arm's) limits times ``value`` (0, 1]."""
        self.law.scale_limits(value / self.torque_limit_scale)  # scale_limits multiplies what it has
        self.torque_limit_scale = value

    def _set_publish_diagnostics(self, value: bool) -> None:
        self.publish_diagnostics = value

    # -- hot path -------------------------------------------------------------------
    def _reject(self, why: str) -> None:
        self.rejected += 1
        self.get_logger().warning(f"measured_js rejected ({self.rejected} so far): {why}", throttle_duration_sec=1.0)

    def _on_state(self, msg: JointState) -> None:
        start = time.perf_counter()
        arrival = time.monotonic()
        header_stamp = msg.header.stamp
        if not stamp_is_valid(header_stamp.sec, header_stamp.nanosec):
            return self._on_invalid(arrival)
        n = self.joints
        position, velocity = msg.position, msg.velocity
        if len(position) != n:
            return self._reject(f"{len(position)} positions, expected {n}")
        if len(velocity) not in (0, n):
            return self._reject(f"{len(velocity)} velocities, expected {n}")
        q, qd = self._q_in, self._qd_in
        for i in range(n):
            x = position[i]
            if not math.isfinite(x):
                return self._reject(f"position[{i}] is {x}")
            q[i] = x
        if len(velocity):
            for i in range(n):
                v = velocity[i]
                if not math.isfinite(v):
                    return self._reject(f"velocity[{i}] is {v}")
                qd[i] = v
        else:  # no velocity in the message: the blend sees the arm at rest
            for i in range(n):
                qd[i] = 0.0
        self._invalid_since = None
        sup = self.supervisor
        was = sup.state
        stamp = header_stamp.sec + 1e-9 * header_stamp.nanosec
        fresh_q = self._q_fresh
        if sup.repeats(stamp) and q[:n] == fresh_q[:n]:  # the arm's loop stalled behind a live bridge: not fresh
            return self._on_repeat()  # (the watchdog runs on)
        for i in range(n):
            fresh_q[i] = q[i]
        if was == CompensationState.ACTIVE or was == CompensationState.RAMP_IN:
            scale = sup.on_state(arrival, stamp)
        else:  # off the control path: fading, stopped, waiting
            if not self._may_start(msg, arrival, stamp):
                self.law.observe(q)  # the arm moves under someone else's control: the cable's state follows
                return None
            scale = sup.command(arrival, stamp)
        self._q, self._q_in, self._qd, self._qd_in = q, self._q, qd, self._qd  # no copy, no allocation
        if self.answered < 64 or not self.answered & 63:  # a median of 64 intervals: not on every sample
            sup.update_period()
        self._arm_watchdog(int(1e9 * sup.deadline()))
        guard = self.guard
        if guard is not None and guard.watching:
            state = sup.state
            if state != CompensationState.ACTIVE and state != CompensationState.RAMP_IN:
                guard.stop()  # fading (a late state): the arm's motion is no longer the file's alone
            else:
                moved = guard.check(q, arrival)
                if moved >= 0:
                    return self._pulled_away(q, moved)
        law = self.law
        total = law.compute(q, qd, scale)
        ramp_from = self._ramp_from
        if ramp_from is not None:  # a take-over's ramp-in: from the arm's own effort to the compensation
            if scale < 1.0 and sup.state == CompensationState.RAMP_IN:
                rest = 1.0 - scale
                for i in range(n):
                    total[i] += rest * ramp_from[i]
            else:  # ramped in, or fading: the arm's own effort no longer counts
                self._ramp_from = None
        command = self._command
        command.header.stamp = header_stamp
        command.effort = total[:n]
        self._servo_jf.publish(command)
        self.answered += 1
        if True in law.saturated:
            self._note_saturated()
        if self.publish_diagnostics:
            self._publish_diagnostics(header_stamp, start)

    def _publish_diagnostics(self, stamp, start: float) -> None:
        law, d, n, sup = self.law, self._diag, self.joints, self.supervisor
        d.header.stamp = stamp
        d.gravity_torque = law.gravity[:n]
        d.disturbance_torque = law.disturbance[:n]
        d.blend_weight = law.alpha[:n]
        d.total_torque = law.total[:n]
        d.saturated = law.saturated[:n]
        d.state = sup.state
        d.ramp_scale = sup.scale
        d.stale_events = sup.stale_events
        d.late_samples = sup.late_samples
        d.handovers = sup.handovers
        d.max_gap = sup.max_gap
        d.period = sup.period
        d.compute_time = time.perf_counter() - start
        self._diagnostics.publish(d)

    def _note_saturated(self) -> None:
        seen = self._saturated_seen
        for i, s in enumerate(self.law.saturated[:self.joints]):
            if s:
                seen[i] = True

    # -- the arm's state ------------------------------------------------------------
    def _wait(self, reason: str, expected: bool = False) -> None:
        """Not commanding because of ``reason`` (``expected``: on purpose, e.g. the arm not ready): logged
        once, until the reason changes or commanding starts."""
        self._idle_expected = expected
        if reason != self._waiting:
            self._waiting = reason
            self.get_logger().warning(f"not commanding {self.arm}: {reason}")

    def _wait_for_arm(self) -> None:
        """The arm is not ready: the reason, expected once the arm has said what it is doing."""
        self._wait(self.monitor.reason(), expected=self.monitor.status is not None)

    def _on_repeat(self) -> None:
        """The previous sample again (stamp and positions): no command, no fresh sample for the watchdog."""
        self.repeated += 1
        self.get_logger().warning(
            f"/{self.arm}/measured_js repeats its last stamp ({self.repeated} so far): the arm's control loop is not "
            "advancing (the bridge republishes its last sample); not commanded from, not fresh for the watchdog",
            throttle_duration_sec=1.0)

    def _on_invalid(self, now: float) -> None:
        """A sample with stamp 0: the arm is not ready. Never commanded from, never a fresh sample."""
        self.invalid += 1
        self.gate.not_ready()
        sup = self.supervisor
        sup.interrupt()
        if sup.state != CompensationState.STOPPED:
            # the arm is not ready: it ignores effort commands, and one would fault it if it is homing (the
            # busy operating_state may come after this sample): stop at once, no further command
            self._stop(f"/{self.arm}/measured_js has stamp 0 (the arm's data is invalid: not ready); stopped at "
                       "once without another command")
        if self._invalid_since is None:
            self._invalid_since = now
        if sup.state != CompensationState.STOPPED:
            return
        if self.builtin.owned:  # taken over, not commanding (yet, or faded to zero on a stale state)
            self.get_logger().info(self._hand_over())
        if not self.monitor.ready:
            self._wait_for_arm()
        elif now - self._invalid_since >= INVALID_REPORT_AFTER:
            self._wait(f"/{self.arm}/measured_js has stamp 0, the arm's mark of invalid data (powered off, not "
                       "homed or faulted?): waiting for valid samples")

    def _on_operating_state(self, old: OperatingStatus | None, new: OperatingStatus) -> None:
        if new.ready:
            self._invalid_since = None  # stamp-0 samples from before are no news about the ready arm
            if self.supervisor.state == CompensationState.STOPPED and self._waiting:
                self.get_logger().info(f"{self.arm} is ready ({new.describe()}): compensating from a valid sample "
                                       f"once it has been ready for {READY_SETTLE:g} s" + self._resume_note())
            return
        self.builtin.forget()
        self.gate.not_ready()
        sup = self.supervisor
        sup.interrupt()
        reason = new.not_ready_reason(self.arm)
        if sup.state != CompensationState.STOPPED:
            # a not-ready arm ignores effort commands, and a busy (homing) one faults on them: not even a zero
            self._stop(f"{reason}; stopped at once without another command (a not-ready arm ignores effort "
                       "commands, a homing one faults on them)")
        elif self.builtin.owned:  # taken over, not commanding (yet, or faded to zero on a stale state)
            self.get_logger().info(self._hand_over())
        self._wait(reason, expected=True)

    def _resume_note(self) -> str:
        if not self.supervisor.released:
            return ""
        return f" once its state has been fresh for resume_after {self.supervisor.settings.resume_after:g} s"

    def _on_builtin(self, msg: JointState) -> None:
        """A reading of the dVRK's own compensation: all-zero effort is off. Taken while the arm is ready."""
        stamp = msg.header.stamp
        if not stamp_is_valid(stamp.sec, stamp.nanosec) or not self.monitor.ready or not len(msg.effort):
            return
        self.gate.reading_seen()
        if self.builtin.observe(any(msg.effort)):
            self._yield()
            self._note_ownership()

    def _yield(self) -> None:
        """Someone else turned the dVRK's own compensation on: one zero command, stop, do not fight."""
        reason = (f"the dVRK's own gravity compensation of {self.arm} was turned on by someone else "
                  "(teleoperation turns it on when it enables): stopped commanding so that the arm does not get "
                  "its gravity twice; compensating again once it is off")
        if self.supervisor.state != CompensationState.STOPPED:
            self._command.header.stamp = self.get_clock().now().to_msg()
            self._command.effort = self._zeros[:self.joints]
            self._servo_jf.publish(self._command)
        self.supervisor.stop()
        self._watchdog.cancel()
        self._waiting = reason
        self._idle_expected = True
        self.get_logger().warning(reason)

    def _may_start(self, msg: JointState, now: float, stamp: float) -> bool:
        """Whether a valid sample may be commanded from (the node is not RAMP_IN or ACTIVE); takes the flag
        over when due. Records the sample's arrival (late samples, freshness) while the arm is ready.

        Off the control path: runs only while the node is not commanding."""
        sup = self.supervisor
        if sup.final:  # exiting: the final fade's samples are answered at its scale, none after it
            if sup.state == CompensationState.FADING_OUT:
                sup.on_sample(now, stamp)
            return sup.state == CompensationState.FADING_OUT
        if not self.monitor.ready:
            sup.interrupt()
            self._wait_for_arm()
            return False
        sup.on_sample(now, stamp)
        # a late sample after a stale fade: the flag is still ours
        if sup.state == CompensationState.FADING_OUT or sup.holding:
            return True
        settled = self.monitor.settled(now)
        if self.fit_check is not None and not self.builtin.owned and settled and not self._file_fits(now):
            return False
        decision = self.gate.decide(now, settled, self._flag_subscribed, self._readings_published)
        if decision.warn:
            self.get_logger().warning(decision.warn)
        if decision.take_over:  # the flag was just taken: the ramp-in starts from the arm's effort before "off"
            self._take_over_from = self._arm_effort_now(now)
            self._note_ownership()  # before "off" and the first command
        if decision.send_off:
            self._builtin.publish(Bool(data=False))  # before the first command
        if not decision.start:
            if decision.wait:
                self._wait(decision.wait)
            return False
        found = {None: "unknown", True: "on", False: "off"}[self.builtin.found]
        self._ramp_from = self._take_over_from
        start = ("the arm's own effort (setpoint_js)" if self._ramp_from is not None
                 else "0 N m (no fresh setpoint_js of the arm)")
        self.get_logger().info(f"compensating {self.arm}: ramp-in over {sup.settings.ramp_in_time:g} s from {start} "
                               f"(the dVRK's own compensation was {found} before this node took over)"
                               + ("; again after a stop" if self._started_once else ""))
        self._started_once = True
        if self.guard is not None:
            self.guard.start(self._q_in, self._qd_in, now)
        if not self._names and len(msg.name) == self.joints:
            self._names = list(msg.name)
            self._diag.name = self._names
        self._waiting = ""
        self._idle_expected = False
        return True

    def _on_arm_setpoint(self, data: bytes) -> None:
        """The arm's commanded effort (its PID's output with the dVRK's own compensation as feed-forward, or
        the effort command), kept while the node does not command: a take-over ramps in from it."""
        state = self.supervisor.state
        if state == CompensationState.ACTIVE or state == CompensationState.RAMP_IN:
            return
        msg = deserialize_message(data, JointState)
        stamp, effort = msg.header.stamp, msg.effort
        if not stamp_is_valid(stamp.sec, stamp.nanosec) or len(effort) != self.joints \
                or not all(math.isfinite(x) for x in effort):
            return
        self._arm_effort[:] = effort
        self._arm_effort_at = time.monotonic()
        if self.fit_check is not None:
            self._held_efforts.append(list(effort))

    def _file_fits(self, now: float) -> bool:
        """The fit check before a take-over (off the control path): False when the file does not fit the arm
        held at this pose; the node then refuses (the reason once, no command) and exits with status 2. An arm
        without a fresh setpoint_js cannot be checked: said once, and taken as before."""
        assert self.fit_check is not None
        n = self.joints
        if now - self._arm_effort_at > max(ARM_EFFORT_FRESH, 3.0 * self.supervisor.period) \
                or len(self._held_efforts) < FIT_SAMPLES // 2:
            if not self._fit_unchecked_said and now - self._arm_effort_at > 1.0:
                self._fit_unchecked_said = True
                self.get_logger().warning(f"{self.arm} publishes no fresh /{self.arm}/setpoint_js: the fit check "
                                          "of the gc file cannot run (its holding effort is unknown)")
                return True
            return self._fit_unchecked_said
        mean = [sum(e[i] for e in self._held_efforts) / len(self._held_efforts) for i in range(n)]
        verdict = self.fit_check.check(self._q_in[:n], mean)
        if verdict.fits:
            return True
        reason = verdict.reason(self.arm, self._names)
        self.get_logger().error(f"refused: {reason} (fit_check:=false takes the arm without this check)")
        self._waiting = f"refused: {reason}"
        request_exit(2)
        return False

    def _pulled_away(self, q: list[float], joint: int) -> None:
        """The take-over guard tripped on ``joint``: the file pulls the arm away from where it rested. Hold it
        there (the arm's own PID), the flag back as found, the reason, exit status 2."""
        guard = self.guard
        assert guard is not None
        name = self._names[joint] if joint < len(self._names) else f"joint {joint + 1}"
        guard.stop()
        self.supervisor.stop()
        self._watchdog.cancel()
        self._hold.publish(Empty())  # first: the PID takes the arm where it is, before the flag goes back
        reason = (f"the file pulled {self.arm} {GUARD_STOP}: {name} moved "
                  f"{guard.displacement(q, joint):+.3f} rad within {guard.window:g} s of the take-over "
                  f"(limit {guard.limit[joint]:g} rad). Is it this arm's file (ARM_NAME and SN), made since its "
                  "last repair? (If you moved the arm, start again with it at rest.)")
        self.get_logger().error(f"stopped: {reason}; /{self.arm}/hold sent; {self._hand_over()}")
        self._waiting = f"stopped: {reason}"
        request_exit(2)

    def _arm_effort_now(self, now: float) -> list[float] | None:
        """The arm's own effort if fresh (within a few state periods), clamped to the compensation's limits."""
        if now - self._arm_effort_at > max(ARM_EFFORT_FRESH, 3.0 * self.supervisor.period):
            return None
        padded = self._arm_effort + [0.0] * (self._law_dof - self.joints)  # the PSM's jaw: none
        return self.law.clamp(padded)[:self.joints]

    def _note_ownership(self) -> None:
        """Tell the safety net whether this process owns the arm (only when that changes; off the control
        path). A state that cannot be written is said, and the node goes on: the net is a second line."""
        owned = self.builtin.owned
        if owned == self._net_owned:
            return
        self._net_owned = owned
        restore = self.builtin.found if self.disable_builtin else None
        try:
            write_state(self._net_path, NetState(self.arm, os.getpid(), owned, restore))
        except OSError as exc:
            self.get_logger().warning(f"the safety net's state cannot be written ({self._net_path}): {exc}")

    def _flag_subscribed(self) -> bool:
        return self._builtin.get_subscription_count() > 0

    def _readings_published(self) -> bool:
        return self.count_publishers(self.gate.readings_topic) > 0

    def _hand_over(self, count: bool = True, hold: bool = False) -> str:
        """Give the flag back as found (``count``: a hand-over while running, not the exit's); what became of
        it, for the log. ``hold`` (the exit, an outage; never a not-ready arm): where the node had taken the arm
        and the dVRK's own compensation does not carry it now (dVRK 2.3's default off, or a state the node
        cannot read), ``/<ARM>/hold``: the arm's own PID holds it where it is, instead of leaving it in effort
        mode at 0 N m, where an MTM falls."""
        owned = self.builtin.owned
        reading = self.builtin.reading
        value = self.builtin.hand_over()
        self._note_ownership()  # the node hands back itself: the net has nothing to do
        if owned:
            self.supervisor.release(count)
        self.gate.not_ready()  # the wait for a fresh reading starts again with the next sample
        if value is None:
            said = "the dVRK's own compensation left as it is"
        else:
            if self.disable_builtin:
                self._builtin.publish(Bool(data=value))
                self.gate.flag_published(time.monotonic())
            said = f"the dVRK's own compensation back {'on' if value else 'off'} as found"
        carried = (value if self.disable_builtin else reading) is True
        if hold and owned and not carried and self.monitor.ready:
            self._hold.publish(Empty())
            said += f"; /{self.arm}/hold sent: the arm's own PID holds it where it is (not left at 0 N m)"
        return said

    def _stop(self, reason: str) -> None:
        """Stop at once, no command; hand the flag back."""
        self.supervisor.stop()
        self._watchdog.cancel()
        self.get_logger().warning(f"{reason}; {self._hand_over()}")

    # -- watchdog, fades, hand-over ---------------------------------------------------
    def _arm_watchdog(self, period_ns: int) -> None:
        """(Re)start the watchdog timer: ``period_ns`` from now, then every ``period_ns``."""
        if period_ns != self._watchdog.timer_period_ns:
            self._watchdog.timer_period_ns = period_ns
        self._watchdog.reset()

    def _on_watchdog(self) -> None:
        now = time.monotonic()
        sup = self.supervisor
        was = sup.state
        tick = sup.tick(now)
        if was != CompensationState.FADING_OUT and sup.state == CompensationState.FADING_OUT:
            self._log_stale(now)
        if tick.command:
            self._publish_fade()
            if sup.holding and not sup.final:
                held = self._throttle.allow("faded", now)
                if held is not None:
                    self.get_logger().info(
                        f"faded to 0 N m with /{self.arm}/measured_js stale for "
                        f"{1e3 * (sup.stale_for(now) or 0.0):.0f} ms: not commanding; the dVRK's own compensation "
                        f"stays off until handover_after {sup.settings.handover_after:g} s"
                        + (f" ({held} more since the last report)" if held else ""))
        if tick.hand_over:
            stale = sup.stale_for(now) or 0.0
            self.get_logger().warning(
                f"/{self.arm}/measured_js stale for {stale:.2f} s (handover_after {sup.settings.handover_after:g} s): "
                f"{self._hand_over(hold=True)}; taking the arm again once its state has been fresh for resume_after "
                f"{sup.settings.resume_after:g} s")
            self._waiting = f"/{self.arm}/measured_js stale: handed back to the dVRK's own compensation"
            self._idle_expected = False
        if tick.next_in is None:
            self._watchdog.cancel()
        else:
            self._arm_watchdog(int(1e9 * tick.next_in))

    def _log_stale(self, now: float) -> None:
        sup = self.supervisor
        held = self._throttle.allow("stale", now)
        if held is None:
            return
        self.get_logger().warning(
            f"/{self.arm}/measured_js late: no sample for {1e3 * (sup.stale_for(now) or 0.0):.0f} ms (threshold "
            f"{1e3 * sup.stale_after():.0f} ms, period {1e3 * sup.period:.1f} ms): fading out over "
            f"{sup.settings.fade_out_time:g} s until it comes back ({sup.stale_events} stale events, "
            f"{sup.late_samples} late samples so far" + (f"; {held} more since the last report" if held else "")
            + ")")

    def _publish_fade(self) -> None:
        """A command of the node's own: the last sample's torques at the fade's scale (the last one 0 N m)."""
        self._command.header.stamp = self.get_clock().now().to_msg()
        start = time.perf_counter()
        self._command.effort = self.law.compute(self._q, self._zeros, self.supervisor.scale)[:self.joints]
        self._servo_jf.publish(self._command)
        self.fade_commands += 1
        if self.publish_diagnostics:  # FADING_OUT, or STOPPED with the last (zero) command
            self._publish_diagnostics(self._command.header.stamp, start)

    # -- /diagnostics ---------------------------------------------------------------------
    def _saturated_joints(self) -> list[str]:
        names = self._names or [f"joint {i + 1}" for i in range(self.joints)]
        return [names[i] for i, s in enumerate(self._saturated_seen) if s]

    def health(self, now: float):
        """The compensation's level and message (:func:`~dvrk_ident_ros.gc.health.compensation_health`)."""
        sup = self.supervisor
        reason = self._waiting or f"waiting for valid /{self.arm}/measured_js from a ready arm"
        return compensation_health(self.arm, sup.state, sup.scale, stale_for=sup.stale_for(now),
                                   handed_over=sup.released, final=sup.final, saturated=self._saturated_joints(),
                                   idle_reason=reason, idle_expected=self._idle_expected)

    def _publish_report(self) -> None:
        now = time.monotonic()
        sup = self.supervisor
        health = self.health(now)
        stale = sup.stale_for(now)
        self._report.publish(health.level, health.message, {
            "state": STATE_NAMES.get(sup.state, str(sup.state)),
            "scale": sup.scale,
            "answered": self.answered,
            "rejected": self.rejected,
            "invalid (stamp 0)": self.invalid,
            "repeated stamps": self.repeated,
            "fade commands": self.fade_commands,
            "stale events": sup.stale_events,
            "late samples": sup.late_samples,
            "hand-overs": sup.handovers,
            "max gap (s)": sup.max_gap,
            "stale for (s)": stale if stale is not None else 0.0,
            "period (s)": sup.period,
            "watchdog threshold (s)": sup.stale_after(),
            "dVRK compensation flag owned": self.builtin.owned,
            "saturated since the last report": ", ".join(self._saturated_joints()) or "none",
            "parameter file": self.parameter_file,
            "model": self.model_kind,
        })
        self._saturated_seen = [False] * self.joints

    # -- exit -----------------------------------------------------------------------------
    def close(self) -> None:
        """At exit: fade out over fade_out_time (commands at the state's rate), exactly 0 N m last, then the
        flag back as found."""
        sup = self.supervisor
        start = time.monotonic()
        faded = ""
        if sup.begin_final_fade(start):
            faded = self._fade_out_at_exit(start)
        elif self.builtin.owned and sup.holding:
            faded = "already at 0 N m; "
        handed = self._hand_over(count=False, hold=True)
        time.sleep(0.05)  # let the middleware deliver the hand-over before the context goes
        self.get_logger().info(
            f"exit: {faded}answered {self.answered} samples, rejected {self.rejected}, invalid (stamp 0) "
            f"{self.invalid}, repeated stamps {self.repeated}, stale events {sup.stale_events}, late samples "
            f"{sup.late_samples}, max gap {1e3 * sup.max_gap:.0f} ms, hand-overs {sup.handovers}, fade commands "
            f"{self.fade_commands}; {handed}")

    def _fade_out_at_exit(self, start: float) -> str:
        """The final fade: the executor keeps answering samples at the falling scale and the watchdog commands
        at the state's period without them; a zero command at the hard deadline at the latest."""
        sup = self.supervisor
        self._arm_watchdog(int(1e9 * sup.deadline()))
        deadline = start + sup.settings.fade_out_time + EXIT_MARGIN
        executor = self.executor
        while sup.state != CompensationState.STOPPED and self.context.ok():
            now = time.monotonic()
            if now >= deadline:
                break
            if executor is not None:
                executor.spin_once(timeout_sec=min(0.05, deadline - now))
            else:  # not spun by an executor: the watchdog's steps by hand
                time.sleep(min(sup.period, deadline - now))
                self._on_watchdog()
        self._watchdog.cancel()
        took = time.monotonic() - start
        if sup.state != CompensationState.STOPPED:  # the deadline: zero at once
            sup.stop()
            self._command.header.stamp = self.get_clock().now().to_msg()
            self._command.effort = self._zeros[:self.joints]
            self._servo_jf.publish(self._command)
            return f"fade-out cut at the deadline after {took:.2f} s with a zero command; "
        return f"faded out in {took:.2f} s; "


def main(args: list[str] | None = None) -> int:
    # The control path allocates nothing that forms reference cycles: the cyclic garbage collector's
    # pauses (milliseconds) would only add to the latency tail. Objects made at start-up are frozen.
    def node() -> GravityCompensationNode:
        created = GravityCompensationNode()
        gc.collect()
        gc.freeze()
        gc.disable()
        return created

    return run(node, args, executor="events")


if __name__ == "__main__":
    sys.exit(main())
