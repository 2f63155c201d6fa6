"""Exit statuses that tell the truth: the launch files' exit rules, the launcher's plans, the nodes.

Unit tests (no ROS): the launch files' exit rules (dvrk_ident_ros/jobs/launch_support.py; the exit handler in
the real ``ros2 launch`` is test_ros2_tools.py's) and the rules of
:class:`~dvrk_ident_ros.jobs.launcher.LaunchPlan` on stand-in processes. Integration tests
(through the launcher, as ``dvrk-ident launch`` runs the launch files): a collect whose player
cannot load its trajectory ends with the player's status, a gc launch without its gc file ends
non-zero, a short collect on the simulated arm ends 0, and ``dvrk-ident launch`` forwards Ctrl-C.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dvrk_ident_ros.errors import DvrkIdentError, LaunchArgumentError, NodeFailedError
from dvrk_ident_ros.jobs.launch_plans import canonical_values, parse_bool
from dvrk_ident_ros.jobs.launch_support import exit_outcome
from dvrk_ident_ros.jobs.launcher import LaunchPlan, PlannedNode


# -- the launch files' rules ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [("true", True), ("True", True), ("TRUE", True), ("1", True),
                                             ("false", False), ("False", False), (" 0 ", False)])
def test_booleans_as_ros_accepts_them(text: str, value: bool):
    assert parse_bool(text, "sim") is value


@pytest.mark.parametrize("text", ["yes", "", "2", "on"])
def test_other_booleans_are_refused_with_the_reason(text: str):
    with pytest.raises(LaunchArgumentError, match=r"sim:=.* is not a boolean: use true or false"):
        parse_bool(text, "sim")


def test_canonical_values():
    values = {"arm": " psm2", "sim": "True", "home_arm": "0", "other": "x"}
    assert canonical_values(values, ("sim", "home_arm"), "arm") == {"sim": "true", "home_arm": "false", "arm": "PSM2"}
    with pytest.raises(LaunchArgumentError, match="launch argument arm: unknown arm 'PSM7'"):
        canonical_values({"arm": "PSM7"}, (), "arm")


def test_exit_outcome():
    assert exit_outcome("the player", "trajectory_player-3", 0, required=True) == "the player finished"
    assert exit_outcome("the recorder", "recorder-2", 0, required=False) is None
    with pytest.raises(NodeFailedError, match=r"the player \(trajectory_player-3\) exited with status 2: the launch "
                                              "fails"):
        exit_outcome("the player", "trajectory_player-3", 2, required=True)
    with pytest.raises(NodeFailedError, match="the recorder was killed by signal 15"):
        exit_outcome("the recorder", "", -15, required=False)


# -- LaunchPlan on stand-in processes -----------------------------------------------------------------------------
_FAKE_NODE = '''
import signal, sys, time
params = dict(a.split(":=", 1) for a in sys.argv if ":=" in a)
stop = []
if params.get("ignore_sigint") == "true":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
else:
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
print("ready", flush=True)
deadline = time.monotonic() + float(params.get("after", "1e9"))
while not stop and time.monotonic() < deadline:
    time.sleep(0.01)
sys.exit(int(params.get("on_sigint", "0")) if stop else int(params.get("exit", "0")))
'''


@pytest.fixture
def fake_nodes(tmp_path: Path):
    (tmp_path / "fake_node.py").write_text(_FAKE_NODE)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))

    def plan(*nodes: PlannedNode) -> LaunchPlan:
        return LaunchPlan("test.launch.py", list(nodes), log_dir=tmp_path / "logs", env=env)

    return plan


def _fake(name: str, required: bool = False, stop_timeout: float = 5.0, **parameters) -> PlannedNode:
    return PlannedNode("fake", parameters, name=name, required=required, stop_timeout=stop_timeout,
                       module="fake_node")


def test_plan_ends_with_the_required_nodes_failure(fake_nodes):
    result = fake_nodes(_fake("helper"), _fake("worker", required=True, after=1.0, exit=3)).run(timeout=30)
    assert result.status == 3
    assert result.reason == "test.launch.py: worker exited with status 3"
    worker, helper = result.exits
    assert (worker.name, worker.returncode, worker.stopped) == ("worker", 3, False)
    assert (helper.name, helper.returncode, helper.stopped) == ("helper", 0, True)  # stopped with SIGINT
    assert "worker (required, exit status 3; log" in result.report()


def test_plan_ends_well_when_the_required_node_succeeds(fake_nodes):
    result = fake_nodes(_fake("helper"), _fake("worker", required=True, after=1.0)).run(timeout=30)
    assert (result.status, result.reason) == (0, "test.launch.py: worker finished")
    assert [(e.name, e.returncode, e.stopped) for e in result.exits] == [("worker", 0, False), ("helper", 0, True)]


def test_plan_ends_when_any_node_fails(fake_nodes):
    result = fake_nodes(_fake("helper", after=1.0, exit=4), _fake("worker", required=True)).run(timeout=30)
    assert result.status == 4
    assert result.reason == "test.launch.py: helper exited with status 4"
    assert [(e.name, e.stopped) for e in result.exits] == [("helper", False), ("worker", True)]


def test_plan_status_counts_a_node_that_fails_to_stop(fake_nodes):
    result = fake_nodes(_fake("stubborn", ignore_sigint="true", stop_timeout=0.5),
                        _fake("worker", required=True, after=1.0)).run(timeout=30)
    assert result.status == 1
    stubborn = next(e for e in result.exits if e.name == "stubborn")
    assert stubborn.killed and "did not stop after SIGINT: killed" in stubborn.describe()
    result = fake_nodes(_fake("stopper", on_sigint="5"), _fake("worker", required=True, after=1.0)).run(timeout=30)
    assert result.status == 5  # a node that exits non-zero on SIGINT (e.g. a bag it could not close) fails too


def test_plan_stops_on_request_and_on_timeout(fake_nodes):
    plan = fake_nodes(_fake("a"), _fake("b", required=True))
    plan.start()
    time.sleep(0.5)
    plan.request_stop("Ctrl-C")
    result = plan.wait(timeout=30)
    assert (result.status, result.reason) == (0, "test.launch.py: Ctrl-C")
    assert all(e.stopped and e.returncode == 0 for e in result.exits)
    plan = fake_nodes(_fake("a"), _fake("b", required=True))
    with pytest.raises(DvrkIdentError, match="did not end within 1 s"):
        plan.run(timeout=1.0)
    assert all(not p.running for p in plan.processes.values())


# -- through the launcher, with the real nodes -------------------------------------------------------------------
def _short_trajectory(path: Path) -> Path:
    """A slow rest-to-rest 2 s trajectory around the simulated PSM's home (as test_nodes_player.py)."""
    from dvrk_ident_ros.excitation.files import save_trajectory
    from dvrk_ident_ros.excitation.fourier import rest_to_rest
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.sim.config import load_sim_config

    model = load_model("psm")
    center = model.motor_from_dvrk(load_sim_config("psm").home)
    rng = np.random.default_rng(5)
    a_free, b_free = rng.uniform(-0.03, 0.03, (2, 2, 7))
    for coefficients in (a_free, b_free):
        coefficients[:, 2] *= 0.1  # insertion: m
        coefficients[:, 5:] *= 0.3
    save_trajectory(path, rest_to_rest(0.5, center, a_free, b_free), arm="psm", periods=1,
                    description_hash=model.description.content_hash, note="test_exit_codes")
    return path


