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

The simulated arm's policy (:func:`wall_clock_schedule`, :func:`clock_pacer`): on the wall clock the physics
runs WALL_DELAY behind, a lag over max(2 periods, WALL_STALL) is a stall, one over WALL_MAX_LAG dropped; under
/clock a lag over two state periods slips. Its loops integrate whole physics steps (:class:`StepCarry`) and,
under /clock, tick simulated time (:class:`ClockTicks`); each new stall or slip is worth a warning, at most one
per BEHIND_EVERY.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

from dvrk_ident_ros.errors import DvrkIdentError

BEHIND_EVERY = 5.0  # s: at most one "behind the wall clock" (or "behind real time") warning in this time
WALL_STALL = 0.05  # s: a wall-clock lag longer than this (and two state periods) is a stall: warned about
WALL_MAX_LAG = 0.5  # s: a wall-clock lag up to this is caught up, a longer one (the process was stopped) dropped
#: s: on the wall clock the physics runs this far behind real time, so that a stamped command (delivered in
#: sim/stamps.py's DELIVERY) is in before its instant is simulated; a state is published this long after the instant
#: its stamp gives
WALL_DELAY = 0.002


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
        self._reported = 0  # slips already warned about

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

    def slip_report(self) -> str | None:
        """A warning when the schedule slipped since the last report, else None."""
        if self.slips <= self._reported:
            return None
        self._reported = self.slips
        return (f"behind real time: {self.slips} slips, {self.slipped:.3f} s of wall time not replayed "
                "(simulated time slips rather than running ahead of its commands)")

    def summary(self) -> str:
        """The slips for the final log line."""
        return f"{self.slips} slips, {self.slipped:.3f} s of wall time not replayed"


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
        self._reported = 0  # stalls already warned about

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

    def stall_report(self) -> str | None:
        """A warning when the loop stalled since the last report, else None."""
        if self.stalls <= self._reported:
            return None
        self._reported = self.stalls
        dropped = (f"; {self.drops} over {self.max_lag:g} s not simulated ({self.dropped:.3f} s: the arm stood "
                   "still)") if self.drops else ""
        return (f"behind the wall clock (the process was not scheduled): {self.stalls} stalls over "
                f"{1e3 * self.stall:.0f} ms so far, {self.stalled:.3f} s in all, worst {1e3 * self.worst_lag:.0f} ms, "
                f"caught up with the commands received{dropped}")

    def summary(self) -> str:
        """One line for the log: late periods, stalls, dropped time."""
        return (f"{self.elapsed:.1f} s simulated on the wall clock, {self.periods} states published; "
                f"{self.late_periods} state periods caught up late, {self.stalls} stalls over "
                f"{1e3 * self.stall:.0f} ms ({self.stalled:.3f} s, worst {1e3 * self.worst_lag:.0f} ms), "
                f"{self.drops} over {self.max_lag:g} s dropped ({self.dropped:.3f} s not simulated)")


def wall_clock_schedule(publish_rate: float) -> WallClockSchedule:
    """The simulated arm's state periods on the wall clock: WALL_DELAY behind, so that a command is in before the
    instant it stands for (its stamp, or its stamp plus the delivery on arrival); a stall is a lag over
    max(2 periods, WALL_STALL); a lag over WALL_MAX_LAG is dropped."""
    return WallClockSchedule(1.0 / publish_rate, WALL_MAX_LAG, max(2.0 / publish_rate, WALL_STALL), delay=WALL_DELAY)


def clock_pacer(publish_rate: float, real_time_factor: float) -> RealTimePacer:
    """The simulated arm's /clock against wall time: a lag over two state periods (of simulated time) slips."""
    return RealTimePacer(real_time_factor, 2.0 / publish_rate / (real_time_factor or 1.0))


class StepCarry:
    """Whole physics steps of ``dt`` covering stretches of simulated time, the remainder carried to the next."""

    def __init__(self, dt: float) -> None:
        self.dt = dt
        self._carry = 0.0  # steps owed, below one
        self.steps = 0  # steps taken in all

    def steps_for(self, seconds: float) -> int:
        """The steps to take now for ``seconds`` more simulated time."""
        self._carry += seconds * (1.0 / self.dt)
        steps = int(self._carry + 1e-9)
        self._carry -= steps
        self.steps += steps
        return steps


class ClockTicks:
    """Simulated time under /clock: ticks of 1/``clock_rate`` s (integer ns, so that nothing drifts), a state
    every 1/``publish_rate`` s; stamps start at ``epoch`` s."""

    def __init__(self, clock_rate: float, publish_rate: float, epoch: float) -> None:
        self.tick_ns = round(1e9 / clock_rate)
        self.state_ns = round(1e9 / publish_rate)
        self.epoch_ns = round(epoch * 1e9)
        self.elapsed_ns = 0
        self._next_state_ns = self.state_ns

    def tick(self) -> bool:
        """Simulated time one tick on; whether a state is due at the new time."""
        self.elapsed_ns += self.tick_ns
        if self.elapsed_ns >= self._next_state_ns:
            self._next_state_ns += self.state_ns
            return True
        return False

    @property
    def elapsed(self) -> float:
        """s of simulated time ticked."""
        return self.elapsed_ns * 1e-9

    @property
    def stamp(self) -> float:
        """s: the stamp of the current simulated time."""
        return (self.epoch_ns + self.elapsed_ns) * 1e-9
