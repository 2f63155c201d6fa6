"""The gravity-compensation law (Lin 2019 eqs. 25-31, as the blend the dVRK console computes).

    tau_pos = R(q) theta_pos,  tau_neg = R(q) theta_neg
    tau = clip(alpha tau_pos + (1 - alpha) tau_neg, lower, upper) * scale

with the blend weight alpha of the file's version, as the dVRK console
(robGravityCompensationMTM) computes it:

- version 2: alpha_i = 0.5 + 0.5 r_i clip((|qdot_i| - db_i) / (sat_i - db_i), 0, 1) sgn(qdot_i)
  (dead band, saturation, ratio), with the signed velocity (|qdot| would keep
  alpha >= 0.5, a known bug);
- version 1: beta_i = 0.5 + 0.5 sin(pi qdot_i / (2 A_i)) for |qdot_i| < A_i,
  1 beyond +A_i and 0 beyond -A_i (A = ``beta_vel_amplitude``): no dead band, no
  ratio, the whole range from one direction's torques to the other's. (The
  console's code at jhu-dvrk/sawIntuitiveResearchKit af18bd7 saturates only
  below -A: a missing ``else`` lets the sine run on above +A. The two agree for
  |qdot_i| <= A_i, the whole range of a hand-guided MTM with the shipped
  amplitudes of 2 to 10 rad/s; beyond +A this law keeps the evident intent.)

``blend="travel"`` (an option; the console's law is ``"velocity"``) replaces the
velocity blend by each joint's cable direction state h (gc/model/travel.py: Dahl's
model of the hysteresis, driven by the joint's travel, held at rest):

    alpha_i = 0.5 + 0.5 h_i

A pose-grid sweep measures, at rest, the torque of the branch the joint
arrived on (the fit weighs each pose by its recorded state); the console's law uses
the mean of both branches at rest (alpha = 0.5), which leaves half their
difference unbalanced wherever the hand leaves the arm. The whole branch is
used (the file's ratio r tunes the velocity blend's friction compensation, not
the static torques the sweeps measured). The state starts at 0 (the mean) and
moves continuously: no torque step when the hand lets go.

The clamp comes before the scale (ramp-in, fade-out): at scale 0 every torque
is exactly 0 N m, even where a file's lower limit is positive (MTM joints 2
and 3). One pure function of (q, qdot) used by the node and the simulator; the
hot path creates no arrays: it writes into lists allocated once.
"""
from __future__ import annotations

import math

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.estimators import compensation_kind
from dvrk_ident_ros.gc.model.params import GcParameters
from dvrk_ident_ros.gc.model.regressor import gravity_torques
from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL, TravelState

JOINTS = 7
POLY_JOINTS = 6
#: How the two directions' torques are blended: the console's velocity blend, or a travel (Dahl) state.
BLENDS = ("velocity", "travel")


