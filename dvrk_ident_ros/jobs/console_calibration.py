"""The gravity job on an arm the dVRK 2.4 console compensates itself (PSM, PSM Si, ECM; ``kinematic_gc``), in
order, ROS-free (the node ``gc_calibration`` gives the arm's topics):

1. **holds**: static holds from both sides (``dvrk-ident trajectory holds``' grid) played and recorded
   (:class:`~dvrk_ident_ros.jobs.collection.GridCollection`);
2. **refit**: the identified parameter file's gravity refitted to them (``dvrk-ident gc refit``);
3. **file**: the console's physical-DH chain fitted to the refitted gravity (``dvrk-ident export
   kinematic-gc``), refused when its residual exceeds the holds' own;
4. **hold test** in position mode, the console's own loop: at ``hold_poses`` random poses inside the limits,
   each held ``hold_time`` s, the steady-state error of the joints the console compensates and the tip's sag
   (the tip at the measured pose against the tip at the setpoint), first with the compensation the arm has
   (none, or a Si arm's shipped file), then with the new file. A simulated arm takes the file live (its
   ``kinematic_gc`` parameter); a dVRK console reads it at start only: the job gives the lines for the arm's
   configuration file, and ``hold_only`` measures again once the console was restarted with them;
5. **report**: CSV, text and a plot beside the file.

Exit statuses as the MTM's job (jobs/gc_calibration.py): 0 done, 2 refused before any motion, else the failed
step's. dVRK 2.4 only: 2.2 and 2.3 have no ``kinematic_gc``.
"""
from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from dvrk_ident_ros.arm.registry import ArmSpec, arm_spec
from dvrk_ident_ros.errors import CalibrationRefusedError, DataError, DvrkIdentError, StepFailedError
from dvrk_ident_ros.files import resolve_package_file
from dvrk_ident_ros.jobs.collection import DEFAULTS, DONE, FAILED, REFUSED, GridCollection, StagedJob, checked_serial
from dvrk_ident_ros.parameters.settings import GcCalibrationSettings

HOLD_SETTLE, HOLD_SAMPLES = 2.0, 50  # s, samples at 100 Hz: each refit hold 2.5 s at rest (gc refit keeps 1.5 s)
READ_WINDOW = 0.25  # s: the measured pose at the end of a hold is the mean over this window




@dataclass(frozen=True)
class ConsoleCalibrationSettings:
    """What the job needs: the node's parameters (:func:`console_settings`), resolved and checked."""

    arm: str
    serial: str
    parameter_file: Path  # the identified model (/identify, SDP)
    output_directory: Path
    home_arm: bool = DEFAULTS.home_arm
    refit_holds: int = DEFAULTS.refit_holds
    hold_poses: int = DEFAULTS.hold_poses
    hold_time: float = DEFAULTS.hold_time
    seed: int = DEFAULTS.seed
    hold_only: bool = DEFAULTS.hold_only
    max_tip_sag: float = DEFAULTS.max_tip_drift  # mm; 0 = report only
    collect_timeout: float = DEFAULTS.collect_timeout
    use_sim_time: bool = False

    @property
    def stem(self) -> str:
        return f"{self.arm}-{self.serial}"

    @property
    def holds_file(self) -> Path:
        return self.output_directory / f"{self.stem}-holds.yaml"

    @property
    def bag(self) -> Path:
        return self.output_directory / f"{self.stem}-holds"

    @property
    def refit_file(self) -> Path:
        return self.output_directory / f"{self.stem}-refit.json"

    @property
    def kinematic_gc_file(self) -> Path:
        return self.output_directory / f"{self.stem}-kinematic-gc.json"

    @property
    def logs(self) -> Path:
        return self.output_directory / "logs"


def console_gc_spec(arm: str) -> ArmSpec:
    """The arm's registry entry when the console compensates its family from a physical-DH file; else refused."""
    spec = arm_spec(arm)
    if spec.console_gc is None:
        raise CalibrationRefusedError(f"{arm} ({spec.family}): the dVRK console has no physical-DH gravity "
                                             "(kinematic_gc) for this family")
    return spec


def parameter_path(given: str) -> Path:
    """The identified parameter file (required: the refit corrects an identified model's gravity)."""
    if not given.strip():
        raise CalibrationRefusedError(
            "parameter_file is required for a PSM or an ECM: the identified model (/identify, SDP) whose gravity "
            "the holds refit")
    try:
        return resolve_package_file(given.strip(), "parameter file")
    except DataError as exc:
        raise CalibrationRefusedError(str(exc)) from exc


