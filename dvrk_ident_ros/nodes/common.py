"""What every node shares: QoS, arm naming, JointState filling, parameter declaration,
the callback guard and the main loop.

A callback wrapped by :func:`guarded` that raises
:class:`~dvrk_ident_ros.errors.DvrkIdentError` (bad input) logs one line and the
node keeps running; the gravity compensation checks its samples inline instead.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from dvrk_ident_ros.arm_state import OperatingStatus
from dvrk_ident_ros.arms import arm_family, canonical_arm  # noqa: F401 (arm_family: re-exported)
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.node_help import node_help, wants_help

#: State and command topics: reliable, deep enough that a 1 kHz stream survives a slow callback.
STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE)
#: A control loop's state subscription: best effort (a late sample is worth less than the next one, and no
#: retransmission delays it); matches the dVRK's reliable publishers. Not for the recorder: it loses nothing.
CONTROL_STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)

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


def declare(node: Node, name: str, default, kind: type | None = None, items: type | None = None):
    """Declare a parameter; ``-p x:=1`` for a float parameter is accepted as 1.0, and a value of the
    wrong type (or, for a list, an element not of type ``items``) is a DvrkIdentError (one line, exit
    status 2), not a traceback."""
    kind = kind or type(default)
    try:
        value = node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True)).value
    except ParameterException as exc:
        raise DvrkIdentError(f"parameter {name}: {exc}") from exc
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is list:  # an empty list arrives typed as a byte array
        value = [] if value is None or len(value) == 0 else list(value)
        if items is not None and not all(isinstance(v, items) for v in value):
            raise DvrkIdentError(f"parameter {name}: {value!r} is not a list of {items.__name__}")
        return value
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise DvrkIdentError(f"parameter {name}: {value!r} is not a {kind.__name__}")
    return value


_shutdown = threading.Event()


def shutdown_requested() -> bool:
    """True once SIGINT/SIGTERM arrived: loops finish their current step and return."""
    return _shutdown.is_set()


def _request_shutdown(signum, frame) -> None:
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
    return status


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
    Where crtk_msgs is absent, ``available`` is False and nothing is subscribed: a node then relies on
    the stamp-0 mark of invalid data only. ``send(command)`` publishes ``/<ARM>/state_command``
    (enable, disable, home, unhome, pause, resume). ``on_change(old, new)`` runs on every change.
    """

    def __init__(self, node: Node, arm: str, on_change: Callable | None = None):
        self.arm = arm
        self.status: OperatingStatus | None = None
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

    def _on_state(self, msg) -> None:
        new = OperatingStatus(str(msg.state), bool(msg.is_homed), bool(msg.is_busy))
        old, self.status = self.status, new
        if new != old and self.on_change is not None:
            self.on_change(old, new)

    @property
    def ready(self) -> bool:
        """ENABLED, homed and not busy (True where crtk_msgs is absent: then only stamps can tell)."""
        if not self.available:
            return True
        return self.status is not None and self.status.ready

    def reason(self) -> str:
        """Why the arm may not be commanded ('' when it may)."""
        if not self.available:
            return ""
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
