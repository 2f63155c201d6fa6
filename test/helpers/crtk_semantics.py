"""The dVRK Python client's view of an arm's events (jhu-dvrk/dvrk_python 2.4 on crtk_python_client), rewritten
for the tests from its documented behaviour (../shared/reference/dvrk-ros2-interface.md):

- an ``operating_state`` message is kept only when its stamp is strictly newer than the one kept; every
  message wakes the waiters;
- the last busy time is the newest stamp of a busy message;
- ``move_jp(goal).wait()`` takes the client's clock when the move is sent and returns True once a busy event
  newer than that was seen and the kept state is idle; False at its timeout;
- ``enable()``/``disable()``/``home()`` send the command and wait for the kept state to say so.

Spun on the test's Probe (helpers/ros_probe.py), one thread.
"""
from __future__ import annotations

import time

from helpers.ros_probe import Probe


class ClientView:
    def __init__(self, probe: Probe, arm: str):
        from crtk_msgs.msg import OperatingState, StringStamped
        from sensor_msgs.msg import JointState

        self.probe, self.arm = probe, arm
        self.kept: OperatingState | None = None
        self.kept_ns = -1
        self.last_busy_ns = self.now_ns()
        self.received = 0
        self.stamps: list[int] = []  # every message's stamp, in arrival order
        node = probe.node
        node.create_subscription(OperatingState, f"/{arm}/operating_state", self._on_state, 10)
        self._state_pub = node.create_publisher(StringStamped, f"/{arm}/state_command", 10)
        self._move_pub = node.create_publisher(JointState, f"/{arm}/move_jp", 1)
        self._jaw_pub = node.create_publisher(JointState, f"/{arm}/jaw/move_jp", 1) if arm.startswith("PSM") else None
        self.setpoint: list = []
        node.create_subscription(JointState, f"/{arm}/setpoint_js", lambda m: self.setpoint.append(m), 10)
        self.jaw_setpoint: list = []
        node.create_subscription(JointState, f"/{arm}/jaw/setpoint_js", lambda m: self.jaw_setpoint.append(m), 10)

    def now_ns(self) -> int:
        return self.probe.node.get_clock().now().nanoseconds

    def _on_state(self, msg) -> None:
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        self.stamps.append(ns)
        self.received += 1
        if msg.is_busy and ns > self.last_busy_ns:
            self.last_busy_ns = ns
        if ns > self.kept_ns:
            self.kept, self.kept_ns = msg, ns

    def publishers(self) -> list:
        return [p for p in (self._state_pub, self._move_pub, self._jaw_pub) if p is not None]

    def state_command(self, command: str) -> None:
        from crtk_msgs.msg import StringStamped

        msg = StringStamped(string=command)
        msg.header.stamp = self.probe.node.get_clock().now().to_msg()
        self._state_pub.publish(msg)

    def move_jp(self, goal, jaw: bool = False) -> int:
        """Send the move; returns the client's start time (ns), as its wait handle keeps it."""
        from sensor_msgs.msg import JointState

        start = self.now_ns()
        msg = JointState(position=[float(x) for x in goal])
        msg.header.stamp = self.probe.node.get_clock().now().to_msg()
        publisher = self._jaw_pub if jaw else self._move_pub
        assert publisher is not None, f"{self.arm} has no jaw"
        publisher.publish(msg)
        return start

    def wait_move(self, start_ns: int, timeout: float = 10.0) -> tuple[bool, float]:
        """The client's wait(): (True, seconds) once a busy event newer than ``start_ns`` and then an idle kept
        state were seen; (False, seconds) at the timeout."""
        began = time.monotonic()

        def done() -> bool:
            return self.last_busy_ns > start_ns and self.kept is not None and not self.kept.is_busy

        ok = self.probe.spin_until(done, timeout)
        return ok, time.monotonic() - began

    def wait_state(self, state: str, timeout: float = 5.0) -> bool:
        """enable()/disable(): the kept state is ``state`` after an event that followed the command."""
        seen = self.received
        return self.probe.spin_until(lambda: self.received > seen and self.kept is not None
                                     and self.kept.state == state, timeout)