def console_settings(params: GcCalibrationSettings, arm: str, use_sim_time: bool = False) -> ConsoleCalibrationSettings:
    """The node's parameters for ``arm`` (canonical) -> settings; refused when unusable."""
    console_gc_spec(arm)
    return ConsoleCalibrationSettings(
        arm=arm, serial=checked_serial(params.serial, f"{arm}-<serial>-kinematic-gc.json"),
        parameter_file=Path() if params.hold_only else parameter_path(params.parameter_file),
        output_directory=Path(params.output_directory).absolute(), home_arm=params.home_arm,
        refit_holds=params.refit_holds, hold_poses=params.hold_poses, hold_time=params.hold_time, seed=params.seed,
        hold_only=params.hold_only, max_tip_sag=params.max_tip_drift, collect_timeout=params.collect_timeout,
        use_sim_time=use_sim_time)


class ConsolePort(Protocol):
    """What the job needs from the arm's ROS topics (the node implements it)."""

    def home(self, timeout: float) -> float: ...

    def wait_ready(self, timeout: float) -> None: ...

    def reach(self, goal: np.ndarray) -> bool: ...  # move_jp until there (a ready arm only)

    def rest(self, seconds: float) -> tuple[np.ndarray, np.ndarray]: ...  # measured (mean at the end), setpoint

    def apply_kinematic_gc(self, path: Path) -> str: ...  # "" when the arm took it; else why it cannot

    def progress(self) -> str | None: ...


@dataclass(frozen=True)
class Sag:
    """One pose held in position mode: where the PID holds the arm against where it was asked to."""

    setpoint: np.ndarray
    measured: np.ndarray
    joints: int  # the joints the console compensates
    tip_mm: float

    @property
    def error(self) -> float:
        """Norm of the steady-state error of the compensated joints (rad; m for the insertion)."""
        return float(np.linalg.norm((self.setpoint - self.measured)[:self.joints]))


def sag_of(setpoint: np.ndarray, measured: np.ndarray, joints: int, tip: Callable[[np.ndarray], np.ndarray],
           dof: int) -> Sag:
    """The sag of one hold; ``tip(q)`` the last frame's pose (dVRK joints, ``dof`` of them: a PSM's jaw 0)."""
    def full(q: np.ndarray) -> np.ndarray:
        out = np.zeros(dof)
        out[:min(dof, q.size)] = q[:dof]
        return out

    moved = tip(full(measured))[:3, 3] - tip(full(setpoint))[:3, 3]
    return Sag(np.asarray(setpoint, float), np.asarray(measured, float), joints, float(1e3 * np.linalg.norm(moved)))


