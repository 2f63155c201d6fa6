"""Identified base parameters against known ones (simulations, synthetic data).

Base parameters mix units (kg, kg m, kg m^2, N m s/rad, N m/rad, ...), so a
near-zero true value is judged against the size of its own kind: the relative
error is |identified - true| / max(|true|, floor * max |true| of the same kind),
the kind being the leading symbol of the parameter's definition
(``L``, ``l``, ``m``, ``Fv``, ``Fc``, ``Fo``, ``Im``, ``K``).
"""
from __future__ import annotations

import re

import numpy as np

_KIND = re.compile(r"^(Fv|Fc|Fo|Im|K|L|l|m)")


def parameter_kind(definition: str) -> str:
    match = _KIND.match(definition)
    return match.group(1) if match else definition.split()[0]


def relative_parameter_errors(definitions: list[str], identified, truth, floor: float = 1e-3) -> np.ndarray:
    """Per base parameter, the relative error with a per-kind floor (see the module docstring)."""
    identified, truth = np.asarray(identified, dtype=float), np.asarray(truth, dtype=float)
    kinds = np.array([parameter_kind(d) for d in definitions])
    scale = np.abs(truth).copy()
    for kind in set(kinds.tolist()):
        members = kinds == kind
        scale[members] = np.maximum(scale[members], floor * np.abs(truth[members]).max())
    scale = np.where(scale > 0, scale, 1.0)
    return np.abs(identified - truth) / scale
