"""dVRK arm names and the per-arm topics of this package (ROS-free).

Input is case-insensitive (``psm1``, ``Psm1``); output is always the
canonical name the dVRK uses in its topics (``PSM1``). Every node, launch
file and service reads arm names through :func:`canonical_arm`.
"""
from __future__ import annotations

from dvrk_ident_ros.errors import DvrkIdentError

#: The arms of a dVRK system, as named in the console's topics.
ARM_NAMES: tuple[str, ...] = ("MTML", "MTMR", "PSM1", "PSM2", "PSM3")

#: The package's own topics live under this namespace, one sub-namespace per arm.
NAMESPACE = "/dvrk_ident"


def canonical_arm(name: str) -> str:
    """The canonical dVRK arm name of ``name`` (case and surrounding blanks ignored)."""
    canonical = str(name).strip().upper()
    if canonical not in ARM_NAMES:
        raise DvrkIdentError(f"unknown arm {name!r}: expected one of {', '.join(ARM_NAMES)} (any case)")
    return canonical


def arm_family(name: str) -> str:
    """'mtm' or 'psm' for a dVRK arm name."""
    return canonical_arm(name)[:3].lower()


def player_status_topic(arm: str) -> str:
    """Where the trajectory player of ``arm`` publishes its PlayerStatus."""
    return f"{NAMESPACE}/{canonical_arm(arm)}/player_status"


def recorder_status_topic(arm: str) -> str:
    """Where the recorder of ``arm`` publishes its RecorderStatus."""
    return f"{NAMESPACE}/{canonical_arm(arm)}/recorder_status"
