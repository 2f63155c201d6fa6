"""One simulated dVRK arm, ROS-free: the commands the dVRK accepts, the state it publishes.

Commands (dVRK joint space, all checked before they act; a rejected command
raises SafetyError and leaves the arm as it was):

- ``servo_jp(q, qd)``: PID position setpoint, meant to be streamed;
- ``move_jp(q)``: the arm plans its own quintic move (``busy`` until done);
- ``servo_jf(tau)``: effort mode, the efforts are applied as they are;
- ``use_gravity_compensation(on)``: the dVRK's own compensation (perfect
  gravity, springs and cable of the true model) added to every command;
- ``hold()``: position mode at the current pose.

Physics: :class:`~dvrk_ident_ros.sim.physics.ArmPhysics` (semi-implicit Euler
at ``physics_rate``) plus a Dahl cable hysteresis; measured positions are
quantised like the encoders, efforts carry the recordings' noise.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.errors import SafetyError
from dvrk_ident_ros.model.compiled import load_compiled
from dvrk_ident_ros.safety import CommandChecker
from dvrk_ident_ros.sim.config import SimConfig
from dvrk_ident_ros.sim.hysteresis import DahlHysteresis
from dvrk_ident_ros.sim.noise import quantize
from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState
from dvrk_ident_ros.sim.servo import PidServo

POSITION, EFFORT = "position", "effort"
MASS_MATRIX_TOLERANCE = 1e-3  # rad (m): M(q) is recomputed when q moved further (real-time speed)
STATIC_TOLERANCE = 1e-4  # rad (m): the same for the built-in compensation's torques
SERVO_HOLD = 0.05  # s: a streamed setpoint is carried forward with its velocity at most this long
MAX_SERVO_JUMP = 0.25  # rad (m): a streamed setpoint this far from the current one is not a stream


def _quintic(s: float) -> tuple[float, float]:
    """Normalised quintic 10s^3 - 15s^4 + 6s^5 and its derivative, s in [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s * s), 30 * s * s * (1 - s) ** 2


