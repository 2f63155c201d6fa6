"""The fit of each GRAVITY estimator of the registry (:mod:`dvrk_ident_ros.estimators`), by name.

mlse and slse: Lin 2019's multi-step and single-step least squares (:mod:`dvrk_ident_ros.gc.fitting.mlse`);
rmlse: MLSE with each joint's polynomial order and ridge weight chosen by held-out error
(:mod:`dvrk_ident_ros.gc.fitting.regularised`).
"""
from __future__ import annotations

from collections.abc import Callable

from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.mlse import GcFit, fit_mlse, fit_slse
from dvrk_ident_ros.gc.fitting.regularised import fit_regularised

GcFitFunction = Callable[[PoseData, dict[int, int] | None], GcFit]

FITS: dict[str, GcFitFunction] = {"mlse": fit_mlse, "slse": fit_slse, "rmlse": fit_regularised}
