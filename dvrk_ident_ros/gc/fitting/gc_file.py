"""The gc file of an MLSE or SLSE fit (Lin 2019 section III): what ``dvrk-ident gc fit`` writes."""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.mlse import GcFit, fit_residual
from dvrk_ident_ros.gc.model.params import GcParameters

#: degrees: the joint-7 range a file records (the roll carries no gravity: not limited, as the MLSE tool writes it)
UNLIMITED_DEG = 400.0


def gc_parameters(fit: GcFit, data: PoseData, arm: str, serial: str, source: str) -> GcParameters:
    """Both directions' 40-vectors of ``fit``, the torque range ``data`` measured on joints 1-6 (the law clamps
    to it), the polynomial order of every joint and the fit's own RMS residual per joint (the fit check's
    bound, gc/runtime/fit_check.py) and the range of each joint 1-6 over the poses the data measured the arm at
    (``joint_position_*_limit``, degrees, as the MLSE tool writes its grid's: the check refuses a take-over far
    beyond it)."""
    upper = np.append(data.tau[:, :6].max(axis=0), 0.0)
    lower = np.append(data.tau[:, :6].min(axis=0), 0.0)
    q_deg = np.degrees(data.q[:, :6])
    low_deg, high_deg = np.round(q_deg.min(axis=0), 3).tolist(), np.round(q_deg.max(axis=0), 3).tolist()
    return GcParameters(arm=arm, serial=serial, theta_pos=fit.theta(+1), theta_neg=fit.theta(-1),
                        upper_limit=upper, lower_limit=lower,
                        position_upper_deg=[*high_deg, UNLIMITED_DEG], position_lower_deg=[*low_deg, -UNLIMITED_DEG],
                        fit_methods={i: f"{fit.orders[i]}POL" for i in range(1, 7)}, source=source,
                        fit_residual=fit_residual(fit, data))
