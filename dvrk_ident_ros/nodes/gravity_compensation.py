"""Node ``gravity_compensation``: event-driven torques for every ``measured_js`` sample.

On each ``/<ARM>/measured_js`` it computes the compensation from that very
sample (a gc JSON through the MLSE law, or an identified model's gravity,
springs and cable) and publishes ``/<ARM>/servo_jf`` at once, then the
diagnostics (``~/diagnostics``). The dVRK's own compensation is turned off
when compensation starts and back on when it stops or the node exits.
Safety: NaN / wrong-length samples are rejected (logged, no command), torques
are clamped, ramp in over ``ramp_in_time``; a steady-clock watchdog fades the
torques out when the state goes stale and then stops commanding.

The watchdog is a deadline, not a tick: one steady-clock timer that every valid
sample re-arms (``Timer.reset``, under a microsecond) to
:meth:`~dvrk_ident_ros.gc.supervisor.CompensationSupervisor.deadline` after it.
It only fires when the state is late; it then ticks every
``fade_out_period`` while fading out, and is cancelled once stopped. A 1 kHz
watchdog tick in rclpy costs about 13 % of a core on its own.
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
from dvrk_ident_ros.errors import DataError, DvrkIdentError
from dvrk_ident_ros.gc.supervisor import (
    ACTIVE,
    FADING_OUT,
    RAMP_IN,
    STOPPED,
    CompensationSupervisor,
    SupervisorSettings,
)
from dvrk_ident_ros.nodes.common import CONTROL_STATE_QOS, STATE_QOS, arm_family, check_arm_name, declare, run

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
        self._q = [0.0] * self._law_dof  # last valid sample, padded for the PSM's jaw
        self._qd = [0.0] * self._law_dof
        self._zeros = [0.0] * self._law_dof
        self.rejected = 0
        self.answered = 0
        self._servo_jf = self.create_publisher(JointState, f"/{self.arm}/servo_jf", STATE_QOS)
        self._builtin = self.create_publisher(Bool, f"/{self.arm}/use_gravity_compensation", 10)
        self._diagnostics = self.create_publisher(GravityCompensationDiagnostics, "~/diagnostics", 10)
        self._command = JointState()
        self._diag = GravityCompensationDiagnostics()
        self._diag.parameter_source = self.parameter_file
        self._diag.model_kind = self.model_kind
        self.create_subscription(JointState, f"/{self.arm}/measured_js", self._on_state, CONTROL_STATE_QOS)
        # Watchdog: a steady-clock deadline timer on the same executor (independent of /clock), armed by the
        # first sample. One Python thread only: a watchdog thread would cost the hot path up to a GIL switch
        # interval (5 ms).
        self._last_tick = time.monotonic()
        self._watchdog = self.create_timer(1.0, self._on_watchdog, clock=Clock(clock_type=ClockType.STEADY_TIME),
                                           autostart=False)
        self.get_logger().info(
            f"{self.arm}: {self.model_kind} compensation from {self.parameter_file}; waiting for "
            f"/{self.arm}/measured_js (ramp-in {settings.ramp_in_time:g} s, watchdog {settings.stale_periods:g} "
            "periods)")

    # -- hot path -------------------------------------------------------------------
    def _reject(self, why: str) -> None:
        self.rejected += 1
        self.get_logger().warning(f"measured_js rejected ({self.rejected} so far): {why}", throttle_duration_sec=1.0)

    def _on_state(self, msg: JointState) -> None:
        start = time.perf_counter()
        arrival = time.monotonic()
        n = self.joints
        position, velocity = msg.position, msg.velocity
        if len(position) != n:
            return self._reject(f"{len(position)} positions, expected {n}")
        if len(velocity) not in (0, n):
            return self._reject(f"{len(velocity)} velocities, expected {n}")
        q, qd = self._q, self._qd
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
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec or arrival
        sup = self.supervisor
        was = sup.state
        if was == STOPPED and not self._take_over():
            return None
        scale = sup.on_state(arrival, stamp)
        if self.answered < 64 or not self.answered & 63:  # a median of 64 intervals: not on every sample
            sup.update_period()
        self._arm_watchdog(int(1e9 * sup.deadline()))
        total = self.law.compute(q, qd, scale)
        command = self._command
        command.header.stamp = msg.header.stamp
        command.effort = total[:n]
        self._servo_jf.publish(command)
        self.answered += 1
        if self.publish_diagnostics:
            self._publish_diagnostics(msg.header.stamp, start)

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

    # -- watchdog, hand-over --------------------------------------------------------
    def _take_over(self) -> bool:
        """Turn the dVRK's own compensation off before our first command: never both at full strength.

        False (no command) while nothing subscribes ``use_gravity_compensation``: a message sent before the
        arm's subscription is matched is lost, and the arm would get its gravity twice."""
        if not self.disable_builtin:
            return True
        if self._builtin.get_subscription_count() == 0:
            self.get_logger().warning(
                f"nothing subscribes /{self.arm}/use_gravity_compensation: not commanding, the dVRK's own "
                "compensation may be on (disable_builtin:=false if the arm has none)", throttle_duration_sec=2.0)
            return False
        self._builtin.publish(Bool(data=False))  # before the first command; the ramp-in covers any overlap
        return True

    def _hand_over(self, builtin: bool) -> None:
        if self.disable_builtin:
            self._builtin.publish(Bool(data=builtin))

    def _arm_watchdog(self, period_ns: int) -> None:
        """(Re)start the watchdog timer: ``period_ns`` from now, then every ``period_ns``."""
        if period_ns != self._watchdog.timer_period_ns:
            self._watchdog.timer_period_ns = period_ns
        self._watchdog.reset()

    def _on_watchdog(self) -> None:
        now = time.monotonic()
        sup = self.supervisor
        if sup.state in (RAMP_IN, ACTIVE):
            if not sup.is_stale(now):  # a sample re-armed the deadline as it expired
                return
            self.get_logger().warning(f"/{self.arm}/measured_js stale for {1e3 * (now - sup._last_arrival):.1f} ms"
                                      f" (period {1e3 * sup.period:.1f} ms): fading out", throttle_duration_sec=1.0)
            sup.begin_fade_out()
            self._last_tick = now
            self._arm_watchdog(int(1e9 * self.fade_out_period))
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
            self._hand_over(builtin=True)
            self.get_logger().info("compensation stopped; the dVRK's own compensation is back on")

    def close(self) -> None:
        """At exit: zero effort, then the dVRK's own compensation back on."""
        if self.supervisor.state != STOPPED or self.answered:
            self._command.effort = [0.0] * self.joints
            self._servo_jf.publish(self._command)
        self._hand_over(builtin=True)
        time.sleep(0.05)  # let the middleware deliver the hand-over before the context goes
        self.get_logger().info(f"exit: answered {self.answered} samples, rejected {self.rejected}, "
                               f"stale events {self.supervisor.stale_events}")


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
