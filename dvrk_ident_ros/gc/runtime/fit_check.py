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

A file is a fit to the poses its data measured: outside them its polynomials and gravity terms extrapolate
what the data never held (a grid that swept a joint over a few degrees says nothing of the arm 30 degrees
away). A file that records that range (``joint_position_lower_limit`` and ``_upper_limit``, degrees, as the
MLSE calibration writes them) is refused at a pose beyond it on any joint 1-6 by more than a margin, whatever
the effort there, with the joints, the pose and the range. A fit's extrapolation error grows with the distance
from its data over the width they span (a polynomial's, (1 + 2 d / w)^n), so the margin of joint j is

    m_j = RANGE_MARGIN_DEG + RANGE_REACH w_j      (w_j: the width of the file's range of joint j)
"""
from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.runtime.fit_probe import PROBE_TOLERANCE
from dvrk_ident_ros.gc.runtime.law import CompensationLaw
from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation

#: N m per joint (MTM joints 1-7): the default tolerances, set from the simulated MTML held at random poses
#: against files fitted on it and the files of a real MTML (CUHK's MTML-41878 recordings)
MTM_TOLERANCE = (0.09, 0.22, 0.13, 0.07, 0.05, 0.035, 0.035)
#: per PSM joint (1-6; the insertion in N): an identified model's check (:class:`ModelFitCheck`), set from the
#: simulated PSM held at random poses against models identified on it and on perturbed arms (bench fit_check)
PSM_TOLERANCE = (0.1, 0.1, 0.3, 0.03, 0.03, 0.03)
#: a file's own fit residual (RMS per joint) times this is its tolerance where that exceeds the defaults: the
#: MTM defaults are this many times the RMS residual of the real MTML-41878's own fit on joints 1-3
RESIDUAL_SIGMAS = 3.5
#: a PSM model refitted to static holds (``gravity_refit.residual_rms_after``): the static friction its band
#: allows is at most this many times the holds' RMS residual (the friction the arm showed at rest, from both sides)
HOLD_SIGMAS = 3.0
#: degrees: how far beyond the joint range its data covered a file is still taken at its word, plus RANGE_REACH
#: times that range's width (bench fit_check: the real MTML-41878's file refitted without a fold of its sweeps is
#: taken at every held-out pose of the fold, some beyond the refit's range; the test grid's files checked out to it)
RANGE_MARGIN_DEG = 2.0
RANGE_REACH = 0.1
#: the MLSE joints whose range a file's check holds the arm to (joint 7, the roll, carries no gravity)
RANGE_JOINTS = 6


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
    what: str = "gc file"
    outside: tuple[str, ...] = ()  # per joint beyond the range the file is taken over (FitCheck.outside)
    #: ModelFitCheck.check_span's: ``low``..``high`` the efforts the arm rested under reached from both sides,
    #: ``effort`` the model's torque
    both_sides: bool = False

    def reason(self, arm: str, names: Sequence[str] = ()) -> str:
        """One line: the joints beyond the range the file's data covered; else the joints that miss by more than
        30 % of their tolerance, worst first (by distance over tolerance), with the arm's effort and the file's
        band."""
        if self.outside:
            return (f"{arm} is outside the joint range this {self.what}'s data covered: " + "; ".join(self.outside)
                    + ". The file does not know the arm there: move the arm into its range, or calibrate over "
                    "this range")
        order = sorted((j for j, d in enumerate(self.distance) if d > 0.3 * self.tolerance[j]),
                       key=lambda j: -self.distance[j] / self.tolerance[j])
        parts = []
        for j in order[:4]:
            name = names[j] if j < len(names) else f"joint {j + 1}"
            parts.append(f"{name} rests under {self.low[j]:+.3f}..{self.high[j]:+.3f} N m reached from both sides, "
                         f"model {self.effort[j]:+.3f}" if self.both_sides else
                         f"{name} {self.effort[j]:+.3f} N m held, file {self.low[j]:+.3f}..{self.high[j]:+.3f}")
        return (f"the {self.what} does not fit {arm} here (score {self.score:.2f} > 1): " + "; ".join(parts)
                + ". Is it this arm's file (ARM_NAME and SN), made since its last repair?")


class FitCheck:
    """The check of one MLSE file: its two directions as two laws (each direction's torques alone). A file that
    records its own fit's RMS residual r_j (``lse.fit_residual_rms``, written by ``dvrk-ident gc fit``) is
    held to max(t_j, RESIDUAL_SIGMAS r_j): a file whose own arm it fits less closely (a noisier arm, a cable
    that wears) is not refused for errors its own fit shows; the tolerances are the floor."""

    def __init__(self, law: CompensationLaw, tolerance: Sequence[float] = MTM_TOLERANCE,
                 range_margin_deg: float = RANGE_MARGIN_DEG, range_reach: float = RANGE_REACH) -> None:
        tolerance = tuple(float(t) for t in tolerance)
        if len(tolerance) != 7 or not all(math.isfinite(t) and t > 0 for t in tolerance):
            raise DataError(f"fit tolerance {list(tolerance)}: expected 7 positive numbers (N m, MTM joints 1-7)")
        if not (math.isfinite(range_margin_deg) and range_margin_deg >= 0):
            raise DataError(f"fit range margin {range_margin_deg}: expected a number of degrees >= 0")
        if not (math.isfinite(range_reach) and range_reach >= 0):
            raise DataError(f"fit range reach {range_reach}: expected a fraction of the range >= 0")
        params = law.params
        #: per joint 1-6 the degrees (low, high) beyond which the file is refused; None: no range recorded
        self.range_deg: tuple[tuple[float, float], ...] | None = None
        self._taken: tuple[tuple[float, float], ...] = ()
        if params.position_lower_deg is not None and params.position_upper_deg is not None:
            self.range_deg = tuple(
                (float(lo), float(hi)) for lo, hi in zip(params.position_lower_deg[:RANGE_JOINTS],
                                                          params.position_upper_deg[:RANGE_JOINTS], strict=True))
            self._taken = tuple((lo - range_margin_deg - range_reach * (hi - lo),
                                 hi + range_margin_deg + range_reach * (hi - lo)) for lo, hi in self.range_deg)
        if params.fit_residual is not None:
            tolerance = tuple(max(t, RESIDUAL_SIGMAS * float(r)) for t, r in zip(tolerance, params.fit_residual,
                                                                                  strict=True))
        self.tolerance = tolerance
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
        verdict = _verdict(self.band, self.tolerance, q, effort, "gc file")
        outside = self.outside(q)
        return dataclasses.replace(verdict, fits=False, outside=outside) if outside else verdict

    def outside(self, q: Sequence[float]) -> tuple[str, ...]:
        """The joints at ``q`` beyond the file's range by more than their margin (none when it records no range)."""
        if self.range_deg is None:
            return ()
        found = []
        for j, ((lo, hi), (low, high)) in enumerate(zip(self.range_deg, self._taken, strict=True)):
            deg = math.degrees(float(q[j]))
            if deg < low or deg > high:
                found.append(f"joint {j + 1} at {deg:+.1f} deg, file {lo:+.1f}..{hi:+.1f} deg "
                             f"(taken to {low:+.1f}..{high:+.1f})")
        return tuple(found)


def _verdict(band, tolerance: tuple[float, ...], q: Sequence[float], effort: Sequence[float],
             what: str) -> FitVerdict:
    n = len(tolerance)
    if len(q) != n or len(effort) != n:
        raise DataError(f"fit check: {len(q)} positions and {len(effort)} efforts, expected {n} each")
    low, high = band(q)
    distance = tuple(max(0.0, lo - e, e - hi) for lo, hi, e in zip(low, high, effort, strict=True))
    score = math.sqrt(sum((d / t) ** 2 for d, t in zip(distance, tolerance, strict=True)))
    return FitVerdict(score <= 1.0, score, tolerance, distance, tuple(float(e) for e in effort),
                      tuple(low), tuple(high), what)


class ModelFitCheck:
    """The check of an identified model's compensation (the PSM's, gc/runtime/model_law.py): at rest a joint holds its
    gravity and springs up to its static friction, so the band is the model's torque at ``q`` plus or minus the
    joint's identified Coulomb friction and offset (``Fc<j>``, ``Fo<j>`` of dVRK joint j where the model has
    them; else the torque alone), and the distance from it is scaled by the joint's tolerance as for a gc file.
    A model refitted to static holds from both sides knows how much of that friction the arm showed at rest:
    its band is at most HOLD_SIGMAS times the holds' RMS residual wide (an arm that slides to rest shows
    none, and a model that differs by less than its friction no longer passes there)."""

    def __init__(self, compensation: ModelCompensation, tolerance: Sequence[float] = PSM_TOLERANCE,
                 span_tolerance: Sequence[float] = PROBE_TOLERANCE) -> None:
        tolerance = tuple(float(t) for t in tolerance)
        span_tolerance = tuple(float(t) for t in span_tolerance)
        n = len(tolerance)
        for given in (tolerance, span_tolerance):
            if len(given) != n or n > compensation.dof or not all(math.isfinite(t) and t > 0 for t in given):
                raise DataError(f"fit tolerance {list(given)}: expected up to {compensation.dof} positive numbers "
                                "(one per commanded joint)")
        self.tolerance = tolerance
        self.span_tolerance = span_tolerance
        self._compensation = compensation
        index = {name: k for k, name in enumerate(compensation.model.parameter_names)}
        delta = compensation.delta
        self._friction = [abs(float(delta[index[f"Fc{j}"]])) + abs(float(delta[index[f"Fo{j}"]]))
                          if f"Fc{j}" in index and f"Fo{j}" in index else 0.0 for j in range(1, n + 1)]
        holds = compensation.hold_residual
        if holds is not None:
            self._friction = [min(f, HOLD_SIGMAS * float(r)) for f, r in zip(self._friction, holds[:n], strict=True)]

    def torque(self, q: Sequence[float]) -> list[float]:
        """The model's torque at rest at ``q`` (the commanded joints)."""
        full = list(q) + [0.0] * (self._compensation.dof - len(q))
        return list(self._compensation.compute(full, [0.0] * self._compensation.dof))[:len(self.tolerance)]

    def band(self, q: Sequence[float]) -> tuple[list[float], list[float]]:
        torque = self.torque(q)
        return ([t - f for t, f in zip(torque, self._friction, strict=True)],
                [t + f for t, f in zip(torque, self._friction, strict=True)])

    def check(self, q: Sequence[float], effort: Sequence[float]) -> FitVerdict:
        return _verdict(self.band, self.tolerance, q, effort, "parameter file")

    def check_span(self, q: Sequence[float], low: Sequence[float], high: Sequence[float]) -> FitVerdict:
        """The verdict for the arm at rest at ``q`` under efforts ``low``..``high`` (reached from both sides:
        gc/runtime/fit_probe.py): the model's torque against them, no friction allowed (they show it)."""
        n = len(self.span_tolerance)
        if len(q) != n or len(low) != n or len(high) != n:
            raise DataError(f"fit check: {len(q)} positions and {len(low)}, {len(high)} efforts, expected {n} each")
        torque = self.torque(q)
        distance = tuple(max(0.0, lo - t, t - hi) for lo, hi, t in zip(low, high, torque, strict=True))
        score = math.sqrt(sum((d / t) ** 2 for d, t in zip(distance, self.span_tolerance, strict=True)))
        return FitVerdict(score <= 1.0, score, self.span_tolerance, distance, tuple(float(t) for t in torque),
                          tuple(float(x) for x in low), tuple(float(x) for x in high), "parameter file",
                          both_sides=True)


def fit_check_for(compensation: object, family: str, tolerance: Sequence[float] = (0.0,),
                  range_margin_deg: float = RANGE_MARGIN_DEG) -> FitCheck | ModelFitCheck | None:
    """The check of a compensation before its take-over: an MLSE file's (an MTM's) or a PSM's identified model;
    None for the others (an MTM's identified model: the take-over guard alone). ``tolerance`` [0.0]: the
    measured defaults."""
    custom = [float(t) for t in tolerance] != [0.0]
    if isinstance(compensation, CompensationLaw):
        return FitCheck(compensation, tolerance if custom else MTM_TOLERANCE, range_margin_deg)
    if isinstance(compensation, ModelCompensation) and family.upper() == "PSM":
        return (ModelFitCheck(compensation, tolerance, tolerance) if custom else ModelFitCheck(compensation))
    return None