def _plan(nodes, tmp_path: Path, env) -> LaunchPlan:
    return LaunchPlan("collect.launch.py", nodes, log_dir=tmp_path / "logs", env=env)


def _bags(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*") if p.is_dir()) if directory.is_dir() else []


@pytest.mark.ros
def test_collect_whose_player_cannot_load_its_trajectory_ends_with_the_players_status(tmp_path: Path, nodes_env):
    from dvrk_ident_ros.jobs.launch_plans import launch_plan

    recordings = tmp_path / "recordings"
    nodes = launch_plan("collect", ["arm:=psm1", f"output_directory:={recordings}"])
    # past the launch's own check (which refuses a missing file before any node starts, see the next test):
    # the file is gone by the time the player reads it
    nodes = [replace(n, parameters={**n.parameters, "trajectory_file": str(tmp_path / "gone.yaml")})
             if n.node == "trajectory_player" else n for n in nodes]
    result = _plan(nodes, tmp_path, nodes_env).run(timeout=60)
    assert result.status == 2, result.report()
    assert result.reason == "collect.launch.py: trajectory_player_PSM1 exited with status 2"
    player = next(e for e in result.exits if e.name == "trajectory_player_PSM1")
    recorder = next(e for e in result.exits if e.name == "recorder_PSM1")
    assert (player.returncode, player.stopped) == (2, False)
    assert (recorder.returncode, recorder.stopped) == (0, True), recorder.describe()
    assert "gone.yaml" in player.log_path.read_text()
    # nothing was played: no bag is left that looks like data (the recorder removes it, or names it failed)
    assert all(b.name.endswith("-FAILED") for b in _bags(recordings)), _bags(recordings)


@pytest.mark.ros
def test_dvrk_ident_launch_refuses_a_missing_trajectory_before_any_node_starts(tmp_path: Path, nodes_env):
    proc = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "launch", "collect", "sim:=true",
                           f"output_directory:={tmp_path / 'recordings'}", "trajectory_file:=no/such.yaml",
                           "--log-dir", str(tmp_path / "logs")],
                          cwd=tmp_path, env=nodes_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "trajectory file 'no/such.yaml' not found" in proc.stderr
    assert not (tmp_path / "logs").exists() and not (tmp_path / "recordings").exists()  # nothing started


