"""Pacing of simulated time against wall time (ROS-free).

Two schedules, both on absolute deadlines (period k is due at ``origin + k *
period``, so nothing drifts the way repeated ``sleep(period)`` does):

- :class:`RealTimePacer`, with ``/clock``: simulated time t_sim is due at wall
  time ``start + t_sim / real_time_factor``. When the host stalls the loop (a
  shared machine, a descheduled vCPU), the schedule slips instead of being
  caught up: catching up would step the physics at full speed while the nodes
  that command the arm, starved by the same stall, cannot answer, so the
  simulated arm would follow stale commands for the whole burst. A lag up to
  ``max_lag`` is caught up (ordinary jitter); a longer one slips.
- :class:`WallClockSchedule`, without ``/clock``: the arm's state periods on
  the wall clock (the stamps are wall time). A real arm's time never stops,
  and the commands of the nodes are on the same wall clock whether or not this
  process keeps up, so a late period is caught up in one integration (the
  state is then published once, not once per missed period: ``late_periods``),
  with the commands that arrived applied at their stamps (the simulated arm
  carries the last one forward meanwhile, then holds it). A lag longer than
  ``stall`` is counted as a stall; one longer than ``max_lag`` (the process was
  stopped) is dropped: not simulated, the arm stood still through it; the
  origin then moves on so that stamps stay on the wall clock.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

from dvrk_ident_ros.errors import DvrkIdentError


def _check(real_time_factor: float, max_lag: float) -> None:
    if not (math.isfinite(real_time_factor) and real_time_factor >= 0.0):
        raise DvrkIdentError(f"real_time_factor must be >= 0 (0: as fast as possible), got {real_time_factor}")
    if not (math.isfinite(max_lag) and max_lag >= 0.0):
        raise DvrkIdentError(f"max_lag must be >= 0 s, got {max_lag}")


class RealTimePacer:
    """Wall-clock schedule for simulated time; ``real_time_factor`` 0 means as fast as possible."""

    def __init__(self, real_time_factor: float, max_lag: float, clock: Callable[[], float] = time.monotonic):
        _check(real_time_factor, max_lag)
        self.real_time_factor = real_time_factor
        self.max_lag = max_lag
        self._clock = clock
        self.restart()

    def restart(self) -> None:
        """Simulated time 0 is due now."""
        self._start = self._clock()
        self.slips = 0
        self.slipped = 0.0  # s of wall time given up to stalls

    def delay(self, sim_elapsed: float) -> float:
        """Wall seconds to wait before simulated time ``sim_elapsed`` (since start) is due; 0 if it is late."""
        if self.real_time_factor == 0.0:
            return 0.0
        late = self._clock() - (self._start + sim_elapsed / self.real_time_factor)
        if late > self.max_lag:
            self._start += late
            self.slips += 1
            self.slipped += late
            return 0.0
        return max(0.0, -late)


class WallClockSchedule:
    """The simulated arm's state periods on the wall clock (see the module's docstring).

    ``stall``: a lag longer than this is a stall (counted, for a warning) even when it is caught up;
    ``max_lag``: a lag longer than this is dropped; ``delay``: a period is simulated this long after the
    wall time it stands for (``origin + elapsed``, its stamp), so that the commands stamped in it are in.
    """

    def __init__(self, period: float, max_lag: float, stall: float | None = None, delay: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        if not (math.isfinite(period) and period > 0.0):
            raise DvrkIdentError(f"period must be > 0 s, got {period}")
        _check(1.0, max_lag)
        self.period = period
        self.max_lag = max_lag
        self.stall = min(max_lag, 2.0 * period if stall is None else stall)
        if not (math.isfinite(delay) and delay >= 0.0):
            raise DvrkIdentError(f"delay must be >= 0 s, got {delay}")
        self.delay = delay
        self._clock = clock
        self.restart()

    def restart(self) -> None:
        """Simulated time 0 is now; the counters start again."""
        self.origin = self._clock()  # wall (monotonic) time of simulated time 0, moved on by every drop
        self.elapsed = 0.0  # simulated seconds integrated
        self.periods = 0  # states published
        self.late_periods = 0  # whole periods caught up late (their state never published)
        self.stalls = 0  # lags beyond ``stall`` (caught up or dropped)
        self.stalled = 0.0  # s: their total
        self.drops = 0  # lags beyond ``max_lag``: not simulated
        self.dropped = 0.0  # s of wall time not simulated
        self.worst_lag = 0.0  # s: the largest lag seen

    def wait(self) -> float:
        """Wall seconds until the next period is due (<= 0: it is due)."""
        return self.origin + self.elapsed + self.period + self.delay - self._clock()

    def due(self) -> float:
        """The simulated seconds to integrate now (call once :meth:`wait` is <= 0): one period, plus the
        whole periods the loop is late by, if that lag is at most ``max_lag``; a longer lag is dropped."""
        lag = max(0.0, -self.wait())
        self.worst_lag = max(self.worst_lag, lag)
        if lag > self.stall:
            self.stalls += 1
            self.stalled += lag
        if lag > self.max_lag:
            self.origin += lag
            self.drops += 1
            self.dropped += lag
            behind = 0
        else:
            behind = int(lag / self.period)
            self.late_periods += behind
        seconds = (1 + behind) * self.period
        self.elapsed += seconds
        self.periods += 1
        return seconds

    def summary(self) -> str:
        """One line for the log: late periods, stalls, dropped time."""
        return (f"{self.elapsed:.1f} s simulated on the wall clock, {self.periods} states published; "
                f"{self.late_periods} state periods caught up late, {self.stalls} stalls over "
                f"{1e3 * self.stall:.0f} ms ({self.stalled:.3f} s, worst {1e3 * self.worst_lag:.0f} ms), "
                f"{self.drops} over {self.max_lag:g} s dropped ({self.dropped:.3f} s not simulated)")
