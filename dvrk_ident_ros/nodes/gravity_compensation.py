"""Node ``gravity_compensation``: event-driven torques for every ``measured_js`` sample.

On each valid, fresh ``/<ARM>/measured_js`` of a ready arm it computes the compensation from that very sample
(a gc JSON through the MLSE law, or an identified model's gravity, springs and cable) and publishes
``/<ARM>/servo_jf`` at once, then ``~/diagnostics``; ``/diagnostics`` about 1 Hz. The decisions are the
ROS-free cores': when to take the arm (gc/runtime/takeover.py, its hand-over too), jitter, outages and fades
(gc/runtime/supervisor.py), the file's fit before and after a take-over (gc/runtime/held_effort.py,
gc/runtime/fit_check.py, gc/runtime/takeover_guard.py), the samples (arm/samples.py), health and counts
(gc/runtime/health.py). The node translates messages, owns the steady-clock watchdog (a deadline every fresh
sample re-arms, not a tick) and the exit's fade. Behaviour, state by state: docs/nodes.md
("How gravity_compensation runs").
"""
from __future__ import annotations

import gc
import logging
import sys
import time

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty

from dvrk_ident.msg import GravityCompensationDiagnostics
from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.arm.samples import read_sample
from dvrk_ident_ros.arm.state import OperatingStatus, stamp_is_valid
from dvrk_ident_ros.excitation.holds import joint_ranges
from dvrk_ident_ros.gc.runtime.compensation import load_compensation
from dvrk_ident_ros.gc.runtime.fit_check import fit_check_for
from dvrk_ident_ros.gc.runtime.health import (
    Counters,
    compensation_health,
    exit_summary,
    faded_message,
    late_message,
    report_values,
)
from dvrk_ident_ros.gc.runtime.held_effort import HeldEffort
from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation
from dvrk_ident_ros.gc.runtime.ownership import ArmOwnership
from dvrk_ident_ros.gc.runtime.supervisor import CompensationState, CompensationSupervisor, SupervisorSettings
from dvrk_ident_ros.gc.runtime.takeover_guard import GUARD_LIMITS, TakeoverGuard
from dvrk_ident_ros.nodes.diagnostics import (
    REPORT_PERIOD,
    DiagnosticsPublisher,
    Throttle,
    fill_compensation_diagnostics,
)
from dvrk_ident_ros.parameters.gravity_compensation import SCHEMA as PARAMETERS
from dvrk_ident_ros.parameters.settings import GravityCompensationSettings
from dvrk_ident_ros.ros.arm_monitor import READY_SETTLE, ArmStateMonitor
from dvrk_ident_ros.ros.messages import check_arm_name
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import request_exit, run, spin_until
from dvrk_ident_ros.ros.qos import CONTROL_STATE_QOS, STATE_QOS
from dvrk_ident_ros.safety import CommandChecker