class CompensationLaw:
    """Torques of a gc parameter set; after ``compute`` the diagnostics are in the attributes
    (a :class:`~dvrk_ident_ros.gc.runtime.compensation.Compensation`)."""

    kind = compensation_kind("mlse")

    def __init__(self, params: GcParameters, blend: str = "velocity", blend_travel: float = DEFAULT_TRAVEL):
        if blend not in BLENDS:
            raise DataError(f"blend {blend!r}: expected one of {', '.join(BLENDS)}")
        self.params = params
        self.blend = blend
        self._travel = blend == "travel"
        self._direction = TravelState(JOINTS, blend_travel)  # the travel blend's state h (0: the mean)
        self._pos = [float(x) for x in params.theta_pos]
        self._neg = [float(x) for x in params.theta_neg]
        self._shared_gravity = self._pos[:10] == self._neg[:10]
        self._poly_pos = [self._pos[10 + 5 * i:15 + 5 * i][::-1] for i in range(POLY_JOINTS)]  # Horner order
        self._poly_neg = [self._neg[10 + 5 * i:15 + 5 * i][::-1] for i in range(POLY_JOINTS)]
        self._db = [float(x) for x in params.deadband]
        self._span = [float(s - d) for s, d in zip(params.saturation, params.deadband, strict=True)]
        self._ratio = [float(x) for x in params.ratio]
        self._upper = [float(x) for x in params.upper_limit]
        self._lower = [float(x) for x in params.lower_limit]
        self._g = params.g_constant
        amplitude = params.beta_amplitude
        self._sine = amplitude is not None  # version 1: the sine blend of the velocity
        if amplitude is not None:
            self._half_pi_over_amplitude = [0.5 * math.pi / float(a) for a in amplitude]
            self._amplitude = [float(a) for a in amplitude]
        else:
            self._half_pi_over_amplitude = [0.0] * JOINTS
            self._amplitude = [0.0] * JOINTS
        self.gravity = [0.0] * JOINTS
        self._gravity_neg = [0.0] * JOINTS
        self.disturbance = [0.0] * JOINTS
        self.alpha = [0.5] * JOINTS
        self.total = [0.0] * JOINTS
        self.saturated = [False] * JOINTS

    def scale_limits(self, factor: float) -> None:
        """Tighten the file's torque limits by ``factor`` (0, 1]."""
        self._upper = [factor * x for x in self._upper]
        self._lower = [factor * x for x in self._lower]

    def clamp(self, torques) -> list[float]:
        """``torques`` within the file's limits (as :meth:`compute` clamps)."""
        return [hi if x > hi else lo if x < lo else float(x) for x, hi, lo in zip(torques, self._upper, self._lower,
                                                                                 strict=True)]

    def observe(self, q) -> None:
        """A state sample that gets no command: the travel blend's direction state follows it."""
        if self._travel:
            self._direction.update(q)

    def compute(self, q, qdot, scale: float = 1.0) -> list[float]:
        """Torques (N m, dVRK joint space) for positions q and velocities qdot (7 each).

        ``scale`` (0..1, ramp-in and fade-out) multiplies the clamped torques: 0 gives exactly 0 N m.
        ``self.saturated`` says which joints the clamp changed. Returns ``self.total`` (the same list
        every call).
        """
        if self._travel:
            self._direction.update(q)
        gravity_torques(q, self._pos, self.gravity, self._g)
        if not self._shared_gravity:
            gravity_torques(q, self._neg, self._gravity_neg, self._g)
        for i in range(JOINTS):
            if i < POLY_JOINTS:
                x = q[i]
                pos = 0.0
                for c in self._poly_pos[i]:
                    pos = pos * x + c
                neg = 0.0
                for c in self._poly_neg[i]:
                    neg = neg * x + c
            else:
                pos = neg = 0.0
            v = qdot[i]
            if self._travel:
                a = 0.5 + 0.5 * self._direction.state[i]
            elif self._sine:
                amplitude = self._amplitude[i]
                a = (1.0 if v >= amplitude else 0.0 if v <= -amplitude
                     else 0.5 + 0.5 * math.sin(v * self._half_pi_over_amplitude[i]))
            elif abs(v) <= self._db[i]:
                a = 0.5
            else:
                frac = (abs(v) - self._db[i]) / self._span[i]
                a = 0.5 + math.copysign(0.5 * self._ratio[i] * (frac if frac < 1.0 else 1.0), v)
            g_pos = self.gravity[i]
            g_neg = g_pos if self._shared_gravity else self._gravity_neg[i]
            grav = a * g_pos + (1.0 - a) * g_neg
            dist = a * pos + (1.0 - a) * neg
            tau = grav + dist
            hi, lo = self._upper[i], self._lower[i]
            clipped = hi if tau > hi else lo if tau < lo else tau
            self.alpha[i] = a
            self.disturbance[i] = dist
            self.gravity[i] = grav
            self.saturated[i] = clipped != tau
            self.total[i] = scale * clipped
        return self.total
