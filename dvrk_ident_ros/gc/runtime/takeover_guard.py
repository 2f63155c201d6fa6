"""The fit check's second half (ROS-free): after a take-over, a file that fits leaves the arm where it was.

The check before the take-over (gc/runtime/fit_check.py) compares the file with the arm's holding effort at one
pose, within tolerances that a right file's errors need on a real arm (its cable and friction hold small
errors). An arm with less friction there, or a file of an arm that differs only a little, can pass it and
still pull the arm away: at rest when taken over, the arm then accelerates on its own, the shoulder and the
elbow first. So for ``window`` s after every take-over, while no one is expected to move the arm yet, each
sample's position is compared with the position at the take-over; a joint further than its ``limit`` (rad)
ends the compensation: the node holds the arm where it is (``/<ARM>/hold``) and exits with status 2, the
joint and its displacement in the reason.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from dvrk_ident_ros.errors import DataError

#: rad per MTM joint (1-7): farther than this from the take-over pose within the window ends the compensation
MTM_GUARD_LIMIT = (0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3)
#: per PSM joint (1-6; the insertion in m): a refitted model of the arm leaves it where it rested (bench fit_check,
#: the simulated PSM with and without static friction), one of another PSM pulls it by more
PSM_GUARD_LIMIT = (0.03, 0.03, 0.003, 0.2, 0.2, 0.2)
#: by arm family (arm/registry.py); a family without limits here is not guarded
GUARD_LIMITS = {"MTM": MTM_GUARD_LIMIT, "PSM": PSM_GUARD_LIMIT}
#: the words of the node's reason when the guard stops it (the calibration job's hold test looks for them)
GUARD_STOP = "away from where it rested"
#: s after the take-over's first command (the ramp-in included)
GUARD_WINDOW = 2.5
#: rad/s (m/s): the arm rests at a take-over when no joint is faster; one that moves (an arm left falling at 0 N m
#: by a hand-over, or moved by a hand) is not guarded at that take-over: its motion is not the file's
REST_SPEED = 0.05


class TakeoverGuard:
    """Watch one arm's joints for ``window`` s after each take-over; allocation-free per sample."""

    def __init__(self, limit: Sequence[float] = MTM_GUARD_LIMIT, window: float = GUARD_WINDOW) -> None:
        self.limit = tuple(float(x) for x in limit)
        if not self.limit or not all(math.isfinite(x) and x > 0 for x in self.limit):
            raise DataError(f"take-over guard limits {list(limit)}: expected positive numbers (rad)")
        if not window > 0:
            raise DataError(f"take-over guard window {window}: expected > 0 s")
        self.window = float(window)
        self._start = [0.0] * len(self.limit)
        self._until = -math.inf
        self.worst = 0.0  # the largest displacement over its limit seen since the last start

    @property
    def watching(self) -> bool:
        return self._until > -math.inf

    def start(self, q: Sequence[float], qd: Sequence[float], now: float) -> bool:
        """The arm was taken over at ``q`` (rad) moving at ``qd`` (rad/s) at time ``now`` (s): watched if it
        rested (every joint slower than REST_SPEED); returns whether it is."""
        self.worst = 0.0
        if any(abs(qd[i]) >= REST_SPEED for i in range(len(self.limit))):
            self._until = -math.inf
            return False
        for i in range(len(self.limit)):
            self._start[i] = float(q[i])
        self._until = now + self.window
        return True

    def stop(self) -> None:
        self._until = -math.inf

    def check(self, q: Sequence[float], now: float) -> int:
        """-1 while the arm stays near the take-over pose (or the window has passed: the guard then stops);
        else the index of the joint that moved furthest beyond its limit."""
        if now > self._until:
            self._until = -math.inf
            return -1
        moved, worst = -1, 1.0
        start, limit = self._start, self.limit
        for i in range(len(limit)):
            ratio = abs(q[i] - start[i]) / limit[i]
            if ratio > self.worst:
                self.worst = ratio
            if ratio > worst:
                moved, worst = i, ratio
        return moved

    def displacement(self, q: Sequence[float], joint: int) -> float:
        """How far ``joint`` is from the take-over pose (rad)."""
        return float(q[joint]) - self._start[joint]

    def reason(self, arm: str, q: Sequence[float], joint: int, names: Sequence[str] = ()) -> str:
        """Why the guard stopped the compensation of ``arm`` on ``joint`` at ``q`` (GUARD_STOP in it)."""
        name = names[joint] if joint < len(names) else f"joint {joint + 1}"
        return (f"the file pulled {arm} {GUARD_STOP}: {name} moved {self.displacement(q, joint):+.3f} rad within "
                f"{self.window:g} s of the take-over (limit {self.limit[joint]:g} rad). Is it this arm's file "
                "(ARM_NAME and SN), made since its last repair? (If you moved the arm, start again with it at "
                "rest.)")
