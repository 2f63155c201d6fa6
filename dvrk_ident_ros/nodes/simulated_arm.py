"""Node ``simulated_arm``: one dVRK arm (MTML, MTMR, PSM1..3) on the dVRK ROS 2 topics.

Publishes ``/<ARM>/measured_js`` and ``setpoint_js`` (plus ``jaw/...`` for a
PSM, ``gripper/measured_js`` for an MTM) and ``/<ARM>/busy`` (std_msgs/Bool,
standing in for crtk OperatingState.is_busy, which has no wheel); accepts
``servo_jp``, ``move_jp``, ``servo_jf``, ``use_gravity_compensation``,
``hold``. Every command is checked by the core (length, NaN, limits); a
rejected one is logged and the arm keeps its previous command.

With ``publish_clock`` the node owns time: it steps the physics and publishes
``/clock`` as fast as ``real_time_factor`` allows (0: as fast as possible), so
the other nodes run with ``use_sim_time``.
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
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.nodes.common import (
    STATE_QOS,
    arm_family,
    check_arm_name,
    declare,
    fill_joint_state,
    guarded,
    run,
    shutdown_requested,
)
from dvrk_ident_ros.sim.arm import SimulatedArm
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.pacing import RealTimePacer

SIM_EPOCH = 1.0  # s: simulated time starts here (0 means "no time yet" to rclpy)


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
                                physics_rate=physics_rate, initial_position=initial_position)
        self.names = self.sim.names
        self.arm_joints = 6 if family == "psm" else 7  # the PSM's jaw is published on its own topics
        self._pub = {name: self.create_publisher(JointState, f"/{self.arm}/{name}", STATE_QOS)
                     for name in ("measured_js", "setpoint_js")}
        if family == "psm":
            self._pub["jaw/measured_js"] = self.create_publisher(JointState, f"/{self.arm}/jaw/measured_js", STATE_QOS)
            self._pub["jaw/setpoint_js"] = self.create_publisher(JointState, f"/{self.arm}/jaw/setpoint_js", STATE_QOS)
        else:
            self._pub["gripper/measured_js"] = self.create_publisher(JointState, f"/{self.arm}/gripper/measured_js",
                                                                      STATE_QOS)
        self._busy_pub = self.create_publisher(Bool, f"/{self.arm}/busy", 10)
        self._clock_pub = self.create_publisher(Clock, "/clock", 10) if self.publish_clock else None

        self._lock = threading.Lock()  # commands (executor) vs physics (the /clock loop)

        def locked(callback):
            def call(msg) -> None:
                with self._lock:
                    callback(msg)
            return call

        def sub(topic: str, msg_type, callback) -> None:
            self.create_subscription(msg_type, f"/{self.arm}/{topic}", guarded(self, topic, locked(callback)),
                                     STATE_QOS)

        sub("servo_jp", JointState, self._servo_jp)
        sub("move_jp", JointState, self._move_jp)
        sub("servo_jf", JointState, self._servo_jf)
        sub("use_gravity_compensation", Bool, lambda msg: self.sim.use_gravity_compensation(msg.data))
        sub("hold", Empty, lambda msg: self.sim.hold())
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
        if not self.publish_clock:
            self.create_timer(1.0 / self.publish_rate, self._tick_wall)
        self.get_logger().info(
            f"simulated {self.arm} ({family}, true parameters {config.parameter_file.name}): state at "
            f"{self.publish_rate:g} Hz, physics at {physics_rate:g} Hz, "
            + (f"publishing /clock (real-time factor {self.real_time_factor or 'max'})" if self.publish_clock
               else "wall-clock time"))

    # -- commands: dVRK topics -> core ----------------------------------------------
    def _with_jaw(self, values, reference: np.ndarray) -> np.ndarray:
        arr = np.asarray(values, dtype=float)
        if self.arm_joints == 7 or arr.size != self.arm_joints:
            return arr
        return np.append(arr, reference[6])

    def _servo_jp(self, msg: JointState) -> None:
        velocity = self._with_jaw(msg.velocity, np.zeros(7)) if len(msg.velocity) else None
        self.sim.servo_jp(self._with_jaw(msg.position, self.sim.q_ref), velocity)

    def _move_jp(self, msg: JointState) -> None:
        self.sim.move_jp(self._with_jaw(msg.position, self.sim.q_ref))

    def _servo_jf(self, msg: JointState) -> None:
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
        q, qd = self.sim.q_ref.copy(), self.sim.qd_ref.copy()  # the arm's joints keep their setpoint
        q[6] = self._jaw(msg, "position")
        qd[6] = self._jaw(msg, "velocity") if len(msg.velocity) else 0.0
        self.sim.servo_jp(q, qd)

    def _jaw_move_jp(self, msg: JointState) -> None:
        q = self.sim.q_ref.copy()
        q[6] = self._jaw(msg, "position")
        self.sim.move_jp(q)

    def _jaw_servo_jf(self, msg: JointState) -> None:
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
        q, qd, effort = self.sim.measured()
        q_sp, effort_sp = self.sim.setpoint()
        n = self.arm_joints
        names = self.names[:n]
        self._pub["measured_js"].publish(fill_joint_state(JointState(), stamp, names, q[:n], qd[:n], effort[:n]))
        self._pub["setpoint_js"].publish(fill_joint_state(JointState(), stamp, names, q_sp[:n], None, effort_sp[:n]))
        if n == 6:
            self._pub["jaw/measured_js"].publish(fill_joint_state(JointState(), stamp, ["jaw"], q[6:], qd[6:],
                                                                  effort[6:]))
            self._pub["jaw/setpoint_js"].publish(fill_joint_state(JointState(), stamp, ["jaw"], q_sp[6:], None,
                                                                  effort_sp[6:]))
        else:
            self._pub["gripper/measured_js"].publish(fill_joint_state(JointState(), stamp, ["gripper"], [0.0]))
        self._busy_pub.publish(Bool(data=self.sim.busy))

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
