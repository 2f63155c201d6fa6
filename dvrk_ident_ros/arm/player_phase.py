"""The trajectory player's phases (ROS-free).

``PlayerStatus.phase`` and the ``PlayTrajectory`` feedback's ``phase`` carry
these values (msg/PlayerStatus.msg ``PHASE_*``; a test checks the two agree):
the recorder logs the status next to the arm's state, so that a bag says which
samples are data (PLAYING, SAMPLING) and how each run ended (DONE, ABORTED).
"""
from __future__ import annotations

from enum import IntEnum


class PlayerPhase(IntEnum):
    """What the trajectory player is doing (``PlayerStatus.PHASE_<name>``)."""

    IDLE = 0  # no run under way
    RAMP_IN = 1  # Fourier trajectory: moving from the current pose to its start
    PLAYING = 2  # Fourier trajectory streaming: its samples are data
    MOVING = 3  # pose grid: moving to the next pose
    SETTLING = 4  # pose grid: waiting for the arm to settle
    SAMPLING = 5  # pose grid: the samples of this window are data
    # 6 is not used (a ramp-out phase that was never sent)
    DONE = 7  # the run played to its end
    ABORTED = 8  # the run stopped early, or was refused before any motion


#: The phases whose samples are data.
DATA_PHASES = frozenset({PlayerPhase.PLAYING, PlayerPhase.SAMPLING})
#: The phases in which the player moves the arm (or holds it where it moved it).
MOTION_PHASES = DATA_PHASES | {PlayerPhase.RAMP_IN, PlayerPhase.MOVING, PlayerPhase.SETTLING}


def phase_name(phase: int | None) -> str:
    """The phase's name ("PLAYING"); "none" for None, the number itself for a value no phase has."""
    if phase is None:
        return "none"
    try:
        return PlayerPhase(phase).name
    except ValueError:
        return str(phase)
