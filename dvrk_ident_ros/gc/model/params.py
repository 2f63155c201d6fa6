"""gc JSON files (the dVRK console's ``gc-<ARM>-<serial>.json``; docs/gravity-compensation.md, "Gravity
compensation of the MTM"): write version 2.0 exactly as the console reads it; read 2.0 and 1.0.

A version 1.0 controller has one ``beta_vel_amplitude`` vector (rad/s) instead of
the dead band, saturation and ratio vectors: the two directions are blended with
a sine of the velocity (:mod:`dvrk_ident_ros.gc.runtime.law`), as the console does. Such
parameters keep ``beta_amplitude`` and are written back as version 1.0, so a file
read and saved again compensates as before. The version is read as the console
reads it: the integer part of the number ("1.0", "1" and "1.5" are version 1)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.files import read_document
from dvrk_ident_ros.gc.model.regressor import N_PARAMS

SIDES = ("MTML", "MTMR")
DEFAULT_DEADBAND = [0.02, 0.02, 0.02, 0.01, 0.008, 0.008, 0.01]  # rad/s
DEFAULT_SATURATION = [0.2] * 7  # rad/s
DEFAULT_RATIO = [0.7, 0.01, 0.5, 0.4, 0.2, 0.2, 1.0]


@dataclass
class GcParameters:
    arm: str
    serial: str
    theta_pos: np.ndarray  # 40
    theta_neg: np.ndarray  # 40
    upper_limit: np.ndarray  # 7, N m
    lower_limit: np.ndarray
    deadband: np.ndarray = field(default_factory=lambda: np.array(DEFAULT_DEADBAND))
    saturation: np.ndarray = field(default_factory=lambda: np.array(DEFAULT_SATURATION))
    ratio: np.ndarray = field(default_factory=lambda: np.array(DEFAULT_RATIO))
    beta_amplitude: np.ndarray | None = None  # rad/s, version 1.0 only: the sine blend's amplitude
    fit_methods: dict[int, str] = field(default_factory=lambda: {i: "4POL" for i in range(1, 7)} | {2: "1POL"})
    init_pos_deg: list[float] = field(default_factory=lambda: [0, 0, 0, 0, 90, 0, 0])
    position_upper_deg: list[float] | None = None
    position_lower_deg: list[float] | None = None
    g_constant: float = 9.81
    std_filter: float = 0.3
    version: str = "2.0"
    source: str = ""
    fit_residual: np.ndarray | None = None  # 7, N m: the fit's RMS residual on its own poses (lse.fit_residual_rms)

    def to_json(self) -> dict:
        controller = {
            "gc_dynamic_params_pos": [float(x) for x in self.theta_pos],
            "gc_dynamic_params_neg": [float(x) for x in self.theta_neg],
            "safe_upper_torque_limit": [float(x) for x in self.upper_limit],
            "safe_lower_torque_limit": [float(x) for x in self.lower_limit],
        }
        if self.beta_amplitude is not None:  # version 1.0: the sine blend
            controller["beta_vel_amplitude"] = [float(x) for x in self.beta_amplitude]
        else:
            controller["db_vel_vec"] = [float(x) for x in self.deadband]
            controller["sat_vec_vec"] = [float(x) for x in self.saturation]
            controller["fric_comp_ratio_vec"] = [float(x) for x in self.ratio]
        controller["GC_init_pos"] = [float(x) for x in self.init_pos_deg]
        if self.position_upper_deg is not None:
            if self.position_lower_deg is None:
                raise DataError(f"{self.arm}: joint position upper limits without the lower limits")
            controller["joint_position_upper_limit"] = [float(x) for x in self.position_upper_deg]
            controller["joint_position_lower_limit"] = [float(x) for x in self.position_lower_deg]
        lse: dict[str, float | list[float] | dict[str, str]] = {"g_constant": self.g_constant,
                                                                 "std_filter": self.std_filter}
        lse.update({f"joint{i}": {"fit_method": self.fit_methods.get(i, "4POL")} for i in range(1, 7)})
        if self.fit_residual is not None:  # not read by the console (it reads GC_controller): the fit check's
            lse["fit_residual_rms"] = [float(x) for x in self.fit_residual]
        return {"ARM_NAME": self.arm, "SN": self.serial, "date_time": time.strftime("%B-%d-%Y-%H:%M:%S"),
                "version": "2.0" if self.beta_amplitude is None else "1.0", "lse": lse, "GC_controller": controller}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=4))
        return path


def _vector(controller: dict, key: str, n: int, path: Path) -> np.ndarray:
    if key not in controller:
        raise DataError(f"{path}: GC_controller.{key}: missing field")
    try:
        v = np.asarray(controller[key], dtype=float)
    except (TypeError, ValueError):
        v = np.full(0, np.nan)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise DataError(f"{path}: GC_controller.{key}: expected {n} finite numbers")
    return v


def load_gc(path: str | Path) -> GcParameters:
    """Read a gc file, version 2.0 or 1.0 (a 1.0 file's ``beta_vel_amplitude`` goes to
    ``beta_amplitude``; its dead band, saturation and ratio stay at the 2.0 defaults, unused)."""
    path = Path(path)
    raw = read_document(path)
    if not isinstance(raw, dict) or "GC_controller" not in raw:
        raise DataError(f"{path}: not a dVRK gc file (no GC_controller)")
    arm = str(raw.get("ARM_NAME", "")).upper()
    if arm not in SIDES:
        raise DataError(f"{path}: ARM_NAME {raw.get('ARM_NAME')!r} is not an MTM (MTML or MTMR)")
    c = raw["GC_controller"]
    version = str(raw.get("version", "1.0"))
    try:
        major = int(float(version))  # as the console reads it
    except ValueError:
        major = 0
    params = GcParameters(
        arm=arm, serial=str(raw.get("SN", "")), theta_pos=_vector(c, "gc_dynamic_params_pos", N_PARAMS, path),
        theta_neg=_vector(c, "gc_dynamic_params_neg", N_PARAMS, path),
        upper_limit=_vector(c, "safe_upper_torque_limit", 7, path),
        lower_limit=_vector(c, "safe_lower_torque_limit", 7, path), version=version, source=str(path),
    )
    if major == 2:
        params.deadband = _vector(c, "db_vel_vec", 7, path)
        params.saturation = _vector(c, "sat_vec_vec", 7, path)
        params.ratio = _vector(c, "fric_comp_ratio_vec", 7, path)
    elif major == 1:
        params.beta_amplitude = _vector(c, "beta_vel_amplitude", 7, path)
        if np.any(params.beta_amplitude <= 0):
            raise DataError(f"{path}: GC_controller.beta_vel_amplitude: expected 7 positive numbers (rad/s)")
    else:
        raise DataError(f"{path}: unknown gc file version {version!r} (1.0 and 2.0 are known)")
    if "GC_init_pos" in c:
        params.init_pos_deg = list(c["GC_init_pos"])
    if "joint_position_upper_limit" in c or "joint_position_lower_limit" in c:
        upper = _vector(c, "joint_position_upper_limit", 7, path)
        lower = _vector(c, "joint_position_lower_limit", 7, path)
        if np.any(lower > upper):
            raise DataError(f"{path}: GC_controller.joint_position_lower_limit above its upper limit on joint(s) "
                            f"{[int(j) + 1 for j in np.flatnonzero(lower > upper)]}")
        params.position_upper_deg, params.position_lower_deg = upper.tolist(), lower.tolist()
    lse = raw.get("lse") or {}
    params.fit_methods = {i: str((lse.get(f"joint{i}") or {}).get("fit_method", "4POL")) for i in range(1, 7)}
    if "fit_residual_rms" in lse:
        try:
            residual = np.asarray(lse["fit_residual_rms"], dtype=float)
        except (TypeError, ValueError):
            residual = np.full(0, np.nan)
        if residual.shape != (7,) or not np.all(np.isfinite(residual)) or np.any(residual < 0):
            raise DataError(f"{path}: lse.fit_residual_rms: expected 7 numbers >= 0 (N m)")
        params.fit_residual = residual
    if np.any(params.saturation <= params.deadband):
        raise DataError(f"{path}: sat_vec_vec must exceed db_vel_vec for every joint")
    return params
