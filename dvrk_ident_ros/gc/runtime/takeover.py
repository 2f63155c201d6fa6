"""When a stopped gravity compensation may take the arm: the take-over's checks, in order (ROS-free).

The gravity-compensation node asks :meth:`TakeOverGate.decide` on each valid, fresh sample of a ready arm
while it does not command (docs/lab-procedure.md). The checks, each with the reason the node logs:

1. The arm has said it is ready for READY_SETTLE (``settled``): not the one-cycle "ready" before a homing move.
2. Something subscribes ``use_gravity_compensation`` (when the node is to turn the dVRK's own compensation off).
3. The arm publishes ``gravity_compensation/setpoint_js`` (its readings; an arm without them for
   ``NO_READINGS_AFTER`` is taken without: said once for an arm family that has a built-in compensation).
4. Not yielded to someone else who turned the dVRK's own compensation on (teleoperation).
5. A reading is there (readable arms), and not from before the node's last hand-over (``HANDOVER_SETTLE``).
6. After a hand-over: fresh state for ``resume_after`` (the supervisor's hysteresis).
7. The take-over: the arm's own effort is recorded (the ramp-in's start), the flag is owned, "off" is sent.
8. The node commands once a reading says off (readable arms); "off" is repeated every ``REPEAT_OFF_EVERY``.

:meth:`TakeOverGate.hand_over` is the way back: the flag as found, and ``/<ARM>/hold`` where nothing else would
carry the arm (:class:`HandOver`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dvrk_ident_ros.gc.runtime.supervisor import BuiltinCompensation, CompensationSupervisor

#: s: an arm whose gravity_compensation/setpoint_js has no publisher this long after its first valid ready
#: sample publishes none (its endpoints are discovered together with measured_js's; this only covers a race)
NO_READINGS_AFTER = 0.3
#: s: after the node handed the flag back, the readings reflect it before the node takes over again
HANDOVER_SETTLE = 0.3
#: s: while the dVRK's own compensation does not switch off after the node's "off", the "off" is repeated
REPEAT_OFF_EVERY = 1.0
#: s: the dVRK's own compensation still on this long after the node's "off" is reported
SWITCH_OFF_TIME = 0.2


@dataclass(frozen=True)
class Decision:
    """What the node does with one sample: ``start`` commanding from it; else ``wait`` (the reason, "" for a
    wait too short to report). ``take_over``: record the arm's own effort now (the flag was just taken);
    ``send_off``: publish use_gravity_compensation false now; ``warn``: a warning said once."""

    start: bool = False
    wait: str = ""
    take_over: bool = False
    send_off: bool = False
    warn: str = ""


@dataclass(frozen=True)
class HandOver:
    """What the node publishes when it hands the arm back: ``flag`` on ``use_gravity_compensation`` (None:
    nothing), ``hold`` on ``/<ARM>/hold``; ``said``: what became of the flag and the arm, for the log."""

    flag: bool | None
    hold: bool
    said: str


class TakeOverGate:
    """The take-over's checks and their clocks (monotonic s): since when the arm has been ready with valid
    samples, whether it publishes readings, when the flag was last handed back and "off" last sent."""

    def __init__(self, arm: str, supervisor: CompensationSupervisor, builtin: BuiltinCompensation, *,
                 disable_builtin: bool, has_builtin: bool) -> None:
        self.arm = arm
        self.supervisor = supervisor
        self.builtin = builtin
        self.disable_builtin = disable_builtin  # the node turns the dVRK's own compensation off
        self.has_builtin = has_builtin  # the arm family has one (an MTM): no readings of it is worth a warning
        self.readings_topic = f"/{arm}/gravity_compensation/setpoint_js"
        self.readable = False  # the arm publishes readings of its own compensation
        self._unreadable_said = False
        self._ready_since: float | None = None  # first valid sample while ready and stopped
        self._handed_over_at = -math.inf
        self._off_sent_at = -math.inf

    # -- what the node tells the gate ---------------------------------------------------
    def not_ready(self) -> None:
        """The arm stopped being ready, or sent stamp 0, or the flag was handed back: the waits start again."""
        self._ready_since = None

    def reading_seen(self) -> None:
        """A valid reading of the dVRK's own compensation arrived."""
        self.readable = True

    def flag_published(self, now: float) -> None:
        """The node published the flag's value at a hand-over: the readings follow it within HANDOVER_SETTLE."""
        self._handed_over_at = now

    # -- the decision ----------------------------------------------------------------------
    def decide(self, now: float, settled: bool, flag_subscribed: Callable[[], bool],
               readings_published: Callable[[], bool]) -> Decision:
        """The checks of the module's docstring for a valid, fresh sample at ``now`` of a ready arm
        (``settled``: ready for READY_SETTLE). ``flag_subscribed`` and ``readings_published`` ask the ROS
        graph; they are called only when needed (not on every sample)."""
        if self._ready_since is None:
            self._ready_since = now
        if not settled:
            return Decision()
        if self.disable_builtin and not flag_subscribed():
            return Decision(wait=f"nothing subscribes /{self.arm}/use_gravity_compensation: the dVRK's own "
                                 "compensation may be on (disable_builtin:=false if the arm has none)")
        warn = ""
        if not self.readable:
            self.readable = readings_published()
            if not self.readable:
                if now - self._ready_since < NO_READINGS_AFTER:
                    return Decision()
                if self.has_builtin and not self._unreadable_said:
                    self._unreadable_said = True
                    warn = (f"{self.arm} publishes no {self.readings_topic}: the state of the dVRK's own gravity "
                            "compensation cannot be read (a dVRK before 2.3?); "
                            + ("it is turned off and " if self.disable_builtin else "")
                            + "never turned back on by this node (it cannot know it was on)")
        builtin, sup = self.builtin, self.supervisor
        if builtin.yielded:
            return Decision(warn=warn)  # the node said why when it yielded; over when a reading says off
        if self.readable and (builtin.reading is None or now - self._handed_over_at < HANDOVER_SETTLE):
            if now - self._ready_since > NO_READINGS_AFTER + HANDOVER_SETTLE:  # a reading is due at once
                return Decision(warn=warn, wait=f"no valid {self.readings_topic} while the arm is ready (the "
                                                "state of the dVRK's own compensation): waiting for it")
            return Decision(warn=warn)
        take_over = send_off = False
        if not builtin.owned:
            if not sup.may_resume(now):  # hysteresis: fresh state for resume_after before taking the arm again
                return Decision(warn=warn, wait=(
                    f"{self.arm} was handed back to the dVRK's own compensation: taking it again once its state "
                    f"has been fresh for resume_after {sup.settings.resume_after:g} s"))
            builtin.take_over()
            take_over, send_off = True, self._send_off(now)
        if not builtin.may_command(self.readable):
            if not send_off and self.disable_builtin and now - self._off_sent_at >= REPEAT_OFF_EVERY:
                send_off = self._send_off(now)
            wait = ""
            if now - self._off_sent_at > SWITCH_OFF_TIME:  # the arm takes a period or two to switch it off
                wait = (f"the dVRK's own gravity compensation of {self.arm} is on: waiting until it is off"
                        + ("" if self.disable_builtin else " (disable_builtin is false: turn it off from the console)"))
            return Decision(warn=warn, wait=wait, take_over=take_over, send_off=send_off)
        return Decision(start=True, warn=warn, take_over=take_over, send_off=send_off)

    def start_message(self, from_effort: bool, again: bool = False) -> str:
        """The log line of a take-over's first command (``from_effort``: the ramp-in starts from the arm's own
        effort; ``again``: not the node's first)."""
        found = {None: "unknown", True: "on", False: "off"}[self.builtin.found]
        start = "the arm's own effort (setpoint_js)" if from_effort else "0 N m (no fresh setpoint_js of the arm)"
        return (f"compensating {self.arm}: ramp-in over {self.supervisor.settings.ramp_in_time:g} s from {start} "
                f"(the dVRK's own compensation was {found} before this node took over)"
                + ("; again after a stop" if again else ""))

    def hand_over(self, now: float, *, count: bool = True, hold: bool = False) -> HandOver:
        """Give the flag back as found (``count``: a hand-over while running, not the exit's). ``hold`` (the
        exit, an outage, with the arm ready; never a not-ready arm): where the node had taken the arm and the
        dVRK's own compensation does not carry it now (dVRK 2.3's default off, or a state the node cannot
        read), ``/<ARM>/hold`` too: the arm's own PID holds it where it is instead of leaving it in effort mode
        at 0 N m, where an MTM falls."""
        builtin = self.builtin
        owned, reading = builtin.owned, builtin.reading
        value = builtin.hand_over()
        if owned:
            self.supervisor.release(count)
        self.not_ready()  # the wait for a fresh reading starts again with the next sample
        if value is None:
            said = "the dVRK's own compensation left as it is"
        else:
            if self.disable_builtin:
                self.flag_published(now)
            said = f"the dVRK's own compensation back {'on' if value else 'off'} as found"
        carried = (value if self.disable_builtin else reading) is True
        send_hold = hold and owned and not carried
        if send_hold:
            said += f"; /{self.arm}/hold sent: the arm's own PID holds it where it is (not left at 0 N m)"
        return HandOver(value if self.disable_builtin else None, send_hold, said)

    def _send_off(self, now: float) -> bool:
        """Whether the node publishes "off" now (only when it turns the dVRK's own compensation off)."""
        if self.disable_builtin:
            self._off_sent_at = now
        return self.disable_builtin
