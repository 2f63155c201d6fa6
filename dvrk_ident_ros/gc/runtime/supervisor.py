"""When and how much to compensate: ramp-in, watchdog, fade-out, hand-over, and the dVRK's own compensation
(ROS-free).

States (:class:`CompensationState`, GravityCompensationDiagnostics.STATE_*): RAMP_IN (scale rises
linearly to 1 over ``ramp_in_time`` of state time), ACTIVE, FADING_OUT (the
state went stale, or the node is exiting: the last torques fade to zero over
``fade_out_time``), STOPPED (nothing is commanded; :meth:`stop` goes there at
once, without a fade).

Two separate decisions ride out the jitter of a loaded machine and a 100 Hz arm:

- The watchdog: a sample is late when no valid state came for more than
  ``stale_periods - 1`` nominal periods (checked by a deadline,
  :meth:`CompensationSupervisor.deadline`, ``stale_periods - 1/2`` periods
  after the last sample). A late sample starts a fade; the next fresh sample
  ramps back in from the current scale at the ramp-in rate (a late sample costs
  a dip of a few percent, not a restart, and no hand-over).
- The hand-over: only a state stale for ``handover_after`` seconds (and faded
  to zero) hands the arm back to the dVRK's own compensation
  (:meth:`CompensationSupervisor.tick` says when). After a hand-over the node
  takes the arm again only once the state has been fresh (no late sample) for
  ``resume_after`` seconds (:meth:`CompensationSupervisor.may_resume`): the
  built-in compensation is toggled at most once per real outage.

The fade's commands are paced by the state's own period (the watchdog never
commands faster than the arm publishes). At exit, :meth:`begin_final_fade`
fades out for good: samples still arriving are answered at the falling scale,
none ramps back in.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from dvrk_ident_ros.arm.samples import repeats
from dvrk_ident_ros.errors import DvrkIdentError


class CompensationState(IntEnum):
    """What the compensation does (``GravityCompensationDiagnostics.STATE_<name>``)."""

    RAMP_IN = 0  # torques fading in after a start (or after a late sample, from the current scale)
    ACTIVE = 1  # full compensation
    FADING_OUT = 2  # stale state or exit: the last torques fading out
    STOPPED = 3  # nothing is commanded


#: s: the shortest wait the supervisor asks the watchdog for (a timer period must be positive)
MIN_WAIT = 0.0005


#: each setting's lower bound, whether the bound itself is excluded, and what is expected: the node's parameter
#: schema (parameters/gravity_compensation.py) states its checks from here
SETTING_BOUNDS: dict[str, tuple[float, bool, str]] = {
    "ramp_in_time": (0.0, False, ">= 0 s"),
    "fade_out_time": (0.0, False, ">= 0 s"),
    "stale_periods": (1.0, True, "more than 1 period"),  # stale after stale_periods - 1 periods: 1 is always
    "handover_after": (0.0, False, ">= 0 s"),
    "resume_after": (0.0, False, ">= 0 s"),
}


@dataclass(frozen=True)
class SupervisorSettings:
    """The supervisor's timings; their defaults are the gravity_compensation node's parameters' defaults."""

    ramp_in_time: float = 1.0  # s
    fade_out_time: float = 0.5  # s
    stale_periods: float = 10.0  # a sample is late after stale_periods - 1 nominal periods
    handover_after: float = 1.0  # s stale (and faded to zero) before the arm is handed back
    resume_after: float = 1.0  # s of fresh state before the node takes the arm again after a hand-over
    min_period: float = 0.001  # s: the period estimate never goes below (1 kHz)

    def __post_init__(self) -> None:
        for name, (bound, exclusive, expect) in SETTING_BOUNDS.items():
            value = getattr(self, name)
            if not (value > bound if exclusive else value >= bound):
                raise DvrkIdentError(f"{name} {value}: expected {expect}")

    def describe(self) -> str:
        return (f"ramp-in {self.ramp_in_time:g} s, watchdog {self.stale_periods:g} periods, fade-out "
                f"{self.fade_out_time:g} s, hand-over after {self.handover_after:g} s stale, resume after "
                f"{self.resume_after:g} s fresh")


