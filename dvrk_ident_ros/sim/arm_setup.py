"""What the simulated arm's node parameters give the simulated arm (ROS-free): its initial pose and the dVRK
console's gravity chain (``kinematic_gc``)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dvrk_ident_ros.arm.registry import ArmSpec
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.gc.model.console_gc import ConsoleChain, load_chain


def initial_position(values: Sequence[float], spec: ArmSpec, dof: int) -> np.ndarray | None:
    """The arm's initial joints (dVRK space); None (the default, ``[]`` or ``[0.0]``): the arm's home pose."""
    if tuple(values) in ((), (0.0,)):
        return None
    if len(values) == dof:
        return np.asarray(values, dtype=float)
    raise DvrkIdentError(f"initial_position: {len(values)} values, the {spec.family} has {dof} joints")


def console_chain(value: str, spec: ArmSpec, dvrk_version: str) -> ConsoleChain | None:
    """The console's gravity chain: the file named; "" = the console's own default (a dVRK 2.4 Si arm's shipped
    physical file, a Classic ECM's chain with its endoscope's mass, as the console loads it; none for a Classic
    PSM); "none" = none. DvrkIdentError: a chain the console refuses."""
    if value.strip().lower() == "none":
        return None
    if value:
        chain = load_chain(value)
        if spec.console_gc is None:
            raise DvrkIdentError(f"kinematic_gc {value}: the console compensates no {spec.family} with a "
                                 "physical-DH file (PSM and ECM only)")
        expected = len(load_chain(spec.console_gc).links)
        if len(chain.links) != expected:
            raise DvrkIdentError(f"kinematic_gc {value}: {len(chain.links)} links, the {spec.family}'s chain "
                                 f"has {expected} (the console refuses it)")
        return chain
    if spec.console_gc_default is not None and dvrk_version == "2.4":
        return load_chain(spec.console_gc_default)
    return None
