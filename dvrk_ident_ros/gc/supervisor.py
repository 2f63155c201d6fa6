"""When and how much to compensate: ramp-in, watchdog, fade-out (ROS-free).

States (GravityCompensationDiagnostics.STATE_*): RAMP_IN (scale rises
linearly to 1 over ``ramp_in_time`` of state time), ACTIVE, FADING_OUT
(state went stale: the last torques fade to zero over ``fade_out_time``),
STOPPED (nothing is commanded). Stale means no state for more than
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

    def begin_fade_out(self) -> None:
        if self.state in (RAMP_IN, ACTIVE):
            self.state = FADING_OUT
            self.stale_events += 1

    def fade_step(self, dt: float) -> float:
        """Lower the scale by dt / fade_out_time; STOPPED at zero. Returns the scale."""
        fade = self.settings.fade_out_time
        self.scale = 0.0 if fade <= 0 else max(0.0, self.scale - dt / fade)
        if self.scale == 0.0:
            self.state = STOPPED
        return self.scale
