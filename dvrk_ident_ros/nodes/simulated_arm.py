"""Node ``simulated_arm``: one dVRK arm (MTML, MTMR, PSM1..3) on the dVRK ROS 2 topics.

State: ``/<ARM>/operating_state`` (crtk_msgs/OperatingState, transient_local:
at start and on every change), ``/<ARM>/goal_reached`` (std_msgs/Bool,
transient_local: true when a move_jp ended, false when it was cut short),
``/<ARM>/measured_js`` and ``setpoint_js`` (plus ``jaw/...`` for a PSM,
``gripper/measured_js`` for an MTM) and ``/<ARM>/gravity_compensation/setpoint_js``
(the built-in compensation's torques in ``effort``, zeros while it is off);
as the bridge does, a joint state topic is published only while someone
subscribes to it. While the arm is not ENABLED and homed (``initial_state``, default DISABLED
like a freshly started console) the joint states are all zeros with
``header.stamp`` 0, the bridge's mark of invalid data. An MTM says homed,
busy, during its homing move, its data valid (as the dVRK's MTM does).

Commands: ``/<ARM>/state_command`` (crtk_msgs/StringStamped: enable, disable,
home, unhome, pause, resume); ``servo_jp``, ``move_jp`` (clipped to the
limits), ``servo_jf``, ``hold`` (obeyed only when the arm is ENABLED, homed and
not homing, else ignored with a throttled "arm not ready" warning; a
``servo_jf`` while homing, any command during an MTM's homing move, faults the
arm); ``use_gravity_compensation`` (any state);
``/console/teleop/enable`` (std_msgs/Bool: true turns the built-in
compensation back on, as dVRK teleoperation does); the test hooks
``/<ARM>/simulation/inject_fault`` (std_msgs/Empty: FAULT at once) and
``/<ARM>/simulation/freeze_state`` (std_msgs/Float64, s: the arm's control
loop stalls behind a live bridge: from the next state period on, every joint
state topic repeats that period's sample, its stamp give or take 5 us as the
bridge converts it anew each time, for that long of simulated time; the
physics and the events run on). Every
command is checked by the core (length, NaN, limits, servo_jp jumps); a
rejected one is logged and the arm keeps its previous command.

Time. The physics and the publishing run in a loop of their own (the main
thread, on absolute deadlines: ``sim/pacing.py``); the commands are served by
the executor in a second thread. The event commands (state_command, the teleop
stand-in, the fault hook) are subscribed with depth 1 as the bridge does. With
``servo_timing`` arrival (the default) a ``servo_jp`` (``jaw/servo_jp``) is
taken at the instant it reached the arm and held until the next, as the dVRK
takes it, the motion topics at depth 1 too; that instant is its sender's stamp
plus ``DELIVERY``, never after this process took it up, so the jitter of this
Python simulator's own command thread on a loaded host, which a real arm's C++
bridge does not have, is not the stream's (docs/simulator.md).
With stamp (gentler than a real arm) it is obeyed at the simulated instant of
its stamp, carried forward between samples, so the arm follows a stream as it
was sent whatever the jitter (the motion topics then keep 100 messages).

- Wall clock (the default, like a real arm): a state period every
  1/``publish_rate`` s, stamped with the wall time it stands for (simulated
  2 ms behind real time, so that a command is in before the instant it stands
  for is simulated: the state is published 2 ms after its stamp). A period
  the loop was late for is caught up in the next integration (counted: a real
  arm's time does not stop); a lag over ``max(2 periods, 50 ms)`` is a stall
  (the process was not scheduled): caught up too, counted, and a throttled
  warning says so; a lag over 0.5 s (the process was stopped) is not
  simulated (the arm stands still through it), counted and warned about.
- ``publish_clock``: the node owns time: it steps the physics and publishes
  ``/clock`` every 1/``clock_rate`` s of simulated time (default 500 Hz: the
  granularity of every use_sim_time node's timers, so a player streaming at
  ``stream_rate`` needs ``clock_rate`` >= ``stream_rate``; every /clock message
  costs each of those nodes a wake-up), as fast as ``real_time_factor`` allows (0: as fast
  as possible; a lag over two state periods slips rather than being replayed);
  the other nodes run with ``use_sim_time``.

The final log line gives the figures (stalls, dropped time, late periods or
slips). The operating state runs on the simulated time either way.
"""
from __future__ import annotations