class Tick(NamedTuple):
    """What the watchdog does now."""

    command: bool  # publish a command at the supervisor's ``scale`` (the fade's; the last one is exactly 0)
    hand_over: bool  # give the arm back to the dVRK's own compensation now
    next_in: float | None  # s until the watchdog runs again; None: not before the next commanded sample


class CompensationSupervisor:
    def __init__(self, settings: SupervisorSettings):
        self.settings = settings
        self.state = CompensationState.STOPPED
        self.scale = 0.0
        self.period = 0.01  # s, nominal state period (estimated from the stamps)
        self.final = False  # fading out for good (exit): no sample ramps back in
        self.released = False  # handed the arm back, not taken since: resume only after resume_after
        # counters (the diagnostics)
        self.stale_events = 0  # the state went stale while commanding: a fade began
        self.late_samples = 0  # valid samples more than the watchdog's threshold after the previous one
        self.handovers = 0  # hand-overs while running (stale state, arm not ready); not the one at exit
        self.max_gap = 0.0  # s, longest gap between two valid samples of a ready arm
        self._ramp_start: float | None = None
        self._last_arrival: float | None = None
        self._last_stamp: float | None = None
        self._fresh_since: float | None = None
        self._intervals: deque[float] = deque(maxlen=64)
        self._fade_start = 0.0
        self._fade_from = 0.0
        self._outage = False  # the state went stale while the node commanded, and has not come back
        self._holding = False  # faded to zero on a stale state, flag still owned: the hand-over is pending

    # -- samples ----------------------------------------------------------------------
    def repeats(self, stamp: float) -> bool:
        """``stamp`` is the last sample's, give or take :data:`~dvrk_ident_ros.arm.samples.REPEAT_TOLERANCE`;
        with the same positions too (the caller checks), the arm's control loop has stopped and the bridge
        publishes its last sample again (the CRTK bridge publishes on its own period whatever the arm last
        measured). Not a fresh sample: nothing is commanded from it and the watchdog is not re-armed, so a loop
        stalled for ``stale_periods - 1`` periods fades out as a silent one does."""
        return repeats(stamp, self._last_stamp)

    def on_sample(self, arrival: float, stamp: float) -> None:
        """Any valid sample of a ready arm, commanded from or not (``arrival``: monotonic s; ``stamp``: its
        header time, s): the gaps, the late samples, freshness and the nominal period.

        The period comes from the stamps (the publisher's clock): samples the transport delivers in a burst
        arrive microseconds apart, and a period estimated from arrivals would make the watchdog trip on the
        next ordinary gap."""
        last = self._last_arrival
        if last is None:
            self._fresh_since = arrival
        else:
            gap = arrival - last
            if gap > self.max_gap:
                self.max_gap = gap
            if gap > self.stale_after():
                self.late_samples += 1
                self._fresh_since = arrival
        if self._last_stamp is not None and stamp > self._last_stamp:
            self._intervals.append(stamp - self._last_stamp)
        self._last_arrival, self._last_stamp = arrival, stamp
        self._outage = False

    def command(self, arrival: float, stamp: float) -> float:
        """The node commands from this sample (after :meth:`on_sample`): the scale to apply.

        From FADING_OUT (a late sample) or STOPPED the ramp continues from the current scale; in the final
        fade the scale keeps falling with time."""
        if self.final:
            return self._fade_to(arrival)
        if self.state != CompensationState.RAMP_IN and self.state != CompensationState.ACTIVE:
            self.state = CompensationState.RAMP_IN
            ramp = self.settings.ramp_in_time
            self._ramp_start = stamp - (self.scale * ramp if ramp > 0 else 0.0)  # continue from the current scale
            self._holding = False
            self.released = False
        if self.state == CompensationState.RAMP_IN:
            ramp = self.settings.ramp_in_time
            elapsed = stamp - self._ramp_start if self._ramp_start is not None else 0.0
            self.scale = 1.0 if ramp <= 0 else min(1.0, max(0.0, elapsed / ramp))
            if self.scale >= 1.0:
                self.state = CompensationState.ACTIVE
        return self.scale

    def on_state(self, arrival: float, stamp: float) -> float:
        """:meth:`on_sample` then :meth:`command`: a sample the node commands from. Returns the scale."""
        self.on_sample(arrival, stamp)
        return self.command(arrival, stamp)

    def interrupt(self) -> None:
        """The arm stopped being ready (or its data went invalid): the next valid sample starts a fresh run
        (its gap is no late sample, and ``resume_after`` counts from it)."""
        self._last_arrival = self._last_stamp = self._fresh_since = None
        self._outage = self._holding = False  # the node stops and hands the flag back itself

    def update_period(self) -> float:
        """The nominal period: the lower quartile of the last 64 stamp intervals (a median would drift up when
        the publisher falls behind and skips periods, and the watchdog with it)."""
        if len(self._intervals) >= 5:
            ordered = sorted(self._intervals)
            self.period = max(self.settings.min_period, ordered[len(ordered) // 4])
        return self.period

    # -- the watchdog -----------------------------------------------------------------
    def stale_after(self) -> float:
        """s without a sample after which the state is stale (the watchdog's threshold)."""
        return (self.settings.stale_periods - 1.0) * self.period

    def deadline(self) -> float:
        """s after a commanded sample at which the watchdog runs: between stale and the next period in the
        normal case; in the final fade 1.5 periods (its commands continue at the state's rate)."""
        if self.final:
            return 1.5 * self.period
        return (self.settings.stale_periods - 0.5) * self.period

    def is_stale(self, now: float) -> bool:
        if self._last_arrival is None or self.state in (CompensationState.STOPPED, CompensationState.FADING_OUT):
            return False
        return now - self._last_arrival > self.stale_after()

    def stale_for(self, now: float) -> float | None:
        """s since the last sample while the state is stale after the node commanded (an outage), else None."""
        if not self._outage or self._last_arrival is None:
            return None
        return now - self._last_arrival

    @property
    def holding(self) -> bool:
        """Faded to zero on a stale state and not yet handed over: a fresh sample resumes at once."""
        return self._holding

    def tick(self, now: float) -> Tick:
        """The watchdog fired (``now``: monotonic s): fade, stop, hand over, and when to run again."""
        if self.state == CompensationState.RAMP_IN or self.state == CompensationState.ACTIVE:
            if self._last_arrival is None:
                return Tick(False, False, None)
            if not self.is_stale(now):  # a sample re-armed the deadline as it expired
                return Tick(False, False, max(MIN_WAIT, self._last_arrival + self.deadline() - now))
            self.state = CompensationState.FADING_OUT
            self._outage = True
            self.stale_events += 1
            self._begin_fade(now)
            return Tick(False, False, self.period)  # the first fade command one period on
        if self.state == CompensationState.FADING_OUT:
            self._fade_to(now)
            if self.state == CompensationState.FADING_OUT:
                return Tick(True, False, self.period)
            if self.final:
                return Tick(True, False, None)
            self._holding = True  # faded to zero on a stale state: the last (zero) command, then the hand-over
            return self._handover_check(now, command=True)
        if self._holding:
            return self._handover_check(now, command=False)
        return Tick(False, False, None)

    def _handover_check(self, now: float, command: bool) -> Tick:
        wait = (self._last_arrival or now) + self.settings.handover_after - now
        if wait > 0.0:
            return Tick(command, False, max(MIN_WAIT, wait))
        self._holding = False
        return Tick(command, True, None)

    # -- fades, stop, hand-over ---------------------------------------------------------
    def _begin_fade(self, now: float) -> None:
        self._fade_start, self._fade_from = now, self.scale

    def _fade_to(self, now: float) -> float:
        """The fade's scale at ``now``: down by 1 / fade_out_time per second from where it began; STOPPED at 0."""
        fade = self.settings.fade_out_time
        elapsed = max(0.0, now - self._fade_start)
        self.scale = 0.0 if fade <= 0 else max(0.0, self._fade_from - elapsed / fade)
        if self.scale == 0.0:
            self.state = CompensationState.STOPPED
        return self.scale

    def begin_final_fade(self, now: float) -> bool:
        """Fade out for good (exit) from RAMP_IN, ACTIVE or FADING_OUT. True if there is anything to fade."""
        self.final = True
        if self.state == CompensationState.STOPPED:
            return False
        self.state = CompensationState.FADING_OUT
        self._begin_fade(now)
        return True

    def stop(self) -> None:
        """Stop at once: scale 0, STOPPED (the next valid state ramps in from zero)."""
        self.state = CompensationState.STOPPED
        self.scale = 0.0
        self._holding = False

    def release(self, count: bool = True) -> None:
        """The node handed the arm back (``count``: while running, not at exit): it resumes only after
        ``resume_after`` s of fresh state."""
        self._holding = False
        self.released = True
        if count:
            self.handovers += 1

    def may_resume(self, now: float) -> bool:
        """Whether the node may take the arm: never handed over, or fresh state for ``resume_after`` s."""
        if not self.released:
            return True
        return self._fresh_since is not None and now - self._fresh_since >= self.settings.resume_after

    def resume_in(self, now: float) -> float:
        """s until :meth:`may_resume` (given fresh state all along)."""
        if not self.released:
            return 0.0
        if self._fresh_since is None:
            return self.settings.resume_after
        return max(0.0, self._fresh_since + self.settings.resume_after - now)


class BuiltinCompensation:
    """The dVRK's own MTM gravity compensation: its state, read from ``gravity_compensation/setpoint_js``
    (all-zero effort: off), and who owns its flag (``use_gravity_compensation``).

    - :meth:`observe` takes a valid reading (the node passes only those with a valid stamp while the arm is
      ready; :meth:`forget` when it stops being ready).
    - :meth:`take_over` before the node's first command: the first one records the state found (``found``;
      None where it could not be read); the node owns the flag and publishes off.
    - :meth:`may_command`: while owned, the node commands only once a reading says off (where the arm
      publishes readings): the arm never gets its gravity twice.
    - A reading on after one said off while owned means someone else turned the compensation on
      (teleoperation does when it enables): :meth:`observe` returns True, the node stops commanding and
      does not fight by turning it off again; ``yielded`` is set and the flag is theirs (the node leaves it
      alone, at exit too). A reading off clears ``yielded``: the node takes over again and ramps in.
    - :meth:`hand_over` gives the flag back: the value to publish is the state found before the first take-over
      (None: publish nothing, when not owned or when that state is unknown, e.g. a PSM, which publishes no
      readings: the node never assumes it was on). The reading is forgotten, so a new take-over waits for a
      fresh one.
    """

    def __init__(self) -> None:
        self.reading: bool | None = None  # latest valid reading: True on, False off, None unknown
        self.found: bool | None = None
        self.owned = False
        self.seen_off = False  # owned, and a reading said off since the take-over
        self.yielded = False
        self._recorded = False

    def forget(self) -> None:
        """The arm stopped being ready: its next reading is taken once it is ready again."""
        self.reading = None

    def observe(self, on: bool) -> bool:
        """A valid reading. True exactly when someone else has just turned the compensation on."""
        self.reading = on
        if self.owned:
            if not on:
                self.seen_off = True
            elif self.seen_off:
                self.owned = self.seen_off = False
                self.yielded = True
                return True
        elif self.yielded and not on:
            self.yielded = False
        return False

    def take_over(self) -> None:
        """Own the flag (the node publishes off next); the first take-over records the state found."""
        if not self._recorded:
            self.found, self._recorded = self.reading, True
        self.owned = True
        self.seen_off = self.reading is False

    def may_command(self, readable: bool) -> bool:
        """Owned and, where the arm publishes readings (``readable``), seen off since the take-over."""
        return self.owned and (self.seen_off or not readable)

    def hand_over(self) -> bool | None:
        """Give the flag back: the value to publish (the state found), or None to publish nothing."""
        if not self.owned:
            return None
        self.owned = self.seen_off = False
        self.reading = None
        return self.found
