"""Node ``simulated_arm``: one dVRK arm (MTML, MTMR, PSM1..3) on the dVRK ROS 2 topics.

State: ``/<ARM>/operating_state`` (crtk_msgs/OperatingState, transient_local:
at start and on every change), ``/<ARM>/goal_reached`` (std_msgs/Bool,
transient_local: true when a move_jp ended, false when it was cut short),
``/<ARM>/measured_js`` and ``setpoint_js`` (plus ``jaw/...`` for a PSM,
``gripper/measured_js`` for an MTM) and ``/<ARM>/gravity_compensation/setpoint_js``
(the built-in compensation's torques in ``effort``, zeros while it is off).
While the arm is not ENABLED and homed (``initial_state``, default DISABLED
like a freshly started console) the joint states are all zeros with
``header.stamp`` 0, the bridge's mark of invalid data.

Commands: ``/<ARM>/state_command`` (crtk_msgs/StringStamped: enable, disable,
home, unhome, pause, resume); ``servo_jp``, ``move_jp`` (clipped to the
limits), ``servo_jf``, ``hold`` (obeyed only when the arm is ENABLED and homed,
else ignored with a throttled "arm not ready" warning; a ``servo_jf`` while
homing faults the arm); ``use_gravity_compensation`` (any state);
``/console/teleop/enable`` (std_msgs/Bool: true turns the built-in
compensation back on, as dVRK teleoperation does); the test hook
``/<ARM>/simulation/inject_fault`` (std_msgs/Empty: FAULT at once). Every
command is checked by the core (length, NaN, limits, servo_jp jumps); a
rejected one is logged and the arm keeps its previous command.

With ``publish_clock`` the node owns time: it steps the physics and publishes
``/clock`` as fast as ``real_time_factor`` allows (0: as fast as possible), so
the other nodes run with ``use_sim_time``. The operating state runs on the
simulated time either way.
"""
from __future__ import annotations

import math
import sys
import threading
import time

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty

from dvrk_ident_ros.arm_state import OperatingStatus
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.nodes.common import (
    EVENT_QOS,
    STATE_QOS,
    arm_family,
    check_arm_name,
    crtk_messages,
    declare,
    fill_joint_state,
    guarded,
    run,
    shutdown_requested,
)
from dvrk_ident_ros.sim.arm import FAULT_TRACKING_ERROR, Sample, SimulatedArm
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.operating import ArmNotReadyError
from dvrk_ident_ros.sim.pacing import RealTimePacer

SIM_EPOCH = 1.0  # s: simulated time starts here (0 means "no time yet" to rclpy)
INVALID_STAMP = Time(sec=0, nanosec=0)  # the bridge's mark of invalid data
NOT_READY_EVERY = 2.0  # s: at most one "arm not ready" warning per command topic in this time
#: The bridge's subscribers (state_command, the teleop stand-in): reliable, volatile.
COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE)


def _time_msg(seconds: float) -> Time:
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return Time(sec=sec, nanosec=nanosec)