import math
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
from dvrk_ident_ros.arm.state import OperatingStatus, stamp_is_valid
from dvrk_ident_ros.errors import ArmNotReadyError, DvrkIdentError
from dvrk_ident_ros.gc.console_gc import load_chain
from dvrk_ident_ros.nodes.sim_cartesian import CartesianCommands, CartesianTopics, crtk_services
from dvrk_ident_ros.parameters.settings import SimulatedArmSettings
from dvrk_ident_ros.parameters.simulated_arm import SCHEMA as PARAMETERS
from dvrk_ident_ros.ros.messages import check_arm_name, crtk_messages, fill_joint_state
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import guarded, run, shutdown_requested
from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS
from dvrk_ident_ros.sim.arm import SERVO_CLOCK, Sample, SimulatedArm
from dvrk_ident_ros.sim.cartesian import arm_cartesian
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.pacing import RealTimePacer, WallClockSchedule

SIM_EPOCH = 1.0  # s: simulated time starts here (0 means "no time yet" to rclpy)
EVENT_STEP_NS = 1000  # ns: an event is stamped at least this long after the last one (and after its instant)
INVALID_STAMP = Time(sec=0, nanosec=0)  # the bridge's mark of invalid data
NOT_READY_EVERY = 2.0  # s: at most one "arm not ready" warning per command topic in this time
COMMAND_FAILURES = 100  # exceptions out of the command executor before the node gives up (logged each second)
BEHIND_EVERY = 5.0  # s: at most one "behind the wall clock" warning in this time
WALL_STALL = 0.05  # s: a wall-clock lag longer than this (and two state periods) is a stall: warned about
WALL_MAX_LAG = 0.5  # s: a wall-clock lag up to this is caught up, a longer one (the process was stopped) dropped
#: s: on the wall clock the physics runs this far behind real time, so that a stamped command (delivered in about
#: 0.5 ms) is in before its instant is simulated; a state is published this long after the instant its stamp gives
WALL_DELAY = 0.002
#: s: a command's delivery on one host (publisher to subscriber), added to its stamp as the instant it reached the
#: arm (servo_timing arrival)
DELIVERY = 0.0005
#: s: a frozen sample's stamp, published again, varies this much either way (the bridge's two clock reads)
FROZEN_STAMP_JITTER = 5e-6
CATCH_UP_YIELD = 0.0  # s: before catching up, the loop yields (GIL, CPU) so the command thread takes what arrived
#: The bridge's subscribers: reliable, volatile, depth 1 (a command that arrives before the previous one was
#: taken replaces it, as on the real arm); the event commands always, the motion topics with servo_timing arrival
COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)