@pytest.mark.ros
def test_gravity_compensation_without_its_gc_file_ends_non_zero(tmp_path: Path, nodes_env):
    from dvrk_ident_ros.jobs.launch_plans import launch_plan

    nodes = launch_plan("gravity_compensation", ["arm:=mtml", f"parameter_file:={tmp_path / 'gc-MTML-0.json'}"])
    result = LaunchPlan("gravity_compensation.launch.py", nodes, log_dir=tmp_path / "logs", env=nodes_env).run(60)
    assert result.status == 2, result.report()
    assert result.reason == "gravity_compensation.launch.py: gravity_compensation_MTML exited with status 2"
    assert "gc-MTML-0.json" in result.exits[0].log_path.read_text()


@pytest.mark.ros
@pytest.mark.slow
def test_short_collect_on_the_simulated_arm_ends_0(tmp_path: Path, nodes_env):
    from dvrk_ident_ros.jobs.launch_plans import launch_plan

    recordings = tmp_path / "recordings"
    trajectory = _short_trajectory(tmp_path / "short.yaml")
    nodes = launch_plan("collect", ["arm:=PSM1", "sim:=True", f"trajectory_file:={trajectory}",
                                    f"output_directory:={recordings}"],
                        overrides={"simulated_arm": {"homing_time": 0.5}})
    start = time.monotonic()
    result = _plan(nodes, tmp_path, nodes_env).run(timeout=90)
    assert result.status == 0, result.report() + "\n" + (tmp_path / "logs" / "trajectory_player_PSM1.log").read_text()
    assert result.reason == "collect.launch.py: trajectory_player_PSM1 finished"
    assert all(e.returncode == 0 for e in result.exits), result.report()
    bags = _bags(recordings)
    assert len(bags) == 1 and (bags[0] / "metadata.yaml").is_file(), bags
    assert not bags[0].name.endswith(("-FAILED", "-INCOMPLETE")), bags  # the recorder saw a complete run
    print(f"short collect: {time.monotonic() - start:.1f} s")


@pytest.mark.ros
def test_dvrk_ident_launch_stops_every_node_on_ctrl_c(tmp_path: Path, nodes_env):
    logs = tmp_path / "logs"
    proc = subprocess.Popen([sys.executable, "-m", "dvrk_ident_ros.app.cli", "launch", "sim", "arm:=psm2",
                             "use_sim_time:=False", "--quiet", "--log-dir", str(logs)],
                            cwd=tmp_path, env=nodes_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        log = logs / "simulated_arm_PSM2.log"
        deadline = time.monotonic() + 30
        while not (log.is_file() and "simulated PSM2" in log.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stdout.read() if proc.poll() else ""
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)  # Ctrl-C reaches the plan only: it forwards SIGINT to the node, once
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "sim.launch.py: SIGINT received; status 0" in out
    assert "simulated_arm_PSM2 (required, stopped, exit status 0" in out
