"""The gravity job on a PSM or an ECM (dvrk_ident_ros/jobs/console_calibration.py): its pieces without ROS, the
simulated arm taking a new ``kinematic_gc`` live, and one shortened run on the simulated PSM through the
launcher (as ``dvrk-ident launch gc_calibration arm:=PSM1 ...``)."""
from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np
import pytest

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.errors import CalibrationRefusedError
from dvrk_ident_ros.jobs.console_calibration import (
    ConsoleCalibration,
    ConsoleCalibrationSettings,
    ConsoleReport,
    console_settings,
    sag_of,
)
from dvrk_ident_ros.parameters.gc_calibration import SCHEMA
from dvrk_ident_ros.parameters.settings import GcCalibrationSettings

REPO = Path(__file__).resolve().parents[1]
PSM_TRUTH = REPO / "config" / "sim" / "psm_true.json"


def _params(**given) -> GcCalibrationSettings:
    """The node's parameters: its schema's defaults, then ``given``."""
    values = {"arm": "PSM1", "serial": "28007", "parameter_file": str(PSM_TRUTH), "output_directory": "out",
              "hold_poses": 3, "collect_timeout": 60.0}
    return GcCalibrationSettings.from_values({**SCHEMA.defaults(), **values, **given})


def test_the_settings_name_the_files_and_refuse_what_cannot_run():
    s = console_settings(_params(), "PSM1")
    assert s.parameter_file == PSM_TRUTH and s.kinematic_gc_file.name == "PSM1-28007-kinematic-gc.json"
    assert s.bag.name == "PSM1-28007-holds" and s.refit_file.name == "PSM1-28007-refit.json"
    assert (s.refit_holds, s.hold_time, s.hold_poses) == (SCHEMA["refit_holds"].default, SCHEMA["hold_time"].default, 3)
    assert console_settings(_params(parameter_file="", hold_only=True), "PSM1").hold_only
    with pytest.raises(CalibrationRefusedError, match="parameter_file is required"):
        console_settings(_params(parameter_file=""), "PSM1")
    with pytest.raises(CalibrationRefusedError, match="serial"):
        console_settings(_params(serial="a b"), "PSM1")
    with pytest.raises(CalibrationRefusedError, match=r"MTML \(MTM\): the dVRK console has no physical-DH"):
        console_settings(_params(arm="MTML"), "MTML")


def test_the_sag_is_the_tip_between_setpoint_and_measured():
    """Independent of the kinematics' details: the insertion moves the tip along the shaft by exactly its own
    displacement, and equal poses do not sag."""
    from dvrk_ident_ros.jobs.hold_test import tip_function

    tip = tip_function("PSM1")
    setpoint = np.array([0.3, -0.2, 0.12, 0.4, 0.1, -0.2])
    assert sag_of(setpoint, setpoint.copy(), 3, tip, 7).tip_mm == pytest.approx(0.0, abs=1e-9)
    lower = setpoint + np.array([0, 0, 0.001, 0, 0, 0])
    sag = sag_of(setpoint, lower, 3, tip, 7)
    assert sag.tip_mm == pytest.approx(1.0, abs=1e-6)
    assert sag.error == pytest.approx(0.001)
    wrist = setpoint + np.array([0, 0, 0, 0.5, 0, 0])  # the roll is not a compensated joint: no joint error
    assert sag_of(setpoint, wrist, 3, tip, 7).error == 0.0


class _FakePort:
    """A PSM whose joints 1-3 sit ``sag`` below the setpoint until the new file is applied."""

    def __init__(self, refuse: str = ""):
        self.refuse, self.applied, self.goal = refuse, False, np.zeros(6)

    def home(self, timeout: float) -> float:
        return 0.0

    def wait_ready(self, timeout: float) -> None:
        pass

    def reach(self, goal: np.ndarray) -> bool:
        self.goal = np.asarray(goal, float)
        return True

    def rest(self, seconds: float) -> tuple[np.ndarray, np.ndarray]:
        sag = np.array([1e-4, 1e-4, 1e-5] if self.applied else [1e-2, 1e-2, 1e-3])
        measured = self.goal.copy()
        measured[:3] -= sag
        return measured, self.goal.copy()

    def apply_kinematic_gc(self, path: Path) -> str:
        self.applied = not self.refuse
        return self.refuse

    def progress(self) -> str | None:
        return None


@pytest.mark.parametrize("refuse", ["", "no simulated PSM1 offers kinematic_gc"])
def test_the_hold_test_compares_the_arm_before_and_with_the_file(tmp_path: Path, refuse: str):
    settings = ConsoleCalibrationSettings("PSM1", "7", PSM_TRUTH, tmp_path, hold_poses=3)
    said: list[str] = []
    job = ConsoleCalibration(settings, _FakePort(refuse), say=said.append)
    report = ConsoleReport(settings, arm_spec("PSM1").joint_names)
    job.hold_test(report)
    files = report.write()
    rows = list(csv.DictReader(open(tmp_path / "PSM1-7-hold.csv")))
    text = (tmp_path / "PSM1-7-report.txt").read_text()
    if refuse:
        assert list(report.sags) == ["before (the arm's compensation)"] and len(rows) == 3
        assert "restart the console" in text and "hold_only:=true" in text
    else:
        assert list(report.sags) == ["before (the arm's compensation)", "with the new file"] and len(rows) == 6
        assert report.reduction(*report.sags) == pytest.approx(99.0, abs=0.01)
        assert "joint-error reduction with the new file: 99.0 %" in text
        assert (tmp_path / "PSM1-7-hold.png") in files
    goals = np.array([[float(r[f"setpoint_{j}"]) for j in arm_spec("PSM1").joint_names[:6]] for r in rows])
    assert np.all(np.abs(goals[:3, :3]) > 0) and len({tuple(g) for g in goals}) == 3  # three distinct poses


