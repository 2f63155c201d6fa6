"""What a play request plays: its file found, loaded and checked against the arm's limits (ROS-free).

A Fourier trajectory is checked against the excitation limits (as ``dvrk-ident trajectory check``), a pose
grid against what the arm reaches (``hardware``); :mod:`dvrk_ident_ros.excitation.playback` checks the whole
plan at 1 kHz before any motion. A file that cannot be played is refused at once with a DataError
(SafetyError beyond the limits) naming it, before the player waits for anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import GRID_FORMAT, load_grid, load_trajectory
from dvrk_ident_ros.excitation.holds import HOLDS_KIND
from dvrk_ident_ros.excitation.playback import FourierPlayback, GridPlayback
from dvrk_ident_ros.files import read_document, resolve_package_file
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.safety import CommandChecker


@dataclass(frozen=True)
class PlanOptions:
    """How files are played: ``periods`` of a Fourier trajectory (0: the file's), the peak joint speed of its
    ramp-in; every ``pose_stride``-th pose of a grid's sweeps, every ``sweep_stride``-th sweep of each joint."""

    periods: int = 0
    ramp_speed: float = 0.2
    pose_stride: int = 1
    sweep_stride: int = 1


@dataclass(frozen=True)
class LoadedPlan:
    """A plan ready to start: ``kind`` "fourier" or "grid", ``path`` the file it came from."""

    plan: FourierPlayback | GridPlayback
    kind: str
    path: str


class PlanLoader:
    """One arm's plans: its model, and the limits its trajectories and its pose grids are checked against."""

    def __init__(self, arm: str, options: PlanOptions):
        self.arm = arm
        self.options = options
        self.spec = arm_spec(arm)  # the arm family's traits (jaw, pose grids: the arm registry)
        self.model = load_model(self.spec.model)
        variant = self.spec.variant(arm)
        self.checker = CommandChecker(self.model, variant)  # excitation limits (as `trajectory check`)
        self.grid_checker = CommandChecker(self.model, variant, section="hardware")  # pose grids

    def load(self, path: str, speed_scale: float) -> LoadedPlan:
        """Find the file (:func:`resolve_package_file`: absolute, relative to the working directory, or in the
        package's share), load it and check its plan."""
        resolved = resolve_package_file(path, "trajectory file")
        plan, kind = self._plan(resolved, speed_scale)
        return LoadedPlan(plan, kind, str(resolved))

    def _plan(self, path: Path, speed_scale: float) -> tuple[FourierPlayback | GridPlayback, str]:
        raw = read_document(path)
        options = self.options
        if isinstance(raw, dict) and raw.get("format") == GRID_FORMAT:
            if not self.spec.gc_fits and raw.get("kind") != HOLDS_KIND:  # MLSE grids collect an MTM's gc fit
                raise DataError(f"{path}: MLSE pose grids are for the MTMs, not the {self.arm} (static holds for "
                                f"its gravity refit: dvrk-ident trajectory holds --arm {self.arm})")
            grid = load_grid(path, arm=self.arm)
            return GridPlayback(grid, self.grid_checker, pose_stride=options.pose_stride,
                                sweep_stride=options.sweep_stride), "grid"
        trajectory, meta = load_trajectory(path, arm=self.spec.model, joints=self.model.dof)
        try:
            periods = options.periods or int(meta.get("periods") or 1)
        except (TypeError, ValueError):
            raise DataError(f"{path}: periods {meta.get('periods')!r} is not a whole number") from None
        return FourierPlayback(trajectory, self.model, self.checker, periods=periods, speed_scale=speed_scale,
                               ramp_speed=options.ramp_speed), "fourier"


def cannot_play(path: str, exc: Exception) -> str:
    """The log line for a file that cannot be played, naming it once (the loaders' messages name it)."""
    message = str(exc)
    name = Path(str(path).strip()).name
    return f"cannot play: {message}" if name and name in message else f"cannot play {path}: {message}"
