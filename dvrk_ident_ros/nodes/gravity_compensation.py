"""Node ``gravity_compensation``: event-driven torques for every ``measured_js`` sample.

On each ``/<ARM>/measured_js`` it computes the compensation from that very
sample (a gc JSON through the MLSE law, or an identified model's gravity,
springs and cable) and publishes ``/<ARM>/servo_jf`` at once, then the
diagnostics (``~/diagnostics``). Safety: NaN / wrong-length samples are
rejected (logged, no command), torques are clamped, ramp in over
``ramp_in_time``; a steady-clock watchdog fades the torques out when the state
goes stale and then stops commanding.

The arm's state (ground truth: ../shared/reference/dvrk-ros2-interface.md,
"What the real arm does"):

- Nothing is sent (no ``servo_jf``, no ``use_gravity_compensation``) until the
  arm is ENABLED, homed and not busy (``/<ARM>/operating_state``; where
  crtk_msgs is absent, the stamps only) and its samples are valid: a sample
  with ``header.stamp`` 0 is never commanded from and never re-arms the
  watchdog. What the node waits for is logged once per reason.
- When the arm stops being ready (operating_state, or a stamp-0 sample) the
  torques fade to exactly 0 N m, then the flag is handed back; if it became
  busy (homing: an effort command would fault it) the node stops at once
  without another command. It ramps in again once the arm is ready.
- The dVRK's own compensation (``/<ARM>/gravity_compensation/setpoint_js``,
  all-zero effort: off; :class:`~dvrk_ident_ros.gc.supervisor.BuiltinCompensation`):
  turned off before the first command, and the node commands only once that
  topic says it is off; handed back as it was found before the first take-over
  (2.3: off stays off, 2.4: back on) at the end of a fade and at exit. Someone
  else turning it on while the node commands (teleoperation does when it
  enables): the node sends one zero command and stops, says so once, leaves
  the flag alone (no fight, at exit too), and ramps in again once the topic
  says it is off again. An arm that publishes no readings (a PSM of older
  dVRKs): the flag is turned off as before, and never turned on (the node
  cannot know it was).

The watchdog is a deadline, not a tick: one steady-clock timer that every valid
sample re-arms (``Timer.reset``, under a microsecond) to
:meth:`~dvrk_ident_ros.gc.supervisor.CompensationSupervisor.deadline` after it.
It only fires when the state is late; it then ticks every
``fade_out_period`` while fading out, and is cancelled once stopped. A 1 kHz
watchdog tick in rclpy costs about 13 % of a core on its own. (Created, then
cancelled at once: ``create_timer(..., autostart=False)`` is Jazzy and later.)
The checks of the arm's state on the control path are a few attribute reads;
the readiness, the flag and the subscriber checks run only while not
commanding.
"""
from __future__ import annotations

import gc
import math
import sys
import time
from pathlib import Path

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from dvrk_ident.msg import GravityCompensationDiagnostics
from dvrk_ident_ros.arm_state import OperatingStatus, stamp_is_valid
from dvrk_ident_ros.errors import DataError, DvrkIdentError
from dvrk_ident_ros.gc.supervisor import (
    ACTIVE,
    FADING_OUT,
    RAMP_IN,
    STOPPED,
    BuiltinCompensation,
    CompensationSupervisor,
    SupervisorSettings,
)
from dvrk_ident_ros.nodes.common import (
    CONTROL_STATE_QOS,
    STATE_QOS,
    ArmStateMonitor,
    arm_family,
    check_arm_name,
    declare,
    run,
)

#: s: an arm whose gravity_compensation/setpoint_js has no publisher this long after its first valid ready
#: sample publishes none (its endpoints are discovered together with measured_js's; this only covers a race)
NO_READINGS_AFTER = 0.3
#: s: after the node handed the flag back, the readings reflect it before the node takes over again
HANDOVER_SETTLE = 0.3
#: s: a stamp-0 stream while the operating state says ready is reported after this long (a sample in flight
#: when the arm turns ready is no news)
INVALID_REPORT_AFTER = 1.0
#: s: while the dVRK's own compensation does not switch off after the node's "off", the "off" is repeated
REPEAT_OFF_EVERY = 1.0
#: s: the dVRK's own compensation still on this long after the node's "off" is reported
SWITCH_OFF_TIME = 0.2

