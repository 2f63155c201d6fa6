"""What every node shares: QoS, arm naming, JointState filling, parameter declaration,
the callback guard and the main loop.

A callback wrapped by :func:`guarded` that raises
:class:`~dvrk_ident_ros.errors.DvrkIdentError` (bad input) logs one line and the
node keeps running; the gravity compensation checks its samples inline instead.
"""
from __future__ import annotations

import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import rclpy
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from dvrk_ident_ros.arm_state import OperatingStatus
from dvrk_ident_ros.arms import arm_family, canonical_arm  # noqa: F401 (arm_family: re-exported)
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.node_help import node_help, wants_help
from dvrk_ident_ros.parameters import Kind, NodeSchema, ParameterValueError, render
from dvrk_ident_ros.parameters import Parameter as SchemaParameter
from dvrk_ident_ros.parameters.schema import INT64_MAX

#: State and command topics: reliable, deep enough that a 1 kHz stream survives a slow callback.
STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE)
#: A control loop's state subscription: best effort (a late sample is worth less than the next one, and no
#: retransmission delays it); matches the dVRK's reliable publishers. Not for the recorder: it loses nothing.
CONTROL_STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)

#: s: how long the arm must have said ENABLED, homed and not busy before a node first commands it. An MTM homed
#: again (its encoders already biased) says exactly that for one control cycle before its homing move (busy)
#: begins (sawIntuitiveResearchKit, the arm's ENCODERS_BIASED state), and it takes commands then.
READY_SETTLE = 0.3
#: The player's status (/dvrk_ident/<ARM>/player_status), both ends: its phase changes cut the recorder's sampling
#: windows, so none may be lost. Reliable, and deep enough (10 s at the status's 50 Hz) that a recorder stalled for
#: seconds still gets every one: with depth 10 a fresh-clone CI run's recorder, stalled 2 s, lost a pose's SAMPLING
#: status (the pose then went uncounted).
STATUS_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=500, reliability=ReliabilityPolicy.RELIABLE)
#: The dVRK's event topics (operating_state, goal_reached): a late subscriber gets the last message.
EVENT_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)

def check_arm_name(arm: str) -> str:
    """The canonical dVRK arm name (MTML, MTMR, PSM1..3) of ``arm``, given in any case."""
    return canonical_arm(arm)


def fill_joint_state(msg, stamp, names: Sequence[str], position=None, velocity=None, effort=None):
    """Fill a sensor_msgs/JointState in place (lists of floats; None leaves the field empty)."""
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [] if position is None else [float(x) for x in position]
    msg.velocity = [] if velocity is None else [float(x) for x in velocity]
    msg.effort = [] if effort is None else [float(x) for x in effort]
    return msg


def guarded(node: Node, what: str, callback: Callable, every: float = 1.0) -> Callable:
    """Wrap a callback: a DvrkIdentError (bad input) is logged and swallowed; the node lives.

    Logs are throttled per ``what`` (at most one line per ``every`` s for this callback), so a
    rejected command on one topic never hides one on another.
    """
    last = [-float("inf")]
    suppressed = [0]

    def wrapper(*args):
        try:
            return callback(*args)
        except DvrkIdentError as exc:
            now = time.monotonic()
            if now - last[0] >= every:
                more = f" (+{suppressed[0]} more since the last report)" if suppressed[0] else ""
                node.get_logger().warning(f"{what}: rejected: {exc}{more}")
                last[0], suppressed[0] = now, 0
            else:
                suppressed[0] += 1
        return None

    return wrapper


_ROS_TYPES = {Kind.BOOL: ParameterType.PARAMETER_BOOL, Kind.INTEGER: ParameterType.PARAMETER_INTEGER,
              Kind.DOUBLE: ParameterType.PARAMETER_DOUBLE, Kind.STRING: ParameterType.PARAMETER_STRING,
              Kind.DOUBLE_ARRAY: ParameterType.PARAMETER_DOUBLE_ARRAY,
              Kind.STRING_ARRAY: ParameterType.PARAMETER_STRING_ARRAY}


