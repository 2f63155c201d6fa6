"""A node's life: the callback guard (bad input logged, the node lives), signals, the exit status and the main
loop (:func:`run`)."""
from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.node_help import node_help, wants_help


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


def spin_until(node: Node, done: Callable[[], bool], deadline: float, *, step: Callable[[], None],
               period: float) -> None:
    """Spin ``node``'s executor until ``done()`` or the monotonic ``deadline`` (s), or the context ends; a node
    not spun by an executor (closed by hand) calls ``step`` every ``period`` s instead (its timer's work)."""
    executor = node.executor
    while not done() and node.context.ok():
        now = time.monotonic()
        if now >= deadline:
            return
        if executor is not None:
            executor.spin_once(timeout_sec=min(0.05, deadline - now))
        else:
            time.sleep(min(period, deadline - now))
            step()


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
