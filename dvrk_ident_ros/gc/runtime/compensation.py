"""One interface for every gravity compensation, and the factory the node calls (ROS-free).

Two compensations (the registry's :data:`~dvrk_ident_ros.estimators.COMPENSATIONS`)
implement :class:`Compensation`: the MLSE law of a dVRK gc JSON
(:class:`~dvrk_ident_ros.gc.runtime.law.CompensationLaw`) and the gravity, springs and
cable of an identified model (:class:`~dvrk_ident_ros.gc.runtime.model_law.ModelCompensation`).
:func:`load_compensation` reads a parameter file and returns the one it holds,
checked against the arm registry's compensations for the arm.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.estimators import CompensationKind
from dvrk_ident_ros.files import read_document
from dvrk_ident_ros.gc.model.params import load_gc
from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL
from dvrk_ident_ros.gc.runtime.law import CompensationLaw
from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation, load_model_compensation


@runtime_checkable
class Compensation(Protocol):
    """Torques (N m, dVRK joint space) from a joint state; after ``compute`` the parts are in the lists."""

    kind: CompensationKind  # its entry in the registry (name, what the diagnostics call it)
    total: list[float]  # the last torques, scaled (the list ``compute`` returns)
    gravity: list[float]
    disturbance: list[float]  # the direction-dependent polynomials (MLSE) or the known torques (the cable)
    alpha: list[float]  # the blend weight of the directions (0.5 where none)
    saturated: list[bool]  # joints the torque limits clamped

    def compute(self, q: Sequence[float], qdot: Sequence[float], scale: float = 1.0) -> list[float]:
        """Torques clamped to the limits, then times ``scale`` (0..1): 0 gives exactly 0 N m."""
        ...

    def scale_limits(self, factor: float) -> None:
        """Tighten the torque limits by ``factor`` (0, 1]."""
        ...

    def clamp(self, torques: Sequence[float]) -> list[float]:
        """``torques`` (N m, dVRK joint space) within the limits ``compute`` clamps to (not on the hot path)."""
        ...

    def observe(self, q: Sequence[float]) -> None:
        """A joint state that gets no command (before the hand-over): a compensation with a state (the
        travel blend's cable direction) follows the arm's motion."""
        ...


def load_compensation(path: str | Path, arm: str, torque_limit: Sequence[float] | None = None,
                      blend: str = "velocity", blend_travel: float = DEFAULT_TRAVEL) -> Compensation:
    """The compensation of a parameter file for ``arm`` (canonical, e.g. MTML): a dVRK gc JSON (MLSE, its own
    limits) or a dvrk_ident parameter file (an identified model), refused where the arm registry does not list
    that compensation for the arm.

    ``torque_limit`` (N m per dVRK joint) limits an identified model's compensation; None: the arm
    registry's ``compensation_torque_limit`` (:func:`~dvrk_ident_ros.gc.runtime.model_law.load_model_compensation`).
    ``blend``, ``blend_travel``: how a gc file's two directions are blended (:mod:`dvrk_ident_ros.gc.runtime.law`).
    """
    if not path:
        raise DataError("parameter_file is empty: give a gc-<ARM>-<SN>.json or an identified parameter file")
    raw = read_document(Path(path))
    spec = arm_spec(arm)  # which compensations apply (the arm registry)
    if isinstance(raw, dict) and "GC_controller" in raw:
        params = load_gc(path)
        if params.arm != arm:
            raise DataError(f"{path}: gc parameters of {params.arm}, this node drives {arm}")
        if CompensationLaw.kind.name not in spec.compensations:
            raise DataError(f"{path}: an MLSE gc file; the {spec.family} takes an identified model only")
        return CompensationLaw(params, blend, blend_travel)
    if ModelCompensation.kind.name not in spec.compensations:
        raise DataError(f"{path}: an identified model; the {spec.family} takes a gc file only")
    limit = None if torque_limit is None else np.asarray(torque_limit, dtype=float)
    return load_model_compensation(Path(path), spec, limit)
