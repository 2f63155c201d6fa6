"""The gc file of an MLSE or SLSE fit (Lin 2019 section III): what ``dvrk-ident gc fit`` writes."""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.mlse import GcFit, fit_residual
from dvrk_ident_ros.gc.model.params import GcParameters


def gc_parameters(fit: GcFit, data: PoseData, arm: str, serial: str, source: str) -> GcParameters:
    """Both directions' 40-vectors of ``fit``, the torque range ``data`` measured on joints 1-6 (the law clamps
    to it), the polynomial order of every joint and the fit's own RMS residual per joint (the fit check's
    bound, gc/runtime/fit_check.py)."""
    upper = np.append(data.tau[:, :6].max(axis=0), 0.0)
    lower = np.append(data.tau[:, :6].min(axis=0), 0.0)
    return GcParameters(arm=arm, serial=serial, theta_pos=fit.theta(+1), theta_neg=fit.theta(-1),
                        upper_limit=upper, lower_limit=lower,
                        fit_methods={i: f"{fit.orders[i]}POL" for i in range(1, 7)}, source=source,
                        fit_residual=fit_residual(fit, data))
