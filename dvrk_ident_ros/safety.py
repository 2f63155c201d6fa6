"""Checks every command must pass before it reaches an arm (the player, the simulator).

Limits are those of the arm description (``limits.coordinates``: linear
combinations of motor coordinates, with the MTMR mirroring), applied to
dVRK joint-space commands converted to motor space, q^m = A^-1 q^d.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dvrk_ident_ros.errors import LimitError, SafetyError
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.limits import coordinate_limits


class CommandChecker:
    """Position, speed and torque checks in dVRK joint space for one arm (variant MTML, MTMR, ...)."""

    def __init__(self, model: ArmModel, variant: str | None = None, *, margin: float = 0.0,
                 torque_limit: ArrayLike | None = None, section: str = "coordinates"):
        """``section``: "coordinates" (the excitation limits) or "hardware" (what the arm reaches)."""
        self.model = model
        self.dof = model.dof
        self.names = list(model.description.dvrk_joint_names)
        limits = coordinate_limits(model, variant if variant in model.description.variants else None, section)
        self._names = [lim.name for lim in limits]
        self._rows = np.array([lim.coefficients for lim in limits]) @ model.A_inv \
            if limits else np.zeros((0, self.dof))
        self._offset = np.array([lim.offset for lim in limits])
        self.lower = np.array([lim.lower for lim in limits]) + margin
        self.upper = np.array([lim.upper for lim in limits]) - margin
        self.max_speed = np.array([lim.max_speed for lim in limits])
        self.torque_limit = None if torque_limit is None else np.asarray(torque_limit, dtype=float)

    def finite(self, values: ArrayLike, what: str, count: int | None = None) -> np.ndarray:
        arr = np.asarray(values, dtype=float)
        count = self.dof if count is None else count
        if arr.shape != (count,):
            raise SafetyError(f"{what}: {arr.size} values, expected {count}")
        bad = [i for i, v in enumerate(arr) if not math.isfinite(v)]
        if bad:
            raise SafetyError(f"{what}: {self.names[bad[0]] if count == self.dof else bad[0]} is {arr[bad[0]]}")
        return arr

    def coordinates(self, q_dvrk: np.ndarray) -> np.ndarray:
        """Values of the limited coordinates (rad, m) for a dVRK joint position."""
        return self._rows @ q_dvrk + self._offset

    def position(self, q_dvrk: ArrayLike, what: str = "position") -> np.ndarray:
        """The position as an array, or LimitError naming the first coordinate outside its range."""
        q = self.finite(q_dvrk, what)
        c = self.coordinates(q)
        outside = np.flatnonzero((c < self.lower) | (c > self.upper))
        if outside.size:
            i = outside[0]
            raise LimitError(f"{what}: {self._names[i]} = {c[i]:.4f} outside [{self.lower[i]:.4f}, "
                             f"{self.upper[i]:.4f}]", what=what, joint=self._names[i], value=c[i],
                             lower=self.lower[i], upper=self.upper[i])
        return q

    def speed(self, qd_dvrk: ArrayLike, what: str = "velocity", scale: float = 1.0) -> np.ndarray:
        qd = self.finite(qd_dvrk, what)
        signed = self._rows @ qd
        v = np.abs(signed)
        over = np.flatnonzero(v > scale * self.max_speed)
        if over.size:
            i = over[0]
            limit = scale * self.max_speed[i]
            raise LimitError(f"{what}: {self._names[i]} speed {v[i]:.3f} above {limit:.3f}", what=what,
                             joint=self._names[i], value=signed[i], lower=-limit, upper=limit)
        return qd

    def torque(self, tau_dvrk: ArrayLike, what: str = "effort") -> np.ndarray:
        tau = self.finite(tau_dvrk, what)
        if self.torque_limit is not None:
            over = np.flatnonzero(np.abs(tau) > self.torque_limit)
            if over.size:
                i = over[0]
                limit = self.torque_limit[i]
                raise LimitError(f"{what}: {self.names[i]} {tau[i]:.3f} beyond the limit {limit:.3f}", what=what,
                                 joint=self.names[i], value=tau[i], lower=-limit, upper=limit)
        return tau

    def first_position_violation(self, q_dvrk: np.ndarray) -> int | None:
        """Index of the first row of an N x dof batch outside the limits (None: all inside)."""
        c = np.asarray(q_dvrk) @ self._rows.T + self._offset
        rows = np.flatnonzero(np.any((c < self.lower) | (c > self.upper), axis=1))
        return int(rows[0]) if rows.size else None

    def first_speed_violation(self, qd_dvrk: np.ndarray, scale: float = 1.0) -> int | None:
        v = np.abs(np.asarray(qd_dvrk) @ self._rows.T)
        rows = np.flatnonzero(np.any(v > scale * self.max_speed, axis=1))
        return int(rows[0]) if rows.size else None

    def clamp_position(self, q_dvrk: np.ndarray) -> np.ndarray:
        """The nearest position inside the limits along each coordinate (for a start pose)."""
        q = np.asarray(q_dvrk, dtype=float).copy()
        inner_lo, inner_hi = self.lower + 1e-6, self.upper - 1e-6
        for _ in range(20):
            c = self.coordinates(q)
            excess = np.clip(c, inner_lo, inner_hi) - c
            if not np.any(excess):
                break
            q += np.linalg.lstsq(self._rows, excess, rcond=None)[0]
        return q
