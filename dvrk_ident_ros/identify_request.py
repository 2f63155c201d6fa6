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

from dvrk_ident_ros.arms import ARM_NAMES, canonical_arm
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.request_paths import output_directory_within, readable_data_path

METHODS = ("sdp", "wls", "ols", "mlse")
#: Arm families a request may name instead of one arm (the built-in models are per family).
FAMILIES = ("MTM", "PSM")
MTM_SIDES = ("MTML", "MTMR")


def request_arm(name: str) -> str:
    """The canonical name of a request's arm: MTML, MTMR, PSM1..3, or a family (MTM, PSM); any case."""
    text = str(name).strip().upper()
    if text in FAMILIES:
        return text
    try:
        return canonical_arm(name)
    except DvrkIdentError:
        raise DvrkIdentError(f"unknown arm {name!r}: expected one of {', '.join(ARM_NAMES + FAMILIES)} "
                             "(any case)") from None


@dataclass(frozen=True)
class IdentifyPlan:
    arm: str                 # MTML..PSM3, MTM or PSM; "" for mlse with the side taken from the data
    method: str              # sdp | wls | ols | mlse
    data_files: list[Path]   # absolute, checked readable
    data_format: str | None  # None: detect
    output_directory: Path   # absolute, inside the node's output_directory; not created yet

    @property
    def family(self) -> str:
        """'mtm' or 'psm': the built-in model the job uses."""
        return self.arm[:3].lower() if self.arm else "mtm"

    @property
    def mtm_side(self) -> str | None:
        """MTML/MTMR for mlse, or None to take the side from the data."""
        return self.arm if self.arm in MTM_SIDES else None

    def result_file(self, stamp: str) -> Path:
        """Where the job writes its result (named with the canonical arm)."""
        if self.method == "mlse":
            return self.output_directory / f"gc-{self.arm or 'MTM'}-{stamp}.json"
        return self.output_directory / f"{self.arm}-{self.method}-{stamp}.json"

    def describe(self) -> str:
        names = ", ".join(str(f) for f in self.data_files)
        return f"{self.method} for {self.arm or 'MTM (side from the data)'} on {names}"


def plan_request(*, arm: str, method: str, data_files: Sequence[str], data_format: str = "", model_file: str = "",
                 overrides_yaml: str = "", output_directory: str = "", output_base: str | Path,
                 data_directory: str | Path | None = None) -> IdentifyPlan:
    """Check a request (arm, method, data paths, output directory) and return what to run."""
    method = str(method).strip().lower() or "sdp"
    if method not in METHODS:
        raise DvrkIdentError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    if model_file:
        raise DvrkIdentError("model_file: custom arm descriptions are not supported by the service yet; "
                             "use the built-in mtm/psm")
    if overrides_yaml:
        raise DvrkIdentError("overrides_yaml: settings overrides are not supported by the service yet")
    if str(arm).strip():
        name = request_arm(arm)
    elif method == "mlse":
        name = ""  # the side is read from the data's name, as the CLI does
    else:
        raise DvrkIdentError(f"no arm given: expected one of {', '.join(ARM_NAMES + FAMILIES)} (any case)")
    if method == "mlse" and name and not name.startswith("MTM"):
        raise DvrkIdentError(f"mlse fits the MTM gravity compensation: arm {name} is not an MTM "
                             f"(use {', '.join(MTM_SIDES)}, or MTM to take the side from the data)")
    if not data_files:
        raise DvrkIdentError("no data_files given")
    if method == "mlse" and len(data_files) != 1:
        raise DvrkIdentError("mlse takes one pose-grid bag or CUHK directory")
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