class SimulatedArmNode(Node):
    def __init__(self) -> None:
        super().__init__("simulated_arm")
        self.arm = check_arm_name(declare(self, "arm", "PSM1"))
        self.publish_rate = float(declare(self, "publish_rate", 100.0))
        physics_rate = float(declare(self, "physics_rate", 1500.0))
        self.publish_clock = bool(declare(self, "publish_clock", False))
        self.real_time_factor = float(declare(self, "real_time_factor", 1.0))
        true_parameters = str(declare(self, "true_parameters", ""))
        config_file = str(declare(self, "config_file", ""))
        noise = bool(declare(self, "noise", True))
        seed = int(declare(self, "seed", 0))
        initial = list(declare(self, "initial_position", [0.0]))
        initial_state = str(declare(self, "initial_state", "DISABLED"))
        homing_time = float(declare(self, "homing_time", 3.0))
        dvrk_version = str(declare(self, "dvrk_version", "2.4", kind=object))  # "-p dvrk_version:=2.3" is a double
        tool_engaged = bool(declare(self, "tool_engaged", True))
        fault_tracking_error = float(declare(self, "fault_tracking_error", FAULT_TRACKING_ERROR))
        if not 1.0 <= self.publish_rate <= 1000.0:
            raise DvrkIdentError(f"publish_rate {self.publish_rate} Hz: expected 1..1000 Hz")
        if physics_rate < self.publish_rate:
            raise DvrkIdentError(f"physics_rate {physics_rate} Hz below publish_rate {self.publish_rate} Hz")
        family = arm_family(self.arm)
        config = load_sim_config(family, config_file or None, true_parameters or None)
        if initial in ([], [0.0]):  # the default: the arm's home pose
            initial_position = None
        elif len(initial) == config.model.dof:
            initial_position = np.asarray(initial, dtype=float)
        else:
            raise DvrkIdentError(f"initial_position: {len(initial)} values, the {family.upper()} has "
                                 f"{config.model.dof} joints")
        self.sim = SimulatedArm(config, self.arm if family == "mtm" else None, noise=noise, seed=seed,
                                physics_rate=physics_rate, initial_position=initial_position,
                                initial_state=initial_state, homing_time=homing_time, dvrk_version=dvrk_version,
                                tool_engaged=tool_engaged, fault_tracking_error=fault_tracking_error)
        self.names = self.sim.names
        # the PSM's jaw is published on its own topics; without a tool the PSM publishes its 7 raw joints
        self.arm_joints = 6 if family == "psm" and self.sim.tool_engaged else 7
        self.family = family

        def pub(topic: str, msg_type=JointState, qos=STATE_QOS):
            return self.create_publisher(msg_type, f"/{self.arm}/{topic}", qos)

        self._pub = {name: pub(name) for name in ("measured_js", "setpoint_js", "gravity_compensation/setpoint_js")}
        if family == "psm":
            self._pub["jaw/measured_js"] = pub("jaw/measured_js")
            self._pub["jaw/setpoint_js"] = pub("jaw/setpoint_js")
        else:
            self._pub["gripper/measured_js"] = pub("gripper/measured_js")
        self._goal_pub = pub("goal_reached", Bool, EVENT_QOS)
        self._crtk = crtk_messages()
        self._state_pub = pub("operating_state", self._crtk.OperatingState, EVENT_QOS) if self._crtk else None
        self._published_status: OperatingStatus | None = None
        self._clock_pub = self.create_publisher(Clock, "/clock", 10) if self.publish_clock else None

        self._lock = threading.Lock()  # commands (executor) vs physics (the /clock loop)
        self._not_ready_logged: dict[str, float] = {}
        self._not_ready_suppressed: dict[str, int] = {}

        def locked(topic: str, callback):
            def call(msg) -> None:
                with self._lock:
                    try:
                        callback(msg)
                    except ArmNotReadyError:
                        self._warn_not_ready(topic)
                    finally:
                        self._publish_events()
            return call

        def sub(topic: str, msg_type, callback, qos=STATE_QOS, absolute: bool = False) -> None:
            name = topic if absolute else f"/{self.arm}/{topic}"
            self.create_subscription(msg_type, name, guarded(self, topic, locked(topic, callback)), qos)

        sub("servo_jp", JointState, self._servo_jp)
        sub("move_jp", JointState, self._move_jp)
        sub("servo_jf", JointState, self._servo_jf)
        sub("use_gravity_compensation", Bool, lambda msg: self.sim.use_gravity_compensation(msg.data))
        sub("hold", Empty, lambda msg: self.sim.hold())
        sub("simulation/inject_fault", Empty, lambda msg: self.sim.inject_fault("fault injected (simulation)"),
            COMMAND_QOS)
        sub("/console/teleop/enable", Bool, self._teleop_enable, COMMAND_QOS, absolute=True)
        if self._crtk is not None:
            sub("state_command", self._crtk.StringStamped, lambda msg: self.sim.state_command(msg.string),
                COMMAND_QOS)
        else:
            self.get_logger().warning("crtk_msgs is not installed: no operating_state, no state_command; "
                                      f"the arm stays {initial_state}")
        if family == "psm":
            sub("jaw/servo_jp", JointState, self._jaw_servo_jp)
            sub("jaw/move_jp", JointState, self._jaw_move_jp)
            sub("jaw/servo_jf", JointState, self._jaw_servo_jf)
        self._jaw_effort = 0.0
        self._carry = 0.0
        self._last_wall = time.monotonic()
        self.steps = 0
        # a stall longer than two state periods is not integrated open-loop: in wall-clock time a tick
        # integrates at most that much; under /clock that much lag is caught up, more slips (sim/pacing.py)
        self._max_step = 2.0 / self.publish_rate
        self._pacer = RealTimePacer(self.real_time_factor, self._max_step / (self.real_time_factor or 1.0))
        with self._lock:
            self._publish_events()
        if not self.publish_clock:
            self.create_timer(1.0 / self.publish_rate, self._tick_wall)
        self.get_logger().info(
            f"simulated {self.arm} ({family}, dVRK {dvrk_version}, true parameters {config.parameter_file.name}): "
            f"{self.sim.status.describe()}, built-in gravity compensation "
            f"{'on' if self.sim.builtin_gravity_compensation else 'off'}; state at {self.publish_rate:g} Hz, "
            f"physics at {physics_rate:g} Hz, "
            + (f"publishing /clock (real-time factor {self.real_time_factor or 'max'})" if self.publish_clock
               else "wall-clock time"))

    # -- events: operating state, goal reached, "arm not ready" ---------------------------
    def _publish_events(self) -> None:
        """operating_state when it changed (logged), goal_reached for every move that ended; lock held."""
        status = self.sim.status
        if status != self._published_status:
            old, self._published_status = self._published_status, status
            reason = self.sim.operating.fault_reason if status.state == "FAULT" else ""
            change = f"{self.arm}: {old.describe() if old else 'start'} -> {status.describe()}"
            if reason:  # rclpy: one severity per call site
                self.get_logger().warning(f"{change} ({reason})")
            else:
                self.get_logger().info(change)
            if self._state_pub is not None:
                msg = self._crtk.OperatingState(state=status.state, is_homed=status.is_homed, is_busy=status.is_busy)
                msg.header.stamp = self._now()
                self._state_pub.publish(msg)
        for reached in self.sim.pop_goal_events():
            self._goal_pub.publish(Bool(data=reached))

    def _now(self) -> Time:
        """The node's time: the simulated time it publishes on /clock, or the wall clock."""
        return _time_msg(SIM_EPOCH + self.sim.time) if self.publish_clock else self.get_clock().now().to_msg()

    def _warn_not_ready(self, topic: str) -> None:
        now = time.monotonic()
        if now - self._not_ready_logged.get(topic, -math.inf) < NOT_READY_EVERY:
            self._not_ready_suppressed[topic] = self._not_ready_suppressed.get(topic, 0) + 1
            return
        more = self._not_ready_suppressed.pop(topic, 0)
        self._not_ready_logged[topic] = now
        self.get_logger().warning(f"{topic}: ignored, arm not ready: {self.sim.not_ready_reason(self.arm)}"
                                  + (f" (+{more} more since the last report)" if more else ""))

    # -- commands: dVRK topics -> core ----------------------------------------------
    def _teleop_enable(self, msg: Bool) -> None:
        if msg.data:  # dVRK teleoperation turns the MTM's own compensation on whenever it enables
            self.sim.use_gravity_compensation(True)

    def _with_jaw(self, values, reference: np.ndarray) -> np.ndarray:
        arr = np.asarray(values, dtype=float)
        if self.arm_joints == 7 or arr.size != self.arm_joints:
            return arr
        return np.append(arr, reference[6])

    def _servo_jp(self, msg: JointState) -> None:
        self.sim.require_ready("servo_jp")
        velocity = self._with_jaw(msg.velocity, np.zeros(7)) if len(msg.velocity) else None
        self.sim.servo_jp(self._with_jaw(msg.position, self.sim.q_ref), velocity)

    def _move_jp(self, msg: JointState) -> None:
        self.sim.require_ready("move_jp")
        self.sim.move_jp(self._with_jaw(msg.position, self.sim.q_ref))

    def _servo_jf(self, msg: JointState) -> None:
        self.sim.require_ready("servo_jf", effort=True)
        effort = np.asarray(msg.effort, dtype=float)
        if self.arm_joints == 6 and effort.size == 6:
            effort = np.append(effort, self._jaw_effort)
        self.sim.servo_jf(effort)

    def _jaw(self, msg: JointState, field: str) -> float:
        values = getattr(msg, field)
        if len(values) != 1:
            raise DvrkIdentError(f"jaw {field}: {len(values)} values, expected 1")
        value = float(values[0])
        if not math.isfinite(value):
            raise DvrkIdentError(f"jaw {field}: {value}")
        return value

    def _jaw_servo_jp(self, msg: JointState) -> None:
        self.sim.require_ready("jaw/servo_jp")
        q, qd = self.sim.q_ref.copy(), self.sim.qd_ref.copy()  # the arm's joints keep their setpoint
        q[6] = self._jaw(msg, "position")
        qd[6] = self._jaw(msg, "velocity") if len(msg.velocity) else 0.0
        self.sim.servo_jp(q, qd)

    def _jaw_move_jp(self, msg: JointState) -> None:
        self.sim.require_ready("jaw/move_jp")
        q = self.sim.q_ref.copy()
        q[6] = self._jaw(msg, "position")
        self.sim.move_jp(q)

    def _jaw_servo_jf(self, msg: JointState) -> None:
        self.sim.require_ready("jaw/servo_jf", effort=True)
        self._jaw_effort = self._jaw(msg, "effort")
        if self.sim.mode == "effort":
            effort = self.sim.effort_command.copy()
            effort[6] = self._jaw_effort
            self.sim.servo_jf(effort)

    # -- time and state -------------------------------------------------------------
    def _advance(self, seconds: float) -> None:
        self._carry += seconds * (1.0 / self.sim.dt)
        steps = int(self._carry)
        self._carry -= steps
        for _ in range(steps):
            self.sim.step()
        self.steps += steps

    def _tick_wall(self) -> None:
        now = time.monotonic()
        self._advance(min(now - self._last_wall, self._max_step))
        self._last_wall = now
        self._publish(self.get_clock().now().to_msg())

    def _publish(self, stamp: Time) -> None:
        """One state sample on every topic (zeros and stamp 0 while the data is invalid), then the events."""
        sample: Sample = self.sim.sample()
        valid_stamp = stamp if sample.valid else INVALID_STAMP
        n = self.arm_joints
        names = self.names[:n]

        def joint_state(topic: str, joint_names, position, velocity, effort, at: Time = valid_stamp) -> None:
            self._pub[topic].publish(fill_joint_state(JointState(), at, joint_names, position, velocity, effort))

        joint_state("measured_js", names, sample.position[:n], sample.velocity[:n], sample.effort[:n])
        joint_state("setpoint_js", names, sample.setpoint_position[:n], None, sample.setpoint_effort[:n])
        if self.family == "psm":
            jaw_stamp = valid_stamp if n == 6 else INVALID_STAMP  # no tool: no jaw
            zero = np.zeros(1)
            jaw = (lambda a: a[6:]) if n == 6 else (lambda a: zero)
            joint_state("jaw/measured_js", ["jaw"], jaw(sample.position), jaw(sample.velocity), jaw(sample.effort),
                        jaw_stamp)
            joint_state("jaw/setpoint_js", ["jaw"], jaw(sample.setpoint_position), None,
                        jaw(sample.setpoint_effort), jaw_stamp)
        else:
            joint_state("gripper/measured_js", ["gripper"], [0.0], None, None)
        # the flag is readable in any state: the torques while it is on, zeros while it is off
        joint_state("gravity_compensation/setpoint_js", names, None, None,
                    self.sim.builtin_compensation_effort()[:n], stamp)
        self._publish_events()

    def spin(self, executor) -> None:
        """Under /clock the physics loop owns the main thread and the executor serves commands in another.

        The executor thread sleeps in the middleware's wait (GIL released) until
        a command arrives; the two share the core through ``self._lock``.
        """
        if not self.publish_clock:
            while rclpy.ok() and not shutdown_requested():
                executor.spin_once(timeout_sec=0.1)
            return
        stop = threading.Event()

        def serve() -> None:
            while rclpy.ok() and not stop.is_set() and not shutdown_requested():
                executor.spin_once(timeout_sec=0.05)

        sys.setswitchinterval(0.0005)  # the command thread gets the GIL within 0.5 ms, not 5 ms
        server = threading.Thread(target=serve, name="commands", daemon=True)
        server.start()
        period = 1.0 / self.publish_rate
        sim_time = SIM_EPOCH
        pacer = self._pacer
        pacer.restart()
        reported_slips = 0
        clock = Clock()
        try:
            while rclpy.ok() and server.is_alive() and not shutdown_requested():
                with self._lock:
                    self._advance(period)
                sim_time += period
                stamp = _time_msg(sim_time)
                clock.clock = stamp
                self._clock_pub.publish(clock)
                with self._lock:
                    self._publish(stamp)
                wait = pacer.delay(sim_time - SIM_EPOCH)
                if wait > 0.0:
                    time.sleep(wait)
                elif pacer.slips > reported_slips:
                    reported_slips = pacer.slips
                    self.get_logger().warning(
                        f"behind real time: {pacer.slips} slips, {pacer.slipped:.3f} s of wall "
                        "time not replayed (simulated time slips rather than running ahead of its commands)",
                        throttle_duration_sec=5.0)
        finally:
            stop.set()
            server.join(timeout=1.0)


def main(args: list[str] | None = None) -> int:
    return run(SimulatedArmNode, args)


if __name__ == "__main__":
    sys.exit(main())
