"""A play request of the trajectory player and the decisions :mod:`dvrk_ident_ros.excitation.player` returns
for it (ROS-free): what to log, send, publish, and how the run ends.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.excitation.playback import FourierPlayback, GridPlayback, Setpoint, TrackingMonitor
from dvrk_ident_ros.excitation.streaming import StreamClock


class PlayOutcome(IntEnum):
    """How a play ended (``PlayTrajectory.Result.OUTCOME_<name>``; a test checks the two agree)."""

    SUCCEEDED = 0
    CANCELED = 1
    ABORTED_TRACKING = 2  # tracking error above the limit (or a pose not reached)
    ABORTED_STALE = 3  # measured_js stopped arriving
    REJECTED_LIMITS = 4  # a command would have left the limits
    FAILED = 5  # unreadable file, no recorder, ...
    ARM_NOT_READY = 6  # not ready within ready_timeout, or no longer ready mid-run


@dataclass(frozen=True)
class PlayerConfig:
    """The player's rates (Hz) and timeouts (s), and whether it homes the arm itself."""

    stream_rate: float
    stale_timeout: float
    ready_timeout: float
    recorder_timeout: float
    home_arm: bool = False


@dataclass(frozen=True)
class LogLine:
    """A line for the node's log."""

    text: str
    warning: bool = False  # else info


@dataclass(frozen=True)
class Finish:
    """End the run with this outcome and message."""

    outcome: PlayOutcome
    message: str


def arm_not_ready(reason: str) -> Finish:
    """The end of a run whose arm stopped being ready (nothing is sent after it)."""
    return Finish(PlayOutcome.ARM_NOT_READY, f"aborted: the arm is no longer ready: {reason}")


@dataclass
class Session:
    """One play request: waits until the arm is ready (``started`` false, nothing sent), then plays."""

    plan: FourierPlayback | GridPlayback
    kind: str  # "fourier" | "grid"
    trajectory_file: str
    requested: float  # steady time of the request: ready_timeout runs from here
    monitor: TrackingMonitor
    started: bool = False
    start: float = 0.0  # node-clock time the motion began
    duration: float = 0.0
    ready_since: float | None = None  # steady time the arm was first ready: recorder_timeout runs from here
    waiting_for: str = ""  # the last reason logged while waiting
    reason: str = ""  # the current reason for waiting, and since when (steady)
    reason_since: float = 0.0
    commands_sent: int = 0
    last_servo: np.ndarray | None = None  # the last servo_jp position sent (a Fourier stream)
    clock: StreamClock | None = None  # the Fourier stream's timing
    max_error: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per joint, over the tracking checks
    rate_checked: bool = False
    ticks: int = 0
    last_tick: float | None = None  # node-clock time of the previous tick while playing
    resumed_at: float | None = None  # node-clock time the player last came back from a stall of its own
    last_phase: PlayerPhase | None = None  # the last status's (sent again at once when it changes)
    skipped: list[str] = field(default_factory=list)

    @property
    def stream_clock(self) -> StreamClock:
        """``clock``, set when a Fourier plan starts."""
        if self.clock is None:
            raise DvrkIdentError(f"{self.trajectory_file}: no stream clock (not a started Fourier trajectory)")
        return self.clock


@dataclass(frozen=True)
class Waiting:
    """One tick of a request not started: log ``lines``; ``started``: the motion begins (stream at
    stream_rate); ``finish``: refused."""

    lines: tuple[LogLine, ...] = ()
    started: bool = False
    finish: Finish | None = None


@dataclass(frozen=True)
class Tick:
    """One tick of a run: log ``stall`` (throttled) and ``lines``; send ``servo`` (servo_jp with its velocity,
    stamped with the tick's time) or ``move_goal`` (move_jp); then end the run (``finish``) or publish the
    player's status for ``status``."""

    stall: str = ""
    lines: tuple[LogLine, ...] = ()
    servo: Setpoint | None = None
    move_goal: np.ndarray | None = None
    finish: Finish | None = None
    status: Setpoint | None = None


@dataclass(frozen=True)
class Ending:
    """A run ended: ``message`` for the result, ``line`` for the log (an error when ``failed``), ``rest`` the
    last servo_jp to send at velocity 0 (None: none), the node's exit status with autostart."""

    session: Session
    outcome: PlayOutcome
    message: str
    duration: float
    rest: np.ndarray | None
    line: str
    failed: bool
    exit_code: int

    @property
    def phase(self) -> PlayerPhase:
        return PlayerPhase.DONE if self.outcome == PlayOutcome.SUCCEEDED else PlayerPhase.ABORTED
