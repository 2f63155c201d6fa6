"""The registry of estimators and compensations (ROS-free, data only).

Every estimator the package offers is one :class:`Estimator` here, and nowhere
else: the identification pipeline (:func:`dvrk_ident_ros.identify.pipeline.identify`)
takes its least-squares weighting and whether it solves the physically
consistent SDP from it, the gc fit (:mod:`dvrk_ident_ros.gc.fitting.mlse`) its fit, the
command line its ``--method`` choices and help, ``/identify`` the methods it
accepts, and the comments of srv/Identify.srv list the same names and summaries
(test/test_estimators.py compares them). Likewise every compensation the
``gravity_compensation`` node runs is one :class:`CompensationKind`
(:mod:`dvrk_ident_ros.gc.runtime.compensation` builds them).
"""
from __future__ import annotations

from dataclasses import dataclass

from dvrk_ident_ros.errors import DvrkIdentError

#: What an estimator produces: a parameter file of an arm's dynamic model, or an MTM gc file.
DYNAMICS, GRAVITY = "dynamics", "gravity"


@dataclass(frozen=True)
class Estimator:
    name: str
    summary: str  # one line: the CLI's help, the .srv's comment
    target: str  # DYNAMICS (a dvrk_ident parameter file) or GRAVITY (a dVRK gc JSON 2.0, MTM only)
    weighting: str = ""  # DYNAMICS: the least-squares weights (identify/least_squares.py: "none" or "range")
    physically_consistent: bool = False  # DYNAMICS: standard parameters by the SDP (Wang 2019 section VI)


ESTIMATORS: tuple[Estimator, ...] = (
    Estimator("sdp", "physically consistent standard parameters (semidefinite program on the WLS problem)",
              DYNAMICS, weighting="range", physically_consistent=True),
    Estimator("wls", "base parameters by least squares weighted by each joint's torque range", DYNAMICS,
              weighting="range"),
    Estimator("ols", "base parameters by ordinary least squares", DYNAMICS, weighting="none"),
    Estimator("mlse", "MTM gravity compensation by multi-step least squares (Lin 2019), a gc JSON", GRAVITY),
    Estimator("slse", "MTM gravity compensation by single-step least squares (Lin 2019 eq. 15), a gc JSON",
              GRAVITY),
    Estimator("rmlse", "MTM gravity compensation by MLSE with per-joint order and ridge by held-out error, a gc JSON",
              GRAVITY),
)
#: The CLI's and /identify's default.
DEFAULT_ESTIMATOR = "sdp"
#: The default of the gc fit (``dvrk-ident gc fit``, :func:`dvrk_ident_ros.jobs.offline.gc_fit_job`).
DEFAULT_GRAVITY_ESTIMATOR = "mlse"


def estimator_names(target: str | None = None) -> tuple[str, ...]:
    """The estimators' names, in the registry's order; only those producing ``target`` when given."""
    return tuple(e.name for e in ESTIMATORS if target is None or e.target == target)


def method_help(target: str) -> str:
    """A ``--method`` help: each estimator producing ``target`` with its summary."""
    return "; ".join(f"{e.name}: {e.summary}" for e in ESTIMATORS if e.target == target)


def estimator(name: str, target: str | None = None) -> Estimator:
    """The registry's estimator ``name`` (any case); DvrkIdentError naming the known ones otherwise."""
    text = str(name).strip().lower()
    for e in ESTIMATORS:
        if e.name == text and (target is None or e.target == target):
            return e
    raise DvrkIdentError(f"unknown method {name!r} (known: {', '.join(estimator_names(target))})")


@dataclass(frozen=True)
class CompensationKind:
    name: str  # as an arm description's ``dvrk.compensations`` lists it
    summary: str
    reported_as: str  # GravityCompensationDiagnostics.model_kind
    estimators: tuple[str, ...]  # the estimators whose files it runs from


COMPENSATIONS: tuple[CompensationKind, ...] = (
    CompensationKind("mlse", "a dVRK gc JSON through the MLSE law (Lin 2019 eqs. 25-31)", "mlse",
                     estimator_names(GRAVITY)),
    CompensationKind("model", "gravity, springs and cable of an identified model (standard parameters)",
                     "dynamic", ("sdp",)),
)


def compensation_names() -> tuple[str, ...]:
    return tuple(c.name for c in COMPENSATIONS)


def compensation_kind(name: str) -> CompensationKind:
    for c in COMPENSATIONS:
        if c.name == name:
            return c
    raise DvrkIdentError(f"unknown compensation {name!r} (known: {', '.join(compensation_names())})")