def test_the_simulated_arm_takes_a_new_file_live():
    """SimulatedArm.set_console_gc: the chain applies from the next step (the built-in compensation on, its
    reading the chain's torques), None takes it away; dVRK 2.3 has no such input."""
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.gc.model.console_gc import load_chain
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config("psm_si")
    chain = load_chain(arm_spec("PSM_SI").console_gc)
    arm = SimulatedArm(config, "PSM1", noise=False)
    assert not arm.builtin_gravity_compensation
    arm.set_console_gc(chain)
    assert arm.builtin_gravity_compensation
    q = arm.model.dvrk_from_motor(arm.state.q)
    pitch = -np.pi / 4
    assert arm.builtin_compensation_effort()[:3] == pytest.approx(chain.torques(q[None], pitch)[0][:3], abs=1e-9)
    arm.set_console_gc(None)
    assert not arm.builtin_gravity_compensation and not np.any(arm.builtin_compensation_effort())
    old = SimulatedArm(config, "PSM1", noise=False, dvrk_version="2.3")
    with pytest.raises(DvrkIdentError, match=r"2\.4"):
        old.set_console_gc(chain)


@pytest.mark.ros
@pytest.mark.slow
def test_gc_calibration_on_the_simulated_psm(tmp_path: Path, nodes_env):
    """The whole job on the simulated PSM1 (Classic, no compensation of its own: it sags): 20 holds, the refit
    of its true parameter file, the console's file, one pose held before and with it (the 7-link chain loads
    in the transcription's shape)."""
    from dvrk_ident_ros.gc.model.console_gc import load_chain
    from dvrk_ident_ros.jobs.launch_plans import launch_plan
    from dvrk_ident_ros.jobs.launcher import LaunchPlan

    out = tmp_path / "out"
    nodes = launch_plan("gc_calibration", ["arm:=psm1", "serial:=28007", "sim:=True", f"output_directory:={out}",
                                           f"parameter_file:={PSM_TRUTH}", "refit_holds:=20", "hold_poses:=1",
                                           "hold_time:=1.0"],
                        overrides={"simulated_arm": {"homing_time": 0.5, "real_time_factor": 1.5}})
    start = time.monotonic()
    result = LaunchPlan("gc_calibration.launch.py", nodes, log_dir=tmp_path / "logs", env=nodes_env).run(timeout=300)
    seconds = time.monotonic() - start
    log = (tmp_path / "logs" / "gc_calibration_PSM1.log").read_text()
    assert result.status == 0, result.report() + "\n" + log
    assert "[1/4]" in log and "[2/4]" in log and "[3/4]" in log and "[4/4]" in log
    chain = load_chain(out / "PSM1-28007-kinematic-gc.json")
    assert len(chain.links) == 7
    rows = list(csv.DictReader(open(out / "PSM1-28007-hold.csv")))
    sag = {label: [float(r["tip_sag_mm"]) for r in rows if r["compensation"] == label]
           for label in ("before (the arm's compensation)", "with the new file")}
    assert len(sag["with the new file"]) == 1 and len(sag["before (the arm's compensation)"]) == 1, rows
    # the Classic PSM under the dVRK's PID without an integral term sags about a millimetre; the file holds it
    assert min(sag["before (the arm's compensation)"]) > 0.3 and max(sag["with the new file"]) < 0.1, sag
    assert (out / "PSM1-28007-hold.png").is_file()
    print(f"gc calibration on the simulated PSM1: {seconds:.1f} s; tip sag {sag} mm")


@pytest.mark.ros
def test_the_simulated_arm_takes_or_refuses_a_file_through_its_parameter(nodes_env, tmp_path: Path):
    """The job's hold test gives the simulated arm the new file through its ``kinematic_gc`` parameter: a PSM's
    chain is taken, an ECM's (6 links) refused with the console's reason and the old chain kept; without a
    simulated arm the job is told why (a console reads the file at start only)."""
    from dvrk_ident_ros.jobs.launcher import NodeProcess, wait_for
    from dvrk_ident_ros.nodes.gc_calibration import ClientPort
    from dvrk_ident_ros.ros.clients import ArmClient

    with ArmClient("PSM2", "test_no_sim") as client:
        assert "no simulated PSM2 offers kinematic_gc" in ClientPort(client).apply_kinematic_gc(Path("x.json"), 1.0)
    with NodeProcess("simulated_arm", {"arm": "PSM2"}, log_dir=tmp_path / "logs", env=nodes_env, name="sim") as sim, \
            ArmClient("PSM2", "test_kinematic_gc") as client:
        port = ClientPort(client)
        wait_for(lambda: any(n.startswith("sim") for n in client.node.get_node_names()), 20.0, "the simulated arm")
        assert port.apply_kinematic_gc(REPO / "config" / "console_gc" / "psm.json") == ""
        refused = port.apply_kinematic_gc(REPO / "config" / "console_gc" / "ecm_si.json")
        assert "refused it" in refused and "6 links, the PSM's chain has 7" in refused, refused
        wait_for(lambda: "parameter kinematic_gc set to" in sim.tail(30), 5.0, "the log line")
        assert "not set to" in sim.tail(30)