def parameter_descriptor(spec: SchemaParameter) -> ParameterDescriptor:
    """What ``ros2 param describe`` shows of a schema parameter: type, description (with its unit), range
    (rclpy enforces it; a strict lower bound is the on-set callback's) or choices, read-only."""
    unit = f" [{spec.unit}]" if spec.unit else ""
    descriptor = ParameterDescriptor(name=spec.name, description=spec.description + unit,
                                     additional_constraints=spec.constraints(), read_only=spec.read_only,
                                     dynamic_typing=spec.dynamic_typing)
    if not spec.dynamic_typing:
        descriptor.type = _ROS_TYPES[spec.kind]
    bounded = spec.minimum is not None or spec.maximum is not None
    if bounded and spec.kind is Kind.DOUBLE:
        low = -math.inf if spec.minimum is None else float(spec.minimum)
        high = math.inf if spec.maximum is None else float(spec.maximum)
        descriptor.floating_point_range = [FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    elif bounded and spec.kind is Kind.INTEGER:
        low_int = -INT64_MAX - 1 if spec.minimum is None else int(spec.minimum)
        high_int = INT64_MAX if spec.maximum is None else int(spec.maximum)
        descriptor.integer_range = [IntegerRange(from_value=low_int, to_value=high_int, step=1)]
    return descriptor


def _ros_value(value):
    return list(value) if isinstance(value, tuple) else value


def declare_parameters(node: Node, schema: NodeSchema,
                       on_change: Mapping[str, Callable[[Any], None]] | None = None) -> dict[str, Any]:
    """Declare every parameter of ``schema`` on ``node``; their values as the node takes them.

    At start: ``-p x:=1`` for a double is taken as 1.0, and a value of
    the wrong type or out of range is a :class:`~dvrk_ident_ros.errors.DvrkIdentError` naming it (one
    ``error:`` line, exit status 2). Each value is read through a dynamically typed declaration, checked
    and converted by the schema, then declared again with its :func:`parameter_descriptor` (typed, ranged,
    read-only unless the schema says ``runtime``). A parameter without a default stays dynamically typed
    and read-only; an ``arm_dependent`` one is checked by the node against its arm.

    At run time an on-set callback refuses, with the reason, a value the schema refuses (rclpy refuses a
    wrong type, a value outside a range and a read-only parameter before it); a valid value of a ``runtime``
    parameter goes to ``on_change[name](value)`` at once, which may refuse it by raising DvrkIdentError (the
    reason is the answer's). Every runtime parameter needs a handler.
    """
    handlers = dict(on_change or {})
    if set(handlers) != set(schema.runtime()):
        raise ValueError(f"{schema.node}: run-time handlers for {sorted(handlers)}, the schema's run-time "
                         f"parameters are {sorted(schema.runtime())}")
    values: dict[str, Any] = {}
    for spec in schema:
        try:
            if spec.dynamic_typing:
                raw = node.declare_parameter(spec.name, None, parameter_descriptor(spec)).value
            else:
                raw = node.declare_parameter(spec.name, _ros_value(spec.default),
                                             ParameterDescriptor(dynamic_typing=True)).value
        except ParameterException as exc:
            raise DvrkIdentError(f"parameter {spec.name}: {exc}") from exc
        if spec.arm_dependent:  # the node checks it against the arm (one value per joint)
            sequence = not isinstance(raw, bool | int | float | str) and raw is not None
            values[spec.name] = list(raw) if sequence else ([] if raw is None else raw)  # a scalar: refused there
            continue
        value = spec.coerce(raw)
        values[spec.name] = value
        if spec.dynamic_typing:
            continue
        node.undeclare_parameter(spec.name)
        try:
            node.declare_parameter(spec.name, _ros_value(value), parameter_descriptor(spec), ignore_override=True)
        except ParameterException as exc:
            raise DvrkIdentError(f"parameter {spec.name}: {exc}") from exc

    def on_set(parameters: list) -> SetParametersResult:
        changes = []
        for parameter in parameters:
            if parameter.name not in schema:
                continue  # use_sim_time and the like: rclpy's own
            spec = schema[parameter.name]
            if spec.read_only:
                return SetParametersResult(successful=False, reason=f"{spec.name} is read-only: it is read once "
                                           "at start (restart the node to change it)")
            try:
                spec.check(parameter.value)
            except ParameterValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            changes.append((spec.name, parameter.value))
        for name, value in changes:
            try:
                handlers[name](value)
            except DvrkIdentError as exc:  # the handler refused it: the parameter keeps its value
                node.get_logger().error(f"parameter {name} not set to {render(value)}: {exc}")
                return SetParametersResult(successful=False, reason=str(exc))
            node.get_logger().info(f"parameter {name} set to {render(value)}")
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return values


_shutdown = threading.Event()


def shutdown_requested() -> bool:
    """True once SIGINT/SIGTERM arrived: loops finish their current step and return."""
    return _shutdown.is_set()


_exit_status = [0]


def _request_shutdown(signum, frame) -> None:
    _shutdown.set()


def request_exit(status: int) -> None:
    """End the node as SIGINT does (its ``close`` runs), with exit ``status`` (a refusal: 2)."""
    _exit_status[0] = status
    _shutdown.set()


def _events_executor(node: Node):
    """rclpy's EventsExecutor (Kilted; Jazzy from rclpy 7.1.4); where it does not exist (Humble), the
    SingleThreadedExecutor, with a warning: the node works the same, with more latency."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        node.get_logger().warning("rclpy has no EventsExecutor here (Humble?): using the SingleThreadedExecutor")
        return SingleThreadedExecutor(context=node.context)
    return EventsExecutor(context=node.context)


def _node_module(node_factory: Callable) -> str:
    """The module (``dvrk_ident_ros.nodes.<node>``) whose main passed ``node_factory`` to :func:`run`."""
    module = getattr(node_factory, "__module__", None) or "__main__"
    if module == "__main__":  # python -m dvrk_ident_ros.nodes.<node>
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else module
    return module


def run(node_factory: Callable[[], Node], args: list[str] | None = None, executor: str = "single") -> int:
    """Create the node, spin it until SIGINT/SIGTERM, then ``node.close()``.

    Signals only set a flag (:func:`shutdown_requested`) that the loops poll:
    no callback, bag write or message conversion is ever cut in the middle,
    and ``close`` can still publish (the gravity-compensation node hands the
    arm back to the dVRK's compensation), since rclpy's own handler is off.
    ``executor``: "single" (SingleThreadedExecutor), "events" (rclpy's
    EventsExecutor: lowest latency, used by the gravity compensation; always
    spun with a timeout) or "multi" (two threads, for a service whose job
    must not block the node). Never "multi" for high-rate subscriptions: the
    multi-threaded executor loses messages at 1 kHz in this rclpy version.

    ``-h``/``--help`` (before any ``--ros-args``) prints the node's purpose and parameters and returns 0
    without starting ROS.
    """
    if wants_help(list(sys.argv[1:] if args is None else args)):
        print(node_help(_node_module(node_factory)), flush=True)
        return 0
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # noqa: BLE001 - e.g. a ROS_DOMAIN_ID that is not a number, malformed --ros-args
        print(f"error: cannot start ROS: {exc}", flush=True)
        return 2
    signal.signal(signal.SIGINT, _request_shutdown)
    signal.signal(signal.SIGTERM, _request_shutdown)
    node = None
    status = 0
    try:
        try:
            node = node_factory()
        except (DvrkIdentError, ParameterException):
            raise
        except Exception as exc:  # a configuration the node cannot start with, whatever broke
            raise DvrkIdentError(f"cannot start: {type(exc).__name__}: {exc}") from exc
        if executor == "events":
            spinner = _events_executor(node)
        elif executor == "multi":  # only for nodes without high-rate subscriptions (the /identify service)
            from rclpy.executors import MultiThreadedExecutor

            spinner = MultiThreadedExecutor(num_threads=2)
        else:
            spinner = SingleThreadedExecutor()
        spinner.add_node(node)
        spin = getattr(node, "spin", None)
        if spin is not None:  # nodes with a loop of their own (the simulated arm under /clock, the player)
            spin(spinner)
        else:
            while rclpy.ok() and not shutdown_requested():
                spinner.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except DvrkIdentError as exc:  # a configuration the node cannot start with
        print(f"error: {exc}", flush=True)
        status = 2
    except ParameterException as exc:
        print(f"error: parameter: {exc}", flush=True)
        status = 2
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if close is not None:
                try:
                    close()
                except Exception as exc:  # noqa: BLE001 - the exit path must finish
                    print(f"warning: {type(node).__name__}.close: {exc}", flush=True)
            node.destroy_node()
        rclpy.try_shutdown()
    return status or _exit_status[0]


def crtk_messages():
    """``crtk_msgs.msg`` (OperatingState, StringStamped), or None where the package is absent."""
    try:
        from crtk_msgs import msg
    except ImportError:
        return None
    return msg


class ArmStateMonitor:
    """The arm's ``/<ARM>/operating_state`` as an :class:`~dvrk_ident_ros.arm_state.OperatingStatus`.

    ``status`` is None until the first message (transient_local: the dVRK's last one arrives at once).
    Where crtk_msgs is absent, ``available`` is False and nothing is subscribed: a node that only reads
    the arm goes on; one that commands it refuses to start (:meth:`require`). ``send(command)``
    publishes ``/<ARM>/state_command`` (enable, disable, home, unhome, pause, resume).
    ``on_change(old, new)`` runs on every change.
    """

    def __init__(self, node: Node, arm: str, on_change: Callable | None = None):
        self.arm = arm
        self.status: OperatingStatus | None = None
        self._ready_at: float | None = None  # time.monotonic() when the arm last turned ready (None: not ready)
        self.on_change = on_change
        self._node = node
        msgs = crtk_messages()
        self.available = msgs is not None
        self._command = None
        if msgs is None:
            return
        self._string_stamped = msgs.StringStamped
        node.create_subscription(msgs.OperatingState, f"/{arm}/operating_state", self._on_state, EVENT_QOS)
        self._command = node.create_publisher(msgs.StringStamped, f"/{arm}/state_command", 10)

    def require(self) -> None:
        """For a node that commands the arm: DvrkIdentError where crtk_msgs is absent. Valid measured_js
        stamps alone do not tell a ready arm: a real MTM's data is valid while it homes (its encoders are
        biased before the homing move), and a command then takes over or faults the homing."""
        if not self.available:
            raise DvrkIdentError(
                f"crtk_msgs is not installed: the {self.arm}'s operating state (ENABLED, homed, busy) cannot be "
                "read, and valid measured_js stamps alone do not say the arm is ready (a real MTM's data is valid "
                "while it homes), so nothing will be commanded. crtk_msgs is part of every dVRK workspace; outside "
                "one, `make setup` builds a stand-in")

    def _on_state(self, msg) -> None:
        new = OperatingStatus(str(msg.state), bool(msg.is_homed), bool(msg.is_busy))
        old, self.status = self.status, new
        if not new.ready:
            self._ready_at = None
        elif self._ready_at is None:
            self._ready_at = time.monotonic()
        if new != old and self.on_change is not None:
            self.on_change(old, new)

    @property
    def ready(self) -> bool:
        """ENABLED, homed and not busy (False where crtk_msgs is absent: nothing can tell)."""
        return self.status is not None and self.status.ready

    def settled(self, now: float) -> bool:
        """Ready, and said so without a break for READY_SETTLE s by ``now`` (time.monotonic())."""
        return self._ready_at is not None and now - self._ready_at >= READY_SETTLE

    def reason(self) -> str:
        """Why the arm may not be commanded ('' when it may)."""
        if not self.available:
            return f"crtk_msgs is not installed: the {self.arm}'s operating state cannot be read"
        if self.status is None:
            return f"no /{self.arm}/operating_state yet: is the dVRK console (or the simulated arm) running?"
        return self.status.not_ready_reason(self.arm)

    def send(self, command: str) -> bool:
        """Publish a state command; False where crtk_msgs is absent."""
        if self._command is None:
            return False
        msg = self._string_stamped(string=command)
        msg.header.stamp = self._node.get_clock().now().to_msg()
        self._command.publish(msg)
        return True