#: s: the exit's fade ends with a zero command at the latest this long after fade_out_time
EXIT_MARGIN = 0.5
#: s: at most one log line per kind of event (late state, fade to zero) this often
LOG_EVERY = 1.0


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
        self.publish_diagnostics = settings.publish_diagnostics
        self.law = load_compensation(self.parameter_file, self.arm, blend=settings.blend,
                                     blend_travel=settings.blend_travel)  # the core's factory
        self.model_kind = self.law.kind.reported_as
        self.torque_limit_scale = settings.torque_limit_scale  # in (0, 1]: checked by the schema
        self.law.scale_limits(self.torque_limit_scale)
        spec = arm_spec(self.arm)
        self.joints = spec.arm_joints  # commanded on servo_jf: all but the jaw
        # the arm's own effort while it holds itself: the ramp-in's start, and the fit check's (before every
        # take-over) mean; after it, the arm stays where it was taken over while no one moves it
        fit_check = (fit_check_for(self.law, spec.family, settings.fit_tolerance, settings.fit_range_margin)
                     if settings.fit_check else None)
        self.held = HeldEffort(self.arm, self.joints, fit_check)
        limits = GUARD_LIMITS.get(spec.family.upper())
        guard = (TakeoverGuard(limits) if settings.fit_check and limits is not None
                 and len(limits) == self.joints else None)
        self.supervisor = CompensationSupervisor(supervision)
        dof = len(self.law.total)
        self._q = [0.0] * dof  # the last sample commanded from (the fade-out's), padded for the PSM's jaw
        self._qd = [0.0] * dof
        self._q_in = [0.0] * dof  # the sample being checked; swapped with _q once commanded from
        self._qd_in = [0.0] * dof
        self._zeros = [0.0] * dof
        self._q_fresh = [0.0] * dof  # the last fresh sample's positions (a repeat has them again)
        self.counts = Counters()
        self._saturated_seen = [False] * self.joints  # joints clamped since the last /diagnostics report
        self._throttle = Throttle(LOG_EVERY)
        self._servo_jf = self.create_publisher(JointState, f"/{self.arm}/servo_jf", STATE_QOS)
        self._builtin = self.create_publisher(Bool, f"/{self.arm}/use_gravity_compensation", 10)
        self._hold = self.create_publisher(Empty, f"/{self.arm}/hold", 10)
        self._move_jp = self.create_publisher(JointState, f"/{self.arm}/move_jp", 10)
        self._diagnostics = self.create_publisher(GravityCompensationDiagnostics, "~/diagnostics", 10)
        self._report = DiagnosticsPublisher(self, f"dvrk_ident: gravity_compensation {self.arm}", self.arm)
        self._command = JointState()
        self._diag = GravityCompensationDiagnostics(parameter_source=self.parameter_file, model_kind=self.model_kind)
        # Watchdog: a steady-clock deadline timer on the same executor (independent of /clock), armed by the
        # first sample. One Python thread only: a watchdog thread would cost the hot path up to a GIL switch
        # interval (5 ms). Created, then cancelled (Humble has no autostart=False).
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._watchdog = self.create_timer(1.0, self._on_watchdog, clock=steady)
        self._watchdog.cancel()
        self.create_timer(REPORT_PERIOD, self._publish_report, clock=steady)
        self.monitor = ArmStateMonitor(self, self.arm, on_change=self._on_operating_state)
        self.monitor.require()
        # the decisions off the control path: taking the arm, yielding, stopping, handing it back
        self.own = ArmOwnership(self.arm, self.law, self.supervisor, self.monitor, self, self.held, guard,
                                disable_builtin=settings.disable_builtin, has_builtin=spec.builtin_gravity_compensation,
                                probe_limits=self._probe_limits() if settings.fit_probe else None)
        self.builtin = self.own.builtin
        self.create_subscription(JointState, self.own.gate.readings_topic, self._on_builtin, CONTROL_STATE_QOS)
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, CONTROL_STATE_QOS)
        # raw: while the node commands, the arm's setpoint_js is not needed, and not even deserialised
        self.create_subscription(JointState, f"/{self.arm}/setpoint_js", self._on_arm_setpoint, CONTROL_STATE_QOS,
                                 raw=True)
        self.get_logger().info(f"{self.arm}: {self.model_kind} compensation from {self.parameter_file}; waiting "
                               f"for /{self.arm}/measured_js ({supervision.describe()})")

    # -- run-time parameters (the schema's runtime ones; the executor's thread, as the hot path) ----
    def _set_torque_limit_scale(self, value: float) -> None:
        """The clamp of the next command: the file's (or the arm's) limits times ``value`` (0, 1]."""
        self.law.scale_limits(value / self.torque_limit_scale)  # scale_limits multiplies what it has
        self.torque_limit_scale = value

    def _set_publish_diagnostics(self, value: bool) -> None:
        self.publish_diagnostics = value

    # -- what the ownership core does through the node (gc/runtime/ownership.py ArmOutputs) ----------
    def zero_command(self) -> None:
        self._command.header.stamp = self.get_clock().now().to_msg()
        self._command.effort = self._zeros[:self.joints]
        self._servo_jf.publish(self._command)

    def set_builtin(self, on: bool) -> None:
        self._builtin.publish(Bool(data=on))

    def hold(self) -> None:
        self._hold.publish(Empty())

    def move_jp(self, goal: list[float]) -> None:
        self._move_jp.publish(JointState(position=goal))

    def stop_watchdog(self) -> None:
        self._watchdog.cancel()

    def _probe_limits(self) -> tuple[list[float], list[float]] | None:
        """The joints' limits (what the arm reaches) for a PSM model's fit probe; None for other laws."""
        if not isinstance(self.law, ModelCompensation):
            return None
        low, high = joint_ranges(CommandChecker(self.law.model, self.arm, section="hardware"))
        return [float(x) for x in low[:self.joints]], [float(x) for x in high[:self.joints]]

    def log(self, level: int, text: str) -> None:
        # one call site per severity: rclpy refuses a call site whose severity changes
        if level >= logging.ERROR:
            self.get_logger().error(text)
        elif level >= logging.WARNING:
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)

    def exit(self, status: int) -> None:
        request_exit(status)

    def flag_subscribed(self) -> bool:
        return self._builtin.get_subscription_count() > 0

    def readings_published(self) -> bool:
        return self.count_publishers(self.own.gate.readings_topic) > 0

    # -- hot path -------------------------------------------------------------------
    def _reject(self, why: str) -> None:
        self.counts.rejected += 1
        self.get_logger().warning(f"measured_js rejected ({self.counts.rejected} so far): {why}",
                                  throttle_duration_sec=1.0)

    def _on_state(self, msg: JointState) -> None:
        start = time.perf_counter()
        arrival = time.monotonic()
        header_stamp = msg.header.stamp
        if not stamp_is_valid(header_stamp.sec, header_stamp.nanosec):
            self.counts.invalid += 1
            return self.own.on_invalid(arrival)
        n = self.joints
        q, qd = self._q_in, self._qd_in
        why = read_sample(msg.position, msg.velocity, n, q, qd)
        if why:
            return self._reject(why)
        own, sup = self.own, self.supervisor
        own.valid_sample()
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
            if not own.may_start(arrival, stamp, q, qd, msg.name):
                self.law.observe(q)  # the arm moves under someone else's control: the cable's state follows
                return None
            if not self._diag.name:
                self._diag.name = own.names
            scale = sup.command(arrival, stamp)
        self._q, self._q_in, self._qd, self._qd_in = q, self._q, qd, self._qd  # no copy, no allocation
        counts = self.counts
        if counts.answered < 64 or not counts.answered & 63:  # a median of 64 intervals: not on every sample
            sup.update_period()
        self._arm_watchdog(int(1e9 * sup.deadline()))
        guard = own.guard
        if guard is not None and guard.watching:
            state = sup.state
            if state != CompensationState.ACTIVE and state != CompensationState.RAMP_IN:
                guard.stop()  # fading (a late state): the arm's motion is no longer the file's alone
            else:
                moved = guard.check(q, arrival)
                if moved >= 0:
                    return own.pulled_away(q, moved)
        law = self.law
        total = law.compute(q, qd, scale)
        ramp_from = own.ramp_from
        if ramp_from is not None:  # a take-over's ramp-in: from the arm's own effort to the compensation
            if scale < 1.0 and sup.state == CompensationState.RAMP_IN:
                rest = 1.0 - scale
                for i in range(n):
                    total[i] += rest * ramp_from[i]
            else:  # ramped in, or fading: the arm's own effort no longer counts
                own.ramp_from = None
        command = self._command
        command.header.stamp = header_stamp
        command.effort = total[:n]
        self._servo_jf.publish(command)
        counts.answered += 1
        if True in law.saturated:
            self._note_saturated()
        if self.publish_diagnostics:
            self._publish_diagnostics(header_stamp, start)

    def _publish_diagnostics(self, stamp, start: float) -> None:
        self._diagnostics.publish(fill_compensation_diagnostics(
            self._diag, stamp, self.law, self.supervisor, self.joints, time.perf_counter() - start))

    def _note_saturated(self) -> None:
        seen = self._saturated_seen
        for i, s in enumerate(self.law.saturated[:self.joints]):
            if s:
                seen[i] = True

    # -- the arm's other topics -------------------------------------------------------
    def _on_repeat(self) -> None:
        """The previous sample again (stamp and positions): no command, no fresh sample for the watchdog."""
        self.counts.repeated += 1
        self.get_logger().warning(
            f"/{self.arm}/measured_js repeats its last stamp ({self.counts.repeated} so far): the arm's control "
            "loop is not advancing (the bridge republishes its last sample); not commanded from, not fresh for "
            "the watchdog", throttle_duration_sec=1.0)

    def _on_operating_state(self, old: OperatingStatus | None, new: OperatingStatus) -> None:
        self.own.on_operating_state(new, READY_SETTLE)

    def _on_builtin(self, msg: JointState) -> None:
        """A reading of the dVRK's own compensation: all-zero effort is off. Taken while the arm is ready."""
        stamp = msg.header.stamp
        if stamp_is_valid(stamp.sec, stamp.nanosec) and self.monitor.ready and len(msg.effort):
            self.own.on_reading(any(msg.effort))

    def _on_arm_setpoint(self, data: bytes) -> None:
        """The arm's commanded effort (its PID's output with the dVRK's own compensation as feed-forward, or
        the effort command), kept while the node does not command: a take-over ramps in from it."""
        state = self.supervisor.state
        if state == CompensationState.ACTIVE or state == CompensationState.RAMP_IN:
            return
        msg = deserialize_message(data, JointState)
        stamp = msg.header.stamp
        if stamp_is_valid(stamp.sec, stamp.nanosec):
            self.held.record(msg.effort, time.monotonic(), msg.position)

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
            self.own.fading()
            self._log_stale(now)
        if tick.command:
            self._publish_fade()
            if sup.holding and not sup.final:
                held = self._throttle.allow("faded", now)
                if held is not None:
                    self.get_logger().info(faded_message(self.arm, sup, now, held))
        if tick.hand_over:
            self.own.hand_over_after_outage(now)
        if tick.next_in is None:
            self._watchdog.cancel()
        else:
            self._arm_watchdog(int(1e9 * tick.next_in))

    def _log_stale(self, now: float) -> None:
        held = self._throttle.allow("stale", now)
        if held is not None:
            self.get_logger().warning(late_message(self.arm, self.supervisor, now, held))

    def _publish_fade(self) -> None:
        """A command of the node's own: the last sample's torques at the fade's scale (the last one 0 N m)."""
        self._command.header.stamp = self.get_clock().now().to_msg()
        start = time.perf_counter()
        self._command.effort = self.law.compute(self._q, self._zeros, self.supervisor.scale)[:self.joints]
        self._servo_jf.publish(self._command)
        self.counts.fade_commands += 1
        if self.publish_diagnostics:  # FADING_OUT, or STOPPED with the last (zero) command
            self._publish_diagnostics(self._command.header.stamp, start)

    # -- /diagnostics ---------------------------------------------------------------------
    def _saturated_joints(self) -> list[str]:
        names = self.own.names or [f"joint {i + 1}" for i in range(self.joints)]
        return [names[i] for i, s in enumerate(self._saturated_seen) if s]

    def health(self, now: float):
        """The compensation's level and message (:func:`~dvrk_ident_ros.gc.runtime.health.compensation_health`)."""
        sup = self.supervisor
        reason = self.own.waiting or f"waiting for valid /{self.arm}/measured_js from a ready arm"
        return compensation_health(self.arm, sup.state, sup.scale, stale_for=sup.stale_for(now),
                                   handed_over=sup.released, final=sup.final, saturated=self._saturated_joints(),
                                   idle_reason=reason, idle_expected=self.own.idle_expected)

    def _publish_report(self) -> None:
        now = time.monotonic()
        health = self.health(now)
        self._report.publish(health.level, health.message, report_values(
            self.counts, self.supervisor, now, flag_owned=self.builtin.owned, saturated=self._saturated_joints(),
            parameter_file=self.parameter_file, model=self.model_kind))
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
        handed = self.own.hand_over(count=False, hold=True)
        time.sleep(0.05)  # let the middleware deliver the hand-over before the context goes
        self.get_logger().info(f"exit: {faded}{exit_summary(self.counts, sup)}; {handed}")

    def _fade_out_at_exit(self, start: float) -> str:
        """The final fade: the executor keeps answering samples at the falling scale and the watchdog commands
        at the state's period without them; a zero command at the hard deadline at the latest."""
        sup = self.supervisor
        self._arm_watchdog(int(1e9 * sup.deadline()))
        spin_until(self, lambda: sup.state == CompensationState.STOPPED, start + sup.settings.fade_out_time
                   + EXIT_MARGIN, step=self._on_watchdog, period=sup.period)
        self._watchdog.cancel()
        took = time.monotonic() - start
        if sup.state != CompensationState.STOPPED:  # the deadline: zero at once
            sup.stop()
            self.zero_command()
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
