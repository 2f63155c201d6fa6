"""The arm's ``measured_js`` as a node that commands the arm must read it (ROS-free).

The dVRK's bridge publishes the state on its own period whatever the arm's control loop did
(docs/lab-procedure.md):

- ``header.stamp`` 0 marks invalid data (the arm powered off, not homed, faulted): all zeros, never
  the arm's pose, never a fresh sample;
- the last valid sample again, its stamp give or take :data:`REPEAT_TOLERANCE` and its positions
  identical: the arm's loop has stopped and the bridge publishes its last sample once more; the pose is
  the last one, but no fresh sample;
- a wrong number of positions (a PSM without its tool publishes its 7 raw joints) or a NaN: rejected.

:class:`ArmSamples` sorts each sample into one of these (:class:`SampleKind`), keeps the pose and the
time of the last fresh sample, and says why the state cannot be used (:meth:`ArmSamples.reason`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum

import numpy as np

from dvrk_ident_ros.arm.registry import ArmSpec
from dvrk_ident_ros.arm.state import stamp_is_valid
from dvrk_ident_ros.arm.state_rate import StampRate

#: s: a valid sample stamped within this of the last fresh sample, with the same positions, is that sample again
#: (both hold for a republished sample; a publisher of its own bursting new samples microseconds apart passes the
#: stamp test, not the positions one). The bridge (cisst-ros'
#: header conversion) stamps each message it publishes as ROS now - (cisst now - the data's own time): two clocks
#: read one after the other, so a sample published again behind a stalled loop carries its stamp give or take the
#: microseconds between the two reads, while a new sample's stamp advances by at least one period of the arm's
#: 1.5 kHz loop (0.67 ms). A stamp that jumps back further than this is a new timeline (a clock step), not a repeat.
REPEAT_TOLERANCE = 2e-4


def repeats(stamp: float, last: float | None) -> bool:
    """``stamp`` (s) may be the sample stamped ``last`` (s; None: no sample yet) published again: it is if its
    positions are that sample's too."""
    return last is not None and abs(stamp - last) < REPEAT_TOLERANCE


class SampleKind(Enum):
    """What one ``measured_js`` message was."""

    VALID = "valid"  # a fresh sample: the pose, and the time it arrived
    INVALID = "stamp 0"  # the bridge's mark of invalid data
    REPEATED = "repeated stamp"  # the last valid sample again: the arm's loop is not advancing
    MALFORMED = "malformed"  # a wrong number of positions, or a NaN


