"""Arm descriptions (config/*.yaml): loading and validation.

A description names the motor coordinates q^m, the model joint coordinates as
linear functions of them (Wang 2019 eqs. 1-5), the frames of the opened tree in
modified DH with their antecedent frame, and which parameters each frame
carries (eqs. 7-8). Every error names the file and the field at fault.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sympy
from sympy.parsing.sympy_parser import parse_expr, standard_transformations

from dvrk_ident_ros.arm.registry import ARM_PATH_VARIABLE, arm_families, description_path
from dvrk_ident_ros.errors import DescriptionError
from dvrk_ident_ros.files import read_document

_FUNCTIONS = {name: getattr(sympy, name) for name in ("sin", "cos", "tan", "sqrt", "atan2", "exp", "Abs")}
_FUNCTIONS["pi"] = sympy.pi
#: Top-level sections about driving the arm, not about its model: left out of ``content_hash``, so that
#: changing them keeps identification results, simulator parameters and the model cache valid. ``dvrk``:
#: the arm registry's section (dvrk_ident_ros/arm/registry.py).
OPERATIONAL_SECTIONS = ("tracking_error", "dvrk")


@dataclass(frozen=True)
class LinearCoordinate:
    """A coordinate c = coefficients . q^m + offset (constant Jacobian dc/dq^m)."""

    name: str
    coefficients: np.ndarray
    offset: float
    expression: sympy.Expr  # in the motor symbols


@dataclass(frozen=True)
class Frame:
    """One frame of the opened tree (modified DH relative to ``parent``)."""

    name: str
    parent: str
    a: float
    alpha: sympy.Expr
    d: sympy.Expr  # in the motor symbols
    theta: sympy.Expr  # in the motor symbols
    joint_type: str  # "revolute", "prismatic" or "fixed"
    joint: LinearCoordinate | None  # the varying part of theta (revolute) or d (prismatic)
    inertia: bool
    friction: bool
    motor_inertia: bool
    spring_deflection: sympy.Expr | None  # in the motor symbols

    @property
    def joint_coordinate(self) -> LinearCoordinate:
        """``joint`` of a moving frame (the only frames that carry friction, motor inertia or a spring)."""
        if self.joint is None:
            raise DescriptionError(f"frame {self.name} is fixed: it has no joint coordinate")
        return self.joint


@dataclass(frozen=True)
class Drive:
    """A transmission element that is not a link: motor inertia and/or friction on a coordinate."""

    name: str
    coordinate: LinearCoordinate
    motor_inertia: bool
    friction: bool


@dataclass(frozen=True)
class KnownTorque:
    """A torque that is modelled, not identified: polynomial(c) acting on coordinate c."""

    name: str
    coordinate: LinearCoordinate
    polynomial: tuple[float, ...]  # highest power first


@dataclass(frozen=True)
class ArmDescription:
    arm: str
    path: Path
    motor_symbols: tuple[sympy.Symbol, ...]
    dvrk_joint_names: tuple[str, ...]
    gravity: np.ndarray
    dvrk_from_motor: np.ndarray  # A in q^d = A q^m
    coordinates: dict[str, LinearCoordinate]
    limited_coordinates: dict[str, LinearCoordinate]  # the coordinates named in limits, in their order
    frames: tuple[Frame, ...]
    drives: tuple[Drive, ...]
    known_torques: tuple[KnownTorque, ...]
    limits: dict[str, Any]
    bounds: dict[str, Any]
    variants: dict[str, Any]
    content_hash: str
    raw: dict[str, Any] = field(repr=False)
    #: The trajectory player's default largest |setpoint - measured| per dVRK joint (rad; m for a
    #: prismatic joint), in ``dvrk_joint_names`` order; () where the description gives none.
    tracking_error: tuple[float, ...] = ()

    @property
    def dof(self) -> int:
        return len(self.motor_symbols)

    def limits_for(self, variant: str | None = None, section: str = "coordinates"
                   ) -> dict[str, tuple[float, float, float]]:
        """Position range and maximum speed per limited coordinate, in SI units (rad, m).

        ``section="hardware"``: the ranges of ``limits.hardware`` (wider: what
        the real arm is known to reach) where given, the coordinates' elsewhere.

        A variant listing ``mirrored_coordinates`` (the right MTM's wrist) has
        those ranges negated and swapped: [lo, hi] -> [-hi, -lo].
        """
        spec = self.variants.get(variant.upper(), None) if variant else {}
        if spec is None:
            known = ", ".join(sorted(self.variants)) or "none"
            raise DescriptionError(f"{self.path}: variants: unknown variant {variant!r} (known: {known})")
        mirrored = set((spec or {}).get("mirrored_coordinates", []))
        scale = np.pi / 180.0 if self.limits.get("units", "rad") == "deg" else 1.0
        out = {}
        wider = (self.limits.get("hardware") or {}) if section == "hardware" else {}
        for name, entry in (self.limits.get("coordinates") or {}).items():
            lo, hi = (float(x) * scale for x in (wider.get(name) or entry)["position"])
            if name in mirrored:
                lo, hi = -hi, -lo
            out[name] = (lo, hi, float(entry.get("velocity", np.inf)) * scale)
        return out

    def frame(self, name: str) -> Frame:
        for f in self.frames:
            if f.name == name:
                return f
        raise DescriptionError(f"{self.path}: frames: no frame named {name!r}")


def config_directory() -> Path:
    """The installed config/ directory (share/dvrk_ident/config) or the source tree's."""
    from dvrk_ident_ros.environment import find_share_directory

    share = find_share_directory()
    if share is None or not (share / "config").is_dir():
        raise DescriptionError("cannot find the dvrk_ident config/ directory (is the package installed?)")
    return share / "config"


def resolve_arm(arm_or_path: str | Path) -> Path:
    """Map an arm, family or model name of the arm registry (mtm, mtml, psm2, psm_simplified, ...; see
    :mod:`dvrk_ident_ros.arm.registry`) or a YAML path to a description file."""
    text = str(arm_or_path)
    if text.endswith((".yaml", ".yml")) or "/" in text:
        return Path(text)
    path = description_path(text)
    if path is None:
        known = ", ".join(sorted({name for spec in arm_families() for name in (*spec.models, *spec.names)}))
        raise DescriptionError(f"unknown arm {arm_or_path!r} (known: {known}; or give a description .yaml; "
                               f"another arm's description goes in a directory of {ARM_PATH_VARIABLE})")
    return path


def load_description(arm_or_path: str | Path) -> ArmDescription:
    """Load and validate an arm description; raise DescriptionError naming file and field."""
    path = resolve_arm(arm_or_path)
    raw = read_document(path, DescriptionError)
    if not isinstance(raw, dict):
        raise DescriptionError(f"{path}: expected a mapping at the top level")
    return _Parser(path, raw).parse()


class _Parser:
    def __init__(self, path: Path, raw: dict[str, Any]):
        self.path = path
        self.raw = raw
        self.symbols: dict[str, Any] = dict(_FUNCTIONS)

    def fail(self, where: str, what: str) -> DescriptionError:
        return DescriptionError(f"{self.path}: {where}: {what}")

    def need(self, mapping: dict[str, Any], key: str, where: str) -> Any:
        if not isinstance(mapping, dict) or key not in mapping:
            return self._missing(where, key)
        return mapping[key]

    def _missing(self, where: str, key: str) -> Any:
        raise self.fail(f"{where}.{key}" if where else key, "missing field")

    def expr(self, value: Any, where: str) -> sympy.Expr:
        if isinstance(value, bool) or value is None:
            raise self.fail(where, f"expected a number or an expression, got {value!r}")
        if isinstance(value, (int, float)):
            return sympy.Float(value) if isinstance(value, float) else sympy.Integer(value)
        try:
            result = parse_expr(str(value), local_dict=dict(self.symbols), transformations=standard_transformations)
        except Exception as exc:
            raise self.fail(where, f"cannot parse {value!r}: {exc}") from exc
        unknown = {s.name for s in result.free_symbols} - set(self.symbols)
        if unknown:
            raise self.fail(where, f"unknown name(s) {sorted(unknown)} in {value!r}")
        return result

    def motor_expr(self, value: Any, where: str) -> sympy.Expr:
        """Parse and substitute coordinates, constants: an expression in the motor symbols only."""
        result = self.expr(value, where)
        return sympy.sympify(result.subs(self.substitutions))

    def linear(self, name: str, expression: sympy.Expr, where: str) -> LinearCoordinate:
        coefficients = []
        for m in self.motors:
            c = sympy.diff(expression, m)
            if c.free_symbols:
                raise self.fail(where, f"{name} is not linear in the motor coordinates: {expression}")
            coefficients.append(float(c))
        offset = expression.subs(dict.fromkeys(self.motors, 0))
        if offset.free_symbols:
            raise self.fail(where, f"{name} depends on something other than motor coordinates: {expression}")
        return LinearCoordinate(name, np.array(coefficients), float(offset), expression)

    def parse(self) -> ArmDescription:
        raw = self.raw
        arm = str(self.need(raw, "arm", ""))
        motor_names = self.need(raw, "motor_coordinates", "")
        if not isinstance(motor_names, list) or not motor_names:
            raise self.fail("motor_coordinates", "expected a non-empty list of names")
        self.motors = tuple(sympy.Symbol(str(n), real=True) for n in motor_names)
        for m in self.motors:
            self.symbols[m.name] = m
        n = len(self.motors)
        names = tuple(str(x) for x in self.need(raw, "dvrk_joint_names", ""))
        if len(names) != n:
            raise self.fail("dvrk_joint_names", f"{len(names)} names for {n} motor coordinates")
        gravity = np.asarray(self.need(raw, "gravity", ""), dtype=float)
        if gravity.shape != (3,):
            raise self.fail("gravity", "expected three numbers")
        A = self._matrix(self.need(raw, "dvrk_from_motor", ""), n, "dvrk_from_motor")

        self.substitutions: dict[sympy.Symbol, sympy.Expr] = {}
        for key, value in (raw.get("constants") or {}).items():
            value = self.expr(value, f"constants.{key}").subs(self.substitutions)
            if value.free_symbols:
                raise self.fail(f"constants.{key}", "a constant may only use numbers and earlier constants")
            sym = sympy.Symbol(str(key), real=True)
            self.symbols[str(key)] = sym
            self.substitutions[sym] = value

        coordinates: dict[str, LinearCoordinate] = {m.name: self.linear(m.name, m, "motor_coordinates")
                                                    for m in self.motors}
        for key, value in (self.need(raw, "coordinates", "") or {}).items():
            expression = self.motor_expr(value, f"coordinates.{key}")
            coordinates[str(key)] = self.linear(str(key), expression, f"coordinates.{key}")
            sym = sympy.Symbol(str(key), real=True)
            self.symbols[str(key)] = sym
            self.substitutions[sym] = expression

        frames = self._frames(self.need(raw, "frames", ""))
        drives = tuple(self._drive(i, d, coordinates) for i, d in enumerate(raw.get("drives") or []))
        known = tuple(self._known(i, k, coordinates) for i, k in enumerate(raw.get("known_torques") or []))
        limits = raw.get("limits") or {}
        limited: dict[str, LinearCoordinate] = {}
        for key, spec in (limits.get("coordinates") or {}).items():
            where = f"limits.coordinates.{key}"
            if not isinstance(spec, dict):
                raise self.fail(where, "expected a mapping with position (and velocity)")
            if "expression" in spec:
                limited[str(key)] = self.linear(str(key), self.motor_expr(spec["expression"], where), where)
            elif key in coordinates:
                limited[str(key)] = coordinates[key]
            else:
                raise self.fail(where, f"unknown coordinate {key!r}")
            pos = spec.get("position")
            if not (isinstance(pos, list) and len(pos) == 2 and float(pos[0]) < float(pos[1])):
                raise self.fail(f"{where}.position", f"expected [lower, upper] with lower < upper, got {pos!r}")
        for key, spec in (limits.get("hardware") or {}).items():
            where = f"limits.hardware.{key}"
            if key not in limited:
                raise self.fail(where, f"{key!r} is not one of limits.coordinates")
            pos = (spec or {}).get("position") if isinstance(spec, dict) else None
            if not (isinstance(pos, list) and len(pos) == 2 and float(pos[0]) < float(pos[1])):
                raise self.fail(f"{where}.position", f"expected [lower, upper] with lower < upper, got {pos!r}")
        tracking_error = self._tracking_error(raw.get("tracking_error"), names)
        hashed = {key: value for key, value in raw.items() if key not in OPERATIONAL_SECTIONS}
        digest = hashlib.sha256(json.dumps(hashed, sort_keys=True, default=str).encode()).hexdigest()
        return ArmDescription(
            arm=arm, path=self.path, motor_symbols=self.motors, dvrk_joint_names=names, gravity=gravity,
            dvrk_from_motor=A, coordinates=coordinates, limited_coordinates=limited, frames=frames, drives=drives,
            known_torques=known,
            limits=limits, bounds=raw.get("bounds") or {}, variants=raw.get("variants") or {},
            content_hash=digest, raw=raw, tracking_error=tracking_error,
        )

    def _tracking_error(self, spec: Any, names: tuple[str, ...]) -> tuple[float, ...]:
        """``tracking_error``: a mapping dVRK joint name -> limit > 0, for every joint (or absent)."""
        if spec is None:
            return ()
        if not isinstance(spec, dict) or set(map(str, spec)) != set(names):
            raise self.fail("tracking_error", f"expected a mapping with a limit for each of {list(names)}")
        values = []
        for name in names:
            value = spec[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < float("inf"):
                raise self.fail(f"tracking_error.{name}", f"expected a number > 0, got {value!r}")
            values.append(float(value))
        return tuple(values)

    def _matrix(self, value: Any, n: int, where: str) -> np.ndarray:
        try:
            matrix = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise self.fail(where, f"expected a {n}x{n} matrix of numbers: {exc}") from exc
        if matrix.shape != (n, n):
            raise self.fail(where, f"expected a {n}x{n} matrix, got shape {matrix.shape}")
        if abs(np.linalg.det(matrix)) < 1e-9 or np.linalg.cond(matrix) > 1e9:
            raise self.fail(where, "the coupling matrix is singular (not invertible)")
        return matrix

    def _frames(self, items: Any) -> tuple[Frame, ...]:
        if not isinstance(items, list) or not items:
            raise self.fail("frames", "expected a non-empty list")
        frames: list[Frame] = []
        known = {"base"}
        for i, item in enumerate(items):
            where = f"frames[{i}]"
            if not isinstance(item, dict):
                raise self.fail(where, "expected a mapping")
            name = str(self.need(item, "name", where))
            where = f"frames[{i}] ({name})"
            if name in known:
                raise self.fail(where, f"duplicate frame name {name!r}")
            parent = str(self.need(item, "parent", where))
            if parent not in known:
                raise self.fail(f"{where}.parent", f"unknown antecedent frame {parent!r} (define it earlier)")
            a = self.motor_expr(self.need(item, "a", where), f"{where}.a")
            alpha = self.motor_expr(self.need(item, "alpha", where), f"{where}.alpha")
            d = self.motor_expr(self.need(item, "d", where), f"{where}.d")
            theta = self.motor_expr(self.need(item, "theta", where), f"{where}.theta")
            for label, value in (("a", a), ("alpha", alpha)):
                if value.free_symbols:
                    raise self.fail(f"{where}.{label}", "must be constant")
            moving_theta = bool(theta.free_symbols)
            moving_d = bool(d.free_symbols)
            if moving_theta and moving_d:
                raise self.fail(where, "theta and d both vary: split the frame in two")
            joint_type = "revolute" if moving_theta else "prismatic" if moving_d else "fixed"
            joint = None
            if joint_type != "fixed":
                joint = self.linear(f"frame {name}", theta if moving_theta else d, where)
            flags = {k: bool(item.get(k, False)) for k in ("inertia", "friction", "motor_inertia")}
            if joint is None and (flags["friction"] or flags["motor_inertia"]):
                raise self.fail(where, "a fixed frame cannot carry friction or motor inertia")
            spring = None
            if item.get("spring") is not None:
                spring_spec = item["spring"]
                if joint is None:
                    raise self.fail(f"{where}.spring", "a fixed frame cannot carry a spring")
                spring = self.motor_expr(self.need(spring_spec, "deflection", f"{where}.spring"),
                                         f"{where}.spring.deflection")
            frames.append(Frame(name, parent, float(a), alpha, d, theta, joint_type, joint,
                                flags["inertia"], flags["friction"], flags["motor_inertia"], spring))
            known.add(name)
        return tuple(frames)

    def _coordinate(self, item: dict, where: str, coordinates: dict[str, LinearCoordinate]) -> LinearCoordinate:
        name = str(self.need(item, "coordinate", where))
        if name not in coordinates:
            raise self.fail(f"{where}.coordinate", f"unknown coordinate {name!r}")
        return coordinates[name]

    def _drive(self, i: int, item: Any, coordinates: dict[str, LinearCoordinate]) -> Drive:
        where = f"drives[{i}]"
        return Drive(str(self.need(item, "name", where)), self._coordinate(item, where, coordinates),
                     bool(item.get("motor_inertia", False)), bool(item.get("friction", False)))

    def _known(self, i: int, item: Any, coordinates: dict[str, LinearCoordinate]) -> KnownTorque:
        where = f"known_torques[{i}]"
        poly = self.need(item, "polynomial", where)
        try:
            coefficients = tuple(float(c) for c in poly)
        except (TypeError, ValueError) as exc:
            raise self.fail(f"{where}.polynomial", "expected a list of numbers") from exc
        return KnownTorque(str(self.need(item, "name", where)), self._coordinate(item, where, coordinates),
                           coefficients)