DEFAULT_TORQUE_LIMIT = {  # N m (N): for an identified model (a gc JSON carries its own limits)
    "mtm": [1.5, 1.5, 1.5, 0.6, 0.3, 0.3, 0.1],
    "psm": [3.0, 3.0, 10.0, 0.3, 0.3, 0.3, 0.3],
}


def load_compensation(path: str, arm: str):
    """The law for a parameter file: a dVRK gc JSON (MLSE) or a dvrk_ident parameter file."""
    from dvrk_ident_ros.files import read_document

    if not path:
        raise DataError("parameter_file is empty: give a gc-<ARM>-<SN>.json or an identified parameter file")
    raw = read_document(Path(path))
    family = arm_family(arm)
    if isinstance(raw, dict) and "GC_controller" in raw:
        from dvrk_ident_ros.gc.law import CompensationLaw
        from dvrk_ident_ros.gc.params import load_gc

        params = load_gc(path)
        if params.arm != arm:
            raise DataError(f"{path}: gc parameters of {params.arm}, this node drives {arm}")
        return CompensationLaw(params), "mlse"
    from dvrk_ident_ros.gc.model_law import load_model_compensation

    return load_model_compensation(Path(path), family, np.array(DEFAULT_TORQUE_LIMIT[family])), "dynamic"