def _time_msg(seconds: float) -> Time:
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
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
        self.clock_rate = settings.clock_rate
        true_parameters = settings.true_parameters
        config_file = settings.config_file
        noise = settings.noise
        seed = settings.seed
        initial = settings.initial_position
        initial_state = settings.initial_state
        homing_time = settings.homing_time
        dvrk_version = settings.dvrk_version  # "-p dvrk_version:=2.3" (a double) is taken as "2.3"
        tool_engaged = settings.tool_engaged
        fault_tracking_error = settings.fault_tracking_error
        servo_timing = settings.servo_timing.lower()
        kinematic_gc = self._kinematic_gc(settings.kinematic_gc, settings.dvrk_version)
        if physics_rate < self.publish_rate:
            raise DvrkIdentError(f"physics_rate {physics_rate} Hz below publish_rate {self.publish_rate} Hz")
        self.clock_rate = max(self.clock_rate, self.publish_rate)  # /clock at least with every state
        spec = arm_spec(self.arm)  # the arm family's traits (jaw, gripper, simulation: the arm registry)
        config = load_sim_config(self.arm, config_file or None, true_parameters or None)
        if initial in ((), (0.0,)):  # the default: the arm's home pose
            initial_position = None
        elif len(initial) == config.model.dof:
            initial_position = np.asarray(initial, dtype=float)
        else:
            raise DvrkIdentError(f"initial_position: {len(initial)} values, the {spec.family} has "
                                 f"{config.model.dof} joints")
        self.sim = SimulatedArm(config, spec.variant(self.arm), noise=noise, seed=seed,
                                physics_rate=physics_rate, initial_position=initial_position,
                                initial_state=initial_state, homing_time=homing_time, dvrk_version=dvrk_version,
                                tool_engaged=tool_engaged, fault_tracking_error=fault_tracking_error,
                                servo_timing=servo_timing, kinematic_gc=kinematic_gc)
        self.names = self.sim.names
        # the PSM's jaw is published on its own topics; without a tool the PSM publishes its 7 raw joints
        self.arm_joints = spec.arm_joints if self.sim.tool_engaged else spec.dof
        self.spec = spec
        self.jaw = spec.jaw_index if spec.jaw_index is not None else spec.dof  # the jaw's index (dof: none)

        def pub(topic: str, msg_type=JointState, qos=STATE_QOS):
            return self.create_publisher(msg_type, f"/{self.arm}/{topic}", qos)

        self._pub = {name: pub(name) for name in ("measured_js", "setpoint_js", "gravity_compensation/setpoint_js")}
        if spec.jaw:
            self._pub["jaw/measured_js"] = pub("jaw/measured_js")
            self._pub["jaw/setpoint_js"] = pub("jaw/setpoint_js")
        if spec.gripper:
            self._pub["gripper/measured_js"] = pub("gripper/measured_js")
        self._goal_pub = pub("goal_reached", Bool, EVENT_QOS)
        self._crtk = crtk_messages()
        self._state_pub = pub("operating_state", self._crtk.OperatingState, EVENT_QOS) if self._crtk else None
        self._published_status: OperatingStatus | None = None
        self._last_event_ns = 0  # the last operating_state event's stamp
        self._clock_pub = self.create_publisher(Clock, "/clock", 10) if self.publish_clock else None

        self._lock = threading.Lock()  # commands (the executor thread) vs physics (the loop of spin())
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

        # as the bridge, depth 1; with servo_timing stamp, a stamped stream is replayed as sent: none dropped
        stream_qos = COMMAND_QOS if servo_timing == "arrival" else STATE_QOS

        def sub(topic: str, msg_type, callback, qos=stream_qos, absolute: bool = False) -> None:
            name = topic if absolute else f"/{self.arm}/{topic}"
            self.create_subscription(msg_type, name, guarded(self, topic, locked(topic, callback)), qos)

        def timed(topic: str, callback) -> None:
            """A motion stream: ``callback(msg, served)``, ``served`` the wall time (s) this process took it up."""
            inner = guarded(self, topic, locked(topic, lambda pair: callback(*pair)))
            self.create_subscription(JointState, f"/{self.arm}/{topic}", lambda msg: inner((msg, time.time())),
                                     stream_qos)

        timed("servo_jp", self._servo_jp)
        timed("servo_jr", self._servo_jr)
        sub("move_jr", JointState, self._move_jr)
        self._jaw_effort = 0.0
        self._cartesian = CartesianTopics(self, self.arm, arm_cartesian(self.arm, config.model), STATE_QOS)
        self._commands = CartesianCommands(self.sim, self._cartesian, lambda: self._jaw_effort,
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
        sub("move_jp", JointState, self._move_jp)
        sub("servo_jf", JointState, self._servo_jf)
        sub("use_gravity_compensation", Bool, lambda msg: self.sim.use_gravity_compensation(msg.data))
        sub("hold", Empty, lambda msg: self.sim.hold())
        sub("free", Empty, lambda msg: self.sim.free())
        sub("simulation/inject_fault", Empty, lambda msg: self.sim.inject_fault("fault injected (simulation)"),
            COMMAND_QOS)
        sub("simulation/freeze_state", Float64, self._freeze_state, COMMAND_QOS)
        sub("/console/teleop/enable", Bool, self._teleop_enable, COMMAND_QOS, absolute=True)
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
                                      f"the arm stays {initial_state}")
        if spec.jaw:
            sub("emulate_tool_present", Bool, lambda msg: self.sim.emulate_tool_present(msg.data), COMMAND_QOS)
            timed("jaw/servo_jp", self._jaw_servo_jp)
            sub("jaw/move_jp", JointState, self._jaw_move_jp)
            sub("jaw/servo_jf", JointState, self._jaw_servo_jf)
        self._carry = 0.0
        self._freeze_for: float | None = None  # s: a freeze asked for, starting at the next state period
        # until (simulated s), the sample, its stamp and the built-in compensation's torques published again
        self._frozen: tuple[float, Sample, Time, np.ndarray] | None = None
        self._stamp_jitter = np.random.default_rng(seed)
        self.steps = 0
        # /clock: a stall longer than two state periods slips (sim/pacing.py)
        max_step = 2.0 / self.publish_rate
        self._pacer = RealTimePacer(self.real_time_factor, max_step / (self.real_time_factor or 1.0))
        # the physics runs WALL_DELAY behind so that a command is in before the instant it stands for (its stamp, or
        # its stamp plus the delivery on arrival)
        self._schedule = WallClockSchedule(1.0 / self.publish_rate, WALL_MAX_LAG, max(max_step, WALL_STALL),
                                           delay=WALL_DELAY)
        self._stamp_origin = SIM_EPOCH  # stamp (s) of simulated time 0: SIM_EPOCH on /clock, wall time else
        self._sim_time = 0.0  # simulated time of the last state published
        self.publish_failures = 0  # state samples the middleware refused
        self.samples_published = {topic: 0 for topic in self._pub}  # per topic: only while someone subscribes
        with self._lock:
            self._publish_events()
        self.get_logger().info(
            f"simulated {self.arm} ({spec.model}, dVRK {dvrk_version}, true parameters {config.parameter_file.name}): "
            f"{self.sim.status.describe()}, built-in gravity compensation "
            f"{'on' if self.sim.builtin_gravity_compensation else 'off'}"
            + (f" (the console's chain {settings.kinematic_gc or 'shipped with the console'})"
               if kinematic_gc is not None else "")
            + f"; state at {self.publish_rate:g} Hz, "
            f"physics at {physics_rate:g} Hz, "
            + (f"publishing /clock at {self.clock_rate:g} Hz (real-time factor {self.real_time_factor or 'max'})"
               if self.publish_clock else "wall-clock time")
            + f"; servo_jp taken {'on arrival' if servo_timing == 'arrival' else 'at its stamp'}")

    def _set_kinematic_gc(self, value: str) -> None:
        """Run time: the chain checked and applied from the next control step (DvrkIdentError: refused, the old
        chain kept)."""
        chain = self._kinematic_gc(value, self.sim.dvrk_version)
        with self._lock:
            self.sim.set_console_gc(chain)

    def _kinematic_gc(self, value: str, dvrk_version: str):
        """The console's gravity chain: the file named; "" = the console's own default (a dVRK 2.4 Si arm's
        shipped physical file, a Classic ECM's chain with its endoscope's mass, as the console loads it; none for
        a Classic PSM); "none" = none."""
        if value.strip().lower() == "none":
            return None
        spec = arm_spec(self.arm)
        if value:
            chain = load_chain(value)
            if spec.console_gc is None:
                raise DvrkIdentError(f"kinematic_gc {value}: the console compensates no {spec.family} with a "
                                     "physical-DH file (PSM and ECM only)")
            expected = len(load_chain(spec.console_gc).links)
            if len(chain.links) != expected:
                raise DvrkIdentError(f"kinematic_gc {value}: {len(chain.links)} links, the {spec.family}'s chain "
                                     f"has {expected} (the console refuses it)")
            return chain
        if spec.console_gc_default is not None and dvrk_version == "2.4":
            return load_chain(spec.console_gc_default)
        return None

    # -- events: operating state, goal reached, "arm not ready" ---------------------------
    def _publish_events(self) -> None:
        """Every operating_state event of the arm (a change, an accepted state command, a move's start and end),
        each with its own stamp, strictly newer than the last (the client keeps only newer ones); a change is
        logged. goal_reached for every move that ended; lock held."""
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
                msg.header.stamp = self._event_stamp()
                self._state_pub.publish(msg)
        for reached in self.sim.pop_goal_events():
            self._goal_pub.publish(Bool(data=reached))

    def _event_stamp(self) -> Time:
        """An event's stamp: its instant (the simulated time on /clock, just after the instant a command was
        taken at; the wall time on the wall clock, where the physics runs behind), at least 1 us after the last
        event's, so that two events never share a stamp."""
        if self.publish_clock:
            ns = round((self._stamp_origin + self.sim.time) * 1e9) + EVENT_STEP_NS
        else:
            ns = self.get_clock().now().nanoseconds
        ns = max(ns, self._last_event_ns + EVENT_STEP_NS)
        self._last_event_ns = ns
        return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)

    def _now(self) -> Time:
        """The stamp of the current simulated time (on /clock, or the wall time it stands for)."""
        return _time_msg(self._stamp_origin + self.sim.time)

    def _command_time(self, msg) -> float | None:
        """The simulated time a command's stamp stands for (None: no valid stamp, obey it at once)."""
        stamp = msg.header.stamp
        if not stamp_is_valid(stamp.sec, stamp.nanosec):
            return None
        return stamp.sec + 1e-9 * stamp.nanosec - self._stamp_origin

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
        self.sim.teleop(msg.data)  # as the console's teleoperation does to this arm (sim/arm.py)

    def _set_ratio(self, msg: Float64) -> None:
        self.sim.set_trajectory_ratio(msg.data)  # a bad value: DvrkIdentError, reported by the guard
        self._ratio_pub.publish(Float64(data=self.sim.trajectory_ratio))

    def _with_jaw(self, values, reference: np.ndarray) -> np.ndarray:
        arr = np.asarray(values, dtype=float)
        if self.arm_joints == self.sim.dof or arr.size != self.arm_joints:
            return arr
        return np.append(arr, reference[self.arm_joints:])

    def _servo_jp(self, msg: JointState, served: float) -> None:
        self.sim.require_ready("servo_jp")
        q_ref, qd_ref = self.sim.servo_reference()
        velocity = self._with_jaw(msg.velocity, qd_ref) if len(msg.velocity) else None
        joints = None if self.arm_joints == self.sim.dof or len(msg.position) != self.arm_joints \
            else np.arange(self.arm_joints)
        self.sim.servo_jp(self._with_jaw(msg.position, q_ref), velocity, at=self._command_time(msg), joints=joints,
                          received=self._reception_time(served, msg))

    def _servo_jr(self, msg: JointState, served: float) -> None:
        """servo_jp of the stream's setpoint plus ``msg.position`` (the dVRK's servo_jr: relative to the PID's)."""
        self.sim.require_ready("servo_jr")
        delta = self.sim.checker.finite(msg.position, "servo_jr position", len(msg.position))
        absolute = JointState(header=msg.header, name=list(msg.name), velocity=list(msg.velocity))
        absolute.position = [float(v) for v in self.sim.servo_reference()[0][:delta.size] + delta]
        self._servo_jp(absolute, served)

    def _move_jr(self, msg: JointState) -> None:
        """move_jp to the setpoint plus ``msg.position``."""
        self.sim.require_ready("move_jr")
        delta = self.sim.checker.finite(msg.position, "move_jr position", len(msg.position))
        absolute = JointState(header=msg.header, name=list(msg.name))
        absolute.position = [float(v) for v in self.sim.q_ref[:delta.size] + delta]
        self._move_jp(absolute)

    def _not_simulated(self, topic: str) -> None:
        raise DvrkIdentError(f"{topic} is not simulated (the Cartesian impedance); "
                             "the arm keeps its command")

    def _move_jp(self, msg: JointState) -> None:
        self.sim.require_ready("move_jp")
        if self.arm_joints < self.sim.dof and len(msg.position) == self.arm_joints:
            # a PSM's arm joints: the jaw keeps its goal (the dVRK's move_jp sets the kinematic joints' only)
            self.sim.move_joints(self._with_jaw(msg.position, self.sim.q_ref), np.arange(self.arm_joints))
        else:
            self.sim.move_jp(self._with_jaw(msg.position, self.sim.q_ref))

    def _servo_jf(self, msg: JointState) -> None:
        self.sim.require_ready("servo_jf", effort=True)
        effort = np.asarray(msg.effort, dtype=float)
        if self.arm_joints < self.sim.dof and effort.size == self.arm_joints:
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

    def _jaw_servo_jp(self, msg: JointState, served: float) -> None:
        self.sim.require_ready("jaw/servo_jp")
        q_ref, qd_ref = self.sim.servo_reference()  # the arm's joints keep their setpoint
        q, qd = q_ref.copy(), qd_ref.copy()
        q[self.jaw] = self._jaw(msg, "position")
        qd[self.jaw] = self._jaw(msg, "velocity") if len(msg.velocity) else 0.0
        self.sim.servo_jp(q, qd, at=self._command_time(msg), joints=[self.jaw],
                          received=self._reception_time(served, msg))

    def _jaw_move_jp(self, msg: JointState) -> None:
        self.sim.require_ready("jaw/move_jp")
        q = self.sim.q_ref.copy()
        q[self.jaw] = self._jaw(msg, "position")
        self.sim.move_joints(q, [self.jaw])  # the arm's own move_jp goes on (the dVRK's jaw_move_jp)

    def _jaw_servo_jf(self, msg: JointState) -> None:
        self.sim.require_ready("jaw/servo_jf", effort=True)
        self._jaw_effort = self._jaw(msg, "effort")
        if self.sim.mode == "effort":
            effort = self.sim.effort_command.copy()
            effort[self.jaw] = self._jaw_effort
            self.sim.servo_jf(effort)

    def _reception_time(self, served: float, msg) -> float:
        """The simulated instant a streamed command reached the arm, as a real arm's bridge takes it: its sender's
        stamp (the instant it was published) plus ``DELIVERY``, but never after this process took it up
        (``served``, wall s: on the wall clock simulated time is the wall's, ``_stamp_origin`` behind; under
        /clock the physics' time): so this simulator's own command-thread delay, which a real arm's C++ bridge
        does not have, is not the stream's. Without a stamp on this clock: when it was taken up."""
        now = self.sim.time if self.publish_clock else served - self._stamp_origin
        stamp = self._command_time(msg)
        if stamp is None or not -SERVO_CLOCK <= now - stamp <= SERVO_CLOCK:
            return now
        return min(stamp + DELIVERY, now)

    # -- time and state -------------------------------------------------------------
    def _advance(self, seconds: float) -> None:
        """Physics steps covering ``seconds``, the lock taken per step: a command that arrives meanwhile is
        obeyed from the next step (at its stamp if that is still ahead), not after the whole stretch."""
        self._carry += seconds * (1.0 / self.sim.dt)
        steps = int(self._carry + 1e-9)
        self._carry -= steps
        for _ in range(steps):
            with self._lock:
                self.sim.step()
        self.steps += steps

    def _freeze_state(self, msg: Float64) -> None:
        """The test hook: the arm's state stops advancing for ``msg.data`` s (see the module's docstring)."""
        seconds = float(msg.data)
        if not (math.isfinite(seconds) and seconds >= 0.0):
            raise DvrkIdentError(f"freeze_state {seconds}: expected a duration >= 0 s")
        self._freeze_for = seconds
        self.get_logger().warning(f"{self.arm}: state frozen for {seconds:g} s (simulation): the joint states repeat "
                                  "one sample and its stamp, as a bridge does behind a stalled arm")

    def _sample_to_publish(self, stamp: Time) -> tuple[Sample, Time, np.ndarray]:
        """The arm's sample, its stamp and the built-in compensation's torques, or the frozen ones while a freeze
        lasts; lock held. A frozen stamp is published again as the bridge does: converted from the arm's clock
        anew each time, give or take a few microseconds (arm_samples.REPEAT_TOLERANCE)."""
        now = self.sim.time
        if self._freeze_for is not None:  # the freeze begins with this period's sample
            self._frozen = (now + self._freeze_for, self.sim.sample(), stamp, self.sim.builtin_compensation_effort())
            self._freeze_for = None
        if self._frozen is not None:
            until, sample, frozen_stamp, builtin = self._frozen
            if now < until:
                jitter = float(self._stamp_jitter.uniform(-FROZEN_STAMP_JITTER, FROZEN_STAMP_JITTER))
                return sample, _time_msg(frozen_stamp.sec + 1e-9 * frozen_stamp.nanosec + jitter), builtin
            self._frozen = None
            self.get_logger().info(f"{self.arm}: state no longer frozen")
        return self.sim.sample(), stamp, self.sim.builtin_compensation_effort()

    def _publish(self, stamp: Time) -> None:
        """One state sample on every topic (zeros and stamp 0 while the data is invalid), then the events."""
        self._commands.follow(1.0 / self.publish_rate)
        sample, stamp, builtin = self._sample_to_publish(stamp)
        valid_stamp = stamp if sample.valid else INVALID_STAMP
        n = self.arm_joints
        names = self.names[:n]

        def joint_state(topic: str, joint_names, position, velocity, effort, at: Time = valid_stamp) -> None:
            publisher = self._pub[topic]
            if publisher.get_subscription_count() == 0:  # the bridge publishes a periodic topic only while
                return  # someone subscribes to it
            msg = fill_joint_state(JointState(), at, joint_names, position, velocity, effort)
            try:
                publisher.publish(msg)
                self.samples_published[topic] += 1
            except Exception as exc:  # noqa: BLE001 - the middleware refused one sample: the arm runs on
                # (seen with Fast DDS at 1 kHz on a loaded machine: "cannot publish data")
                self.publish_failures += 1
                self.get_logger().warning(f"/{self.arm}/{topic}: a state sample not published ({exc}); "
                                          f"{self.publish_failures} so far", throttle_duration_sec=BEHIND_EVERY)

        joint_state("measured_js", names, sample.position[:n], sample.velocity[:n], sample.effort[:n])
        joint_state("setpoint_js", names, sample.setpoint_position[:n], None, sample.setpoint_effort[:n])
        if self.spec.jaw:
            with_tool = n < self.sim.dof
            jaw_stamp = valid_stamp if with_tool else INVALID_STAMP  # no tool: no jaw
            zero = np.zeros(1)
            jaw = (lambda a: a[self.jaw:]) if with_tool else (lambda a: zero)
            joint_state("jaw/measured_js", ["jaw"], jaw(sample.position), jaw(sample.velocity), jaw(sample.effort),
                        jaw_stamp)
            joint_state("jaw/setpoint_js", ["jaw"], jaw(sample.setpoint_position), None,
                        jaw(sample.setpoint_effort), jaw_stamp)
        if self.spec.gripper:
            joint_state("gripper/measured_js", ["gripper"], [0.0], None, None)
        # the flag's state: the torques while it is on, zeros while it is off; valid with the joints' data (the
        # dVRK marks it valid only while the joints are ready)
        joint_state("gravity_compensation/setpoint_js", names, None, None, builtin[:n])
        # Cartesian data needs the kinematic joints: a PSM without its tool has none
        cartesian = sample.valid and (not self.spec.jaw or n < self.sim.dof)
        self._cartesian.publish(sample.position, sample.setpoint_position, sample.velocity, sample.effort,
                                stamp if cartesian else INVALID_STAMP)
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
            self._stamp_origin = ros_minus_monotonic + schedule.origin - sim_start
        reported = 0
        while self._running(server):
            wait = schedule.wait()
            if wait > 0.0:
                time.sleep(min(wait, 0.1))
                continue
            seconds = schedule.due()
            if seconds > schedule.period:  # late: the commands that arrived meanwhile are taken first
                time.sleep(CATCH_UP_YIELD)
            with self._lock:
                self._stamp_origin = ros_minus_monotonic + schedule.origin - sim_start
            self._advance(seconds)
            with self._lock:
                self._sim_time = sim_start + schedule.elapsed
                self._publish(_time_msg(self._stamp_origin + self._sim_time))
            if schedule.stalls > reported:
                reported = schedule.stalls
                dropped = (f"; {schedule.drops} over {WALL_MAX_LAG:g} s not simulated ({schedule.dropped:.3f} s: "
                           "the arm stood still)") if schedule.drops else ""
                self.get_logger().warning(
                    f"behind the wall clock (the process was not scheduled): {schedule.stalls} stalls over "
                    f"{1e3 * schedule.stall:.0f} ms so far, {schedule.stalled:.3f} s in all, worst "
                    f"{1e3 * schedule.worst_lag:.0f} ms, caught up with the commands received{dropped}",
                    throttle_duration_sec=BEHIND_EVERY)

    def _run_clock(self, server: threading.Thread) -> None:
        """Simulated time in steps of 1/clock_rate, /clock after each, the state every publish period."""
        clock_pub = self._clock_pub
        if clock_pub is None:
            raise DvrkIdentError("simulated time without a /clock publisher (publish_clock is false)")
        clock_ns = round(1e9 / self.clock_rate)
        state_ns = round(1e9 / self.publish_rate)
        elapsed_ns, next_state_ns = 0, state_ns
        epoch_ns = round(SIM_EPOCH * 1e9)
        pacer = self._pacer
        pacer.restart()
        reported_slips = 0
        clock = Clock()
        while self._running(server):
            self._advance(clock_ns * 1e-9)
            elapsed_ns += clock_ns
            stamp = _time_msg((epoch_ns + elapsed_ns) * 1e-9)
            clock.clock = stamp
            try:
                clock_pub.publish(clock)
            except Exception as exc:  # noqa: BLE001 - as for the state samples: time goes on
                self.publish_failures += 1
                self.get_logger().warning(f"/clock not published ({exc}); {self.publish_failures} failures so far",
                                          throttle_duration_sec=BEHIND_EVERY)
            if elapsed_ns >= next_state_ns:
                next_state_ns += state_ns
                with self._lock:
                    self._sim_time = elapsed_ns * 1e-9
                    self._publish(stamp)
            wait = pacer.delay(elapsed_ns * 1e-9)
            if wait > 0.0:
                time.sleep(wait)
            elif pacer.slips > reported_slips:
                reported_slips = pacer.slips
                self.get_logger().warning(
                    f"behind real time: {pacer.slips} slips, {pacer.slipped:.3f} s of wall "
                    "time not replayed (simulated time slips rather than running ahead of its commands)",
                    throttle_duration_sec=BEHIND_EVERY)

    def close(self) -> None:
        """The final log lines: how the simulated time kept up; the state samples published on each topic."""
        if self.publish_clock:
            self.get_logger().info(
                f"{self.arm}: {self._sim_time:.1f} s simulated, /clock at {self.clock_rate:g} Hz; "
                f"{self._pacer.slips} slips, {self._pacer.slipped:.3f} s of wall time not replayed")
        else:
            self.get_logger().info(f"{self.arm}: {self._schedule.summary()}{self._servo_summary()}")
        self.get_logger().info(f"{self.arm}: state samples published (only while subscribed): "
                               + ", ".join(f"{topic} {count}" for topic, count in self.samples_published.items()))

    def _servo_summary(self) -> str:
        """How late after their stamps the streamed setpoints were obeyed (the delivery and scheduling delay)."""
        late = np.asarray(self.sim.servo_lateness)
        failures = f"; {self.publish_failures} state samples not published" if self.publish_failures else ""
        if late.size == 0:
            return failures
        if self.sim.servo_timing == "stamp":
            return (f"; {late.size} servo_jp obeyed {1e3 * np.median(late):.1f} ms after their stamps (median; p99 "
                    f"{1e3 * np.percentile(late, 99):.1f} ms, max {1e3 * late.max():.1f} ms), "
                    f"{self.sim.stale_servo} stale" + failures)
        # on arrival: 0 when the physics reached the instant the setpoint reached the arm after it was served
        return (f"; {late.size} servo_jp taken on arrival, {100 * np.mean(late > 0):.1f} % after the instant they "
                f"reached the arm (by median {1e3 * np.median(late):.1f} ms; p99 {1e3 * np.percentile(late, 99):.1f} "
                f"ms, max {1e3 * late.max():.1f} ms: this simulator's command thread)" + failures)


def main(args: list[str] | None = None) -> int:
    return run(SimulatedArmNode, args, executor="events")  # fastest dispatch where rclpy has it


if __name__ == "__main__":
    sys.exit(main())
