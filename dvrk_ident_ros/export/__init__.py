"""Export identified arms to simulator formats: URDF (mimic joints) and MJCF (joint equalities)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.export.mjcf import to_mjcf
from dvrk_ident_ros.export.tree import ArmTree, build_tree, check_consistent
from dvrk_ident_ros.export.urdf import to_urdf
from dvrk_ident_ros.identify.results import IdentificationResult
from dvrk_ident_ros.model.arm_model import ArmModel

#: Each format's writer: the file's text for an arm tree.
FORMATS: dict[str, Callable[[ArmTree], str]] = {"urdf": to_urdf, "mjcf": to_mjcf}

__all__ = ["FORMATS", "INERTIALS", "ArmTree", "build_tree", "check_consistent", "relaxed_entry",
           "standard_parameters", "to_mjcf", "to_urdf", "tree_from_file"]


#: Which standard parameters of a file an export writes: "relaxed", the plausible ones within the fit's
#: 95 % region where the file has them (identify/plausible.py, choose_within_fit), else the file's own;
#: "exact", the file's own (they give the identified base parameters exactly).
INERTIALS = ("relaxed", "exact")


def standard_parameters(result: IdentificationResult, model: ArmModel, source: str = "the file",
                        inertials: str = "relaxed") -> np.ndarray:
    """delta of a parameter file, refused with the reason when it has none (OLS/WLS identify base parameters)."""
    if inertials not in INERTIALS:
        raise DataError(f"inertials {inertials!r}: choose one of {', '.join(INERTIALS)}")
    if not result.standard:
        raise DataError(f"{source}: method {result.method} identifies base parameters only, not the per-link "
                        "masses and inertias a simulator needs; identify with --method sdp (physically "
                        "consistent standard parameters)")
    values = result.standard
    relaxed = relaxed_entry(result)
    if inertials == "relaxed" and relaxed:
        values = relaxed["standard"]
    missing = [name for name in model.parameter_names if name not in values]
    if missing:
        raise DataError(f"{source}: standard parameters without {', '.join(missing[:5])}")
    return np.array([float(values[name]) for name in model.parameter_names])


def relaxed_entry(result: IdentificationResult) -> dict:
    """The file's plausible parameters within the fit's region (``plausibility.relaxed``), {} if none."""
    entry = ((getattr(result, "plausibility", None) or {}).get("relaxed")) or {}
    return entry if entry.get("status") == "optimal" and entry.get("standard") else {}


def tree_from_file(path: str | Path, variant: str | None = None, inertials: str = "relaxed"
                   ) -> tuple[ArmTree, IdentificationResult]:
    """The export tree of a parameter file (its arm's installed model; same description required)."""
    from dvrk_ident_ros.identify.pipeline import model_for

    result = IdentificationResult.load(path)
    model = model_for(result)
    return build_tree(model, standard_parameters(result, model, str(path), inertials), variant), result