class ArmSamples:
    """The arm's pose (``q``, the jaw at its index for a PSM) and the freshness of its state.

    ``fresh_at`` is the node's time (s) when the last fresh sample arrived (None before any), ``stamp`` that
    sample's header stamp (s), ``stamp_rate`` the rate of the last fresh samples by their stamps. Counts:
    ``invalid``, ``repeated``, ``malformed``.
    """

    def __init__(self, arm: str, spec: ArmSpec):
        self.arm = arm
        self.joints = spec.arm_joints  # on measured_js: all but the jaw
        self.jaw = spec.jaw_index  # on /<ARM>/jaw/measured_js, or None
        self.q = np.zeros(spec.dof)
        self.fresh_at: float | None = None
        self.stamp = 0.0  # (no valid sample yet: stamp 0 marks invalid data, so no stamp repeats it)
        self.last: SampleKind | None = None
        self.stamp_rate = StampRate()
        self.last_malformed = ""  # what the last malformed sample had ("9 positions", "a NaN")
        self.invalid = 0
        self.repeated = 0
        self.malformed = 0
        self.jaw_seen = self.jaw is None

    def on_sample(self, sec: int, nanosec: int, position: Sequence[float], now: float | None) -> SampleKind:
        """Sort one measured_js (its stamp, its positions) arrived at ``now`` (the node's time, s; None while the
        node has no time yet, e.g. use_sim_time before /clock: the pose is taken, no freshness)."""
        kind = self._classify(sec, nanosec, position)
        self.last = kind
        if kind is SampleKind.VALID:
            self.q[:self.joints] = position
            self.stamp = sec + 1e-9 * nanosec
            self.stamp_rate.add(self.stamp)
            if now is not None:
                self.fresh_at = now
        return kind

    def _classify(self, sec: int, nanosec: int, position: Sequence[float]) -> SampleKind:
        if not stamp_is_valid(sec, nanosec):
            self.invalid += 1
            return SampleKind.INVALID
        if len(position) != self.joints or not all(math.isfinite(x) for x in position):
            self.malformed += 1
            self.last_malformed = (f"{len(position)} positions" if len(position) != self.joints else "a NaN")
            return SampleKind.MALFORMED
        if repeats(sec + 1e-9 * nanosec, self.stamp) \
                and all(a == b for a, b in zip(position, self.q[:self.joints], strict=True)):
            self.repeated += 1
            return SampleKind.REPEATED
        return SampleKind.VALID

    def on_jaw(self, sec: int, nanosec: int, position: Sequence[float]) -> bool:
        """A PSM's ``jaw/measured_js``: the jaw's position when valid (stamp not 0, one finite position)."""
        if self.jaw is None or not stamp_is_valid(sec, nanosec) or len(position) != 1 \
                or not math.isfinite(position[0]):
            return False
        self.q[self.jaw] = position[0]
        self.jaw_seen = True
        return True

    def age(self, now: float) -> float | None:
        """s since the last fresh sample (None before any)."""
        return None if self.fresh_at is None else now - self.fresh_at

    def stale(self, now: float, timeout: float) -> bool:
        """No fresh sample for more than ``timeout`` s (or none yet)."""
        return self.fresh_at is None or now - self.fresh_at > timeout

    def reason(self, now: float, timeout: float) -> str:
        """Why the state cannot be used now ('' when it can): stale (why, from the last sample), or no jaw."""
        if self.stale(now, timeout):
            if self.last is SampleKind.INVALID:
                return self.invalid_reason()
            if self.last is SampleKind.REPEATED:
                return self.repeated_reason()
            if self.last is SampleKind.MALFORMED:
                return (f"/{self.arm}/measured_js has {self.last_malformed} (expected {self.joints} finite)"
                        + (": is a tool engaged?" if self.jaw is not None else ""))
            return f"no recent /{self.arm}/measured_js: is the arm (or the simulator) running?"
        if not self.jaw_seen:
            return f"no valid /{self.arm}/jaw/measured_js yet: is the tool engaged?"
        return ""

    def invalid_reason(self) -> str:
        return (f"/{self.arm}/measured_js has stamp 0 (invalid data): the arm is not ready (powered off, not homed "
                "or in FAULT): power on and home it from the console")

    def repeated_reason(self) -> str:
        return (f"/{self.arm}/measured_js repeats one stamp: the arm's control loop is not advancing (the bridge "
                "republishes its last sample)")


def read_sample(position: Sequence[float], velocity: Sequence[float], n: int, q: list[float],
                qd: list[float]) -> str:
    """Copy a sample's ``position`` and ``velocity`` (``n`` joints) into the first ``n`` values of ``q`` and
    ``qd`` (no allocation); no velocity reads as the arm at rest. "" when the sample can be commanded from,
    else why not (a wrong number of values, a NaN)."""
    if len(position) != n:
        return f"{len(position)} positions, expected {n}"
    if len(velocity) not in (0, n):
        return f"{len(velocity)} velocities, expected {n}"
    for i in range(n):
        x = position[i]
        if not math.isfinite(x):
            return f"position[{i}] is {x}"
        q[i] = x
    if len(velocity):
        for i in range(n):
            v = velocity[i]
            if not math.isfinite(v):
                return f"velocity[{i}] is {v}"
            qd[i] = v
    else:
        for i in range(n):
            qd[i] = 0.0
    return ""
