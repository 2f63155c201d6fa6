"""A PSM's fit check from both sides of its pose, before a take-over (ROS-free).

At rest a PSM joint holds its gravity up to its static friction, and the dVRK's PSM PID has no integral term:
the side a joint came from decides much of the effort it rests under (docs/gravity-compensation.md, "Static
friction"). The effort at one pose leaves a model its friction's width (fit_check.py ModelFitCheck), and the
model of another arm that differs by less than that passes there. So before the take-over the arm holds its
pose p twice, reached once from above and once from below on the joints that carry its weight: p + d, p,
p - d, p under its own ``move_jp`` (d: PROBE_FRACTION of each probed joint's range; the wrist stays where it
is; the holds' design of excitation/holds.py). At p the arm then shows two efforts it rests under,
low_j..high_j per joint. A model refitted to this arm's holds from both sides lies between them up to its
error; another arm's lies outside. Per joint

    d_j = max(0, low_j - tau_j, tau_j - high_j),    score = sqrt(sum_j (d_j / t_j)^2) <= 1

(tau: the model's torque at p; t: PROBE_TOLERANCE, set with bench fit_check). :class:`BothSidesProbe` runs
the four holds on the arm's samples; ModelFitCheck.check_span scores the model.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.holds import both_sides

#: of each probed joint's range: how far above and below its pose the probe takes a joint
PROBE_FRACTION = 0.005
#: the joints probed: a PSM's yaw, pitch and insertion (its wrist carries next to no weight)
PROBE_JOINTS = 3
#: s at rest after each move before its effort counts (the simulated PSM's PID settles in this)
PROBE_SETTLE = 2.0
#: per PSM joint (1-6; the insertion in N): :meth:`ModelFitCheck.check_span`'s default tolerances
PROBE_TOLERANCE = (0.03, 0.03, 0.03, 0.03, 0.03, 0.03)
#: s: a move that has not ended this long after its goal was sent ends the probe (the take-over is refused)
MOVE_TIMEOUT = 10.0
#: rad (m): the arm's setpoint this close to a goal on every joint: the move to it has ended
AT_GOAL = 1e-4
#: the holds whose efforts count: p reached from above, p reached from below
FROM_ABOVE, FROM_BELOW = 1, 3


class BothSidesProbe:
    """The four holds before one take-over, from the pose ``start`` (the arm's setpoint at rest) inside the
    joint ``lower``..``upper`` limits. Fed the arm's samples while it is ready (:meth:`advance`), it says which
    goal to send; :attr:`done` when both efforts are in (:meth:`span`), :attr:`failed` (a reason) when a move
    did not end."""

    def __init__(self, start: Sequence[float], lower: Sequence[float], upper: Sequence[float], *,
                 fraction: float = PROBE_FRACTION, joints: int = PROBE_JOINTS, settle: float = PROBE_SETTLE,
                 timeout: float = MOVE_TIMEOUT, names: Sequence[str] = ()) -> None:
        p = np.asarray(start, dtype=float)
        low, high = np.asarray(lower, dtype=float)[:len(p)], np.asarray(upper, dtype=float)[:len(p)]
        if len(low) != len(p) or len(high) != len(p) or not np.all(np.isfinite(p)):
            raise DataError(f"fit probe: a pose of {len(p)} finite positions and as many limits expected")
        offset = np.zeros(len(p))
        offset[:joints] = fraction * (high - low)[:joints]
        self.goals = list(both_sides(p[None], offset))
        for j in range(min(joints, len(p))):
            if p[j] + offset[j] > high[j] or p[j] - offset[j] < low[j]:
                name = names[j] if j < len(names) else f"joint {j + 1}"
                raise DataError(f"{name} at {p[j]:+.4f} is within {offset[j]:.4f} of its limit "
                                f"({low[j]:+.4f}..{high[j]:+.4f}): too near it to be held from both sides; "
                                "move the arm away from the limit")
        self.joints = min(joints, len(p))
        self.settle = float(settle)
        self.timeout = float(timeout)
        self.offset = offset
        self.efforts: dict[int, list[float]] = {}
        self.failed = ""
        self.said = False  # its verdict logged
        self._index = -1  # the goal last sent (-1: none yet)
        self._sent_at = 0.0
        self._reached_at: float | None = None

    @property
    def done(self) -> bool:
        return self._index >= len(self.goals)

    @property
    def move(self) -> int:
        """The move under way, 1-4 (0 before the first)."""
        return min(self._index + 1, len(self.goals))

    def advance(self, now: float, setpoint: Sequence[float] | None, effort: Sequence[float] | None
                ) -> list[float] | None:
        """A sample of the arm, ready and at rest, at ``now`` (s): ``setpoint`` its commanded positions (None:
        none fresh), ``effort`` the mean of its recent efforts (None: too few fresh). Returns the goal to send
        now (``move_jp``), if one is due."""
        if self.done or self.failed:
            return None
        if self._index < 0:
            return self._send(0, now)
        goal = self.goals[self._index]
        if self._reached_at is None:
            if setpoint is not None and len(setpoint) >= len(goal) and all(
                    abs(s - g) <= AT_GOAL for s, g in zip(setpoint, goal, strict=False)):
                self._reached_at = now
            elif now - self._sent_at > self.timeout:
                self.failed = (f"the fit probe's move {self._index + 1} of {len(self.goals)} did not end within "
                               f"{self.timeout:g} s (its setpoint did not reach the goal)")
            return None
        if now - self._reached_at < self.settle:
            return None
        if self._index in (FROM_ABOVE, FROM_BELOW):
            if effort is None:
                if now - self._reached_at > self.settle + self.timeout:
                    self.failed = "the fit probe had no fresh effort of the arm at rest (setpoint_js)"
                return None
            self.efforts[self._index] = [float(e) for e in effort]
        if self._index + 1 == len(self.goals):
            self._index += 1
            return None
        return self._send(self._index + 1, now)

    def _send(self, index: int, now: float) -> list[float]:
        self._index, self._sent_at, self._reached_at = index, now, None
        return [float(x) for x in self.goals[index]]

    def span(self) -> tuple[list[float], list[float]]:
        """Per joint the lower and the higher of the two efforts the arm rested under at p."""
        if not self.done:
            raise DataError("fit probe: not done")
        above, below = self.efforts[FROM_ABOVE], self.efforts[FROM_BELOW]
        return ([min(a, b) for a, b in zip(above, below, strict=True)],
                [max(a, b) for a, b in zip(above, below, strict=True)])

    def describe(self) -> str:
        """For the log: what the probe does."""
        moved = ", ".join(f"{x:.4f}" for x in self.offset[:self.joints])
        return (f"holding the arm at its pose reached from both sides before the take-over (fit_probe): "
                f"{len(self.goals)} move_jp of {moved} (rad; m for the insertion) on joints 1-{self.joints}, "
                f"{self.settle:g} s at rest after each")
