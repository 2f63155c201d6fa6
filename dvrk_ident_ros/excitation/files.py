"""Trajectory and pose-grid files (YAML), documented in docs/design.md, "File formats".

Fourier trajectory (motor coordinates, rest-to-rest, eq. 22)::

    format: dvrk_ident.trajectory/1
    kind: fourier
    arm: mtm                    # the arm description it was made for
    variant: MTML               # optional: mirrored limits of that side
    coordinates: motor
    base_frequency: 0.1         # Hz
    harmonics: 6
    periods: 3                  # periods the player plays
    q0: [7 numbers]             # rad (m for a prismatic joint)
    a: [H lists of 7]           # rad/s
    b: [H lists of 7]
    condition_number: 123.4     # of the column-normalised base regressor
    description_hash: ...

Pose grid (dVRK joint coordinates, for MLSE data collection)::

    format: dvrk_ident.pose_grid/1
    kind: pose_grid
    arm: MTML
    coordinates: dvrk
    settle_time: 0.5            # s to wait at a pose before sampling
    samples_per_pose: 10
    sweeps: [{estimated_joint, auxiliary_joint, auxiliary_value, direction, poses: [[7 numbers], ...]}]

The original identification package's coefficient files (``trajectory_one.json``)
are read as well.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dvrk_ident_ros.errors import DataError, DvrkIdentError
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.files import read_document

TRAJECTORY_FORMAT = "dvrk_ident.trajectory/1"
GRID_FORMAT = "dvrk_ident.pose_grid/1"


def save_trajectory(path: str | Path, traj: FourierTrajectory, *, arm: str, variant: str | None = None,
                    periods: int = 3, condition_number: float | None = None, description_hash: str = "",
                    note: str = "") -> Path:
    doc = {
        "format": TRAJECTORY_FORMAT, "kind": "fourier", "arm": arm, "variant": variant, "coordinates": "motor",
        "base_frequency": float(traj.base_frequency), "harmonics": int(traj.harmonics), "periods": int(periods),
        "q0": [float(x) for x in traj.q0], "a": traj.a.tolist(), "b": traj.b.tolist(),
        "condition_number": None if condition_number is None else float(condition_number),
        "description_hash": description_hash, "note": note,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    return path


def load_trajectory(path: str | Path, arm: str | None = None, joints: int | None = None
                    ) -> tuple[FourierTrajectory, dict]:
    """A Fourier trajectory and its file's metadata; ``arm`` (mtm, psm) must match if given."""
    raw = read_document(path)
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected a mapping")
    if "form" in raw and "joints" in raw:  # the original package's trajectory_one.json
        joints_spec = raw["joints"]
        meta: dict[str, Any] = {"arm": str(raw.get("arm", "")).lower(), "periods": 3, "variant": None}
        try:
            q0 = np.array([j["q0"] for j in joints_spec], dtype=float)
            a = np.array([j["a"] for j in joints_spec], dtype=float).T
            b = np.array([j["b"] for j in joints_spec], dtype=float).T
            f = float(raw["base_frequency_hz"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: malformed coefficients: {exc}") from exc
    else:
        if raw.get("format") != TRAJECTORY_FORMAT:
            raise DataError(f"{path}: not a dvrk_ident trajectory (format {raw.get('format')!r})")
        meta = raw
        try:
            q0 = np.asarray(raw["q0"], dtype=float)
            a, b = np.asarray(raw["a"], dtype=float), np.asarray(raw["b"], dtype=float)
            f = float(raw["base_frequency"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: malformed trajectory: {exc}") from exc
    if arm is not None and meta.get("arm") and meta["arm"].lower() != arm.lower():
        raise DataError(f"{path}: the trajectory is for the {meta['arm']}, not the {arm}")
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] != len(q0) or a.shape[0] < 1:
        raise DataError(f"{path}: inconsistent shapes q0 {q0.shape}, a {a.shape}, b {b.shape}")
    if joints is not None and len(q0) != joints:
        raise DataError(f"{path}: {len(q0)} joints, the arm has {joints}")
    if not f > 0 or not np.all(np.isfinite(np.concatenate([q0, a.ravel(), b.ravel()]))):
        raise DataError(f"{path}: the base frequency must be positive and every coefficient finite")
    return FourierTrajectory(f, q0, a, b), meta


def save_grid(path: str | Path, grid: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"format": GRID_FORMAT, "kind": "pose_grid", **grid}, sort_keys=False,
                                   width=120))
    return path


def load_grid(path: str | Path, arm: str | None = None) -> dict:
    raw = read_document(path)
    if not isinstance(raw, dict) or raw.get("format") != GRID_FORMAT:
        raise DataError(f"{path}: not a dvrk_ident pose grid")
    if arm is not None and str(raw.get("arm", "")).upper() != arm.upper():
        raise DataError(f"{path}: the pose grid is for the {raw.get('arm')}, not the {arm}")
    sweeps = raw.get("sweeps") or []
    if not isinstance(sweeps, list):
        raise DataError(f"{path}: sweeps must be a list")
    joints = _grid_joints(arm if arm is not None else str(raw.get("arm", "")))
    for i, sweep in enumerate(sweeps):
        if not isinstance(sweep, dict):
            raise DataError(f"{path}: sweeps[{i}] must be a mapping")
        try:
            poses = np.asarray(sweep.get("poses", []), dtype=float)
        except (TypeError, ValueError):
            poses = np.empty((0, 0))  # ragged or not numbers
        if poses.ndim != 2 or poses.shape[1] != joints or not np.all(np.isfinite(poses)):
            raise DataError(f"{path}: sweeps[{i}].poses must be a list of {joints} finite numbers per pose")
    return raw


def _grid_joints(arm: str) -> int:
    """The joints of a pose of ``arm``'s grid (its family's, a PSM's jaw included); 7 for an arm not known."""
    from dvrk_ident_ros.arm.registry import arm_spec

    try:
        return arm_spec(arm).dof
    except DvrkIdentError:
        return 7
