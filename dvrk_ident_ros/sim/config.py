"""The simulated arms' configuration (the arm registry's ``simulation`` file: config/sim/<family>.yaml) and
"true" parameters.

The YAML gives the file of true standard parameters (a dvrk_ident parameter
file, its origin documented in config/sim/README.md), the PID gains and torque
limits of the servo, the measurement noise (encoder resolution, effort noise,
``effort_resolution``: the measured effort's quantisation in motor
coordinates, optional), the direction-dependent cable hysteresis and the home
pose.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.registry import ArmSpec, arm_spec
from dvrk_ident_ros.errors import DescriptionError
from dvrk_ident_ros.files import read_document
from dvrk_ident_ros.model.arm_model import ArmModel, load_model
from dvrk_ident_ros.sim.noise import NoiseLevels
from dvrk_ident_ros.sim.physics import DEFAULT_COULOMB_VELOCITY, CoulombVelocity
from dvrk_ident_ros.sim.servo import PidGains


@dataclass
class SimConfig:
    family: str
    model: ArmModel
    delta: np.ndarray  # true standard parameters
    gains: PidGains
    noise: NoiseLevels
    hysteresis: np.ndarray  # dof x k polynomial amplitudes (dVRK joint space)
    hysteresis_width: float
    home: np.ndarray  # dVRK joint space
    builtin_gravity_compensation: bool
    move_speed: np.ndarray  # move_jp: largest speed per joint (rad/s, m/s)
    parameter_file: Path
    spec: ArmSpec  # the arm family's traits (arm registry)
    prismatic: np.ndarray  # per dVRK joint: True for a prismatic joint (:func:`prismatic_joints`)
    coulomb_velocity: CoulombVelocity = DEFAULT_COULOMB_VELOCITY  # one v_s, or per friction element (physics.py)


def prismatic_joints(model: ArmModel) -> np.ndarray:
    """Per dVRK joint: True where a prismatic frame's joint is that joint (the PSM insertion)."""
    mask = np.zeros(model.dof, dtype=bool)
    for frame in model.description.frames:
        if frame.joint_type == "prismatic" and frame.joint is not None:
            mask[int(np.argmax(np.abs(frame.joint.coefficients @ model.A_inv)))] = True
    return mask


def _vector(raw: dict, key: str, n: int, path: Path) -> np.ndarray:
    value = np.asarray(raw.get(key), dtype=float)
    if value.shape != (n,):
        raise DescriptionError(f"{path}: {key}: expected {n} numbers")
    return value


def load_true_parameters(model: ArmModel, path: Path) -> np.ndarray:
    from dvrk_ident_ros.identify.results import IdentificationResult

    result = IdentificationResult.load(path)
    if result.description_hash != model.description.content_hash:
        raise DescriptionError(f"{path}: made for another version of the {result.arm} description "
                               "(regenerate it: python tools/make_sim_parameters.py)")
    if not result.standard:
        raise DescriptionError(f"{path}: no standard parameters")
    return np.array([result.standard[name] for name in model.parameter_names])


def _coulomb_velocity(raw: object, path: Path) -> CoulombVelocity:
    """A number, or a mapping of friction element names (and "default") to numbers (physics.py checks them
    against the arm's elements)."""
    try:
        if isinstance(raw, dict):
            return {str(k): float(v) for k, v in raw.items()}
        return float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise DescriptionError(f"{path}: coulomb_velocity: {raw!r}: expected a number or a mapping of friction "
                               "elements to numbers") from exc


def load_sim_config(family: str, path: str | Path | None = None, parameters: str | Path | None = None) -> SimConfig:
    """The simulated arm of an arm, family or model name (MTML, mtm, ...: the arm registry's ``simulation``
    file unless ``path`` is given), its true parameters from that file unless ``parameters`` is given."""
    spec = arm_spec(family)
    source = Path(path) if path else spec.simulation
    if source is None:
        raise DescriptionError(f"{spec.description}: dvrk.simulation: the {spec.family} has no simulated arm")
    raw = read_document(source)
    model = load_model(spec.model)
    n = model.dof
    parameter_file = Path(parameters) if parameters else source.parent / str(raw.get("parameters"))
    servo = raw.get("servo") or {}
    gains = PidGains(_vector(servo, "kp", n, source), _vector(servo, "kd", n, source),
                     _vector(servo, "ki", n, source), _vector(servo, "torque_limit", n, source),
                     _vector(servo, "integral_limit", n, source))
    noise = raw.get("noise") or {}
    hyst = raw.get("hysteresis") or {}
    amplitude = np.asarray(hyst.get("amplitude", np.zeros((n, 1))), dtype=float)
    if amplitude.ndim != 2 or amplitude.shape[0] != n:
        raise DescriptionError(f"{source}: hysteresis.amplitude: expected {n} rows of polynomial coefficients")
    return SimConfig(
        family=spec.model, spec=spec, model=model, delta=load_true_parameters(model, parameter_file), gains=gains,
        noise=NoiseLevels(_vector(noise, "resolution", n, source), _vector(noise, "effort_std", n, source),
                          _vector(noise, "effort_resolution", n, source) if "effort_resolution" in noise else None),
        hysteresis=amplitude, hysteresis_width=float(hyst.get("width", 0.02)), home=_vector(raw, "home", n, source),
        builtin_gravity_compensation=bool(raw.get("builtin_gravity_compensation", False)),
        move_speed=_vector(raw, "move_speed", n, source), parameter_file=parameter_file,
        prismatic=prismatic_joints(model),
        coulomb_velocity=_coulomb_velocity(raw.get("coulomb_velocity", DEFAULT_COULOMB_VELOCITY), source))
