"""Node ``simulated_arm``: one dVRK arm (MTML, MTMR, PSM1..3, ...) on the dVRK ROS 2 topics.

What it publishes and obeys, its test hooks and its time (wall clock or ``/clock``): docs/simulator.md (the
node's section) and docs/nodes.md (parameters). The decisions live in ROS-free cores: the arm in ``sim/arm.py``,
the joint commands in ``sim/joint_topics.py``, the stamps in ``sim/stamps.py``, the pacing in ``sim/pacing.py``,
the freeze hook in ``sim/freeze.py``, the log texts in ``sim/node_reports.py``, the set-up in ``sim/arm_setup.py``.
This node translates messages, publishes, and runs the physics loop (main thread) beside the executor (commands).
"""
from __future__ import annotations

import sys
import threading
import time
import traceback

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, Quaternion, WrenchStamped
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState, Joy
from std_msgs.msg import Bool, Empty, Float64

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.errors import ArmNotReadyError, DvrkIdentError
from dvrk_ident_ros.nodes.sim_cartesian import CartesianCommands, CartesianTopics, crtk_services
from dvrk_ident_ros.parameters.settings import SimulatedArmSettings
from dvrk_ident_ros.parameters.simulated_arm import SCHEMA as PARAMETERS
from dvrk_ident_ros.ros.messages import check_arm_name, crtk_messages, fill_joint_state
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import guarded, run, shutdown_requested
from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS
from dvrk_ident_ros.sim.arm import Sample, SimulatedArm
from dvrk_ident_ros.sim.arm_setup import console_chain, initial_position
from dvrk_ident_ros.sim.cartesian import arm_cartesian
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.freeze import StateFreeze
from dvrk_ident_ros.sim.joint_topics import JointTopics
from dvrk_ident_ros.sim.node_reports import NotReadyWarnings, servo_summary, startup_line
from dvrk_ident_ros.sim.pacing import BEHIND_EVERY, ClockTicks, StepCarry, clock_pacer, wall_clock_schedule
from dvrk_ident_ros.sim.stamps import SIM_EPOCH, StampClock, split_seconds

INVALID_STAMP = Time(sec=0, nanosec=0)  # the bridge's mark of invalid data
COMMAND_FAILURES = 100  # exceptions out of the command executor before the node gives up (logged each second)
CATCH_UP_YIELD = 0.0  # s: before catching up, the loop yields (GIL, CPU) so the command thread takes what arrived
#: The bridge's subscribers: reliable, volatile, depth 1 (a command that arrives before the previous one was
#: taken replaces it, as on the real arm); the event commands always, the motion topics with servo_timing arrival
COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)


def _time_msg(seconds: float) -> Time:
    sec, nanosec = split_seconds(seconds)
    return Time(sec=sec, nanosec=nanosec)


