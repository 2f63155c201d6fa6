"""Play a pose grid on an arm and record it to a bag: the nodes of ``collect.launch.py`` (recorder with
``expect_player``, trajectory player with autostart) as one stage of a longer job (ROS-free: the nodes run as
processes). The gc calibrations' first stage (jobs/gc_calibration.py, jobs/console_calibration.py), and what the
two share: their settings' defaults (the node's schema) and the serial number's check."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dvrk_ident_ros.errors import CalibrationRefusedError, DvrkIdentError, StepFailedError
from dvrk_ident_ros.parameters.gc_calibration import SCHEMA
from dvrk_ident_ros.parameters.settings import GcCalibrationSettings

#: The jobs' exit statuses (as the trajectory player's autostart): done, a step failed, refused before any motion.
DONE, FAILED, REFUSED = 0, 1, 2

#: the gc_calibration node's parameter defaults (its schema, parameters/gc_calibration.py): the two calibration
#: jobs' defaults too
DEFAULTS = GcCalibrationSettings.from_values(SCHEMA.defaults())


def checked_serial(serial: str, names: str) -> str:
    """The arm's serial number as it names the job's files (``names``); refused when empty or not a name."""
    serial = serial.strip()
    if not serial or any(c in serial for c in "/\\ "):
        raise CalibrationRefusedError(f"serial {serial!r}: give the arm's serial number (serial:=41878), it names "
                                      f"{names}")
    return serial


@dataclass
class GridCollection:
    """One recording of ``grid_file`` on ``arm`` into ``bag`` (which must not exist); :meth:`run` blocks until
    the player is done and the bag closed, :meth:`request_stop` (another thread) ends it early."""

    arm: str
    grid_file: Path
    bag: Path
    logs: Path
    env: dict[str, str] | None = None
    use_sim_time: bool = False
    home_arm: bool = False
    pose_stride: int = 1
    sweep_stride: int = 1
    timeout: float = 3600.0
    _plan: object | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop.set()
        plan = self._plan
        if plan is not None:
            plan.request_stop(reason)  # type: ignore[attr-defined]

    def run(self, progress: Callable[[], str | None], say: Callable[[str], None], every: float = 5.0) -> None:
        """Start the recorder and the player, report ``progress()`` every ``every`` s, wait for the plan's end;
        StepFailedError (the player's status) when it failed or left no complete bag."""
        from dvrk_ident_ros.jobs.launcher import LaunchPlan, PlannedNode

        if self.bag.exists():
            raise StepFailedError(f"{self.bag} exists: move it away or choose another output_directory", REFUSED)
        # a simulated arm under /clock on an overloaded machine: the player saw /clock run on without measured_js
        # for a fraction of a second; a pose grid is move_jp only, the arm runs its own moves: the player
        # tolerates 2 s there. A real arm keeps the player's own limit (config).
        clock = {"use_sim_time": True} if self.use_sim_time else {}
        sim_player = {"stale_timeout": 2.0} if self.use_sim_time else {}
        nodes = [PlannedNode("recorder", {"arm": self.arm, "bag_path": str(self.bag), "expect_player": True, **clock},
                             name=f"recorder_{self.arm}", stop_timeout=15.0),
                 PlannedNode("trajectory_player", {"arm": self.arm, "trajectory_file": str(self.grid_file),
                                                   "autostart": True, "home_arm": self.home_arm,
                                                   "pose_stride": self.pose_stride,
                                                   "sweep_stride": self.sweep_stride, **clock, **sim_player},
                             name=f"trajectory_player_{self.arm}", required=True)]
        plan = LaunchPlan(f"collect {self.grid_file.name}", nodes, log_dir=self.logs, env=self.env)
        self._plan = plan
        outcome: list = []
        waiter = threading.Thread(target=lambda: outcome.append(self._wait(plan)), daemon=True)
        plan.start()
        if self._stop.is_set():  # a stop requested while the nodes started
            plan.request_stop("stop requested")
        waiter.start()
        last = time.monotonic()
        while waiter.is_alive():
            waiter.join(0.2)
            if time.monotonic() - last >= every:
                last = time.monotonic()
                say(f"      {progress() or 'waiting for the arm and the recorder'}")
        self._plan = None
        result = outcome[0] if outcome else None
        if isinstance(result, Exception):
            raise StepFailedError(f"collect: {result}")
        if result is None:
            raise StepFailedError(f"collect: the plan ended without an outcome (logs in {self.logs})")
        if result.status != 0:
            raise StepFailedError(f"collect failed ({result.reason}; logs in {self.logs})", result.status)
        if self._stop.is_set():
            raise StepFailedError("stopped before the job was done")
        if not (self.bag / "metadata.yaml").is_file():
            raise StepFailedError(f"collect ended but {self.bag} holds no complete bag (logs in {self.logs})")

    def _wait(self, plan):
        try:
            return plan.wait(self.timeout)
        except DvrkIdentError as exc:
            return exc


@dataclass(kw_only=True)
class StagedJob:
    """What the gravity jobs share (jobs/gc_calibration.py, jobs/console_calibration.py): a stop request from another
    thread (a signal), the grid collection stage, and the failure of a stage as an exit status."""

    env: dict[str, str] | None = None
    say: Callable[[str], None] = print
    progress_every: float = 5.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _collection: GridCollection | None = None

    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop.set()
        collection = self._collection
        if collection is not None:
            collection.request_stop(reason)

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise StepFailedError("stopped before the job was done")

    def _collect(self, collection: GridCollection, progress: Callable[[], str | None]) -> None:
        """Run ``collection`` as this job's stage (a stop request ends it)."""
        self._collection = collection
        if self._stop.is_set():
            collection.request_stop("stop requested")
        try:
            collection.run(progress, self.say, self.progress_every)
        finally:
            self._collection = None
        self._check_stop()

    def _failed(self, stages: Callable[[], None]) -> int | None:
        """Run ``stages``: None when done, else the exit status of the one that failed (its reason said)."""
        try:
            stages()
        except StepFailedError as exc:
            self.say(f"error: {exc}")
            return exc.status
        except DvrkIdentError as exc:
            self.say(f"error: {exc}")
            return FAILED
        return None
