"""The dVRK arm's operating state and what it allows (ROS-free).

The dVRK publishes ``/<ARM>/operating_state`` (crtk_msgs/OperatingState:
``state`` DISABLED, ENABLED, PAUSED or FAULT, ``is_homed``, ``is_busy``) and
obeys ``servo_jp``, ``servo_jf`` and ``move_jp`` only when the arm is ENABLED
and homed; while it homes it is already ENABLED with ``is_busy`` true, and an
effort command then faults it. Nothing in this package commands an arm that is
not ENABLED, homed and not busy (:attr:`OperatingStatus.ready`).

Invalid data: while the arm is powered off, not homed or faulted, the bridge
still publishes ``measured_js``, all zeros with ``header.stamp`` 0. A sample
with stamp 0 (:func:`stamp_is_valid` false) is "arm not ready": never
commanded from, never recorded as data, never a fresh sample for a watchdog.
(What the nodes expect from the arm: docs/lab-procedure.md.)
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class CrtkState(str, Enum):
    """crtk OperatingState.state values."""

    DISABLED = "DISABLED"
    ENABLED = "ENABLED"
    PAUSED = "PAUSED"
    FAULT = "FAULT"


#: The strings ``/<ARM>/state_command`` (crtk_msgs/StringStamped) accepts.
STATE_COMMANDS = ("enable", "disable", "home", "unhome", "pause", "resume")


def stamp_is_valid(sec: int, nanosec: int) -> bool:
    """False for the bridge's mark of invalid data (``header.stamp`` 0)."""
    return sec != 0 or nanosec != 0


@dataclass(frozen=True)
class OperatingStatus:
    """One ``operating_state`` message: ``state`` as sent (an unknown string stays as it is)."""

    state: str = CrtkState.DISABLED.value
    is_homed: bool = False
    is_busy: bool = False

    @property
    def ready(self) -> bool:
        """ENABLED, homed and not busy: the only condition under which the arm may be commanded."""
        return self.state == CrtkState.ENABLED.value and self.is_homed and not self.is_busy

    def describe(self) -> str:
        """``ENABLED, homed, busy``: for logs."""
        return f"{self.state}, {'homed' if self.is_homed else 'not homed'}{', busy' if self.is_busy else ''}"

    def not_ready_reason(self, arm: str) -> str:
        """What a person must do before the arm can be commanded ('' when it is ready)."""
        if self.ready:
            return ""
        if self.state == CrtkState.DISABLED.value:
            return f"{arm} is DISABLED: power on and home it from the console"
        if self.state == CrtkState.FAULT.value:
            return f"{arm} is in FAULT: clear the fault (console), then power on and home it"
        if self.state == CrtkState.PAUSED.value:
            return f"{arm} is PAUSED: resume it from the console"
        if self.state != CrtkState.ENABLED.value:
            return f"{arm} reports operating state {self.state!r}: expected ENABLED"
        if self.is_busy and not self.is_homed:
            return f"{arm} is homing: wait until it is homed"
        if not self.is_homed:
            return f"{arm} is ENABLED but not homed: home it from the console"
        return f"{arm} is busy (homing or moving on its own): wait until it is idle"
