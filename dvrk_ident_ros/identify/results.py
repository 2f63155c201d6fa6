"""The parameter file: one JSON format for every method.

Holds the arm and the hash of its description (a file is never applied to a
different model), the standard parameters (SDP only: OLS/WLS identify base
parameters alone; the plausible ones, see identify/plausible.py), the base
parameters with their definitions, bounds, filter settings, solver statistics
and per-joint errors.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field
from pathlib import Path

import numpy as np

from dvrk_ident_ros import __version__
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.files import read_document

FORMAT = "dvrk_ident.parameters/1"


@dataclass
class IdentificationResult:
    arm: str
    description_hash: str
    method: str
    base_values: list[float]
    base_definitions: list[str]
    base_indices: list[int]
    filter: dict
    solver: dict
    errors: dict  # e.g. {"training": [...], "joint_names": [...]}
    standard: dict[str, float] | None = None
    base_std: list[float] | None = None
    bounds: dict = field(default_factory=dict)
    data: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    torque_lags: list[float] = field(default_factory=list)  # s, per joint: measured torque behind the motion
    # SDP only: how ``standard`` was chosen in the null space (identify/plausible.py): prior, per-link
    # divergence and active bounds, the SDP's own standard parameters; {} for OLS/WLS and older files
    plausibility: dict = field(default_factory=dict)
    # the gravity refitted to static holds (gc/fitting/static_refit.py, ``dvrk-ident gc refit``): the holds' source,
    # their count, the residuals before and after, the standard parameters before; {} when not refitted
    gravity_refit: dict = field(default_factory=dict)
    format: str = FORMAT
    package_version: str = __version__

    @property
    def base(self) -> np.ndarray:
        return np.asarray(self.base_values, dtype=float)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1, default=float))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> IdentificationResult:
        path = Path(path)
        raw = read_document(path)
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise DataError(f"{path}: not a dvrk_ident parameter file (format {raw.get('format')!r})"
                            if isinstance(raw, dict) else f"{path}: not a dvrk_ident parameter file")
        fields = cls.__dataclass_fields__
        required = [name for name, f in fields.items() if f.default is MISSING and f.default_factory is MISSING]
        missing = [name for name in required if name not in raw]
        if missing:
            raise DataError(f"{path}: parameter file without {', '.join(missing)}")
        return cls(**{k: v for k, v in raw.items() if k in fields})
