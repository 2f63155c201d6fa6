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

__all__ = ["FORMATS", "ArmTree", "build_tree", "check_consistent", "standard_parameters", "to_mjcf", "to_urdf",
           "tree_from_file"]


def standard_parameters(result: IdentificationResult, model: ArmModel, source: str = "the file") -> np.ndarray:
    """delta of a parameter file, refused with the reason when it has none (OLS/WLS identify base parameters)."""
    if not result.standard:
        raise DataError(f"{source}: method {result.method} identifies base parameters only, not the per-link "
                        "masses and inertias a simulator needs; identify with --method sdp (physically "
                        "consistent standard parameters)")
    missing = [name for name in model.parameter_names if name not in result.standard]
    if missing:
        raise DataError(f"{source}: standard parameters without {', '.join(missing[:5])}")
    return np.array([float(result.standard[name]) for name in model.parameter_names])


def tree_from_file(path: str | Path, variant: str | None = None) -> tuple[ArmTree, IdentificationResult]:
    """The export tree of a parameter file (its arm's installed model; same description required)."""
    from dvrk_ident_ros.identify.pipeline import model_for

    result = IdentificationResult.load(path)
    model = model_for(result)
    return build_tree(model, standard_parameters(result, model, str(path)), variant), result
