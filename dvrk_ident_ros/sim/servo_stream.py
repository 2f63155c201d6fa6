"""A simulated arm's streamed ``servo_jp`` setpoints: each one checked, stamped, queued until it is due, and
carried forward or held between samples (ROS-free; :class:`~dvrk_ident_ros.sim.arm.SimulatedArm` owns one
and takes the setpoints it hands over).

``servo_timing`` "arrival" (as the dVRK: mtsIntuitiveResearchKitArm stores the goal and its velocity, the PID
takes them at its next period): a setpoint is taken when it reached the arm and held, position and setpoint
velocity, until the next. "stamp" (the default, gentler than any real arm): its stamp, in simulated time,
delays it to the physics step at that time (one that arrives late is carried forward from its stamp; one
stamped before the setpoint in force is stale, ignored), so a stream is followed as it was sent whatever
the delivery jitter; between samples the setpoint is carried forward with its velocity (first-order hold)
for ``SERVO_HOLD_PERIODS`` of the stream's intervals after it arrived (at most ``SERVO_HOLD``), then held
with zero velocity, as when a stream stops.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from dvrk_ident_ros.errors import DvrkIdentError, SafetyError
from dvrk_ident_ros.safety import CommandChecker

SERVO_HOLD = 0.05  # s: a streamed setpoint is carried forward with its velocity at most this long
SERVO_HOLD_PERIODS = 1.5  # ... and at most this many of the stream's intervals: then it is held (the stream stopped)
SERVO_CLOCK = 1.0  # s: a servo_jp stamped further than this from the arm's time is on another clock: no stamp
MAX_SERVO_JUMP = 0.25  # rad (m): a streamed setpoint this far from the current one is not a stream
#: how a streamed servo_jp is taken: "arrival", as the dVRK (its arm takes the setpoint, position and velocity,
#: at the first control period after it arrives and holds it until the next: a late or bunched stream reaches
#: it as steps); "stamp", gentler: at its stamp's instant, carried forward between samples (first-order hold)
SERVO_TIMINGS = ("arrival", "stamp")


def checked_timing(timing: str) -> str:
    """``timing`` when it is one of :data:`SERVO_TIMINGS`, else DvrkIdentError."""
    if timing not in SERVO_TIMINGS:
        raise DvrkIdentError(f"servo_timing {timing!r}: one of {', '.join(SERVO_TIMINGS)}")
    return timing


@dataclass(order=True)
class PendingServo:
    """A streamed setpoint due at simulated time ``at`` (ordered by it, then by arrival)."""

    at: float
    order: int
    q: np.ndarray = field(compare=False)
    qd: np.ndarray = field(compare=False)
    joints: np.ndarray = field(compare=False)  # bool mask: the joints this command sets


class ServoStream:
    """The stream's clocks: per joint, when its streamed setpoint was set (``set_at``) and until when it is
    carried forward (``carried_until``); the stamped commands not due yet (``pending``, by time); the stale
    ones ignored (``stale``) and how late each was taken (``lateness``, s: after its stamp with "stamp",
    after it reached the arm with "arrival")."""

    def __init__(self, timing: str, checker: CommandChecker, names: list[str], dof: int, dt: float) -> None:
        self.timing = checked_timing(timing)
        self.by_stamp = timing == "stamp"
        self.checker = checker
        self.names = names
        self.dof = dof
        self.dt = dt
        self.set_at = np.zeros(dof)  # per joint: when its streamed setpoint was set (first-order hold)
        self.carried_until = np.zeros(dof)  # per joint: carried forward until then, then held
        self.pending: list[PendingServo] = []  # stamped servo_jp not due yet, by time
        self.latest = (np.zeros(dof), np.zeros(dof))  # the stream's setpoint once every pending one is applied
        self._arrivals = 0
        self.stale = 0  # servo_jp commands stamped before the setpoint in force: ignored
        self.lateness: list[float] = []

    def receive(self, position, velocity, joints, reference: tuple[np.ndarray, np.ndarray], in_force: np.ndarray,
                now: float, *, at: float | None, received: float | None) -> PendingServo | None:
        """Check a servo_jp (SafetyError: nothing changes) and stamp it. ``joints`` (a bool mask or indices,
        None: all) are set, the others keep ``reference`` (the stream's setpoint, position and velocity);
        its jump is measured from ``in_force``. Returned when due now (to be taken), else queued (None).

        "arrival" (the dVRK): stamped ``received`` (the simulated instant it reached the arm; None: ``now``),
        taken at once when that has passed and held as it came until the next; ``at`` is not read (the node
        derives ``received`` from it). "stamp": stamped ``at``, taken when that is still ahead, else at once,
        carried forward from its stamp (a late command says where the stream is now, not where it was); one
        stamped before the setpoint in force is stale, ignored (:meth:`fresh`). A stamp more than
        ``SERVO_CLOCK`` s from ``now`` is on another clock: the command counts as stamped now."""
        mask = np.ones(self.dof, dtype=bool)
        if joints is not None:
            mask = np.zeros(self.dof, dtype=bool)
            mask[np.asarray(joints)] = True
        base_q, base_qd = reference
        q_in = self.checker.finite(position, "servo_jp position")
        q = np.where(mask, q_in, base_q)
        q = self.checker.position(q, "servo_jp position")
        if velocity is None or len(velocity) == 0:
            qd = np.where(mask, 0.0, base_qd)
        else:
            qd = np.where(mask, self.checker.finite(velocity, "servo_jp velocity"), base_qd)
            qd = self.checker.speed(qd, "servo_jp velocity", scale=1.5)
        stamped = at is not None and abs(at - now) <= SERVO_CLOCK  # else on another clock: no stamp
        if self.by_stamp:
            stamp = float(at) if stamped and at is not None else now
            q_now = q + qd * max(0.0, now - stamp)  # a late command: where it says the stream is now
        else:  # the dVRK takes it as it came, when it came
            timed = received is not None and abs(received - now) <= SERVO_CLOCK
            stamp = float(received) if timed and received is not None else now
            q_now = q
        jump = np.where(mask, np.abs(q_now - in_force), 0.0)
        if np.max(jump) > MAX_SERVO_JUMP:
            i = int(np.argmax(jump))
            raise SafetyError(f"servo_jp position: {self.names[i]} jumps {jump[i]:.3f} from the current setpoint "
                              f"(at most {MAX_SERVO_JUMP}; use move_jp)")
        self._arrivals += 1
        if not self.by_stamp:  # how long after it reached the arm it is taken (0: at that instant)
            self.record_lateness(max(0.0, now - stamp))
        self.latest = (q, qd)
        command = PendingServo(stamp, self._arrivals, q, qd, mask)
        if stamp <= now + 0.5 * self.dt:
            return command
        bisect.insort(self.pending, command)
        return None

    def due(self, now: float) -> Iterator[PendingServo]:
        """The queued commands due at the physics step at ``now``, in order (each leaves the queue)."""
        while self.pending and self.pending[0].at <= now + 0.5 * self.dt:
            yield self.pending.pop(0)

    def drop(self) -> None:
        """Forget the queued commands (the arm left the stream)."""
        self.pending.clear()

    def fresh(self, command: PendingServo) -> np.ndarray:
        """The command's joints whose setpoint in force is not newer than it; none: it is stale (counted)."""
        fresh = command.joints & (command.at >= self.set_at - 1e-9)
        if not np.any(fresh):
            self.stale += 1
        return fresh

    def taken(self, fresh: np.ndarray, stamp: float, now: float) -> None:
        """``fresh``'s joints took the setpoint stamped ``stamp`` at ``now``: "stamp" carries it forward from its
        stamp until about one of the stream's intervals after it arrived, "arrival" holds it as it came, its
        velocity the PID's velocity setpoint until the next (the dVRK)."""
        if self.by_stamp:
            self.record_lateness(now - stamp)
            interval = stamp - self.set_at  # since the joint's previous setpoint
            hold = np.clip(SERVO_HOLD_PERIODS * interval, 2.0 * self.dt, SERVO_HOLD)
            self.carried_until = np.where(fresh, now + hold, self.carried_until)
        else:
            self.carried_until = np.where(fresh, now, self.carried_until)
        self.set_at[fresh] = stamp

    def rebase(self, at: float) -> None:
        """The stream starts over (the arm was not in position mode): every joint's setpoint counts as set at
        ``at``."""
        self.set_at[:] = at

    def restart(self, now: float) -> None:
        """The arm set its setpoint itself at ``now`` (a hold, a move): nothing streamed to carry forward."""
        self.set_at[:] = now
        self.carried_until[:] = now

    def reference(self, now: float, q_ref: np.ndarray, qd_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The streamed setpoint ``q_ref``, ``qd_ref`` at ``now`` (position, velocity): "stamp" carries it forward
        with its velocity until ``carried_until``, then holds it with zero velocity; "arrival" holds it as it is."""
        if not self.by_stamp:
            return q_ref, qd_ref
        ahead = np.minimum(np.maximum(now, self.set_at), self.carried_until) - self.set_at
        return q_ref + qd_ref * ahead, np.where(now <= self.carried_until, qd_ref, 0.0)

    def record_lateness(self, seconds: float) -> None:
        self.lateness.append(seconds)
        if len(self.lateness) > 200_000:
            del self.lateness[:100_000]
