"""Limits a trajectory must respect: linear joint combinations and Cartesian boxes.

Position and speed limits apply to the coordinates named in the arm
description's ``limits`` (any linear combination of motor coordinates, e.g.
the MTM's q3 = qd3 + q2 or the PSM jaw opening), with the variant's
mirroring; Cartesian boxes bound the origin of chosen frames
(``limits.cartesian: [{frame, lower, upper}]``, metres in the base frame).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DescriptionError
from dvrk_ident_ros.model.arm_model import ArmModel


@dataclass(frozen=True)
class CoordinateLimit:
    name: str
    coefficients: np.ndarray  # c = coefficients . q^m + offset
    offset: float
    lower: float
    upper: float
    max_speed: float


@dataclass(frozen=True)
class CartesianBox:
    frame: str
    index: int  # position of the frame in the model's forward kinematics
    lower: np.ndarray
    upper: np.ndarray


def coordinate_limits(model: ArmModel, variant: str | None = None, section: str = "coordinates"
                      ) -> list[CoordinateLimit]:
    ranges = model.description.limits_for(variant, section)
    out = []
    for name, (lo, hi, vmax) in ranges.items():
        coord = model.description.limited_coordinates[name]
        out.append(CoordinateLimit(name, coord.coefficients, coord.offset, lo, hi, vmax))
    return out


def cartesian_boxes(model: ArmModel, boxes: list[dict] | None = None) -> list[CartesianBox]:
    specs = boxes if boxes is not None else (model.description.limits.get("cartesian") or [])
    names = [f.name for f in model.description.frames]
    out = []
    for i, spec in enumerate(specs):
        frame = str(spec.get("frame"))
        if frame not in names:
            raise DescriptionError(f"limits.cartesian[{i}]: unknown frame {frame!r} (frames: {', '.join(names)})")
        lower, upper = np.asarray(spec["lower"], dtype=float), np.asarray(spec["upper"], dtype=float)
        if lower.shape != (3,) or upper.shape != (3,) or np.any(lower >= upper):
            raise DescriptionError(f"limits.cartesian[{i}]: lower and upper must be 3 numbers with lower < upper")
        out.append(CartesianBox(frame, names.index(frame), lower, upper))
    return out


@dataclass(frozen=True)
class Margin:
    """Worst distance to a limit over a trajectory (negative: violated)."""

    name: str
    kind: str  # "position", "speed", "cartesian"
    margin: float
    at_time: float


def check_margins(model: ArmModel, q: np.ndarray, qd: np.ndarray, t: np.ndarray,
                  limits: list[CoordinateLimit], boxes: list[CartesianBox]) -> list[Margin]:
    out = []
    for lim in limits:
        c = q @ lim.coefficients + lim.offset
        v = qd @ lim.coefficients
        pos = np.minimum(c - lim.lower, lim.upper - c)
        spd = lim.max_speed - np.abs(v)
        out.append(Margin(lim.name, "position", float(pos.min()), float(t[np.argmin(pos)])))
        if np.isfinite(lim.max_speed):
            out.append(Margin(lim.name, "speed", float(spd.min()), float(t[np.argmin(spd)])))
    if boxes:
        fk = model.forward_kinematics(q)
        for box in boxes:
            p = fk[:, box.index, :3, 3]
            m = np.minimum(p - box.lower, box.upper - p).min(axis=1)
            out.append(Margin(f"frame {box.frame}", "cartesian", float(m.min()), float(t[np.argmin(m)])))
    return out
