"""When and how much to compensate: ramp-in, watchdog, fade-out, and the dVRK's own compensation (ROS-free).

States (GravityCompensationDiagnostics.STATE_*): RAMP_IN (scale rises
linearly to 1 over ``ramp_in_time`` of state time), ACTIVE, FADING_OUT
(state went stale or the arm stopped being ready: the last torques fade to
zero over ``fade_out_time``), STOPPED (nothing is commanded; :meth:`stop`
goes there at once, without a fade). Stale means no state for more than
``stale_periods - 1`` nominal periods; checked by a deadline
(:meth:`CompensationSupervisor.deadline`, ``stale_periods - 1/2`` periods
after the last sample), the watchdog engages within ``stale_periods`` periods.
State arriving again ramps back up from the current scale at the ramp-in rate,
so a single late sample costs a dip of a fraction of a percent, not a restart.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from statistics import median

from dvrk_ident_ros.errors import DvrkIdentError

RAMP_IN, ACTIVE, FADING_OUT, STOPPED = 0, 1, 2, 3


@dataclass
class SupervisorSettings:
    ramp_in_time: float = 1.0  # s
    fade_out_time: float = 0.5  # s
    stale_periods: float = 3.0
    min_period: float = 0.001  # s: the period estimate never goes below (1 kHz)

    def __post_init__(self) -> None:
        if not self.ramp_in_time >= 0.0:
            raise DvrkIdentError(f"ramp_in_time {self.ramp_in_time}: expected >= 0 s")
        if not self.fade_out_time >= 0.0:
            raise DvrkIdentError(f"fade_out_time {self.fade_out_time}: expected >= 0 s")
        if not self.stale_periods > 1.0:  # stale after stale_periods - 1 periods: at most 1 would be always
            raise DvrkIdentError(f"stale_periods {self.stale_periods}: expected more than 1 period")


class CompensationSupervisor:
    def __init__(self, settings: SupervisorSettings):
        self.settings = settings
        self.state = STOPPED
        self.scale = 0.0
        self._ramp_start: float | None = None
        self._last_arrival: float | None = None
        self._last_stamp: float | None = None
        self._intervals: deque[float] = deque(maxlen=64)
        self.period = 0.01  # s, nominal state period (estimated from the stamps)
        self.stale_events = 0

    def on_state(self, arrival: float, stamp: float) -> float:
        """A valid state arrived (``arrival``: monotonic s; ``stamp``: its header time, s). Returns the scale.

        The nominal period comes from the stamps (the publisher's clock): samples the transport delivers in a
        burst arrive microseconds apart, and a period estimated from arrivals would make the watchdog trip on
        the next ordinary gap."""
        if self._last_stamp is not None and stamp > self._last_stamp:
            self._intervals.append(stamp - self._last_stamp)
        self._last_arrival, self._last_stamp = arrival, stamp
        if self.state in (STOPPED, FADING_OUT):
            self.state = RAMP_IN
            ramp = self.settings.ramp_in_time
            self._ramp_start = stamp - (self.scale * ramp if ramp > 0 else 0.0)  # continue from the current scale
        if self.state == RAMP_IN:
            ramp = self.settings.ramp_in_time
            elapsed = stamp - self._ramp_start if self._ramp_start is not None else 0.0
            self.scale = 1.0 if ramp <= 0 else min(1.0, max(0.0, elapsed / ramp))
            if self.scale >= 1.0:
                self.state = ACTIVE
        return self.scale

    def update_period(self) -> float:
        if len(self._intervals) >= 5:
            self.period = max(self.settings.min_period, median(self._intervals))
        return self.period

    def deadline(self) -> float:
        """Seconds after the last sample at which to check for staleness (between stale and the limit)."""
        return (self.settings.stale_periods - 0.5) * self.period

    def is_stale(self, now: float) -> bool:
        if self._last_arrival is None or self.state in (STOPPED, FADING_OUT):
            return False
        return now - self._last_arrival > (self.settings.stale_periods - 1.0) * self.period

    def begin_fade_out(self, stale: bool = True) -> bool:
        """Fade out from RAMP_IN or ACTIVE (``stale``: because the state went stale, counted). True if it began."""
        if self.state in (RAMP_IN, ACTIVE):
            self.state = FADING_OUT
            if stale:
                self.stale_events += 1
            return True
        return False

    def stop(self) -> None:
        """Stop at once: scale 0, STOPPED (the next valid state ramps in from zero)."""
        self.state = STOPPED
        self.scale = 0.0

    def fade_step(self, dt: float) -> float:
        """Lower the scale by dt / fade_out_time; STOPPED at zero. Returns the scale."""
        fade = self.settings.fade_out_time
        self.scale = 0.0 if fade <= 0 else max(0.0, self.scale - dt / fade)
        if self.scale == 0.0:
            self.state = STOPPED
        return self.scale


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
