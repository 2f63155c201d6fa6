"""The whole gc job on one arm, in order (ROS-free): play the pose grid and record it, fit the gc file,
hold the arm with it at poses away from the grid, report the drift.

The node ``gc_calibration`` (and ``launch/gc_calibration.launch.py``) runs :func:`run_calibration`:

1. **collect**: the nodes of ``collect.launch.py`` (recorder with ``expect_player``, trajectory player with
   the grid, autostart) as a :class:`~dvrk_ident_ros.jobs.launcher.LaunchPlan`; the bag is closed when the
   plan has ended (the recorder stops last, after the player).
2. **fit**: :func:`~dvrk_ident_ros.jobs.offline.gc_fit_job` on that bag (the path of ``dvrk-ident gc fit``),
   written as ``gc-<ARM>-<SN>.json``.
3. **hold** (Lin 2019, section V-C): for each of ``hold_poses`` poses inside the recorded range but as far
   as possible from every grid pose, the arm is moved there (move_jp), then held by the
   ``gravity_compensation`` node with the new file for ``hold_time``; the drift is the joint motion and
   the tip's displacement (mm) and rotation (deg) between the first command and ``hold_time`` later.
4. **report**: CSV, text report and a plot (matplotlib) beside the gc file.

The ROS side (moving the arm, reading its state) is an :class:`ArmPort` the node gives.
Exit statuses: 0 every step done (and the drift within ``max_tip_drift`` when set); 2 refused before
any motion (an arm without a gc fit, no grid, a bad setting); otherwise the failed step's (the collect's
status, 1 for the fit, the hold, a drift over the limit, a stop request).
"""
from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm
from dvrk_ident_ros.errors import CalibrationRefusedError, DataError, DvrkIdentError, StepFailedError
from dvrk_ident_ros.files import resolve_package_file
from dvrk_ident_ros.gc.runtime.takeover_guard import GUARD_STOP
from dvrk_ident_ros.jobs.collection import DEFAULTS, DONE, FAILED, GridCollection, StagedJob, checked_serial
from dvrk_ident_ros.jobs.hold_test import Drift, drift_of, hold_poses, limits_check, tip_function
from dvrk_ident_ros.parameters.settings import GcCalibrationSettings


@dataclass(frozen=True)
class CalibrationSettings:
    """What the job needs: the node's parameters (:func:`settings_from_parameters`), resolved and checked."""

    arm: str
    serial: str
    grid_file: Path
    output_directory: Path
    home_arm: bool = DEFAULTS.home_arm
    pose_stride: int = DEFAULTS.pose_stride
    sweep_stride: int = DEFAULTS.sweep_stride
    method: str = DEFAULTS.method  # "" = the fitting job's default estimator
    orders: dict[int, int] | str | None = None  # None: the default; "auto": cross-validated
    effort: str = DEFAULTS.effort
    hold_poses: int = DEFAULTS.hold_poses
    hold_time: float = DEFAULTS.hold_time
    seed: int = DEFAULTS.seed
    max_tip_drift: float = DEFAULTS.max_tip_drift  # mm; 0 = report only
    collect_timeout: float = DEFAULTS.collect_timeout
    use_sim_time: bool = False  # the arm publishes /clock (sim:=true): every node the job starts uses it

    @property
    def stem(self) -> str:
        return f"gc-{self.arm}-{self.serial}"

    @property
    def gc_file(self) -> Path:
        return self.output_directory / f"{self.stem}.json"

    @property
    def bag(self) -> Path:
        return self.output_directory / f"{self.arm}-{self.serial}-grid"

    @property
    def logs(self) -> Path:
        return self.output_directory / "logs"


def check_gc_arm(arm: str) -> str:
    """The canonical arm, if its family has a gc fit (the arm registry's estimators); else the reason."""
    name = canonical_arm(arm)
    spec = arm_spec(name)
    if not spec.gc_fits:
        raise CalibrationRefusedError(f"{name} ({spec.family}) has no gc fit: its family's estimators are "
                                 f"{', '.join(spec.estimators)}, none fits gravity from a pose grid "
                                 "(dvrk.estimators of its description), and no console kinematic_gc chain")
    return name


def check_job(arm: str, grid_file: str, parameter_file: str, hold_only: bool = False) -> dict[str, str]:
    """What a launch resolves before any node starts: an MTM's pose grid, a PSM's or an ECM's identified parameter
    file (jobs/console_calibration.py), as paths; :class:`CalibrationRefusedError` with the reason else."""
    from dvrk_ident_ros.jobs.console_calibration import parameter_path

    try:
        name = canonical_arm(arm)
        if arm_spec(name).console_gc is not None:
            return {"grid_file": grid_file,
                    "parameter_file": parameter_file if hold_only else str(parameter_path(parameter_file))}
    except CalibrationRefusedError:
        raise
    except DvrkIdentError as exc:
        raise CalibrationRefusedError(str(exc)) from exc
    name = check_gc_arm(name)
    return {"grid_file": str(grid_path(name, grid_file)), "parameter_file": parameter_file}


