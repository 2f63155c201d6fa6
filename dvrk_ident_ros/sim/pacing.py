"""Pacing of simulated time against wall time (the simulator's ``real_time_factor``).

Simulated time t_sim is due at wall time ``start + t_sim / real_time_factor``.
When the host stalls the loop (a shared machine, a descheduled vCPU), the
schedule slips instead of being caught up: catching up would step the physics
at full speed while the nodes that command the arm, starved by the same stall,
cannot answer, so the simulated arm would follow stale commands for the whole
burst. A lag up to ``max_lag`` is caught up (ordinary jitter); a longer one slips.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

from dvrk_ident_ros.errors import DvrkIdentError


class RealTimePacer:
    """Wall-clock schedule for simulated time; ``real_time_factor`` 0 means as fast as possible."""

    def __init__(self, real_time_factor: float, max_lag: float, clock: Callable[[], float] = time.monotonic):
        if not (math.isfinite(real_time_factor) and real_time_factor >= 0.0):
            raise DvrkIdentError(f"real_time_factor must be >= 0 (0: as fast as possible), got {real_time_factor}")
        if not (math.isfinite(max_lag) and max_lag >= 0.0):
            raise DvrkIdentError(f"max_lag must be >= 0 s, got {max_lag}")
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
