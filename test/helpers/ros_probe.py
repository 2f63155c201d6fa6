"""A test-side ROS node that publishes, collects what node processes send and waits by polling.

Everything is spun on one SingleThreadedExecutor in the test's own context
(the house style); waits are polling loops with generous deadlines, so the
tests hold on a loaded 2-core machine.
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable


def deep_qos(depth: int = 5000):
    """Reliable, deep: nothing a node sends at 1 kHz is lost while the test is busy for a moment."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE)


class Probe:
    def __init__(self, context, name: str):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node(name, context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)

    def collect(self, msg_type, topic: str, qos=None) -> list[tuple[float, object]]:
        """Every message on ``topic`` as (time.monotonic() at receipt, message), in arrival order."""
        received: list[tuple[float, object]] = []
        self.node.create_subscription(msg_type, topic, lambda msg: received.append((time.monotonic(), msg)),
                                      qos or deep_qos())
        return received

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self.executor.spin_once(timeout_sec=min(remaining, 0.05))

    def spin_until(self, condition: Callable[[], bool], timeout: float,
                   proc: subprocess.Popen | None = None) -> bool:
        """Spin until ``condition()`` holds (True), the deadline passes or ``proc`` exits (False)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline or (proc is not None and proc.poll() is not None):
                return condition()
            self.executor.spin_once(timeout_sec=0.02)
        return True

    def wait_for_graph(self, proc: subprocess.Popen | None, publishers: Iterable[str] = (),
                       subscribers: Iterable = (), timeout: float = 20.0, settle: float = 0.3) -> bool:
        """Wait until the node process publishes every topic of ``publishers`` and our publishers in
        ``subscribers`` are matched; then spin ``settle`` s more so that discovery completes both ways."""
        publishers, subscribers = list(publishers), list(subscribers)

        def ready() -> bool:
            return (all(self.node.count_publishers(t) >= 1 for t in publishers)
                    and all(p.get_subscription_count() >= 1 for p in subscribers))

        if not self.spin_until(ready, timeout, proc):
            return False
        self.spin_for(settle)
        return True

    def close(self) -> None:
        self.executor.remove_node(self.node)
        self.node.destroy_node()
        self.executor.shutdown(timeout_sec=1.0)
