"""The outcome of a recording made for a trajectory player (ROS-free): from the phases of the player of the
bag's own arm (:class:`PlayerRuns`), :func:`recording_outcome` says complete, or clearly not (the bag renamed
``-FAILED`` or ``-INCOMPLETE``, or removed when nothing was recorded inside a playing window)."""
from __future__ import annotations

from dataclasses import dataclass

from dvrk_ident_ros.arm.player_phase import DATA_PHASES, MOTION_PHASES, PlayerPhase, phase_name


class PlayerRuns:
    """The runs of the trajectory player of the recorder's own arm, from its PlayerStatus phases in order:
    whether it ever moved the arm (any of :data:`MOTION_PHASES`), whether it ever played (a PLAYING or
    SAMPLING status: data) and how its runs ended."""

    def __init__(self) -> None:
        self.statuses = 0
        self.moved = False
        self.played = False
        self.completed = 0  # runs that moved the arm and ended DONE
        self.aborted = 0  # runs that moved the arm and ended ABORTED (one that ends ABORTED before was refused)
        self.last_phase: int | None = None
        self._in_run = False  # a run moved the arm since the last DONE/ABORTED
        self._last_motion: int | None = None  # the last motion phase of the current or last run

    def add(self, phase: int) -> None:
        phase = int(phase)
        self.statuses += 1
        self.last_phase = phase
        if phase in MOTION_PHASES:
            self.moved = self._in_run = True
            self.played = self.played or phase in DATA_PHASES
            self._last_motion = phase
        elif phase == PlayerPhase.DONE:
            self.completed += self._in_run
            self._in_run = False
        elif phase == PlayerPhase.ABORTED:
            self.aborted += self._in_run
            self._in_run = False

    @property
    def running(self) -> bool:
        """A run moved the arm and has not ended (no DONE or ABORTED after its motion)."""
        return self._in_run

    @property
    def last_motion(self) -> str:
        """The name of the last phase in which the player moved the arm ("none" before any)."""
        return phase_name(self._last_motion)


#: Suffixes of bags that are not a good recording (appended to the bag directory's name).
FAILED_SUFFIX, INCOMPLETE_SUFFIX = "-FAILED", "-INCOMPLETE"


@dataclass(frozen=True)
class Outcome:
    """What became of a recording: ``kind`` (complete, recorded, failed, incomplete, empty), why, the
    suffix its directory gets ("" = its name as given) and whether it is kept at all."""

    kind: str
    reason: str
    suffix: str = ""
    keep: bool = True


def recording_outcome(runs: PlayerRuns, expect_player: bool, arm: str) -> Outcome:
    """The outcome of a recording from its own arm's player's runs.

    - a run that played and ended DONE: complete;
    - moved the arm, and every run that moved it aborted: failed (``-FAILED``), also when the run aborted
      before its data (during its ramp-in or its first move): the bag holds the arm's motion;
    - moved the arm, stopped while a run was still under way (the recorder or the player stopped):
      incomplete (``-INCOMPLETE``);
    - never moved the arm, with ``expect_player`` (collect.launch.py: a player was started for this bag):
      empty, the bag is removed (the arm stood still: nothing in it is a run);
    - never moved the arm without ``expect_player`` (the recorder alone, e.g. teleoperation): recorded, kept.
    """
    note = f"; {runs.aborted} run(s) aborted" if runs.aborted else ""
    if runs.completed:
        return Outcome("complete", f"the {arm} player completed {runs.completed} run(s){note}")
    before_data = "" if runs.played else f", before any data (during {runs.last_motion})"
    if runs.moved and not runs.running:
        return Outcome("failed", f"the {arm} player aborted{before_data}: {runs.aborted} run(s) stopped before "
                                 "the end, none completed", FAILED_SUFFIX)
    if runs.moved:
        return Outcome("incomplete", f"the recording stopped while the {arm} player was still running (last "
                                     f"phase {phase_name(runs.last_phase)}){note}", INCOMPLETE_SUFFIX)
    if expect_player:
        what = (f"its last status {phase_name(runs.last_phase)}" if runs.statuses
                else "no status from it")
        return Outcome("empty", f"the {arm} player never moved the arm ({what}): nothing in the bag is a run",
                       keep=False)
    if runs.statuses:
        return Outcome("recorded", f"the {arm} player never moved the arm while recording (a recording without "
                                   "playing windows)")
    return Outcome("recorded", "recorded without a player")
