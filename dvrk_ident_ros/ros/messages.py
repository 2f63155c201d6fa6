"""Message helpers: arm names, JointState filling, the crtk_msgs package where it is installed."""
from __future__ import annotations

from collections.abc import Sequence

from dvrk_ident_ros.arm.registry import canonical_arm


def check_arm_name(arm: str) -> str:
    """The canonical dVRK arm name (MTML, MTMR, PSM1..3) of ``arm``, given in any case."""
    return canonical_arm(arm)


def fill_joint_state(msg, stamp, names: Sequence[str], position=None, velocity=None, effort=None):
    """Fill a sensor_msgs/JointState in place (lists of floats; None leaves the field empty)."""
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [] if position is None else [float(x) for x in position]
    msg.velocity = [] if velocity is None else [float(x) for x in velocity]
    msg.effort = [] if effort is None else [float(x) for x in effort]
    return msg


def crtk_messages():
    """``crtk_msgs.msg`` (OperatingState, StringStamped), or None where the package is absent."""
    try:
        from crtk_msgs import msg
    except ImportError:
        return None
    return msg
