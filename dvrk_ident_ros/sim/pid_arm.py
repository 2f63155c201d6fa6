"""A simulated arm under its PID, below the dVRK's arm software (ROS-free).

The PID (:class:`~dvrk_ident_ros.sim.servo.PidServo`) follows a position setpoint (``q_ref``, ``qd_ref``) in
position mode; in effort mode the commanded efforts are applied as they are, clipped to the torque limits,
the ``locked`` joints still held at their setpoint (an MTM's orientation lock). While on, the dVRK's own
gravity compensation (:mod:`dvrk_ident_ros.sim.compensation`) is added to either. The arm moves under the
effort by :class:`~dvrk_ident_ros.sim.physics.ArmPhysics` (semi-implicit Euler at ``physics_rate``, set up for
real-time speed: :mod:`dvrk_ident_ros.sim.real_time`) with a Dahl cable hysteresis resisting; its sensors
read the motion as :mod:`dvrk_ident_ros.sim.sensors` says.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.gc.model.console_gc import ConsoleChain
from dvrk_ident_ros.safety import CommandChecker
from dvrk_ident_ros.sim.compensation import SimulatedCompensation
from dvrk_ident_ros.sim.config import SimConfig
from dvrk_ident_ros.sim.hysteresis import DahlHysteresis
from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState
from dvrk_ident_ros.sim.real_time import tune_for_real_time
from dvrk_ident_ros.sim.sensors import Sensors
from dvrk_ident_ros.sim.servo import PidServo

POSITION, EFFORT = "position", "effort"


class PidArm:
    """The true motion (``q``, ``qd`` in dVRK joint space, ``state`` in motor space; ``time``, s), the PID's
    mode and setpoints, the efforts applied (``effort``) and the dVRK's own compensation of one arm."""

    def __init__(self, config: SimConfig, variant: str | None, *, physics_rate: float, noise: bool, seed: int,
                 initial_position: np.ndarray | None, dvrk_version: str, kinematic_gc: ConsoleChain | None):
        self.config = config
        self.model = model = config.model
        self.dof = model.dof
        self.names = list(model.description.dvrk_joint_names)
        self.dt = 1.0 / physics_rate
        self.physics = ArmPhysics(model, config.delta, coulomb_velocity=config.coulomb_velocity)
        self.servo = PidServo(config.gains, self.dof)
        self.checker = CommandChecker(model, variant, torque_limit=config.gains.torque_limit, section="hardware")
        tune_for_real_time(self.physics, config, variant, self.checker)
        self.hysteresis = DahlHysteresis(config.hysteresis, config.hysteresis_width)
        self.sensors = Sensors(model, config.noise if noise else None, seed)
        start = config.home if initial_position is None else np.asarray(initial_position, dtype=float)
        q0 = self.checker.position(self.checker.clamp_position(start), "initial position")
        self.home = self.checker.position(self.checker.clamp_position(config.home), "home pose")
        self.state = ArmState(model.motor_from_dvrk(q0), np.zeros(self.dof))
        self.q = q0.copy()  # dVRK joint space, true
        self.qd = np.zeros(self.dof)
        self.q_ref = q0.copy()
        self.qd_ref = np.zeros(self.dof)
        self.effort = np.zeros(self.dof)  # what the arm applies (dVRK joint space)
        self.effort_command = np.zeros(self.dof)
        self.mode = POSITION
        self.locked = np.zeros(self.dof, dtype=bool)  # in effort mode, joints the PID holds (an MTM's locked wrist)
        # the dVRK's own compensation; kinematic_gc: the dVRK 2.4 console's PSM/ECM chain, not the truth's
        self.compensation = SimulatedCompensation(config, self.physics, dvrk_version, kinematic_gc)
        self.dvrk_version = str(dvrk_version)
        self.time = 0.0

    def control(self, reference: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
        """The effort of this period (dVRK joint space), the compensation added while on: the PID's toward
        ``reference`` (position, velocity: the position mode's setpoint now), or without one (effort mode) the
        commanded efforts clipped to the torque limits, the locked joints' the PID's toward their setpoint."""
        limit = self.config.gains.torque_limit
        compensation = self.compensation.torque(self.state.q) if self.compensation.on else None
        if reference is not None:
            q_ref, qd_ref = reference
            return self.servo.command(self.q, self.qd, q_ref, qd_ref, self.dt, compensation)
        tau = self.effort_command if compensation is None else self.effort_command + compensation
        tau = np.clip(tau, -limit, limit)
        if self.locked.any():
            held = self.servo.command(self.q, self.qd, self.q_ref, self.qd_ref, self.dt, compensation)
            tau = np.where(self.locked, held, tau)
        return tau

    def drive(self, tau: np.ndarray) -> None:
        """One physics period under the effort ``tau`` (dVRK joint space), the cable hysteresis resisting."""
        self.effort = tau
        resisting = self.hysteresis.torque(self.q)
        self.state = self.physics.step_euler(self.state, self.model.motor_torque_from_dvrk(tau - resisting), self.dt)
        q_new = self.model.dvrk_from_motor(self.state.q)
        self.hysteresis.update(q_new - self.q)
        self.q, self.qd = q_new, self.model.dvrk_from_motor(self.state.qd)
        self.time += self.dt

    # -- locked joints -------------------------------------------------------------
    def lock_joints(self, joints) -> None:
        """In effort mode, ``joints`` (a bool mask) are held by the PID at their setpoint (:meth:`set_locked_goal`),
        the others take their efforts: the MTM's orientation lock (its wrist in position mode). Released by any
        position command, a joint ``servo_jf``, ``free`` or :meth:`unlock_joints`."""
        mask = np.asarray(joints, dtype=bool)
        if self.mode == EFFORT:
            self._hold_locked(mask & ~self.locked)
        self.locked = mask.copy()

    def unlock_joints(self) -> None:
        self.locked[:] = False

    def _hold_locked(self, joints: np.ndarray) -> None:
        self.servo.integral[joints] = 0.0
        self.q_ref = np.where(joints, self.q, self.q_ref)
        self.qd_ref = np.where(joints, 0.0, self.qd_ref)

    def set_locked_goal(self, goal) -> None:
        """The locked joints' setpoint (dVRK joint space, all joints; the others' values are not read), clipped to the
        limits."""
        q = self.checker.finite(goal, "locked joints' goal")
        q = self.checker.clamp_position(np.where(self.locked, q, self.q_ref))
        self.q_ref = np.where(self.locked, q, self.q_ref)

    # -- the dVRK's own compensation -------------------------------------------------
    @property
    def builtin_gravity_compensation(self) -> bool:
        """The dVRK's own gravity compensation is on (:meth:`use_gravity_compensation`)."""
        return self.compensation.on

    @builtin_gravity_compensation.setter
    def builtin_gravity_compensation(self, on: bool) -> None:
        self.compensation.on = on

    @property
    def console_gc(self) -> ConsoleChain | None:
        """The dVRK 2.4 console's chain the compensation applies (None: the perfect one)."""
        return self.compensation.chain

    def use_gravity_compensation(self, on: bool) -> None:
        """Accepted in any state."""
        self.compensation.on = bool(on)

    def static_torque(self, q_motor: np.ndarray) -> np.ndarray:
        """Gravity, springs and cable of the true model (what a perfect compensation applies), dVRK space."""
        return self.compensation.static_torque(q_motor)

    def set_console_gc(self, chain: ConsoleChain | None) -> None:
        """Apply another ``kinematic_gc`` chain (None: none) from the next control step. The console reads its
        file at start only; the simulated arm takes it live, for a calibration's hold test with the new file.
        A chain turns the built-in compensation on, as the console's configuration does."""
        self.compensation.set_chain(chain)

    def compensation_torque(self, q_motor: np.ndarray) -> np.ndarray:
        """What the dVRK's own compensation applies while on, dVRK space: the console's chain (kinematic_gc)
        at the measured joints, or a perfect one (the truth's gravity, springs and cable: the MTM's file)."""
        return self.compensation.torque(q_motor)

    def builtin_compensation_effort(self) -> np.ndarray:
        """The built-in gravity compensation's torques at the current pose while it is on, else zeros
        (``/<ARM>/gravity_compensation/setpoint_js``)."""
        return self.compensation.reading(self.state.q)

    # -- what the arm reads ----------------------------------------------------------
    def measured(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position (encoder-quantised), velocity, effort (noise, current-quantised in motor
        coordinates), dVRK joint space, whatever the operating state (what is published: ``SimulatedArm.sample``)."""
        return self.sensors.read(self.q, self.qd, self.effort)

    def setpoint(self) -> tuple[np.ndarray, np.ndarray]:
        """Position setpoint and commanded effort."""
        if self.mode == POSITION:
            return self.q_ref.copy(), self.effort.copy()
        return np.where(self.locked, self.q_ref, self.q), self.effort.copy()
