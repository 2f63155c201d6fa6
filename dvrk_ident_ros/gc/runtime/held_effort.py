"""The arm's own holding effort before a take-over, and what the compensation does with it (ROS-free).

While the gravity compensation does not command, the arm holds itself: its ``setpoint_js`` effort is its
PID's output with the dVRK's own compensation as feed-forward. :class:`HeldEffort` keeps the latest one
(a take-over ramps in from it: bumpless) and the last few for the fit check (gc/runtime/fit_check.py), which asks on
their mean whether the file can hold the arm where it rests (:meth:`HeldEffort.fit_decision`).
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dvrk_ident_ros.gc.runtime.fit_check import FitCheck, ModelFitCheck

#: s (or FRESH_PERIODS state periods, the longer): a setpoint_js this recent is the arm's effort now
FRESH_AFTER = 0.1
FRESH_PERIODS = 3.0
#: the efforts averaged for the fit check: 0.2 s at the dVRK's 100 Hz; the check waits for half of them
FIT_SAMPLES = 20
#: s without a fresh setpoint_js before a fit check that cannot run is said (and the file taken unchecked)
UNCHECKED_AFTER = 1.0


@dataclass(frozen=True)
class FitDecision:
    """Whether a take-over may go on: ``fits``; ``warn``: said once (the check cannot run); ``refuse``: the
    reason the file is refused (the node then sends nothing and exits with status 2)."""

    fits: bool
    warn: str = ""
    refuse: str = ""


class HeldEffort:
    """The arm's own commanded effort (N m per arm joint) while someone else commands it."""

    def __init__(self, arm: str, joints: int, fit_check: FitCheck | ModelFitCheck | None = None) -> None:
        self.arm = arm
        self.joints = joints
        self.fit_check = fit_check
        self.latest = [0.0] * joints
        self.setpoint: list[float] | None = None  # the arm's commanded positions with the latest effort
        self.at = -math.inf  # monotonic s of the latest
        self._history: deque[list[float]] = deque(maxlen=FIT_SAMPLES)
        self._unchecked_said = False

    def record(self, effort: Sequence[float], now: float, position: Sequence[float] = ()) -> bool:
        """Keep ``effort`` (received at ``now``; with the arm's commanded ``position`` where given) if it is one
        finite value per joint; whether it was kept."""
        if len(effort) != self.joints or not all(math.isfinite(x) for x in effort):
            return False
        self.latest[:] = effort
        self.at = now
        if len(position) == self.joints and all(math.isfinite(x) for x in position):
            self.setpoint = list(position)
        if self.fit_check is not None:
            self._history.append(list(effort))
        return True

    def fresh(self, now: float, period: float) -> bool:
        """The latest effort is the arm's effort now (the state's ``period`` in s)."""
        return now - self.at <= max(FRESH_AFTER, FRESH_PERIODS * period)

    def ramp_start(self, now: float, period: float, clamp: Callable[[list[float]], list[float]],
                   dof: int) -> list[float] | None:
        """Where a take-over's ramp-in starts: the latest effort if fresh, padded to the law's ``dof`` and
        clamped to its limits (``clamp``); None (0 N m) without one."""
        if not self.fresh(now, period):
            return None
        return clamp(self.latest + [0.0] * (dof - self.joints))[:self.joints]

    def mean(self, now: float, period: float) -> list[float] | None:
        """The mean of the recent efforts (the fit check's window), or None without enough fresh ones."""
        history = self._history
        if not self.fresh(now, period) or len(history) < FIT_SAMPLES // 2:
            return None
        return [sum(e[i] for e in history) / len(history) for i in range(self.joints)]

    def fit_decision(self, q: Sequence[float], now: float, period: float,
                     names: Sequence[str] = ()) -> FitDecision:
        """The fit check at the arm's pose ``q`` on the mean of the recent efforts. Without enough fresh
        efforts it cannot run: the take-over waits, and after UNCHECKED_AFTER it goes on unchecked (said
        once; an arm that publishes no setpoint_js)."""
        assert self.fit_check is not None
        mean = self.mean(now, period)
        if mean is None:
            return self.without_effort(now)
        verdict = self.fit_check.check(q[:self.joints], mean)
        if verdict.fits:
            return FitDecision(True)
        return FitDecision(False, refuse=verdict.reason(self.arm, names))

    def without_effort(self, now: float) -> FitDecision:
        """No fresh efforts: the take-over waits, and after UNCHECKED_AFTER goes on unchecked (said once)."""
        if not self._unchecked_said and now - self.at > UNCHECKED_AFTER:
            self._unchecked_said = True
            return FitDecision(True, warn=(
                f"{self.arm} publishes no fresh /{self.arm}/setpoint_js: the fit check of the gc file cannot "
                "run (its holding effort is unknown)"))
        return FitDecision(self._unchecked_said)
