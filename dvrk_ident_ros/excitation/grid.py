"""MLSE pose grids for MTM gravity compensation (Lin 2019 section IV, two-joint strategy).

From ``config/mtm_gc_grid.yaml``: for each estimated joint i (6 down to 1, the
MLSE order), at each value of its auxiliary joint, a sweep of joint i over its
range in the positive direction and one back in the negative direction; the
other joints stay at the joint's initial pose. Poses that would break the
parallelogram's coupling limit (q2 + q3) are left out.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dvrk_ident_ros.errors import DataError, DescriptionError
from dvrk_ident_ros.files import read_document
from dvrk_ident_ros.model.description import config_directory

SIDES = ("MTML", "MTMR")


def _per_side(value: Any, side: str) -> Any:
    return value[side] if isinstance(value, dict) else value


def _values(lo: float, hi: float, step: float) -> np.ndarray:
    if step <= 0 or hi < lo:
        raise DescriptionError(f"grid range [{lo}, {hi}] with step {step} is empty")
    return np.arange(lo, hi + 1e-9, step)


def load_grid_spec(path: Path | None = None) -> dict:
    path = path or config_directory() / "mtm_gc_grid.yaml"
    spec = read_document(path, DescriptionError)  # unreadable or not YAML: one line naming the file
    if not isinstance(spec, dict) or "joints" not in spec:
        raise DescriptionError(f"{path}: missing field 'joints'")
    return spec


def make_grid(side: str, spec: dict | None = None) -> dict:
    """The pose grid (file contents, radians) of one MTM side."""
    side = side.upper()
    if side not in SIDES:
        raise DataError(f"unknown MTM side {side!r} (MTML or MTMR)")
    spec = spec or load_grid_spec()
    coupling = spec.get("coupling") or {}
    sweeps = []
    for joint in sorted(spec["joints"], reverse=True):
        js = spec["joints"][joint]
        i = int(joint) - 1
        init = np.asarray(_per_side(js["init"], side), dtype=float)
        lo, hi = _per_side(js["range"], side)
        train = _values(lo, hi, js["step"])
        settings: list[tuple[int | None, float | None]]
        if "auxiliary" in js:
            aux_joint = int(js["auxiliary"]) - 1
            alo, ahi = _per_side(js["auxiliary_range"], side)
            settings = [(aux_joint, float(v)) for v in _values(alo, ahi, js["auxiliary_step"])]
        else:
            settings = [(None, None)] * int(js.get("repeat", 1))
        for aux, value in settings:
            poses = np.tile(init, (len(train), 1))
            poses[:, i] = train
            if aux is not None:
                poses[:, aux] = value
            if coupling:
                a, b = (int(j) - 1 for j in coupling["joints"])
                total = poses[:, a] + poses[:, b]
                poses = poses[(total >= coupling["lower"]) & (total <= coupling["upper"])]
            if len(poses) < 2:
                continue
            for direction, ordered in (("positive", poses), ("negative", poses[::-1])):
                sweeps.append({"estimated_joint": int(joint), "auxiliary_joint": None if aux is None else aux + 1,
                               "auxiliary_value": None if value is None else float(np.radians(value)),
                               "direction": direction, "poses": np.radians(ordered).round(10).tolist()})
    return {"arm": side, "coordinates": "dvrk", "units": "rad", "settle_time": float(spec.get("settle_time", 0.5)),
            "samples_per_pose": int(spec.get("samples_per_pose", 10)), "sweeps": sweeps}


#: A narrow MTM grid (every joint over a few poses, 3-5 a sweep, two auxiliary values): 68 poses, a short run on
#: the arm (docs/results.md); enough for first-order polynomials only. The short runs of the tests and benchmarks.
NARROW_SPEC: dict = {
    "settle_time": 0.2, "samples_per_pose": 10,
    "joints": {
        6: {"init": [0] * 7, "range": [-10, 10], "step": 10, "auxiliary": 5, "auxiliary_range": [-90, -30],
            "auxiliary_step": 60},
        5: {"init": [0] * 7, "range": [0, 20], "step": 10, "auxiliary": 3, "auxiliary_range": [-10, 10],
            "auxiliary_step": 20},
        4: {"init": [0, 0, 0, 0, 90, 0, 0], "range": [-10, 10], "step": 10, "auxiliary": 3,
            "auxiliary_range": [-10, 10], "auxiliary_step": 20},
        3: {"init": [28, 0, 0, 0, 90, 0, 0], "range": [-5, 5], "step": 5, "auxiliary": 2,
            "auxiliary_range": [0, 10], "auxiliary_step": 10},
        2: {"init": [0, 0, 0, 0, 90, 0, 0], "range": [-5, 5], "step": 2.5, "repeat": 1},
        1: {"init": [0, 0, 0, 0, 90, 0, 0], "range": [0, 10], "step": 2.5, "repeat": 1},
    },
    "coupling": {"joints": [2, 3], "lower": -11, "upper": 25},
}


def narrow_grid(side: str) -> dict:
    """The grid of :data:`NARROW_SPEC` for one MTM side (first-order polynomials: ``orders`` 1 for every joint)."""
    return make_grid(side, NARROW_SPEC)
