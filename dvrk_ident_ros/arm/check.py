"""Is a live arm as the nodes need it? What ``dvrk-ident arm-check`` makes of a few seconds of listening (ROS-free).

The nodes command an arm only when it is ENABLED, homed and not busy and its ``measured_js`` is fresh
(docs/lab-procedure.md, "On a real dVRK"). :class:`ArmObservation` takes what was heard on the arm's topics
(operating_state, measured_js, the PSM's jaw, the dVRK's own gravity compensation) and
:meth:`ArmObservation.report` says, line by line, what a lab's first run would meet: the operating state, the
state's rate and validity (stamp 0, repeated samples, a PSM without its tool), the offset between the arm's
stamps and this computer's clock, the built-in compensation's flag, and a verdict with the reason. Nothing is
ever commanded.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm
from dvrk_ident_ros.arm.samples import ArmSamples, SampleKind
from dvrk_ident_ros.arm.state import OperatingStatus, stamp_is_valid
from dvrk_ident_ros.arm.state_rate import rate_from_stamps

#: Hz: a state rate below this is reported (the bridge's default is 100 Hz, ``dvrk_system -p 0.01``)
LOW_RATE = 50.0
#: s: the last fresh sample must be this recent when the listening ends
FRESH_WITHIN = 0.2
#: s: stamps further than this from this computer's clock are on another clock (the player then times its
#: tracking check by arrival: trajectory_player.OTHER_CLOCK)
OTHER_CLOCK = 1.0


@dataclass
class ArmReport:
    """The verdict (``ready``: the player and the gravity compensation would command the arm), why not, and the
    lines to print."""

    arm: str
    ready: bool
    reason: str
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        verdict = "ready: the nodes would command it" if self.ready else f"NOT ready: {self.reason}"
        return "\n".join([f"{self.arm}: {verdict}", *(f"  {line}" for line in self.lines)])


class ArmObservation:
    """What was heard from one arm. ``now`` arguments are a steady clock's time (s: freshness, arrivals), ``wall``
    this computer's wall-clock time (s, default ``now``: the offset of the arm's stamps)."""

    def __init__(self, arm: str, crtk_available: bool = True):
        self.arm = canonical_arm(arm)
        self.spec = arm_spec(self.arm)
        self.samples = ArmSamples(self.arm, self.spec)
        self.crtk_available = crtk_available
        self.status: OperatingStatus | None = None
        self.statuses: list[OperatingStatus] = []
        self.fresh_stamps: list[float] = []
        self.stamp_offsets: list[float] = []  # wall-clock arrival - stamp, s, per fresh sample
        self.names: list[str] = []
        self.builtin: list[bool] = []  # the dVRK's own compensation on (any non-zero effort), per valid reading
        self.jaw_samples = 0

    def on_status(self, status: OperatingStatus) -> None:
        self.status = status
        if not self.statuses or self.statuses[-1] != status:
            self.statuses.append(status)

    def on_measured(self, sec: int, nanosec: int, position: Sequence[float], names: Sequence[str],
                    now: float, wall: float | None = None) -> None:
        if self.samples.on_sample(sec, nanosec, position, now) is SampleKind.VALID:
            stamp = sec + 1e-9 * nanosec
            self.fresh_stamps.append(stamp)
            self.stamp_offsets.append((now if wall is None else wall) - stamp)
            self.names = list(names)

    def begin(self) -> None:
        """The listening begins: the counts start again (what was heard while waiting for the first sample is
        not in the report's window); the pose and the last stamp stay, for the next repeat."""
        self.fresh_stamps.clear()
        self.stamp_offsets.clear()
        self.samples.invalid = self.samples.repeated = self.samples.malformed = 0
        self.jaw_samples = 0

    def on_jaw(self, sec: int, nanosec: int, position: Sequence[float]) -> None:
        if self.samples.on_jaw(sec, nanosec, position):
            self.jaw_samples += 1

    def on_builtin(self, sec: int, nanosec: int, effort: Sequence[float]) -> None:
        if stamp_is_valid(sec, nanosec) and len(effort):
            self.builtin.append(any(x != 0.0 for x in effort))

    def fresh(self, now: float) -> bool:
        """A fresh sample arrived within FRESH_WITHIN s of ``now``."""
        return not self.samples.stale(now, FRESH_WITHIN)

    @property
    def heard(self) -> int:
        """measured_js samples heard, of every kind."""
        s = self.samples
        return len(self.fresh_stamps) + s.invalid + s.repeated + s.malformed

    def report(self, duration: float, now: float) -> ArmReport:
        """The report after listening ``duration`` s, at ``now``."""
        lines = [self._status_line(), self._state_line(duration), *self._clock_lines()]
        if self.spec.jaw:
            lines.append(f"jaw/measured_js: {self.jaw_samples} valid samples" if self.jaw_samples else
                         "jaw/measured_js: no valid sample (the arm not ready, or no tool engaged)")
        if self.spec.builtin_gravity_compensation:
            lines.append(self._builtin_line())
        reason = self._not_ready_reason(now, duration)
        return ArmReport(self.arm, not reason, reason, lines)

    def _not_ready_reason(self, now: float, duration: float) -> str:
        if not self.crtk_available:
            return ("crtk_msgs is not installed here: the operating state cannot be read, and the nodes refuse to "
                    "command (it is part of every dVRK workspace)")
        if self.status is None:
            return f"no /{self.arm}/operating_state: is the dVRK console running (and ROS_DOMAIN_ID the same)?"
        if not self.status.ready:
            return self.status.not_ready_reason(self.arm)
        # fresh: a sample within FRESH_WITHIN s of the end (the player's stale_timeout is 0.1 s; the listener drains
        # what arrived before it reports, so its own stall does not count)
        return self.samples.reason(now, FRESH_WITHIN)

    def _status_line(self) -> str:
        if not self.crtk_available:
            return "operating_state: cannot be read (crtk_msgs is not installed)"
        if self.status is None:
            return "operating_state: nothing heard"
        changes = " -> ".join(s.describe() for s in self.statuses)
        return f"operating_state: {self.status.describe()}" + (f" (heard: {changes})" if len(self.statuses) > 1
                                                              else "")

    def _state_line(self, duration: float) -> str:
        s = self.samples
        heard = self.heard
        if not heard:
            return f"measured_js: nothing heard in {duration:.1f} s"
        parts = [f"{len(self.fresh_stamps)} fresh"]
        if s.invalid:
            parts.append(f"{s.invalid} with stamp 0 (invalid data: the arm is not ready)")
        if s.repeated:
            parts.append(f"{s.repeated} repeating the last sample (the arm's control loop is not advancing)")
        if s.malformed:
            parts.append(f"{s.malformed} rejected ({s.last_malformed}; expected {s.joints} finite positions"
                         + (": is a tool engaged?)" if s.jaw is not None else ")"))
        rate = ""
        hz = rate_from_stamps(np.asarray(self.fresh_stamps)) if len(self.fresh_stamps) >= 3 else None
        if hz is not None:
            rate = f", {hz:.1f} Hz by its stamps"
            if hz < LOW_RATE:
                rate += f" (below {LOW_RATE:g} Hz: the bridge's default is 100 Hz)"
        names = f"; joints {', '.join(self.names)}" if self.names else ""
        return f"measured_js: {heard} samples in {duration:.1f} s: {', '.join(parts)}{rate}{names}"

    def _clock_lines(self) -> list[str]:
        if not self.stamp_offsets:
            return []
        offset = float(np.median(self.stamp_offsets))
        line = (f"stamps: {1e3 * offset:.1f} ms before arrival here (median)" if offset >= 0 else
                f"stamps: {-1e3 * offset:.1f} ms ahead of this computer's clock (median)")
        if abs(offset) > OTHER_CLOCK:
            line += (" : the arm stamps on another clock (the console's computer, not synchronised?); the player "
                     "then times its tracking check by arrival")
        return [line]

    def _builtin_line(self) -> str:
        if not self.builtin:
            return ("gravity_compensation/setpoint_js: no valid reading (the flag of the dVRK's own compensation "
                    "cannot be read: a dVRK before 2.2, or the arm not ready)")
        on = self.builtin[-1]
        return (f"the dVRK's own gravity compensation: {'on' if on else 'off'} (2.4's default is on, 2.3's off; the "
                "gravity_compensation node turns it off before its first command and puts it back at exit)")
