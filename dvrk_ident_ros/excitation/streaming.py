"""The trajectory player's stream timing (ROS-free): trajectory time from the node's clock, jitter, stalls.

The player's timer fires on absolute deadlines (rcl timers: start + k * period,
on the wall clock or on /clock; a late tick is not followed by a burst, the
missed deadlines are skipped). :meth:`StreamClock.tick` takes each tick's
clock time and returns the plan time to command (the time the trajectory is
evaluated at):

- on schedule (the gap since the last tick at most ``stall_periods`` periods):
  the clock time, less the time held so far (below);
- after a stall (a longer gap: the process was not scheduled, or /clock
  jumped): the trajectory is held for the rest of the gap: the plan time
  advances by ``stall_periods`` periods only, the most it advances on
  schedule, so the next setpoint continues from the last one (no jump along
  the trajectory, nothing sent to catch up); the trajectory ends that much
  later. The arm carried its last setpoint forward, then held it, meanwhile.

Why at most two periods rather than one: through a short gap the arm keeps
moving (its setpoint velocity, its momentum), so a setpoint one period on
would stop it short; a gap beyond that is held. Against the simulated MTM with
a loaded machine's tick jitter this policy tracked better than either other (a
setpoint one period on; never holding, where the setpoints jump by the gap):
docs/results.md, "Playback".

It counts ticks, missed periods (deadlines without a tick), stalls and
the time held, and keeps the tick intervals (a histogram) for their median and
99th percentile. :meth:`StreamClock.setpoint_time` maps a measured state's
stamp to the plan time of the setpoint the arm was following then (the last
one sent before the stamp, carried forward at most one period), so the
tracking check compares a state with what the arm had been told, not with
what a stalled player had not sent yet.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DataError

HISTOGRAM_RESOLUTION = 20  # bins per period (each centred on a multiple of a twentieth of the period)
HISTOGRAM_BINS = 20 * HISTOGRAM_RESOLUTION  # intervals up to 20 periods binned; longer ones in the last bin


@dataclass(frozen=True)
class StreamStats:
    """What the stream's timing was: intervals in s (median, p99, max), misses and stalls."""

    period: float
    ticks: int
    median: float
    p99: float
    worst: float
    missed: int  # whole periods without a tick
    stalls: int  # gaps over stall_periods periods: trajectory held
    held: float  # s the trajectory was held in all

    def describe(self) -> str:
        """One phrase for the player's final log line."""
        return (f"stream {1.0 / self.period:g} Hz: {self.ticks} ticks, interval median {1e3 * self.median:.2f} ms, "
                f"p99 {1e3 * self.p99:.2f} ms, max {1e3 * self.worst:.1f} ms; {self.missed} periods missed, "
                f"{self.stalls} stalls (trajectory held {self.held:.3f} s)")


class StreamClock:
    """Plan time for each tick of a stream of period ``period`` s (see the module's docstring)."""

    def __init__(self, period: float, stall_periods: float = 2.0, history: int = 512):
        if not (math.isfinite(period) and period > 0.0):
            raise DataError(f"stream period {period} s: expected > 0")
        if not stall_periods >= 1.0:
            raise DataError(f"stall_periods {stall_periods}: expected >= 1")
        self.period = period
        self.stall_periods = stall_periods
        self._history = history
        self._width = period / HISTOGRAM_RESOLUTION
        self.restart(0.0)
        self.started = False  # the first tick restarts it

    def restart(self, t: float) -> None:
        """The stream starts at clock time ``t`` (plan time ``t``: nothing held yet)."""
        self.started = True
        self.stalled = False  # the last tick followed a stall
        self.held = 0.0
        self.stalls = 0
        self.missed = 0
        self.ticks = 0
        self.last_gap = 0.0
        self._worst = 0.0
        self._counts = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
        self._last: float | None = None
        self._clock: list[float] = []  # clock times of the recent ticks
        self._plan: list[float] = []  # their plan times
        self._start = t

    def tick(self, t: float) -> float:
        """The plan time to command at clock time ``t`` (one call per timer tick, ``t`` not decreasing);
        ``stalled`` then tells whether this tick followed a stall, ``last_gap`` the interval."""
        if not self.started:
            self.restart(t)
        self.stalled = False
        if self._last is not None:
            gap = max(0.0, t - self._last)
            self.last_gap = gap
            self._worst = max(self._worst, gap)
            self._counts[min(round(gap / self._width), HISTOGRAM_BINS - 1)] += 1
            # on absolute deadlines a gap under two periods misses none (one tick late, the next on time);
            # each whole period beyond one is a deadline without a tick
            self.missed += max(0, int(gap / self.period + 1e-9) - 1)
            if gap > self.stall_periods * self.period:
                self.held += gap - self.stall_periods * self.period
                self.stalls += 1
                self.stalled = True
        self._last = t
        self.ticks += 1
        plan_time = t - self.held
        self._clock.append(t)
        self._plan.append(plan_time)
        if len(self._clock) > 2 * self._history:
            del self._clock[:-self._history], self._plan[:-self._history]
        return plan_time

    def setpoint_time(self, t: float) -> float:
        """The plan time of the setpoint the arm was following at clock time ``t`` (a measured state's
        stamp): the last one sent at or before ``t``, carried forward at most one period; before the
        first tick, the first setpoint (the ramp starts at the arm's pose)."""
        if not self._clock:
            return t - self.held
        k = bisect.bisect_right(self._clock, t) - 1
        if k < 0:
            return self._plan[0]
        return self._plan[k] + min(t - self._clock[k], self.period)

    def stats(self) -> StreamStats:
        """The intervals' median and p99 (to a twentieth of a period), worst, misses, stalls, time held."""
        total = int(self._counts.sum())
        if total == 0:
            return StreamStats(self.period, self.ticks, 0.0, 0.0, 0.0, self.missed, self.stalls, self.held)
        cumulative = np.cumsum(self._counts)

        def quantile(q: float) -> float:
            return float(np.searchsorted(cumulative, q * total)) * self._width

        return StreamStats(self.period, self.ticks, quantile(0.5), min(quantile(0.99), self._worst), self._worst,
                           self.missed, self.stalls, self.held)
