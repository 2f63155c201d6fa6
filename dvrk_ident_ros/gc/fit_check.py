"""Whether a gc file fits the arm it is about to take over (ROS-free).

At rest the arm's own effort (``setpoint_js``: its PID's output with the dVRK's own compensation as
feed-forward) holds it: the arm's gravity, springs and cable, plus whatever static friction takes. A gc
file of this arm says where that effort lies at the pose: between its two directions' torques (the
band the MLSE sweeps measured, Lin 2019 section IV: the joint's hysteresis), up to its fit error and the
arm's noise. The file of another arm (MTMR's on MTML, an old file after a repair) does not.

Per joint j, the effort's distance from the band, d_j = max(0, low_j - e_j, e_j - high_j), is scaled by
the joint's tolerance t_j (N m); the file fits while

    score = sqrt(sum_j (d_j / t_j)^2) <= 1

(one number for the whole arm: a wrong file is rarely far off on one joint alone, and a right file's
errors are not all at their worst at once). The node asks before it sends anything (the take-over), on
the mean of the arm's efforts while it settled, and refuses with the joints and N m it found.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.law import CompensationLaw

#: N m per joint (MTM joints 1-7): the default tolerances, set from the simulated MTML held at random poses
#: against files fitted on it and the files of a real MTML (../shared's CUHK MTML-41878)
MTM_TOLERANCE = (0.09, 0.22, 0.13, 0.07, 0.05, 0.035, 0.035)


@dataclass(frozen=True)
class FitVerdict:
    """The check at one pose: per joint the effort's distance from the file's band (N m) and the score."""

    fits: bool
    score: float
    tolerance: tuple[float, ...]
    distance: tuple[float, ...]
    effort: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    def reason(self, arm: str, names: Sequence[str] = ()) -> str:
        """One line naming the joints that miss by more than 30 % of their tolerance, worst first (by distance over
        tolerance), with the arm's effort and the file's band."""
        order = sorted((j for j, d in enumerate(self.distance) if d > 0.3 * self.tolerance[j]),
                       key=lambda j: -self.distance[j] / self.tolerance[j])
        parts = []
        for j in order[:4]:
            name = names[j] if j < len(names) else f"joint {j + 1}"
            parts.append(f"{name} {self.effort[j]:+.3f} N m held, file {self.low[j]:+.3f}..{self.high[j]:+.3f}")
        return (f"the gc file does not fit {arm} here (score {self.score:.2f} > 1): " + "; ".join(parts)
                + ". Is it this arm's file (ARM_NAME and SN), made since its last repair?")


class FitCheck:
    """The check of one MLSE file: its two directions as two laws (each direction's torques alone)."""

    def __init__(self, law: CompensationLaw, tolerance: Sequence[float] = MTM_TOLERANCE) -> None:
        tolerance = tuple(float(t) for t in tolerance)
        if len(tolerance) != 7 or not all(math.isfinite(t) and t > 0 for t in tolerance):
            raise DataError(f"fit tolerance {list(tolerance)}: expected 7 positive numbers (N m, MTM joints 1-7)")
        self.tolerance = tolerance
        params = law.params
        positive, negative = copy.deepcopy(params), copy.deepcopy(params)
        positive.theta_neg = positive.theta_pos.copy()
        negative.theta_pos = negative.theta_neg.copy()
        self._positive, self._negative = CompensationLaw(positive), CompensationLaw(negative)

    def band(self, q: Sequence[float]) -> tuple[list[float], list[float]]:
        """The torques (N m) between which the file says a held arm's effort lies at ``q``."""
        at_rest = [0.0] * 7
        a = list(self._positive.compute(q, at_rest))
        b = list(self._negative.compute(q, at_rest))
        return [min(x, y) for x, y in zip(a, b, strict=True)], [max(x, y) for x, y in zip(a, b, strict=True)]

    def check(self, q: Sequence[float], effort: Sequence[float]) -> FitVerdict:
        """The verdict for the arm at rest at ``q`` holding itself with ``effort`` (N m, joints 1-7)."""
        if len(q) != 7 or len(effort) != 7:
            raise DataError(f"fit check: {len(q)} positions and {len(effort)} efforts, expected 7 each")
        low, high = self.band(q)
        distance = tuple(max(0.0, lo - e, e - hi) for lo, hi, e in zip(low, high, effort, strict=True))
        score = math.sqrt(sum((d / t) ** 2 for d, t in zip(distance, self.tolerance, strict=True)))
        return FitVerdict(score <= 1.0, score, self.tolerance, distance, tuple(float(e) for e in effort),
                          tuple(low), tuple(high))
