"""An identified arm's gravity as the dVRK 2.4 console's ``kinematic_gc`` file (PSM, ECM), ROS-free.

The console applies a physical-DH chain's static torques in its own loop, in every mode, teleoperation
included (gc/model/console_gc.py). The chain's mass moments are fitted to the identified model's gravity (its
standard parameters, springs and known torques) over random poses inside the arm's limits, every joint the
chain does not read (the PSM's wrist) random too; the residual is measured at other random poses and the file
is refused when it exceeds the tolerance: the noise of the static holds the file was refitted to
(``gravity_refit``: their RMS residual per joint), or one the caller gives.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError

#: poses the moments are fitted on, and as many others the residual is measured on
POSES = 400


@dataclass(frozen=True)
class KinematicGcExport:
    """A fitted console chain and how well it holds the identified gravity."""

    arm: str
    document: dict  # the console's file
    mounting_pitch: float  # rad: the console must use this value (the description's gravity)
    joint_names: tuple[str, ...]
    rms: np.ndarray  # N m (N), per joint the console gives an effort, at poses not fitted
    worst: np.ndarray
    gravity_rms: np.ndarray  # the identified gravity's own RMS at those poses (what "none" leaves)
    tolerance: np.ndarray  # the bound the residual was held to
    tolerance_source: str

    def summary(self) -> str:
        def cells(values: np.ndarray) -> str:
            return ", ".join(f"{n} {v:.2g}" for n, v in zip(self.joint_names, values, strict=False))

        return (f"{self.arm}: chain fitted to the identified gravity; residual RMS {cells(self.rms)} (worst "
                f"{cells(self.worst)}) against the gravity's own RMS {cells(self.gravity_rms)}, N m (N for the "
                f"insertion), {POSES} poses not fitted; tolerance {cells(self.tolerance)} ({self.tolerance_source})")


def _tolerance(result, joints: int, max_residual: list[float] | None) -> tuple[np.ndarray, str]:
    if max_residual:
        values = np.array(max_residual, dtype=float)
        if values.size == 1:
            values = np.full(joints, values[0])
        if values.size != joints or not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise DataError(f"--max-residual: {joints} values > 0 (or one for all), got {max_residual}")
        return values, "given"
    refit = getattr(result, "gravity_refit", None) or {}
    after = refit.get("residual_rms_after")
    if not after or len(after) < joints:
        raise DataError("the parameter file has no static-hold refit to measure the holds' noise against "
                        "(`dvrk-ident gc refit --params FILE --data HOLDS`, as `dvrk-ident demo --psm-gravity` "
                        "does); refit it, or give --max-residual N_m [N_m ...]")
    values = np.array(after[:joints], dtype=float)
    return values, f"the RMS residual of its {refit.get('holds', '?')} static holds"


def kinematic_gc_export(params: str | Path, *, variant: str | None = None, seed: int = 0,
                        max_residual: list[float] | None = None) -> KinematicGcExport:
    """The console file for an identified parameter file (SDP: standard parameters) of a PSM or ECM."""
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.gc.model.console_gc import load_chain
    from dvrk_ident_ros.identify.pipeline import model_for
    from dvrk_ident_ros.identify.results import IdentificationResult

    result = IdentificationResult.load(params)
    spec = arm_spec(result.arm)
    if spec.console_gc is None:
        raise DataError(f"{params}: the dVRK console has no physical-DH gravity (kinematic_gc) for the "
                        f"{spec.family}" + (" (its gc file comes from `dvrk-ident gc fit`)" if spec.gc_fits else ""))
    if not result.standard:
        raise DataError(f"{params}: method {result.method} identifies base parameters only; the console's chain "
                        "is fitted to an identified gravity from standard parameters (identify with --method sdp)")
    model = model_for(result)
    missing = [name for name in model.parameter_names if name not in result.standard]
    if missing:
        raise DataError(f"{params}: standard parameters missing: {', '.join(missing[:5])}")
    delta = np.array([float(result.standard[name]) for name in model.parameter_names])
    tolerance, source = _tolerance(result, load_chain(spec.console_gc).joints_given, max_residual)
    try:
        return fit_console_chain(model, delta, spec, tolerance, source, variant=variant, seed=seed,
                                 name=Path(params).name)
    except DataError as exc:
        raise DataError(f"{params}: {exc}") from exc


def fit_console_chain(model, delta: np.ndarray, spec, tolerance: np.ndarray, tolerance_source: str, *,
                      variant: str | None = None, seed: int = 0, name: str = "") -> KinematicGcExport:
    """The arm family's console chain (``spec.console_gc``) fitted to the gravity of ``model`` with standard
    parameters ``delta``; a DataError, nothing returned, when a joint's residual RMS exceeds ``tolerance``."""
    from dvrk_ident_ros.excitation.holds import random_poses
    from dvrk_ident_ros.gc.model.console_gc import fit_moments, load_chain, mounting_pitch_of
    from dvrk_ident_ros.safety import CommandChecker

    template = load_chain(spec.console_gc)
    joints = template.joints_given
    pitch = mounting_pitch_of(model.description.gravity) + 0.0  # never -0.0
    checker = CommandChecker(model, spec.variant(variant) if variant else None)
    rng = np.random.default_rng(seed)
    q_fit = random_poses(checker, POSES, rng, fraction=1.0)
    q_check = random_poses(checker, POSES, rng, fraction=1.0)

    def gravity(q_dvrk: np.ndarray) -> np.ndarray:
        q_motor = model.motor_from_dvrk(q_dvrk)
        return (model.gravity(q_motor, delta) + model.known_torques(q_motor)) @ model.A_inv

    target_check = gravity(q_check)
    fit = fit_moments(template, q_fit, gravity(q_fit), q_check, target_check, pitch)
    comment = (f"dVRK console kinematic_gc for a {spec.family}" + (f" from {name}" if name else "")
               + f" (dvrk_ident): masses and centres of mass fitted to the identified gravity; use with "
               f"mounting_pitch {pitch:.6f} rad")
    export = KinematicGcExport(
        arm=spec.family, document=fit.chain.document(comment), mounting_pitch=pitch,
        joint_names=spec.joint_names[:joints], rms=fit.rms, worst=fit.worst,
        gravity_rms=np.sqrt(np.mean(target_check[:, :joints] ** 2, axis=0)),
        tolerance=np.asarray(tolerance, dtype=float), tolerance_source=tolerance_source)
    # a joint no link with mass can move (the ECM's roll: the Si's map gives it 0, the Classic's roll link carries no
    # mass) gets 0 from the console whatever the file: not held to the tolerance
    over = [f"{joint} {r:.2g} > {t:.2g}" for joint, r, t, g in zip(export.joint_names, fit.rms, tolerance,
                                                                      fit.reachable, strict=False) if g and r > t]
    if over:
        raise DataError(f"the console's chain cannot hold this arm's identified gravity within the tolerance "
                        f"({tolerance_source}): residual RMS {'; '.join(over)} N m (N); nothing written")
    return export


def write_kinematic_gc(export: KinematicGcExport, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(export.document, indent=1) + "\n")
    tmp.replace(out)
    return out
