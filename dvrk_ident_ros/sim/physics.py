"""Forward dynamics in motor coordinates: M(q) qdd = tau - h(q, qd).

h collects Coriolis/centrifugal, gravity, springs and the known (cable)
torques from the model core, plus friction evaluated here with a smooth
Coulomb term (tanh(v / v_s) instead of sign(v), for a well-posed integration);
the friction offset Fo (the identification's constant term) acts only while
the joint slides, Fo |tanh(v / v_s)| with |Fo| <= Fc (so friction never
drives the motion), and does not push an arm at rest. v_s is one number for
every friction element, or one per element ({name: v_s, "default": v_s}, the
elements named as their Fc parameters: "1", "M6", ...): a small v_s (1e-4)
makes the term a regularised static friction that holds a joint at rest
against up to Fc + Fo sign (the push's direction) (a real joint's stiction;
the default 0.02 has none).
Integration is fixed-step RK4 (energy-conserving to high order when friction
and control are off).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DescriptionError
from dvrk_ident_ros.model.arm_model import ArmModel

#: rad/s (m/s): the smoothing of sign(v) unless the arm's simulation file says otherwise
DEFAULT_COULOMB_VELOCITY = 0.02
CoulombVelocity = float | Mapping[str, float]


def coulomb_velocities(names: list[str], spec: CoulombVelocity) -> np.ndarray:
    """v_s per friction element ``names`` from one number or a mapping {element: v_s} with an optional
    "default" (else :data:`DEFAULT_COULOMB_VELOCITY`); every value > 0, every key an element."""
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(names) - {"default"})
        if unknown:
            raise DescriptionError(f"coulomb_velocity: {unknown} are not friction elements of the arm "
                                   f"({', '.join(names)}, or default)")
        default = float(spec.get("default", DEFAULT_COULOMB_VELOCITY))
        values = np.array([float(spec.get(name, default)) for name in names])
    else:
        values = np.full(len(names), float(spec))
    if not np.all(values > 0):
        raise DescriptionError(f"coulomb_velocity: {values.tolist()}: every value must be > 0")
    return values


@dataclass
class ArmState:
    q: np.ndarray  # motor coordinates
    qd: np.ndarray
    t: float = 0.0


class ArmPhysics:
    def __init__(self, model: ArmModel, delta: np.ndarray, *,
                 coulomb_velocity: CoulombVelocity = DEFAULT_COULOMB_VELOCITY, friction: bool = True,
                 compiled: bool = True):
        self.model = model
        self._c = None
        if compiled:
            from dvrk_ident_ros.model.compiled import load_compiled

            self._c = load_compiled(model)  # None without a C compiler: the NumPy module is used
        self.delta = np.asarray(delta, dtype=float)
        self.n = model.dof
        layout = model.layout
        self._friction = friction
        self._rigid = self.delta.copy()
        for kind in ("Fv", "Fc", "Fo"):
            self._rigid[layout.of_kind(kind)] = 0.0  # friction handled here, smoothly
        d = model.description
        coords = [(f.name, f.joint_coordinate) for f in d.frames if f.friction]
        coords += [(dr.name, dr.coordinate) for dr in d.drives if dr.friction]
        # friction elements, vectorised: velocity v = C qd, torque C^T f(v)
        self._C = np.array([coord.coefficients for _, coord in coords], dtype=float).reshape(-1, self.n)
        self._fv = np.array([self.delta[layout.index(f"Fv{o}")] for o, _ in coords])
        self._fc = np.array([self.delta[layout.index(f"Fc{o}")] for o, _ in coords])
        self._fo = np.clip([self.delta[layout.index(f"Fo{o}")] for o, _ in coords], -self._fc, self._fc)
        self.friction_elements = [name for name, _ in coords]
        #: v_s per friction element (module docstring)
        self.coulomb_velocity = coulomb_velocities(self.friction_elements, coulomb_velocity)
        self._known = bool(d.known_torques)
        self._no_known = np.zeros(self.n)
        #: the compiled step_euler (None without a C compiler: the NumPy one below)
        self._euler = None if self._c is None else self._c.euler_step(
            self._rigid, self._C if friction else np.zeros((0, self.n)), self._fv, self._fc, self._fo,
            self.coulomb_velocity if friction else np.zeros(0))
        self._unit = np.eye(self.n)
        # motor inertia is not in the rigid-body inertia program: I_m c c^T per element
        self._motor_inertia = self.model._motor_inertia(np.eye(self.n), self.delta)
        #: optional q -> q inside the known torques' fitted range
        self.known_torque_domain: Callable[[np.ndarray], np.ndarray] | None = None
        self.mass_tolerance = 0.0  # reuse M(q) while q stays this close (0: always recompute); see mass_weights
        #: per motor coordinate, how fast M changes with it (:meth:`mass_sensitivity`); None: every coordinate
        #: counts fully (the tolerance is then in rad, m)
        self.mass_weights: np.ndarray | None = None
        self._M_at: np.ndarray | None = None
        self._M = np.zeros((self.n, self.n))
        self._known_at: np.ndarray | None = None
        self._known_value = np.zeros(self.n)

    def friction(self, qd: np.ndarray) -> np.ndarray:
        """Viscous + smooth Coulomb + offset (|Fo| <= Fc, only while sliding), motor space."""
        if not self._friction or not len(self._C):
            return np.zeros(self.n)
        v = self._C @ qd
        slip = np.tanh(v / self.coulomb_velocity)
        return self._C.T @ (self._fv * v + self._fc * slip + self._fo * np.abs(slip))

    def known_torques(self, q: np.ndarray) -> np.ndarray:
        """The description's known (cable) torques, evaluated at ``known_torque_domain(q)``: the
        polynomials were fitted on a range and are held at its edge beyond it."""
        if self._known_at is not None and np.array_equal(q, self._known_at):
            return self._known_value
        at = q.copy()
        if self.known_torque_domain is not None:
            q = self.known_torque_domain(q)
        if self._c is not None:
            self._known_value = self._c.known(q).copy()
        else:
            self._known_value = self.model.known_torques(q[None])[0]
        self._known_at = at
        return self._known_value

    def bias(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """h(q, qd): every torque but the inertial one, without the motors' commands."""
        zeros = np.zeros(self.n)
        H = self._c.regressor(q, qd, zeros) if self._c is not None else self.model.regressor(q, qd, zeros)[0]
        h = H @ self._rigid
        if self._known:
            h = h + self.known_torques(q)
        return h + self.friction(qd)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        if self.mass_tolerance > 0:
            moved = np.abs(q - self._M_at) if self._M_at is not None else None
            if moved is not None and self.mass_weights is not None:
                change = float(self.mass_weights @ moved)
            else:
                change = np.inf if moved is None else float(np.max(moved))
            if change > self.mass_tolerance:
                self._M = self._mass_matrix(q)
                self._M_at = q.copy()
            return self._M
        return self._mass_matrix(q)

    def mass_sensitivity(self, poses: np.ndarray, step: float = 1e-4) -> np.ndarray:
        """Per motor coordinate j, the largest |dM_ab/dq_j| / sqrt(M_aa M_bb) over ``poses`` (motor space):
        how much of the mass matrix changes per unit of q_j (0 where M does not depend on it, as on the
        first joint of a serial arm). ``mass_weights`` for :meth:`mass_matrix`'s reuse test."""
        weights = np.zeros(self.n)
        for q in np.atleast_2d(poses):
            M = self._mass_matrix(q)
            scale = np.sqrt(np.outer(np.diag(M), np.diag(M)))
            for j in range(self.n):
                dq = np.zeros(self.n)
                dq[j] = step
                dM = (self._mass_matrix(q + dq) - M) / step
                weights[j] = max(weights[j], float(np.max(np.abs(dM) / scale)))
        return weights

    def _mass_matrix(self, q: np.ndarray) -> np.ndarray:
        if self._c is None:
            return self.model.mass_matrix(q, self.delta)[0]
        M = np.empty((self.n, self.n))
        for j in range(self.n):
            M[:, j] = self._c.inertia(q, self._unit[j]) @ self.delta
        return M + self._motor_inertia

    def acceleration(self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self.mass_matrix(q), tau - self.bias(q, qd))

    def friction_damping(self, qd: np.ndarray) -> np.ndarray:
        """D = d(friction)/d(qd): the stiff part of the smooth Coulomb term (fc / v_s at rest)."""
        if not self._friction or not len(self._C):
            return np.zeros((self.n, self.n))
        v = self._C @ qd
        x = v / self.coulomb_velocity
        e = np.exp(-2.0 * np.abs(x))
        sech2 = 4.0 * e / (1.0 + e) ** 2  # 1 / cosh(x)^2 without overflow
        slope = np.maximum(self._fv + (self._fc + self._fo * np.sign(v)) / self.coulomb_velocity * sech2, 0)
        return (self._C.T * slope) @ self._C

    def step_euler(self, state: ArmState, tau: np.ndarray, dt: float) -> ArmState:
        """Semi-implicit Euler, one dynamics evaluation per step, for real-time simulation.

        Friction is linearly implicit, (M + dt D) dqd = dt (tau - h): the smooth
        Coulomb term is a stiff damper (fc / v_s) that explicit Euler would
        make unstable on the light wrist joints.
        """
        if self._euler is not None:  # the same computation in C (model/compiled.py; `make bench` times both)
            known = self.known_torques(state.q) if self._known else self._no_known
            if self._euler(state.q, state.qd, tau, self.mass_matrix(state.q), known, dt):
                return ArmState(self._euler.q_out.copy(), self._euler.qd_out.copy(), state.t + dt)
        M = self.mass_matrix(state.q) + dt * self.friction_damping(state.qd)
        qd = state.qd + dt * np.linalg.solve(M, tau - self.bias(state.q, state.qd))
        return ArmState(state.q + dt * qd, qd, state.t + dt)

    def step(self, state: ArmState, tau, dt: float) -> ArmState:
        """One RK4 step with the motor torques ``tau`` (held constant, or a function of (t, q, qd))."""
        def torque(t, q, qd):
            return tau(t, q, qd) if callable(tau) else tau

        def f(t, q, qd):
            return qd, self.acceleration(q, qd, torque(t, q, qd))

        q, qd, t = state.q, state.qd, state.t
        k1q, k1v = f(t, q, qd)
        k2q, k2v = f(t + dt / 2, q + dt / 2 * k1q, qd + dt / 2 * k1v)
        k3q, k3v = f(t + dt / 2, q + dt / 2 * k2q, qd + dt / 2 * k2v)
        k4q, k4v = f(t + dt, q + dt * k3q, qd + dt * k3v)
        return ArmState(q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q), qd + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v),
                        t + dt)

    def kinetic_energy(self, q: np.ndarray, qd: np.ndarray) -> float:
        return float(0.5 * qd @ self.model.mass_matrix(q, self.delta)[0] @ qd)