class SimulatedArm:
    def __init__(self, config: SimConfig, variant: str | None = None, *, noise: bool = True, seed: int = 0,
                 physics_rate: float = 1500.0, initial_position: np.ndarray | None = None):
        self.config = config
        self.model = model = config.model
        self.dof = model.dof
        self.names = list(model.description.dvrk_joint_names)
        self.dt = 1.0 / physics_rate
        self.physics = ArmPhysics(model, config.delta, coulomb_velocity=config.coulomb_velocity)
        self.physics.mass_tolerance = MASS_MATRIX_TOLERANCE
        self._static_at: np.ndarray | None = None
        self._static = np.zeros(self.dof)
        self.servo = PidServo(config.gains, self.dof)
        self.checker = CommandChecker(model, variant, torque_limit=config.gains.torque_limit, section="hardware")
        fitted = CommandChecker(model, variant)  # the cable polynomial was identified inside these limits
        self.physics.known_torque_domain = lambda q_m: q_m if fitted.first_position_violation(
            model.dvrk_from_motor(q_m)[None]) is None else model.motor_from_dvrk(
            fitted.clamp_position(model.dvrk_from_motor(q_m)))
        self.hysteresis = DahlHysteresis(config.hysteresis, config.hysteresis_width)
        self._compiled = load_compiled(model)
        self._noise = config.noise if noise else None
        self._rng = np.random.default_rng(seed)
        start = config.home if initial_position is None else np.asarray(initial_position, dtype=float)
        q0 = self.checker.position(self.checker.clamp_position(start), "initial position")
        self.state = ArmState(model.motor_from_dvrk(q0), np.zeros(self.dof))
        self.q = q0.copy()  # dVRK joint space, true
        self.qd = np.zeros(self.dof)
        self.q_ref = q0.copy()
        self.qd_ref = np.zeros(self.dof)
        self.effort = np.zeros(self.dof)  # what the arm applies (dVRK joint space)
        self.effort_command = np.zeros(self.dof)
        self.mode = POSITION
        self.builtin_gravity_compensation = config.builtin_gravity_compensation
        self._move: tuple[float, np.ndarray, np.ndarray, float] | None = None
        self.time = 0.0
        self._servo_time = 0.0

    # -- commands ------------------------------------------------------------------
    def servo_jp(self, position, velocity=None) -> None:
        q = self.checker.position(position, "servo_jp position")
        qd = np.zeros(self.dof) if velocity is None or len(velocity) == 0 else \
            self.checker.speed(velocity, "servo_jp velocity", scale=1.5)
        jump = np.abs(q - (self.q_ref if self.mode == POSITION else self.q))
        if np.max(jump) > MAX_SERVO_JUMP:
            i = int(np.argmax(jump))
            raise SafetyError(f"servo_jp position: {self.names[i]} jumps {jump[i]:.3f} from the current setpoint "
                              f"(at most {MAX_SERVO_JUMP}; use move_jp)")
        if self.mode != POSITION:
            self.servo.reset()
        self._move = None
        self.mode = POSITION
        self.q_ref, self.qd_ref = q, qd
        self._servo_time = self.time

    def move_jp(self, goal) -> float:
        """Start a move to ``goal``; returns its duration (s)."""
        q = self.checker.position(goal, "move_jp goal")
        start = self.q_ref if self.mode == POSITION else self.q.copy()
        delta = np.abs(q - start)
        duration = max(0.1, float(np.max(15.0 / 8.0 * delta / self.config.move_speed)))
        if self.mode != POSITION:
            self.servo.reset()
        self.mode = POSITION
        self._move = (self.time, start.copy(), q, duration)
        return duration

    def servo_jf(self, effort) -> None:
        self.effort_command = self.checker.torque(effort, "servo_jf effort")
        self._move = None
        self.mode = EFFORT

    def hold(self) -> None:
        self._move = None
        self.servo.reset()
        self.mode = POSITION
        self.q_ref, self.qd_ref = self.q.copy(), np.zeros(self.dof)
        self._servo_time = self.time

    def use_gravity_compensation(self, on: bool) -> None:
        self.builtin_gravity_compensation = bool(on)

    @property
    def busy(self) -> bool:
        return self._move is not None

    # -- physics -------------------------------------------------------------------
    def static_torque(self, q_motor: np.ndarray) -> np.ndarray:
        """Gravity, springs and cable of the true model (what a perfect compensation applies), dVRK space."""
        if self._static_at is not None and np.max(np.abs(q_motor - self._static_at)) <= STATIC_TOLERANCE:
            return self._static
        if self._compiled is not None:
            tau = self._compiled.gravity(q_motor) @ self.config.delta
        else:
            tau = self.model.gravity(q_motor[None], self.config.delta)[0]
        if self.model.description.known_torques:
            tau = tau + self.physics.known_torques(q_motor)
        self._static = self.model.dvrk_torque_from_motor(tau)
        self._static_at = q_motor.copy()
        return self._static

    def _reference(self) -> np.ndarray:
        """The position setpoint now: the move's profile, or the streamed setpoint carried forward
        with its velocity for up to ``SERVO_HOLD`` s (first-order hold between servo_jp samples)."""
        if self._move is None:
            ahead = min(self.time - self._servo_time, SERVO_HOLD)
            return self.q_ref + self.qd_ref * ahead if ahead > 0 else self.q_ref
        t0, q_from, q_to, duration = self._move
        s, ds = _quintic((self.time - t0) / duration)
        self.q_ref = q_from + s * (q_to - q_from)
        self.qd_ref = ds / duration * (q_to - q_from)
        if self.time - t0 >= duration:
            self._move = None
            self.qd_ref = np.zeros(self.dof)
        self._servo_time = self.time
        return self.q_ref

    def step(self) -> None:
        """One control and physics period."""
        limit = self.config.gains.torque_limit
        compensation = self.static_torque(self.state.q) if self.builtin_gravity_compensation else None
        if self.mode == POSITION:
            q_ref = self._reference()
            tau = self.servo.command(self.q, self.qd, q_ref, self.qd_ref, self.dt, compensation)
        else:
            tau = self.effort_command if compensation is None else self.effort_command + compensation
            tau = np.clip(tau, -limit, limit)
        self.effort = tau
        resisting = self.hysteresis.torque(self.q)
        self.state = self.physics.step_euler(self.state, self.model.motor_torque_from_dvrk(tau - resisting), self.dt)
        q_new = self.model.dvrk_from_motor(self.state.q)
        self.hysteresis.update(q_new - self.q)
        self.q, self.qd = q_new, self.model.dvrk_from_motor(self.state.qd)
        self.time += self.dt

    def advance(self, duration: float) -> int:
        """Run whole physics steps covering ``duration`` s; returns the number of steps."""
        steps = round(duration / self.dt)
        for _ in range(steps):
            self.step()
        return steps

    # -- what the arm publishes ----------------------------------------------------
    def measured(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position (quantised), velocity, effort (with noise), dVRK joint space."""
        if self._noise is None:
            return self.q.copy(), self.qd.copy(), self.effort.copy()
        q = quantize(self.q, self._noise.resolution)
        effort = self.effort + self._rng.normal(size=self.dof) * self._noise.effort_std
        return q, self.qd.copy(), effort

    def setpoint(self) -> tuple[np.ndarray, np.ndarray]:
        """Position setpoint and commanded effort."""
        return (self.q_ref.copy() if self.mode == POSITION else self.q.copy()), self.effort.copy()