def parse_orders(text: str) -> dict[int, int] | str | None:
    """"" (the default orders), "auto" or six integers "4,1,4,4,4,4" (joints 1-6), as ``dvrk-ident gc fit``."""
    text = text.strip()
    if not text or text == "auto":
        return text or None
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError as exc:
        raise CalibrationRefusedError(f"orders {text!r}: expected six integers, e.g. 4,1,4,4,4,4, or auto") from exc
    if len(values) != 6 or min(values) < 0:
        raise CalibrationRefusedError(f"orders {text!r}: expected six integers >= 0 (joints 1-6)")
    return dict(zip(range(1, 7), values, strict=True))


def grid_path(arm: str, given: str) -> Path:
    """The pose grid: ``given`` by the package's one rule (absolute, working directory, package share),
    else ``config/grids/<arm>_gc_grid.yaml``; found nowhere: :class:`CalibrationRefusedError`."""
    try:
        return resolve_package_file(given.strip() or f"config/grids/{arm.lower()}_gc_grid.yaml", "pose grid")
    except DataError as exc:
        raise CalibrationRefusedError(f"{exc} (give grid_file, e.g. from `dvrk-ident grid make`)") from exc


def settings_from_parameters(params: GcCalibrationSettings, use_sim_time: bool = False) -> CalibrationSettings:
    """The node's parameters -> :class:`CalibrationSettings` (:class:`CalibrationRefusedError` if unusable)."""
    try:
        arm = check_gc_arm(params.arm)
    except CalibrationRefusedError:
        raise
    except DvrkIdentError as exc:
        raise CalibrationRefusedError(str(exc)) from exc
    return CalibrationSettings(
        arm=arm, serial=checked_serial(params.serial, f"gc-{arm}-<serial>.json"),
        grid_file=grid_path(arm, params.grid_file), output_directory=Path(params.output_directory).absolute(),
        home_arm=params.home_arm, pose_stride=params.pose_stride, sweep_stride=params.sweep_stride,
        method=params.method.strip(), orders=parse_orders(params.orders), effort=params.effort,
        hold_poses=params.hold_poses, hold_time=params.hold_time, seed=params.seed,
        max_tip_drift=params.max_tip_drift, collect_timeout=params.collect_timeout, use_sim_time=use_sim_time)


class ArmPort(Protocol):
    """What the job needs from the arm's ROS topics (the node implements it)."""

    def home(self, timeout: float) -> float: ...  # enable + home unless ready; seconds taken

    def wait_ready(self, timeout: float) -> None: ...  # DvrkIdentError with the reason when not ready

    def reach(self, goal: np.ndarray) -> bool: ...  # move_jp until there (only to a ready arm: else StepFailedError)

    def begin_hold(self) -> None: ...  # forget the first servo_jf seen, record measured_js from now

    def effort_started(self) -> float | None: ...  # stamp of the first servo_jf since begin_hold

    def recorded_until(self) -> float: ...  # stamp of the newest recorded state

    def position_at(self, stamp: float) -> np.ndarray: ...

    def end_hold(self) -> None: ...

    def progress(self) -> str | None: ...  # the player's progress, in words


