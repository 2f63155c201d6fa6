"""The simulated arm's operating state (ROS-free): states, homing timer, faults, readiness.

Mirrors the dVRK arm's crtk operating state (``state`` DISABLED, ENABLED,
PAUSED or FAULT, ``is_homed``, ``is_busy``) and its ``state_command`` strings,
driven by the simulated time the arm passes in (so it runs the same under
``/clock`` and the wall clock):

- ``enable``: DISABLED, FAULT or PAUSED -> ENABLED (not homed after DISABLED
  or FAULT: powering off loses the homing; a fault is cleared this way).
- ``home``: enables first if needed, then homes: ENABLED, busy until the
  homing ends (:meth:`OperatingMachine.start_homing`), then homed and idle.
  ``is_homed`` while homing: false, or true with ``homed_while_homing`` (the
  dVRK's MTM: its ``is_homed`` is "powered and encoders biased", and its
  encoders are biased before the homing move; a PSM's also needs its tool
  engaged, which comes after). ``home`` on an ENABLED arm that is homed or
  homing changes nothing but answers with an event, as the dVRK's (its
  desired state is its current one; dvrk_python's ``home()`` sends it and
  returns at once on a homed arm): to home again, ``unhome`` or ``disable``
  first.
- ``disable``: DISABLED, not homed; ``unhome``: not homed (homing stops).
- ``pause``: ENABLED -> PAUSED (the arm holds; data stays valid; commands are
  ignored); ``resume``: PAUSED -> ENABLED, homed as before.
- :meth:`OperatingMachine.fault`: FAULT, not homed (a ``servo_jf`` while
  homing, a tracking error, the test hook).

Commands reach the arm only when it is ENABLED, homed and not homing
(:attr:`OperatingMachine.commandable`); its joint data is valid only when it is
ENABLED or PAUSED and homed (:attr:`OperatingMachine.data_valid`): an MTM's
data is valid during its homing move, as the dVRK's is.
"""
from __future__ import annotations

from enum import Enum

from dvrk_ident_ros.arm.state import STATE_COMMANDS, CrtkState, OperatingStatus
from dvrk_ident_ros.errors import DvrkIdentError

#: ``initial_state`` values: the three crtk states a console can be found in, and HOMED (ENABLED, homed, idle).
INITIAL_STATES = ("DISABLED", "ENABLED", "HOMED", "FAULT")




class Action(Enum):
    """What the arm must do after a state change."""

    NONE = "none"
    HOLD = "hold"  # stop any motion and hold the current pose
    HOME = "home"  # stop any motion and start the homing move (then call start_homing)


class OperatingMachine:
    """One arm's operating state; times are the arm's simulated seconds."""

    def __init__(self, initial_state: str = "HOMED", homing_time: float = 3.0, homed_while_homing: bool = False):
        name = str(initial_state).upper()
        if name not in INITIAL_STATES:
            raise DvrkIdentError(f"initial_state {initial_state!r}: expected one of {', '.join(INITIAL_STATES)}")
        if not homing_time >= 0.0:
            raise DvrkIdentError(f"homing_time {homing_time}: expected >= 0 s")
        self.homing_time = float(homing_time)
        self.homed_while_homing = bool(homed_while_homing)
        self.state = CrtkState.ENABLED if name == "HOMED" else CrtkState(name)
        self.is_homed = name == "HOMED"
        self.homing_until: float | None = None  # simulated time the homing ends
        self.fault_reason = "initial_state FAULT" if name == "FAULT" else ""

    # -- what the state allows -------------------------------------------------------
    @property
    def homing(self) -> bool:
        return self.homing_until is not None

    @property
    def commandable(self) -> bool:
        """ENABLED, homed and not homing: servo_jp, servo_jf and move_jp are obeyed."""
        return self.state == CrtkState.ENABLED and self.is_homed and not self.homing

    @property
    def data_valid(self) -> bool:
        """ENABLED or PAUSED, and homed: measured_js carries data (else zeros, stamp 0)."""
        return self.state in (CrtkState.ENABLED, CrtkState.PAUSED) and self.is_homed

    @property
    def supervised(self) -> bool:
        """ENABLED or PAUSED: the PID's tracking error is watched (a large one faults the arm)."""
        return self.state in (CrtkState.ENABLED, CrtkState.PAUSED)

    def status(self, moving: bool = False) -> OperatingStatus:
        """The operating_state message's content; busy while homing or while the arm's own move runs."""
        return OperatingStatus(self.state.value, self.is_homed, self.homing or moving)

    def not_ready_reason(self, arm: str) -> str:
        return self.status().not_ready_reason(arm) or f"{arm} is ready"

    # -- transitions ------------------------------------------------------------------
    def command(self, name: str) -> Action:
        """Apply one state_command string; DvrkIdentError for an unknown one."""
        name = str(name).strip().lower()
        if name not in STATE_COMMANDS:
            raise DvrkIdentError(f"unknown state command {name!r}: expected one of {', '.join(STATE_COMMANDS)}")
        if name == "enable":
            if self.state == CrtkState.ENABLED:
                return Action.NONE
            if self.state != CrtkState.PAUSED:
                self.is_homed = False
            self.state = CrtkState.ENABLED
            self.fault_reason = ""
            return Action.HOLD
        if name == "disable":
            self.state, self.is_homed, self.homing_until = CrtkState.DISABLED, False, None
            return Action.HOLD
        if name == "home":
            # an ENABLED arm that is homed or homing is where it was asked to go (the dVRK's desired state is its
            # current one: only the event answers); from any other state: enables first, then homes
            if self.state == CrtkState.ENABLED and (self.is_homed or self.homing):
                return Action.NONE
            self.state, self.is_homed, self.fault_reason = CrtkState.ENABLED, False, ""
            return Action.HOME
        if name == "unhome":
            was_homing = self.homing
            self.is_homed, self.homing_until = False, None
            return Action.HOLD if was_homing else Action.NONE
        if name == "pause":
            if self.state != CrtkState.ENABLED:
                return Action.NONE
            if self.homing:  # a homing cut short is no homing (an MTM said homed while it ran)
                self.is_homed = False
            self.state, self.homing_until = CrtkState.PAUSED, None
            return Action.HOLD
        # resume
        if self.state != CrtkState.PAUSED:
            return Action.NONE
        self.state = CrtkState.ENABLED
        return Action.NONE

    def start_homing(self, now: float, duration: float) -> None:
        """The homing move started at ``now`` and lasts ``duration`` s (at least homing_time)."""
        self.state, self.is_homed = CrtkState.ENABLED, self.homed_while_homing
        self.homing_until = now + max(self.homing_time, duration)

    def update(self, now: float) -> bool:
        """Advance to simulated time ``now``; True when the homing ended (the arm is now homed)."""
        if self.homing_until is not None and now >= self.homing_until - 1e-9:
            self.homing_until = None
            self.is_homed = True
            return True
        return False

    def fault(self, reason: str) -> Action:
        self.state, self.is_homed, self.homing_until = CrtkState.FAULT, False, None
        self.fault_reason = reason
        return Action.HOLD
