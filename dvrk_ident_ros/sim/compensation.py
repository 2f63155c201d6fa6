"""The dVRK's own gravity compensation on a simulated arm, and the true model's static torques (ROS-free).

While on, the dVRK adds its compensation to every command: the dVRK 2.4 console's PSM/ECM chain
(``kinematic_gc``) at the measured joints, or else a perfect one, tau_s(q) = gravity + springs + cable of
the true model (the MTM's file). It is on at start on dVRK 2.4 when the arm's simulation says so
(config/sim/<family>.yaml: the MTM) or with a chain, off on 2.3. Each torque is recomputed only once the
pose moved more than ``STATIC_TOLERANCE`` from where it last was (real-time speed).
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.gc.model.console_gc import ConsoleChain, mounting_pitch_of
from dvrk_ident_ros.model.compiled import load_compiled
from dvrk_ident_ros.sim.config import SimConfig
from dvrk_ident_ros.sim.physics import ArmPhysics

STATIC_TOLERANCE = 1e-4  # rad (m): the same for the built-in compensation's torques
DVRK_VERSIONS = ("2.3", "2.4")  # 2.4: the MTM's built-in gravity compensation is on at start; 2.3: off


def builtin_compensation_at_start(config: SimConfig, dvrk_version: str) -> bool:
    """Whether the dVRK's own gravity compensation is on at start: the simulated arm's setting
    (its ``simulation`` file, config/sim/<family>.yaml: on for the MTM) on dVRK 2.4, off on 2.3."""
    if str(dvrk_version) not in DVRK_VERSIONS:
        raise DvrkIdentError(f"dvrk_version {dvrk_version!r}: expected one of {', '.join(DVRK_VERSIONS)}")
    return bool(config.builtin_gravity_compensation) and str(dvrk_version) == "2.4"


class SimulatedCompensation:
    """The dVRK's own compensation of one simulated arm: ``on``, its ``chain`` (None: the perfect one), and
    the torques it applies (dVRK joint space)."""

    def __init__(self, config: SimConfig, physics: ArmPhysics, dvrk_version: str,
                 chain: ConsoleChain | None) -> None:
        if chain is not None and str(dvrk_version) != "2.4":
            raise DvrkIdentError(f"kinematic_gc is an input of the dVRK 2.4 console, not of {dvrk_version}")
        self.config = config
        self.model = model = config.model
        self.physics = physics
        self.dvrk_version = str(dvrk_version)
        self._compiled = load_compiled(model)
        self._static_at: np.ndarray | None = None
        self._static = np.zeros(model.dof)
        self.chain = chain
        self._pitch = mounting_pitch_of(model.description.gravity) + 0.0 if chain is not None else 0.0
        self._chain_at: np.ndarray | None = None
        self._chain_torque = np.zeros(model.dof)
        self.on = builtin_compensation_at_start(config, dvrk_version) or chain is not None

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

    def set_chain(self, chain: ConsoleChain | None) -> None:
        """Another ``kinematic_gc`` chain (None: none), from the next torque on; a chain turns the compensation
        on, as the console's configuration does. DvrkIdentError (nothing changes) on dVRK 2.3."""
        if chain is not None and self.dvrk_version != "2.4":
            raise DvrkIdentError(f"kinematic_gc is an input of the dVRK 2.4 console, not of {self.dvrk_version}")
        self.chain = chain
        self._pitch = mounting_pitch_of(self.model.description.gravity) + 0.0 if chain is not None else 0.0
        self._chain_at = None
        self.on = chain is not None or builtin_compensation_at_start(self.config, self.dvrk_version)

    def torque(self, q_motor: np.ndarray) -> np.ndarray:
        """What the compensation applies while on, dVRK space: the chain's torques at the measured joints,
        or the perfect one's (:meth:`static_torque`)."""
        if self.chain is None:
            return self.static_torque(q_motor)
        q = self.model.dvrk_from_motor(q_motor)
        if self._chain_at is None or np.max(np.abs(q - self._chain_at)) > STATIC_TOLERANCE:
            torques = self.chain.torques(q[None], self._pitch)[0]
            self._chain_torque = np.zeros(self.model.dof)
            self._chain_torque[:torques.size] = torques
            self._chain_at = q.copy()
        return self._chain_torque

    def reading(self, q_motor: np.ndarray) -> np.ndarray:
        """The compensation's torques at ``q_motor`` (the current pose) while it is on, else zeros: what the
        arm publishes of it; the perfect one's as the last control step applied them (no second evaluation
        per step)."""
        if not self.on:
            return np.zeros(self.model.dof)
        if self.chain is not None:
            return self.torque(q_motor).copy()
        if self._static_at is None:
            return self.static_torque(q_motor).copy()
        return self._static.copy()