# -- hold poses and drift -------------------------------------------------------------------------------------------
@dataclass
class CalibrationReport:
    """Figures of a run, as the report files give them."""

    settings: CalibrationSettings
    fit_summary: str = ""
    poses_recorded: int = 0
    drifts: list[Drift] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    joint_names: tuple[str, ...] = ()

    def summary(self) -> str:
        if not self.drifts:
            return "no pose held"
        tip = np.array([d.tip_mm for d in self.drifts])
        deg = np.array([d.tip_deg for d in self.drifts])
        joint = np.array([d.joint for d in self.drifts])
        worst = int(np.argmax(joint.max(axis=0)))
        name = self.joint_names[worst] if worst < len(self.joint_names) else f"joint {worst + 1}"
        stopped = sum(d.stopped for d in self.drifts)
        return (f"{len(self.drifts)} poses held {self.settings.hold_time:g} s: tip drift mean {tip.mean():.1f} mm "
                f"(max {tip.max():.1f}), rotation mean {deg.mean():.2f} deg (max {deg.max():.2f}); joint drift max "
                f"{joint.max():.4f} rad ({name}), mean {joint.mean():.4f} rad"
                + (f"; at {stopped} of them the compensation's take-over guard stopped the file, which pulled the "
                   "arm away: it does not hold this arm there (a denser grid, or its range, covers those poses)"
                   if stopped else ""))

    def write(self) -> list[Path]:
        """``<stem>-hold.csv``, ``<stem>-report.txt``, ``<stem>-hold.png``; the files written."""
        s = self.settings
        base = s.output_directory / s.stem
        csv_path = base.with_name(base.name + "-hold.csv")
        n = len(self.drifts[0].q_start) if self.drifts else len(self.joint_names)
        names = list(self.joint_names) or [f"joint{i + 1}" for i in range(n)]
        with open(csv_path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["pose"] + [f"start_{j}" for j in names] + [f"end_{j}" for j in names]
                            + [f"drift_{j}" for j in names] + ["tip_mm", "tip_deg", "stopped_by_guard"])
            for k, d in enumerate(self.drifts):
                writer.writerow([k] + [f"{v:.6f}" for v in (*d.q_start, *d.q_end, *d.joint)]
                                + [f"{d.tip_mm:.3f}", f"{d.tip_deg:.4f}", int(d.stopped)])
        text_path = base.with_name(base.name + "-report.txt")
        lines = [f"gc calibration of {s.arm} (serial {s.serial})",
                 f"grid: {s.grid_file} (pose_stride {s.pose_stride}, sweep_stride {s.sweep_stride}); "
                 f"{self.poses_recorded} poses recorded in {s.bag}",
                 f"fit: {self.fit_summary}", f"gc file: {s.gc_file}",
                 f"hold: {self.summary()}" + (f"; {len(self.skipped)} pose(s) not reached: skipped"
                                              if self.skipped else ""),
                 "  (Lin 2019, real MTM: 4.6 mm, 2.31 deg)",
                 "times: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items())]
        text_path.write_text("\n".join(lines) + "\n")
        written = [csv_path, text_path]
        if self.drifts:
            written.append(self._plot(base.with_name(base.name + "-hold.png"), names))
        return written

    def _plot(self, path: Path, names: list[str]) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        joint = np.array([d.joint for d in self.drifts])
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
        poses = np.arange(len(self.drifts))
        left.bar(poses, [d.tip_mm for d in self.drifts])
        left.set(xlabel="hold pose", ylabel="tip drift (mm)", title=f"{self.settings.hold_time:g} s holds")
        for j, name in enumerate(names[:joint.shape[1]]):
            right.plot(poses, joint[:, j], "o-", label=name)
        right.set(xlabel="hold pose", ylabel="|joint drift| (rad)")
        for axis in (left, right):
            axis.set_xticks(poses, [str(k + 1) for k in poses])
        right.legend(fontsize=7)
        fig.suptitle(f"{self.settings.stem}: drift under the new gc file")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


# -- the job --------------------------------------------------------------------------------------------------------


@dataclass
class Calibration(StagedJob):
    """One run of the job; :meth:`run` returns the exit status. ``say``: progress lines."""

    settings: CalibrationSettings
    port: ArmPort

    def run(self) -> int:
        s = self.settings
        report = CalibrationReport(s, joint_names=arm_spec(s.arm).joint_names)

        def stages() -> None:
            s.output_directory.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            self.collect()
            report.seconds["collect"] = time.monotonic() - t0
            t0 = time.monotonic()
            report.fit_summary, report.poses_recorded = self.fit()
            report.seconds["fit"] = time.monotonic() - t0
            t0 = time.monotonic()
            report.drifts, report.skipped = self.hold()
            report.seconds["hold"] = time.monotonic() - t0

        failed = self._failed(stages)
        if failed is not None:
            return failed
        try:
            files = report.write()
        except OSError as exc:
            self.say(f"error: report not written: {exc}")
            return FAILED
        self.say(f"{s.arm}: {report.summary()}")
        self.say("report: " + ", ".join(str(f) for f in files))
        if s.max_tip_drift > 0 and any(d.tip_mm > s.max_tip_drift for d in report.drifts):
            self.say(f"error: tip drift over max_tip_drift {s.max_tip_drift:g} mm: the gc file is kept, check it")
            return FAILED
        return DONE

    def collect(self) -> None:
        """Stage 1: the collect plan (recorder, player with the grid) until the player is done."""
        s = self.settings
        self._check_stop()
        orders = ("default" if s.orders is None else s.orders if isinstance(s.orders, str)
                  else ",".join(str(s.orders[j]) for j in sorted(s.orders)))
        self.say(f"[1/3] playing {s.grid_file.name} (pose_stride {s.pose_stride}, sweep_stride {s.sweep_stride}; "
                 f"fit orders {orders}) on {s.arm} and recording it to {s.bag}")
        self._collect(GridCollection(s.arm, s.grid_file, s.bag, s.logs, self.env, s.use_sim_time, s.home_arm,
                                     s.pose_stride, s.sweep_stride, s.collect_timeout), lambda: self.port.progress())

    def fit(self) -> tuple[str, int]:
        """Stage 2: the gc fit on the closed bag -> gc-<ARM>-<SN>.json."""
        from dvrk_ident_ros.jobs.offline import gc_fit_job

        s = self.settings
        self.say(f"[2/3] fitting {s.gc_file.name} from {s.bag.name}")
        # the same fit as `dvrk-ident gc fit` on this bag: every pose, each weighed by its cable's recorded state
        options: dict = {"serial": s.serial, "orders": s.orders, "effort": s.effort}
        if s.method:
            options["method"] = s.method
        try:
            outcome = gc_fit_job(s.bag, s.arm, s.gc_file, **options)
        except DvrkIdentError as exc:
            raise StepFailedError(f"fit: {exc}") from exc
        self.say(f"      {outcome.summary}")
        self.say(f"      written to {outcome.result_file}")
        from dvrk_ident_ros.gc.fitting.loaders import load_poses

        return outcome.summary, len(load_poses(s.bag, effort=s.effort).q)

    def hold(self) -> tuple[list[Drift], list[int]]:
        """Stage 3: hold the arm with the new file at poses away from the grid; the drift of each."""
        from dvrk_ident_ros.gc.fitting.loaders import load_poses
        from dvrk_ident_ros.jobs.launcher import NodeProcess, wait_for

        s = self.settings
        self._check_stop()
        if s.hold_poses == 0:
            return [], []
        data = load_poses(s.bag, effort=s.effort)
        goals = hold_poses(data.q, (data.q.min(0), data.q.max(0)), s.hold_poses, np.random.default_rng(s.seed),
                           limits_check(s.arm))
        tip = tip_function(s.arm)
        self.say(f"[3/3] holding {s.arm} with {s.gc_file.name} at {len(goals)} poses away from the grid, "
                 f"{s.hold_time:g} s each")
        if s.home_arm:
            self.port.home(120.0)
        else:
            self.port.wait_ready(60.0)
        drifts, skipped = [], []
        for k, goal in enumerate(goals):
            self._check_stop()
            if not self.port.reach(goal):
                self.say(f"      pose {k + 1} of {len(goals)}: not reached, skipped")
                skipped.append(k)
                continue
            time.sleep(0.5)
            self.port.begin_hold()
            wait_for(lambda: self.port.recorded_until() > -math.inf, 10.0, "the arm's state")
            rested_at = self.port.recorded_until()  # where the arm rests before the compensation starts
            with NodeProcess("gravity_compensation", {"arm": s.arm, "parameter_file": str(s.gc_file),
                                                      "ramp_in_time": 0.0, "use_sim_time": s.use_sim_time},
                             log_dir=s.logs, env=self.env,
                             name=f"gravity_compensation_{s.arm}_hold{k + 1}") as gc:
                try:
                    wait_for(lambda: self.port.effort_started() is not None or not gc.running, 30.0,
                             "the compensation's first servo_jf")
                    # ended already: the take-over guard may stop a file within a few samples, before this client
                    # has seen one of them (its exit status and reason are read below)
                    ended = not gc.running
                    started = self.port.effort_started()
                    if started is None and not ended:
                        raise StepFailedError("hold: no servo_jf from the compensation")
                    t0 = rested_at if started is None else started
                    end = t0 + s.hold_time
                    wait_for(lambda end=end: self.port.recorded_until() >= end or self._stop.is_set(),
                             s.hold_time + 30.0, f"{s.hold_time:g} s of state under compensation")
                    self._check_stop()
                finally:
                    code = gc.stop()
            self.port.end_hold()
            stopped = code == 2 and GUARD_STOP in gc.tail(20)
            if code != 0 and not stopped:
                raise StepFailedError(f"hold: the gravity compensation ended with status {code} (log {gc.log_path}: "
                                      f"{gc.tail(3)})")
            drift = replace(drift_of(self.port.position_at(t0), self.port.position_at(t0 + s.hold_time), tip),
                            stopped=stopped)
            drifts.append(drift)
            self.say(f"      pose {k + 1} of {len(goals)}: tip drift {drift.tip_mm:.1f} mm, {drift.tip_deg:.2f} deg; "
                     f"largest joint drift {drift.joint.max():.4f} rad"
                     + ("; stopped by the compensation's take-over guard (the file pulled the arm away)"
                        if stopped else ""))
        if not drifts:
            raise StepFailedError("hold: no pose was reached")
        return drifts, skipped
