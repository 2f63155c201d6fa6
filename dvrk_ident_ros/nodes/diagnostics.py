"""The ROS diagnostics convention for any node of this package: diagnostic_msgs/DiagnosticArray on
``/diagnostics`` (what rqt_robot_monitor and diagnostic_aggregator read), one DiagnosticStatus per task,
published at about 1 Hz by the node's own timer; and a throttle for event logs.

Levels: :data:`OK`, :data:`WARN`, :data:`ERROR` (DiagnosticStatus's bytes). Values are KeyValue strings:
floats with up to 6 significant digits, booleans as true/false.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node

DIAGNOSTICS_TOPIC = "/diagnostics"
OK, WARN, ERROR = 0, 1, 2  # DiagnosticStatus.OK, WARN, ERROR (STALE, 3, is the aggregator's)
#: s between two reports (the convention: about 1 Hz)
REPORT_PERIOD = 1.0


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    return str(value)


def key_values(values: Mapping[str, object]) -> list[KeyValue]:
    return [KeyValue(key=str(k), value=_text(v)) for k, v in values.items()]


class DiagnosticsPublisher:
    """One DiagnosticStatus (``name``, ``hardware_id``) in a DiagnosticArray on /diagnostics."""

    def __init__(self, node: Node, name: str, hardware_id: str):
        self._node = node
        self._publisher = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self._status = DiagnosticStatus(name=name, hardware_id=hardware_id)
        self._array = DiagnosticArray()

    def publish(self, level: int, message: str, values: Mapping[str, object]) -> DiagnosticStatus:
        status = self._status
        status.level = bytes([level])  # a byte field
        status.message = message
        status.values = key_values(values)
        self._array.header.stamp = self._node.get_clock().now().to_msg()
        self._array.status = [status]
        self._publisher.publish(self._array)
        return status


def fill_compensation_diagnostics(msg, stamp, law, supervisor, joints: int, compute_time: float):
    """``msg`` (GravityCompensationDiagnostics) filled with the law's last torques (``joints`` of them) and the
    supervisor's state, stamped ``stamp``; returned."""
    sup, n = supervisor, joints
    msg.header.stamp = stamp
    msg.gravity_torque = law.gravity[:n]
    msg.disturbance_torque = law.disturbance[:n]
    msg.blend_weight = law.alpha[:n]
    msg.total_torque = law.total[:n]
    msg.saturated = law.saturated[:n]
    msg.state = sup.state
    msg.ramp_scale = sup.scale
    msg.stale_events = sup.stale_events
    msg.late_samples = sup.late_samples
    msg.handovers = sup.handovers
    msg.max_gap = sup.max_gap
    msg.period = sup.period
    msg.compute_time = compute_time
    return msg


class Throttle:
    """At most one report per ``every`` s for each kind of event; counts the ones held back (ROS-free)."""

    def __init__(self, every: float = 1.0):
        self.every = every
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def allow(self, kind: str, now: float) -> int | None:
        """None: hold this one back; else report it, with the number held back since the last report."""
        if now - self._last.get(kind, -math.inf) < self.every:
            self._held[kind] = self._held.get(kind, 0) + 1
            return None
        self._last[kind] = now
        return self._held.pop(kind, 0)
