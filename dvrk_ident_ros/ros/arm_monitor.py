"""The arm's operating state as the nodes and clients read it (``/<ARM>/operating_state``), and how long it must
have been ready before a first command."""
from __future__ import annotations

import time
from collections.abc import Callable

from rclpy.node import Node

from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.ros.messages import crtk_messages
from dvrk_ident_ros.ros.qos import EVENT_QOS

#: s: how long the arm must have said ENABLED, homed and not busy before a node first commands it. An MTM homed
#: again (its encoders already biased) says exactly that for one control cycle before its homing move (busy)
#: begins (sawIntuitiveResearchKit, the arm's ENCODERS_BIASED state), and it takes commands then.
READY_SETTLE = 0.3


class ArmStateMonitor:
    """The arm's ``/<ARM>/operating_state`` as an :class:`~dvrk_ident_ros.arm.state.OperatingStatus`.

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
