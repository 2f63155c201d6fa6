"""An ``/identify`` request checked into a plan before anything runs (ROS-free).

:func:`plan_request` takes the request's fields as plain values and returns an
:class:`IdentifyPlan` (canonical arm, method, resolved data paths, the output
directory inside the node's own) or raises a :class:`DvrkIdentError` whose
message is the one-line answer. Nothing is read beyond ``stat`` and nothing is
written: a refused request leaves no trace on disk.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dvrk_ident_ros.arm.registry import arm_families, arm_spec, canonical_arm, known_arms, mlse_arms
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.estimators import DEFAULT_ESTIMATOR, GRAVITY, estimator
from dvrk_ident_ros.request_paths import output_directory_within, readable_data_path


def request_names() -> tuple[str, ...]:
    """What a request may name: every arm of the registry, then every family (the models are per family)."""
    return known_arms() + tuple(spec.family for spec in arm_families())


def request_arm(name: str) -> str:
    """The canonical name of a request's arm: MTML, MTMR, PSM1..3, or a family (MTM, PSM); any case."""
    text = str(name).strip().upper()
    if text in (spec.family for spec in arm_families()):
        return text
    try:
        return canonical_arm(name)
    except DvrkIdentError:
        raise DvrkIdentError(f"unknown arm {name!r}: expected one of {', '.join(request_names())} "
                             "(any case)") from None


@dataclass(frozen=True)
class IdentifyPlan:
    arm: str                 # MTML..PSM3, MTM or PSM; "" for mlse with the side taken from the data
    method: str              # an estimator's name (dvrk_ident_ros.estimators)
    data_files: list[Path]   # absolute, checked readable
    data_format: str | None  # None: detect
    output_directory: Path   # absolute, inside the node's output_directory; not created yet

    @property
    def family(self) -> str:
        """'mtm' or 'psm': the model the job uses (the arm registry's; mlse without an arm: the MTM's)."""
        return arm_spec(self.arm).model if self.arm else mlse_arms()[0].model

    @property
    def mtm_side(self) -> str | None:
        """MTML/MTMR for mlse, or None to take the side from the data."""
        return self.arm if any(self.arm in spec.names for spec in mlse_arms()) else None

    @property
    def gravity(self) -> bool:
        """The method fits a gc file (mlse, slse: the estimator registry's GRAVITY), not a dynamic model."""
        return estimator(self.method).target == GRAVITY

    def result_file(self, stamp: str) -> Path:
        """Where the job writes its result (named with the canonical arm)."""
        if self.gravity:
            return self.output_directory / f"gc-{self.arm or mlse_arms()[0].family}-{stamp}.json"
        return self.output_directory / f"{self.arm}-{self.method}-{stamp}.json"

    def describe(self) -> str:
        names = ", ".join(str(f) for f in self.data_files)
        return f"{self.method} for {self.arm or 'MTM (side from the data)'} on {names}"


def plan_request(*, arm: str, method: str, data_files: Sequence[str], data_format: str = "", model_file: str = "",
                 overrides_yaml: str = "", output_directory: str = "", output_base: str | Path,
                 data_directory: str | Path | None = None) -> IdentifyPlan:
    """Check a request (arm, method, data paths, output directory) and return what to run."""
    chosen = estimator(str(method).strip() or DEFAULT_ESTIMATOR)  # the estimator registry's
    method, gravity = chosen.name, chosen.target == GRAVITY
    if model_file:
        raise DvrkIdentError("model_file: custom arm descriptions are not supported by the service yet; "
                             "use the built-in mtm/psm")
    if overrides_yaml:
        raise DvrkIdentError("overrides_yaml: settings overrides are not supported by the service yet")
    if str(arm).strip():
        name = request_arm(arm)
    elif gravity:
        name = ""  # the side is read from the data's name, as the CLI does
    else:
        raise DvrkIdentError(f"no arm given: expected one of {', '.join(request_names())} (any case)")
    estimators = arm_spec(name).estimators if name else (method,)  # which apply: the arm registry's
    if gravity and method not in estimators:
        sides = [n for spec in mlse_arms() for n in spec.names]
        raise DvrkIdentError(f"{method} fits the MTM gravity compensation: arm {name} is not an MTM "
                             f"(use {', '.join(sides)}, or MTM to take the side from the data)")
    if method not in estimators:
        raise DvrkIdentError(f"method {method}: not for the {name} (its methods: {', '.join(estimators)})")
    if not data_files:
        raise DvrkIdentError("no data_files given")
    if gravity and len(data_files) != 1:
        raise DvrkIdentError(f"{method} takes one pose-grid bag or CUHK directory")
    files = [readable_data_path(f, data_directory) for f in data_files]
    out = output_directory_within(output_base, output_directory)
    return IdentifyPlan(arm=name, method=method, data_files=files, data_format=str(data_format).strip() or None,
                        output_directory=out)


def canonical_summary(summary: str, arm: str) -> str:
    """A job's one-line summary with its leading arm or model name (``psm ols: ...``) given canonically."""
    if not arm:
        return summary
    first, _, rest = summary.partition(" ")
    if first.upper() in (arm, arm[:3]):
        return f"{arm} {rest}" if rest else arm
    return f"{arm}: {summary}"