@dataclass
class ConsoleReport:
    settings: ConsoleCalibrationSettings
    joint_names: tuple[str, ...]
    lines: list[str] = field(default_factory=list)  # what each stage found
    sags: dict[str, list[Sag]] = field(default_factory=dict)  # label -> per pose
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self, label: str) -> str:
        sags = self.sags.get(label) or []
        if not sags:
            return f"{label}: no pose held"
        error = np.array([s.error for s in sags])
        tip = np.array([s.tip_mm for s in sags])
        return (f"{label}: {len(sags)} poses held {self.settings.hold_time:g} s in position mode: steady-state error "
                f"of joints 1-{sags[0].joints} mean {error.mean():.2e} (max {error.max():.2e}), tip sag mean "
                f"{tip.mean():.3f} mm (max {tip.max():.3f})")

    def reduction(self, before: str, after: str) -> float | None:
        """Joint-error reduction (%) of ``after`` against ``before`` at the same poses."""
        a, b = self.sags.get(before) or [], self.sags.get(after) or []
        if not a or len(a) != len(b):
            return None
        mean_before = np.mean([s.error for s in a])
        return float(100.0 * (1.0 - np.mean([s.error for s in b]) / mean_before)) if mean_before > 0 else None

    def write(self) -> list[Path]:
        s = self.settings
        base = s.output_directory / s.stem
        csv_path = base.with_name(base.name + "-hold.csv")
        with open(csv_path, "w", newline="") as handle:
            writer = csv.writer(handle)
            n = len(next(iter(self.sags.values()))[0].setpoint) if any(self.sags.values()) else 0
            names = list(self.joint_names[:n])
            writer.writerow(["compensation", "pose"] + [f"setpoint_{j}" for j in names]
                            + [f"measured_{j}" for j in names] + ["joint_error", "tip_sag_mm"])
            for label, sags in self.sags.items():
                for k, sag in enumerate(sags):
                    writer.writerow([label, k] + [f"{v:.7f}" for v in (*sag.setpoint, *sag.measured)]
                                    + [f"{sag.error:.3e}", f"{sag.tip_mm:.4f}"])
        text_path = base.with_name(base.name + "-report.txt")
        lines = [f"console gravity calibration of {s.arm} (serial {s.serial}, dVRK 2.4 kinematic_gc)", *self.lines,
                 *(f"hold test, {self.summary(label)}" for label in self.sags),
                 "  (Zhou 2026, a real PSM Si: joint error reduced 68-84 %, tip 4.2 -> 0.7 mm)",
                 "times: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items())]
        text_path.write_text("\n".join(lines) + "\n")
        written = [csv_path, text_path]
        if any(self.sags.values()):
            written.append(self._plot(base.with_name(base.name + "-hold.png")))
        return written

    def _plot(self, path: Path) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
        width = 0.8 / max(1, len(self.sags))
        for i, (label, sags) in enumerate(self.sags.items()):
            poses = np.arange(len(sags)) + i * width
            left.bar(poses, [s.tip_mm for s in sags], width, label=label)
            right.bar(poses, [s.error for s in sags], width, label=label)
        left.set(xlabel="hold pose", ylabel="tip sag (mm)", title=f"{self.settings.hold_time:g} s in position mode")
        right.set(xlabel="hold pose", ylabel="|steady-state error| (rad, m)", yscale="log")
        count = max(len(sags) for sags in self.sags.values())
        for axis in (left, right):
            axis.set_xticks(np.arange(count) + width * (len(self.sags) - 1) / 2, [str(k + 1) for k in range(count)])
            axis.legend(fontsize=7)
        fig.suptitle(f"{self.settings.stem}: the console's own loop with each compensation")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


@dataclass
class ConsoleCalibration(StagedJob):
    """One run of the job; :meth:`run` returns the exit status. ``say``: progress lines."""

    settings: ConsoleCalibrationSettings
    port: ConsolePort

    def run(self) -> int:
        s = self.settings
        report = ConsoleReport(s, arm_spec(s.arm).joint_names)

        def stages() -> None:
            s.output_directory.mkdir(parents=True, exist_ok=True)
            if not s.hold_only:
                self._timed(report, "holds", self.collect_holds)
                self._timed(report, "refit", lambda: report.lines.append(self.refit()))
                self._timed(report, "file", lambda: report.lines.extend(self.export()))
            self._timed(report, "hold test", lambda: self.hold_test(report))

        failed = self._failed(stages)
        if failed is not None:
            return failed
        try:
            files = report.write()
        except OSError as exc:
            self.say(f"error: report not written: {exc}")
            return FAILED
        for label in report.sags:
            self.say(f"{s.arm}: {report.summary(label)}")
        self.say("report: " + ", ".join(str(f) for f in files))
        last = list(report.sags.values())[-1] if report.sags else []
        if s.max_tip_sag > 0 and any(sag.tip_mm > s.max_tip_sag for sag in last):
            self.say(f"error: tip sag over max_tip_drift {s.max_tip_sag:g} mm with {list(report.sags)[-1]}")
            return FAILED
        return DONE

    def _timed(self, report: ConsoleReport, stage: str, step: Callable[[], object]) -> None:
        self._check_stop()
        t0 = time.monotonic()
        step()
        report.seconds[stage] = time.monotonic() - t0

    def collect_holds(self) -> None:
        """Stage 1: the static holds, from both sides, played and recorded."""
        from dvrk_ident_ros.excitation.files import save_grid
        from dvrk_ident_ros.excitation.holds import holds_grid
        from dvrk_ident_ros.model.arm_model import load_model
        from dvrk_ident_ros.safety import CommandChecker

        s = self.settings
        model = load_model(arm_spec(s.arm).model)
        grid = holds_grid(s.arm, CommandChecker(model, s.arm, section="hardware"), poses=s.refit_holds, seed=s.seed,
                          settle=HOLD_SETTLE, samples=HOLD_SAMPLES, approach="both_sides")
        save_grid(s.holds_file, grid)
        self.say(f"[1/4] {len(grid['sweeps'][0]['poses'])} static holds ({grid['approach']}) on {s.arm}, recorded "
                 f"to {s.bag}")
        self._collect(GridCollection(s.arm, s.holds_file, s.bag, s.logs, self.env, s.use_sim_time, s.home_arm,
                                     timeout=s.collect_timeout), lambda: self.port.progress())

    def refit(self) -> str:
        """Stage 2: the identified gravity refitted to the holds."""
        from dvrk_ident_ros.jobs.offline import gravity_refit_job

        s = self.settings
        self.say(f"[2/4] refitting the gravity of {s.parameter_file.name} to the holds")
        try:
            outcome = gravity_refit_job(s.parameter_file, s.bag, s.refit_file)
        except DvrkIdentError as exc:
            raise StepFailedError(f"refit: {exc}") from exc
        self.say(f"      {outcome.summary} -> {outcome.result_file}")
        return f"refit: {outcome.summary} ({outcome.result_file})"

    def export(self) -> list[str]:
        """Stage 3: the console's chain fitted to the refitted gravity; refused over the holds' residual."""
        from dvrk_ident_ros.export.kinematic_gc import kinematic_gc_export, write_kinematic_gc

        s = self.settings
        self.say(f"[3/4] fitting the console's chain to {s.refit_file.name}")
        try:
            export = kinematic_gc_export(s.refit_file, variant=s.arm, seed=s.seed)
        except DvrkIdentError as exc:
            raise StepFailedError(f"file: {exc}") from exc
        out = write_kinematic_gc(export, s.kinematic_gc_file)
        use = (f"in the arm's configuration JSON: \"kinematic_gc\": \"{out}\", \"mounting_pitch\": "
               f"{export.mounting_pitch:.6f}")
        self.say(f"      {export.summary()}")
        self.say(f"      written to {out}; {use}")
        return [f"file: {export.summary()}", f"written to {out}; {use}"]

    def hold_test(self, report: ConsoleReport) -> None:
        """Stage 4: hold the arm in position mode with its compensation, then with the new file."""
        from dvrk_ident_ros.excitation.holds import random_poses
        from dvrk_ident_ros.gc.model.console_gc import load_chain
        from dvrk_ident_ros.model.arm_model import load_model
        from dvrk_ident_ros.safety import CommandChecker

        s = self.settings
        if s.hold_poses == 0:
            return
        spec = arm_spec(s.arm)
        model = load_model(spec.model)
        goals = random_poses(CommandChecker(model, s.arm, margin=0.05), s.hold_poses,
                             np.random.default_rng(s.seed + 1), fraction=0.8)[:, :spec.arm_joints]
        joints = load_chain(spec.console_gc).joints_read if spec.console_gc else 3

        def tip(q: np.ndarray) -> np.ndarray:
            return model.forward_kinematics(model.motor_from_dvrk(q)[None])[0, -1]

        if s.home_arm:
            self.port.home(120.0)
        else:
            self.port.wait_ready(60.0)
        label = "the arm's own compensation" if s.hold_only else "before (the arm's compensation)"
        self.say(f"[4/4] holding {s.arm} at {len(goals)} poses, {s.hold_time:g} s each, in position mode: {label}")
        report.sags[label] = self._hold(goals, joints, tip, model.dof)
        if s.hold_only:
            return
        why_not = self.port.apply_kinematic_gc(s.kinematic_gc_file)
        if why_not:
            report.lines.append(f"hold test with the new file not run: {why_not}; restart the console with the "
                                "lines above and run the job again with hold_only:=true")
            self.say(f"      {report.lines[-1]}")
            return
        label = "with the new file"
        self.say(f"      the arm applies {s.kinematic_gc_file.name}; the same poses {label}")
        report.sags[label] = self._hold(goals, joints, tip, model.dof)
        reduction = report.reduction(next(iter(report.sags)), label)
        if reduction is not None:
            report.lines.append(f"joint-error reduction with the new file: {reduction:.1f} %")
            self.say(f"      {report.lines[-1]}")

    def _hold(self, goals: np.ndarray, joints: int, tip: Callable[[np.ndarray], np.ndarray], dof: int) -> list[Sag]:
        sags = []
        for k, goal in enumerate(goals):
            self._check_stop()
            if not self.port.reach(goal):
                raise StepFailedError(f"hold test: pose {k + 1} not reached")
            measured, setpoint = self.port.rest(self.settings.hold_time)
            sag = sag_of(setpoint, measured, joints, tip, dof)
            sags.append(sag)
            self.say(f"      pose {k + 1} of {len(goals)}: joint error {sag.error:.2e}, tip sag {sag.tip_mm:.3f} mm")
        return sags


__all__ = [
    "DONE",
    "FAILED",
    "REFUSED",
    "CalibrationRefusedError",
    "ConsoleCalibration",
    "ConsoleCalibrationSettings",
    "ConsolePort",
    "Sag",
    "console_gc_spec",
    "console_settings",
    "sag_of",
]