class SimulatedArmNode(Node):
    def __init__(self) -> None:
        super().__init__("simulated_arm")
        # types, ranges and choices checked there (publish_rate 1..1000 Hz, clock_rate 1..10000 Hz, ...)
        params = declare_parameters(self, PARAMETERS, on_change={"kinematic_gc": self._set_kinematic_gc})
        settings = SimulatedArmSettings.from_values(params)
        self.arm = check_arm_name(settings.arm)
        self.publish_rate = settings.publish_rate
        physics_rate = settings.physics_rate
        self.publish_clock = settings.publish_clock
        self.real_time_factor = settings.real_time_factor
        dvrk_version = settings.dvrk_version  # "-p dvrk_version:=2.3" (a double) is taken as "2.3"
        servo_timing = settings.servo_timing.lower()
        spec = self.spec = arm_spec(self.arm)  # the arm family's traits (jaw, gripper, simulation: the arm registry)
        kinematic_gc = console_chain(settings.kinematic_gc, spec, dvrk_version)
        if physics_rate < self.publish_rate:
            raise DvrkIdentError(f"physics_rate {physics_rate} Hz below publish_rate {self.publish_rate} Hz")
        self.clock_rate = max(settings.clock_rate, self.publish_rate)  # /clock at least with every state
        config = load_sim_config(self.arm, settings.config_file or None, settings.true_parameters or None)
        self.sim = SimulatedArm(config, spec.variant(self.arm), noise=settings.noise, seed=settings.seed,
                                physics_rate=physics_rate,
                                initial_position=initial_position(settings.initial_position, spec, config.model.dof),
                                initial_state=settings.initial_state, homing_time=settings.homing_time,
                                dvrk_version=dvrk_version, tool_engaged=settings.tool_engaged,
                                fault_tracking_error=settings.fault_tracking_error, servo_timing=servo_timing,
                                kinematic_gc=kinematic_gc)
        self.joints = JointTopics(self.sim, spec)  # the arm's joints and the PSM's jaw on their topics

        def pub(topic: str, msg_type=JointState, qos=STATE_QOS):
            return self.create_publisher(msg_type, f"/{self.arm}/{topic}", qos)

        self._pub = {name: pub(name) for name in self.joints.state_topics()}
        self._goal_pub = pub("goal_reached", Bool, EVENT_QOS)
        self._crtk = crtk_messages()
        self._state_pub = pub("operating_state", self._crtk.OperatingState, EVENT_QOS) if self._crtk else None
        self._published_status: OperatingStatus | None = None
        self._stamps = StampClock(self.publish_clock)  # origin SIM_EPOCH on /clock; wall time else (_run_wall)
        self._clock_pub = self.create_publisher(Clock, "/clock", 10) if self.publish_clock else None

        self._lock = threading.Lock()  # commands (the executor thread) vs physics (the loop of spin())
        self._not_ready = NotReadyWarnings()

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

        # as the bridge, depth 1; with servo_timing stamp, a stamped stream is replayed as sent: none dropped
        stream_qos = COMMAND_QOS if servo_timing == "arrival" else STATE_QOS

        def sub(topic: str, msg_type, callback, qos=stream_qos, absolute: bool = False) -> None:
            name = topic if absolute else f"/{self.arm}/{topic}"
            self.create_subscription(msg_type, name, guarded(self, topic, locked(topic, callback)), qos)

        def timed(topic: str, command) -> None:
            """A motion stream: ``command(position, velocity, at, received)``: its stamp's simulated time and the
            instant it reached the arm, from the wall time (s) this process took it up (sim/stamps.py)."""
            def call(pair: tuple[JointState, float]) -> None:
                msg, served = pair
                at = self._stamps.command_time(msg.header.stamp.sec, msg.header.stamp.nanosec)
                command(msg.position, msg.velocity, at, self._stamps.reception_time(served, at, self.sim.time))
            inner = guarded(self, topic, locked(topic, call))
            self.create_subscription(JointState, f"/{self.arm}/{topic}", lambda msg: inner((msg, time.time())),
                                     stream_qos)

        joints = self.joints
        timed("servo_jp", joints.servo_jp)
        timed("servo_jr", joints.servo_jr)
        sub("move_jr", JointState, lambda msg: joints.move_jr(msg.position))
        self._cartesian = CartesianTopics(self, self.arm, arm_cartesian(self.arm, config.model), STATE_QOS)
        self._commands = CartesianCommands(self.sim, self._cartesian, lambda: joints.jaw_effort,
                                           EVENT_QOS if spec.gripper else None)
        sub("servo_cp", PoseStamped, self._commands.servo_cp)
        sub("move_cp", PoseStamped, self._commands.move_cp)
        sub("body/servo_cf", WrenchStamped, lambda msg: self._commands.servo_cf(msg, body=True))
        sub("spatial/servo_cf", WrenchStamped, lambda msg: self._commands.servo_cf(msg, body=False))
        sub("body/set_cf_orientation_absolute", Bool, lambda msg: setattr(self._cartesian, "absolute", bool(msg.data)),
            COMMAND_QOS)
        if spec.gripper:  # the MTM's; servo_ci taken so that the dVRK's client connects, refused with the reason
            sub("lock_orientation", Quaternion, self._commands.lock_orientation, COMMAND_QOS)
            sub("unlock_orientation", Empty, self._commands.unlock_orientation, COMMAND_QOS)
            if self._crtk is not None and hasattr(self._crtk, "CartesianImpedance"):
                sub("servo_ci", self._crtk.CartesianImpedance, lambda msg: self._not_simulated("servo_ci"))
        services = crtk_services()
        if services is not None:
            for name in ("forward_kinematics", "local/forward_kinematics"):
                self.create_service(services.QueryForwardKinematics, f"/{self.arm}/{name}",
                                    self._commands.forward_kinematics)
            self.create_service(services.QueryInverseKinematics, f"/{self.arm}/inverse_kinematics",
                                self._commands.inverse_kinematics)
        sub("move_jp", JointState, lambda msg: joints.move_jp(msg.position))
        sub("servo_jf", JointState, lambda msg: joints.servo_jf(msg.effort))
        sub("use_gravity_compensation", Bool, lambda msg: self.sim.use_gravity_compensation(msg.data))
        sub("hold", Empty, lambda msg: self.sim.hold())
        sub("free", Empty, lambda msg: self.sim.free())
        sub("simulation/inject_fault", Empty, lambda msg: self.sim.inject_fault("fault injected (simulation)"),
            COMMAND_QOS)
        sub("simulation/freeze_state", Float64, self._freeze_state, COMMAND_QOS)
        # as the console's teleoperation does to this arm (sim/arm.py)
        sub("/console/teleop/enable", Bool, lambda msg: self.sim.teleop(msg.data), COMMAND_QOS, absolute=True)
        sub("/footpedals/clutch", Joy, lambda msg: self.sim.clutch(bool(len(msg.buttons) and msg.buttons[0])),
            COMMAND_QOS, absolute=True)
        self._ratio_pub = self.create_publisher(Float64, f"/{self.arm}/trajectory_j/ratio", EVENT_QOS)
        self._ratio_pub.publish(Float64(data=self.sim.trajectory_ratio))
        sub("trajectory_j/set_ratio", Float64, self._set_ratio, COMMAND_QOS)
        if self._crtk is not None:
            sub("state_command", self._crtk.StringStamped, lambda msg: self.sim.state_command(msg.string),
                COMMAND_QOS)
        else:
            self.get_logger().warning("crtk_msgs is not installed: no operating_state, no state_command; "
                                      f"the arm stays {settings.initial_state}")
        if spec.jaw:
            sub("emulate_tool_present", Bool, lambda msg: self.sim.emulate_tool_present(msg.data), COMMAND_QOS)
            timed("jaw/servo_jp", joints.jaw_servo_jp)
            sub("jaw/move_jp", JointState, lambda msg: joints.jaw_move_jp(msg.position))
            sub("jaw/servo_jf", JointState, lambda msg: joints.jaw_servo_jf(msg.effort))
        self._steps = StepCarry(self.sim.dt)  # the physics steps of the loop's stretches of simulated time
        self._freeze = StateFreeze(settings.seed)
        self._pacer = clock_pacer(self.publish_rate, self.real_time_factor)  # /clock (sim/pacing.py)
        self._schedule = wall_clock_schedule(self.publish_rate)  # the wall clock, the physics behind it
        self._sim_time = 0.0  # simulated time of the last state published
        self.publish_failures = 0  # state samples the middleware refused
        self.samples_published = {topic: 0 for topic in self._pub}  # per topic: only while someone subscribes
        with self._lock:
            self._publish_events()
        self.get_logger().info(startup_line(
            self.arm, spec.model, dvrk_version, config.parameter_file.name, self.sim.status.describe(),
            self.sim.builtin_gravity_compensation,
            None if kinematic_gc is None else settings.kinematic_gc or "shipped with the console", self.publish_rate,
            physics_rate, self.clock_rate if self.publish_clock else None, self.real_time_factor, servo_timing))

    def _set_kinematic_gc(self, value: str) -> None:
        """Run time: the chain checked and applied from the next control step (DvrkIdentError: refused, the old
        chain kept)."""
        chain = console_chain(value, self.spec, self.sim.dvrk_version)
        with self._lock:
            self.sim.set_console_gc(chain)

    # -- events: operating state, goal reached, "arm not ready" ---------------------------
    def _publish_events(self) -> None:
        """Every operating_state event of the arm (a change, an accepted state command, a move's start and end),
        each with its own stamp, strictly newer than the last (the client keeps only newer ones: sim/stamps.py);
        a change is logged. goal_reached for every move that ended; lock held."""
        for status in self.sim.pop_status_events():
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
                sec, nanosec = self._stamps.event(self.sim.time, lambda: self.get_clock().now().nanoseconds)
                msg.header.stamp = Time(sec=sec, nanosec=nanosec)
                self._state_pub.publish(msg)
        for reached in self.sim.pop_goal_events():
            self._goal_pub.publish(Bool(data=reached))

    def _warn_not_ready(self, topic: str) -> None:
        warning = self._not_ready.warning(topic, time.monotonic(), lambda: self.sim.not_ready_reason(self.arm))
        if warning is not None:
            self.get_logger().warning(warning)

    # -- commands: dVRK topics -> core (the joint commands: sim/joint_topics.py) ------------
    def _set_ratio(self, msg: Float64) -> None:
        self.sim.set_trajectory_ratio(msg.data)  # a bad value: DvrkIdentError, reported by the guard
        self._ratio_pub.publish(Float64(data=self.sim.trajectory_ratio))

    def _not_simulated(self, topic: str) -> None:
        raise DvrkIdentError(f"{topic} is not simulated (the Cartesian impedance); "
                             "the arm keeps its command")

    def _freeze_state(self, msg: Float64) -> None:
        """The test hook: the arm's state stops advancing for ``msg.data`` s (sim/freeze.py)."""
        seconds = float(msg.data)
        self._freeze.ask(seconds)
        self.get_logger().warning(f"{self.arm}: state frozen for {seconds:g} s (simulation): the joint states repeat "
                                  "one sample and its stamp, as a bridge does behind a stalled arm")

    # -- time and state -------------------------------------------------------------
    def _advance(self, seconds: float) -> None:
        """Physics steps covering ``seconds``, the lock taken per step: a command that arrives meanwhile is
        obeyed from the next step (at its stamp if that is still ahead), not after the whole stretch."""
        for _ in range(self._steps.steps_for(seconds)):
            with self._lock:
                self.sim.step()

    def _sample_to_publish(self, stamp: Time) -> tuple[Sample, Time, np.ndarray]:
        """The arm's sample, its stamp and the built-in compensation's torques, or the frozen ones while a freeze
        lasts; lock held."""
        frozen = self._freeze.frozen(self.sim.time, stamp.sec + 1e-9 * stamp.nanosec,
                                     lambda: (self.sim.sample(), self.sim.builtin_compensation_effort()))
        if frozen is not None:
            return frozen.sample, _time_msg(frozen.stamp), frozen.builtin
        if self._freeze.thawed:
            self.get_logger().info(f"{self.arm}: state no longer frozen")
        return self.sim.sample(), stamp, self.sim.builtin_compensation_effort()

    def _publish(self, stamp: Time) -> None:
        """One state sample on every topic (zeros and stamp 0 while the data is invalid), then the events."""
        self._commands.follow(1.0 / self.publish_rate)
        sample, stamp, builtin = self._sample_to_publish(stamp)
        for state in self.joints.states(sample, builtin):
            publisher = self._pub[state.topic]
            if publisher.get_subscription_count() == 0:  # the bridge publishes a periodic topic only while
                continue  # someone subscribes to it
            msg = fill_joint_state(JointState(), stamp if state.valid else INVALID_STAMP, state.names, state.position,
                                   state.velocity, state.effort)
            try:
                publisher.publish(msg)
                self.samples_published[state.topic] += 1
            except Exception as exc:  # noqa: BLE001 - the middleware refused one sample: the arm runs on
                # (seen with Fast DDS at 1 kHz on a loaded machine: "cannot publish data")
                self.publish_failures += 1
                self.get_logger().warning(f"/{self.arm}/{state.topic}: a state sample not published ({exc}); "
                                          f"{self.publish_failures} so far", throttle_duration_sec=BEHIND_EVERY)
        self._cartesian.publish(sample.position, sample.setpoint_position, sample.velocity, sample.effort,
                                stamp if self.joints.cartesian_valid(sample) else INVALID_STAMP)
        self._publish_events()

    def spin(self, executor) -> None:
        """The physics loop owns the main thread; the executor serves commands in another.

        The executor thread sleeps in the middleware's wait (GIL released) until
        a command arrives; the two share the core through ``self._lock``.
        """
        stop = threading.Event()
        failures = [0]

        def serve() -> None:
            while rclpy.ok() and not stop.is_set() and not shutdown_requested():
                try:
                    executor.spin_once(timeout_sec=0.05)
                except Exception as exc:  # noqa: BLE001 - one bad callback must not stop the arm's commands
                    failures[0] += 1
                    self.get_logger().error(f"command thread: {type(exc).__name__}: {exc} ({failures[0]} so far)\n"
                                            + traceback.format_exc(), throttle_duration_sec=1.0)
                    if failures[0] >= COMMAND_FAILURES:
                        self.get_logger().fatal(f"command thread: {failures[0]} failures: the node stops")
                        return

        sys.setswitchinterval(0.0005)  # the command thread gets the GIL within 0.5 ms, not 5 ms
        server = threading.Thread(target=serve, name="commands", daemon=True)
        server.start()
        try:
            if self.publish_clock:
                self._run_clock(server)
            else:
                self._run_wall(server)
            if not server.is_alive() and not shutdown_requested() and rclpy.ok():
                self.get_logger().error("the command thread stopped: the simulated arm stops")
        finally:
            stop.set()
            server.join(timeout=1.0)

    def _running(self, server: threading.Thread) -> bool:
        return rclpy.ok() and server.is_alive() and not shutdown_requested()

    def _run_wall(self, server: threading.Thread) -> None:
        """State periods on the wall clock, stamped with the wall time they stand for (sim/pacing.py)."""
        schedule = self._schedule
        ros_minus_monotonic = self.get_clock().now().nanoseconds * 1e-9 - time.monotonic()
        with self._lock:
            sim_start = self.sim.time
            schedule.restart()
            self._stamps.origin = ros_minus_monotonic + schedule.origin - sim_start
        while self._running(server):
            wait = schedule.wait()
            if wait > 0.0:
                time.sleep(min(wait, 0.1))
                continue
            seconds = schedule.due()
            if seconds > schedule.period:  # late: the commands that arrived meanwhile are taken first
                time.sleep(CATCH_UP_YIELD)
            with self._lock:
                self._stamps.origin = ros_minus_monotonic + schedule.origin - sim_start
            self._advance(seconds)
            with self._lock:
                self._sim_time = sim_start + schedule.elapsed
                self._publish(_time_msg(self._stamps.origin + self._sim_time))
            warning = schedule.stall_report()
            if warning is not None:
                self.get_logger().warning(warning, throttle_duration_sec=BEHIND_EVERY)

    def _run_clock(self, server: threading.Thread) -> None:
        """Simulated time in ticks of 1/clock_rate, /clock after each, the state every publish period."""
        clock_pub = self._clock_pub
        if clock_pub is None:
            raise DvrkIdentError("simulated time without a /clock publisher (publish_clock is false)")
        ticks = ClockTicks(self.clock_rate, self.publish_rate, SIM_EPOCH)
        pacer = self._pacer
        pacer.restart()
        clock = Clock()
        while self._running(server):
            self._advance(ticks.tick_ns * 1e-9)
            state_due = ticks.tick()
            stamp = _time_msg(ticks.stamp)
            clock.clock = stamp
            try:
                clock_pub.publish(clock)
            except Exception as exc:  # noqa: BLE001 - as for the state samples: time goes on
                self.publish_failures += 1
                self.get_logger().warning(f"/clock not published ({exc}); {self.publish_failures} failures so far",
                                          throttle_duration_sec=BEHIND_EVERY)
            if state_due:
                with self._lock:
                    self._sim_time = ticks.elapsed
                    self._publish(stamp)
            wait = pacer.delay(ticks.elapsed)
            if wait > 0.0:
                time.sleep(wait)
            elif (warning := pacer.slip_report()) is not None:
                self.get_logger().warning(warning, throttle_duration_sec=BEHIND_EVERY)

    def close(self) -> None:
        """The final log lines: how the simulated time kept up; the state samples published on each topic."""
        if self.publish_clock:
            self.get_logger().info(f"{self.arm}: {self._sim_time:.1f} s simulated, /clock at {self.clock_rate:g} Hz; "
                                   f"{self._pacer.summary()}")
        else:
            self.get_logger().info(f"{self.arm}: {self._schedule.summary()}" + servo_summary(
                self.sim.servo_lateness, self.sim.servo_timing, self.sim.stale_servo, self.publish_failures))
        self.get_logger().info(f"{self.arm}: state samples published (only while subscribed): "
                               + ", ".join(f"{topic} {count}" for topic, count in self.samples_published.items()))


def main(args: list[str] | None = None) -> int:
    return run(SimulatedArmNode, args, executor="events")  # fastest dispatch where rclpy has it


if __name__ == "__main__":
    sys.exit(main())