class GravityCompensationNode(Node):
    def __init__(self) -> None:
        super().__init__("gravity_compensation")
        self.arm = check_arm_name(declare(self, "arm", "MTML"))
        self.parameter_file = str(declare(self, "parameter_file", ""))
        settings = SupervisorSettings(
            ramp_in_time=float(declare(self, "ramp_in_time", 1.0)),
            fade_out_time=float(declare(self, "fade_out_time", 0.5)),
            stale_periods=float(declare(self, "stale_periods", 3.0)))
        limit_scale = float(declare(self, "torque_limit_scale", 1.0))
        self.disable_builtin = bool(declare(self, "disable_builtin", True))
        self.publish_diagnostics = bool(declare(self, "publish_diagnostics", True))
        self.fade_out_period = float(declare(self, "fade_out_period", 0.001))
        if not 0.0 < limit_scale <= 1.0:
            raise DvrkIdentError(f"torque_limit_scale {limit_scale}: expected (0, 1]")
        if not 0.0 < self.fade_out_period <= 0.1:
            raise DvrkIdentError(f"fade_out_period {self.fade_out_period}: expected (0, 0.1] s")
        self.law, self.model_kind = load_compensation(self.parameter_file, self.arm)
        self.law.scale_limits(limit_scale)
        self.joints = 7 if arm_family(self.arm) == "mtm" else 6
        self._law_dof = len(self.law.total)
        self.supervisor = CompensationSupervisor(settings)
        self.builtin = BuiltinCompensation()
        self._q = [0.0] * self._law_dof  # the last sample commanded from (the fade-out's), padded for the PSM's jaw
        self._qd = [0.0] * self._law_dof
        self._q_in = [0.0] * self._law_dof  # the sample being checked; swapped with _q once commanded from
        self._qd_in = [0.0] * self._law_dof
        self._zeros = [0.0] * self._law_dof
        self.rejected = 0
        self.answered = 0
        self.invalid = 0  # samples with stamp 0 (the arm's mark of invalid data)
        self._waiting = ""  # what the node waits for, as last logged ("" while commanding)
        self._ready_since: float | None = None  # first valid sample while ready and stopped (monotonic s)
        self._invalid_since: float | None = None
        self._handed_over_at = -math.inf
        self._off_sent_at = -math.inf
        self._readable = False  # the arm publishes gravity_compensation/setpoint_js
        self._builtin_topic = f"/{self.arm}/gravity_compensation/setpoint_js"
        self._servo_jf = self.create_publisher(JointState, f"/{self.arm}/servo_jf", STATE_QOS)
        self._builtin = self.create_publisher(Bool, f"/{self.arm}/use_gravity_compensation", 10)
        self._diagnostics = self.create_publisher(GravityCompensationDiagnostics, "~/diagnostics", 10)
        self._command = JointState()
        self._diag = GravityCompensationDiagnostics()
        self._diag.parameter_source = self.parameter_file
        self._diag.model_kind = self.model_kind
        # Watchdog: a steady-clock deadline timer on the same executor (independent of /clock), armed by the
        # first sample. One Python thread only: a watchdog thread would cost the hot path up to a GIL switch
        # interval (5 ms). Created, then cancelled (Humble has no autostart=False).
        self._last_tick = time.monotonic()
        self._watchdog = self.create_timer(1.0, self._on_watchdog, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._watchdog.cancel()
        self.monitor = ArmStateMonitor(self, self.arm, on_change=self._on_operating_state)
        self.create_subscription(JointState, self._builtin_topic, self._on_builtin, CONTROL_STATE_QOS)
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, CONTROL_STATE_QOS)
        self.get_logger().info(
            f"{self.arm}: {self.model_kind} compensation from {self.parameter_file}; waiting for "
            f"/{self.arm}/measured_js (ramp-in {settings.ramp_in_time:g} s, watchdog {settings.stale_periods:g} "
            "periods)" + ("" if self.monitor.available else
                          "; crtk_msgs absent: the arm's readiness is judged from the stamps only"))

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
        if was != ACTIVE and was != RAMP_IN and not self._may_start(arrival):
            return None
        self._q, self._q_in, self._qd, self._qd_in = q, self._q, qd, self._qd  # no copy, no allocation
        scale = sup.on_state(arrival, header_stamp.sec + 1e-9 * header_stamp.nanosec)
        if self.answered < 64 or not self.answered & 63:  # a median of 64 intervals: not on every sample
            sup.update_period()
        self._arm_watchdog(int(1e9 * sup.deadline()))
        total = self.law.compute(q, qd, scale)
        command = self._command
        command.header.stamp = header_stamp
        command.effort = total[:n]
        self._servo_jf.publish(command)
        self.answered += 1
        if self.publish_diagnostics:
            self._publish_diagnostics(header_stamp, start)

    def _publish_diagnostics(self, stamp, start: float) -> None:
        law, d, n = self.law, self._diag, self.joints
        d.header.stamp = stamp
        d.gravity_torque = law.gravity[:n]
        d.disturbance_torque = law.disturbance[:n]
        d.blend_weight = law.alpha[:n]
        d.total_torque = law.total[:n]
        d.saturated = law.saturated[:n]
        d.state = self.supervisor.state
        d.ramp_scale = self.supervisor.scale
        d.compute_time = time.perf_counter() - start
        self._diagnostics.publish(d)

    # -- the arm's state ------------------------------------------------------------
    def _wait(self, reason: str) -> None:
        """Not commanding because of ``reason``: logged once, until the reason changes or commanding starts."""
        if reason != self._waiting:
            self._waiting = reason
            self.get_logger().warning(f"not commanding {self.arm}: {reason}")

    def _on_invalid(self, now: float) -> None:
        """A sample with stamp 0: the arm is not ready. Never commanded from, never a fresh sample."""
        self.invalid += 1
        self._ready_since = None
        sup = self.supervisor
        if sup.state != STOPPED:
            # the arm is not ready: it ignores effort commands, and one would fault it if it is homing (the
            # busy operating_state may come after this sample): stop at once, no further command
            self._stop(f"/{self.arm}/measured_js has stamp 0 (the arm's data is invalid: not ready); stopped at "
                       "once without another command")
        if self._invalid_since is None:
            self._invalid_since = now
        if sup.state != STOPPED:
            return
        if self.builtin.owned:  # taken over, not commanding yet
            self.get_logger().info(self._hand_over())
        if not self.monitor.ready:
            self._wait(self.monitor.reason())
        elif not self.monitor.available or now - self._invalid_since >= INVALID_REPORT_AFTER:
            self._wait(f"/{self.arm}/measured_js has stamp 0, the arm's mark of invalid data (powered off, not "
                       "homed or faulted?): waiting for valid samples")

    def _on_operating_state(self, old: OperatingStatus | None, new: OperatingStatus) -> None:
        if new.ready:
            if self.supervisor.state == STOPPED and self._waiting:
                self.get_logger().info(f"{self.arm} is ready ({new.describe()}): compensating from the next "
                                       "valid sample")
            return
        self.builtin.forget()
        self._ready_since = None
        sup = self.supervisor
        reason = new.not_ready_reason(self.arm)
        if sup.state != STOPPED:
            # a not-ready arm ignores effort commands, and a busy (homing) one faults on them: not even a zero
            self._stop(f"{reason}; stopped at once without another command (a not-ready arm ignores effort "
                       "commands, a homing one faults on them)")
        elif self.builtin.owned:  # taken over, not commanding yet
            self.get_logger().info(self._hand_over())
        self._wait(reason)

    def _on_builtin(self, msg: JointState) -> None:
        """A reading of the dVRK's own compensation: all-zero effort is off. Taken while the arm is ready."""
        stamp = msg.header.stamp
        if not stamp_is_valid(stamp.sec, stamp.nanosec) or not self.monitor.ready or not len(msg.effort):
            return
        self._readable = True
        if self.builtin.observe(any(msg.effort)):
            self._yield()

    def _yield(self) -> None:
        """Someone else turned the dVRK's own compensation on: one zero command, stop, do not fight."""
        reason = (f"the dVRK's own gravity compensation of {self.arm} was turned on by someone else "
                  "(teleoperation turns it on when it enables): stopped commanding so that the arm does not get "
                  "its gravity twice; compensating again once it is off")
        if self.supervisor.state != STOPPED:
            self._command.header.stamp = self.get_clock().now().to_msg()
            self._command.effort = self._zeros[:self.joints]
            self._servo_jf.publish(self._command)
        self.supervisor.stop()
        self._watchdog.cancel()
        self._waiting = reason
        self.get_logger().warning(reason)

    def _may_start(self, now: float) -> bool:
        """Whether a valid sample may be commanded from (not RAMP_IN or ACTIVE); takes the flag over when due.

        Off the control path: runs only while the node is not commanding."""
        if not self.monitor.ready:
            self._wait(self.monitor.reason())
            return False
        if self._ready_since is None:
            self._ready_since = now
        sup, builtin = self.supervisor, self.builtin
        if sup.state == STOPPED:
            if self.disable_builtin and self._builtin.get_subscription_count() == 0:
                self._wait(f"nothing subscribes /{self.arm}/use_gravity_compensation: the dVRK's own compensation "
                           "may be on (disable_builtin:=false if the arm has none)")
                return False
            if not self._readable:
                self._readable = self.count_publishers(self._builtin_topic) > 0
                if not self._readable and now - self._ready_since < NO_READINGS_AFTER:
                    return False
            if builtin.yielded:
                return False  # said once in _yield; over when a reading says off
            if self._readable and (builtin.reading is None or now - self._handed_over_at < HANDOVER_SETTLE):
                if now - self._ready_since > NO_READINGS_AFTER + HANDOVER_SETTLE:  # a reading is due at once
                    self._wait(f"no valid {self._builtin_topic} while the arm is ready (the state of the dVRK's "
                               "own compensation): waiting for it")
                return False
            if not builtin.owned:
                builtin.take_over()
                self._send_off(now)
        if not builtin.may_command(self._readable):
            if self.disable_builtin and now - self._off_sent_at >= REPEAT_OFF_EVERY:
                self._send_off(now)
            if now - self._off_sent_at > SWITCH_OFF_TIME:  # the arm takes a period or two to switch it off
                    self._wait(f"the dVRK's own gravity compensation of {self.arm} is on: waiting until it is off"
                           + ("" if self.disable_builtin else
                              " (disable_builtin is false: turn it off from the console)"))
            return False
        if sup.state == STOPPED:
            found = {None: "unknown", True: "on", False: "off"}[builtin.found]
            self.get_logger().info(f"compensating {self.arm}: ramp-in over {sup.settings.ramp_in_time:g} s (the "
                                   f"dVRK's own compensation was {found} before this node took over)")
        self._waiting = ""
        return True

    def _send_off(self, now: float) -> None:
        if self.disable_builtin:
            self._builtin.publish(Bool(data=False))  # before the first command
            self._off_sent_at = now

    def _hand_over(self) -> str:
        """Give the flag back as found; what became of it, for the log."""
        value = self.builtin.hand_over()
        if value is None:
            return "the dVRK's own compensation left as it is"
        if self.disable_builtin:
            self._builtin.publish(Bool(data=value))
            self._handed_over_at = time.monotonic()
        return f"the dVRK's own compensation back {'on' if value else 'off'} as found"

    def _stop(self, reason: str) -> None:
        """Stop at once, no command; hand the flag back."""
        self.supervisor.stop()
        self._watchdog.cancel()
        self.get_logger().warning(f"{reason}; {self._hand_over()}")

    # -- watchdog, fade-out ---------------------------------------------------------
    def _arm_watchdog(self, period_ns: int) -> None:
        """(Re)start the watchdog timer: ``period_ns`` from now, then every ``period_ns``."""
        if period_ns != self._watchdog.timer_period_ns:
            self._watchdog.timer_period_ns = period_ns
        self._watchdog.reset()

    def _begin_fade(self, reason: str, now: float, stale: bool = False) -> None:
        if self.supervisor.begin_fade_out(stale):
            self.get_logger().warning(f"{reason}: fading out over {self.supervisor.settings.fade_out_time:g} s")
            self._last_tick = now
            self._arm_watchdog(int(1e9 * self.fade_out_period))

    def _on_watchdog(self) -> None:
        now = time.monotonic()
        sup = self.supervisor
        if sup.state in (RAMP_IN, ACTIVE):
            if not sup.is_stale(now):  # a sample re-armed the deadline as it expired
                return
            self._begin_fade(f"/{self.arm}/measured_js stale for {1e3 * (now - sup._last_arrival):.1f} ms"
                             f" (period {1e3 * sup.period:.1f} ms)", now, stale=True)
        if sup.state == FADING_OUT:
            self._fade_step(now - self._last_tick)
            self._last_tick = now
        if sup.state == STOPPED:
            self._watchdog.cancel()

    def _fade_step(self, dt: float) -> None:
        """One fade-out command: the last sample's torques at the lowered scale; at zero, the hand-over."""
        sup = self.supervisor
        scale = sup.fade_step(dt)
        self._command.header.stamp = self.get_clock().now().to_msg()
        start = time.perf_counter()
        self._command.effort = self.law.compute(self._q, self._zeros, scale)[:self.joints]
        self._servo_jf.publish(self._command)
        if self.publish_diagnostics:  # FADING_OUT, or STOPPED with the last (zero) command
            self._publish_diagnostics(self._command.header.stamp, start)
        if sup.state == STOPPED:
            self.get_logger().info(f"compensation stopped; {self._hand_over()}")

    def close(self) -> None:
        """At exit: zero effort if commanding, then the flag back as found."""
        if self.supervisor.state != STOPPED:
            self._command.header.stamp = self.get_clock().now().to_msg()
            self._command.effort = self._zeros[:self.joints]
            self._servo_jf.publish(self._command)
            self.supervisor.stop()
        handed = self._hand_over()
        time.sleep(0.05)  # let the middleware deliver the hand-over before the context goes
        self.get_logger().info(f"exit: answered {self.answered} samples, rejected {self.rejected}, invalid (stamp 0) "
                               f"{self.invalid}, stale events {self.supervisor.stale_events}; {handed}")


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
