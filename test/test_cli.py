"""The command line: version, doctor, errors as one line with a status."""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

import pytest

import dvrk_ident_ros
from dvrk_ident_ros.app import cli
from dvrk_ident_ros.errors import DataError


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert dvrk_ident_ros.__version__ in capsys.readouterr().out


def test_doctor_json_lists_every_check(capsys):
    status = cli.main(["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert {"numpy", "cvxpy", "rclpy", "dvrk_ident.srv", "executables"} <= set(checks)
    assert status == (0 if all(c["ok"] for c in checks.values()) else 1)


def test_library_errors_become_one_line_and_status_2(capsys):
    def explode(_args):
        raise DataError("data.csv: column 'tau3' missing")

    assert cli.run(argparse.Namespace(command="identify", handler=explode)) == 2
    err = capsys.readouterr().err.strip()
    assert err == "dvrk-ident identify: error: data.csv: column 'tau3' missing"


def test_installed_command_runs():
    """./.venv/bin/dvrk-ident runs with no environment set-up."""
    from pathlib import Path

    exe = Path(sys.prefix) / "bin" / "dvrk-ident"
    if not exe.exists():
        pytest.skip(f"{exe} absent: not running from the `make setup` environment")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    proc = subprocess.run([str(exe), "doctor", "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the nodes: --help, dvrk-ident run, no bare commands on PATH -----------------------------------------------------
def test_node_list_matches_the_console_scripts():
    from test_package import _console_scripts

    from dvrk_ident_ros.jobs.launch_commands import NODES

    assert set(NODES) == set(_console_scripts()) - {"dvrk-ident"}


def _node_names() -> tuple[str, ...]:
    from dvrk_ident_ros.jobs.launch_commands import NODES

    return NODES


@pytest.mark.parametrize("node", _node_names())
def test_node_help_prints_its_parameters_without_starting_ros(node: str):
    """`--help` exits 0 at once with the node's purpose and every parameter of its schema."""
    from conftest import REPO_ROOT

    from dvrk_ident_ros.node_help import module_purpose
    from dvrk_ident_ros.parameters import schema_of

    env = {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}
    env["ROS_DOMAIN_ID"] = "not a number"  # rcl would refuse it: --help must not get that far
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", f"dvrk_ident_ros.nodes.{node}", "--help"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # "at once": the CPU time the process took (its imports, about 1.5 s here; building a model would take 5 s
    # or more), not the wall time, which a machine running the node tests beside this idle-priority run stretches
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert cpu < 5.0, cpu
    assert proc.stdout.startswith(f"usage: ros2 run dvrk_ident {node} ")
    assert module_purpose(f"dvrk_ident_ros.nodes.{node}") in proc.stdout
    for parameter in schema_of(node):
        assert f"\n  {parameter.name} " in proc.stdout, parameter.name


def test_dvrk_ident_run_executes_the_node(tmp_path):
    """`dvrk-ident run <node> ...` hands its arguments to the node (here -h) and ends with its status."""
    from conftest import REPO_ROOT

    proc = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "run", "trajectory_player", "-h"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "usage: ros2 run dvrk_ident trajectory_player" in proc.stdout and "\n  autostart " in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "run", "player"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'player'" in proc.stderr


def test_setup_bash_puts_no_node_on_path():
    from conftest import REPO_ROOT

    text = (REPO_ROOT / "tools" / "setup.bash.in").read_text()
    path_lines = [line for line in text.splitlines() if line.startswith("export PATH")]
    assert path_lines == [], "nodes are reached through `dvrk-ident run` / `ros2 run`, not bare commands on PATH"


def test_help_is_asked_before_the_ros_arguments_only():
    from dvrk_ident_ros.node_help import wants_help

    assert wants_help(["--help"]) and wants_help(["-h", "--ros-args", "-p", "arm:=PSM1"])
    assert not wants_help([]) and not wants_help(["--ros-args", "-p", "arm:=PSM1", "--help"])


def test_help_prints_the_schema():
    """Each parameter on one line: name, type, default, description [unit]; range or choices; run time."""
    from dvrk_ident_ros.node_help import node_help
    from dvrk_ident_ros.parameters import Kind, NodeSchema, Parameter

    schema = NodeSchema("tool", (
        Parameter("arm", Kind.STRING, "PSM1", "dVRK arm name"),
        Parameter("rate", Kind.DOUBLE, 500.0, "Rate of the stream", unit="Hz", minimum=1.0, maximum=2000.0),
        Parameter("mode", Kind.STRING, "a", "Mode", choices=("a", "b")),
        Parameter("extra", Kind.STRING_ARRAY, None, "Topics to add"),
        Parameter("scale", Kind.DOUBLE, 1.0, "Scale; at run time: at once", minimum=0.0, maximum=1.0,
                  exclusive_minimum=True, runtime=True),
    ))
    lines = node_help("dvrk_ident_ros.nodes.tool", schema).splitlines()
    assert lines[0].startswith("usage: ros2 run dvrk_ident tool ")
    rows = [line.split() for line in lines[lines.index(next(x for x in lines if x.startswith("parameters"))) + 1:]
            if line.startswith("  ")]
    assert rows == [
        ["arm", "string", "PSM1", "dVRK", "arm", "name"],
        ["rate", "double", "500.0", "Rate", "of", "the", "stream", "[Hz];", "1..2000", "Hz"],
        ["mode", "string", "a", "Mode;", "one", "of", "a,", "b"],
        ["extra", "string[]", "(not", "set)", "Topics", "to", "add"],
        ["scale", "double", "1.0", "Scale;", "at", "run", "time:", "at", "once;", "(0,", "1];", "run", "time"],
    ]


# -- dvrk-ident launch (without starting nodes; the runs are in test_exit_codes.py) ------------------------------------
def test_launch_show_args(capsys):
    assert cli.main(["launch", "collect.launch.py", "--show-args"]) == 0
    out = capsys.readouterr().out
    assert "autostart: true: play trajectory_file" in out and "(default: 'true')" in out
    assert "home_arm: " in out and "default: the value of sim" in out


def test_launch_errors_are_one_line_with_status_2(capsys):
    assert cli.main(["launch", "collect", "arm:=psm9", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        "dvrk-ident launch: error: launch argument arm: unknown arm 'psm9': expected one of ECM, MTML, MTMR, PSM1, "
        "PSM2, PSM3 (any case)")
    assert cli.main(["launch", "demo"]) == 2
    assert "unknown launch file 'demo'" in capsys.readouterr().err


def test_trajectory_commands_find_files_by_the_launch_files_rule(tmp_path, monkeypatch, capsys):
    """`trajectory check` takes a package-relative path from anywhere, as collect.launch.py and the player do."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["trajectory", "check", "--arm", "psm", "config/trajectories/psm_fourier.yaml"]) == 0
    assert "all limits respected" in capsys.readouterr().out
    assert cli.main(["trajectory", "check", "--arm", "psm", "config/trajectories/nothing.yaml"]) == 2
    assert "trajectory file 'config/trajectories/nothing.yaml' not found (looked in" in capsys.readouterr().err


def test_doctor_names_the_ros_distro_and_a_mixed_one(monkeypatch: pytest.MonkeyPatch):
    """`dvrk-ident doctor` says which ROS 2 distro it runs on (the venv's record, ROS_DISTRO, the installed
    rclpy), and fails where two of them disagree (a Jazzy venv with a Humble set-up sourced)."""
    from dvrk_ident_ros.data.recording import detect_ros_distro

    installed = detect_ros_distro({})
    if not installed:
        pytest.skip("no rclpy of a named distribution here")
    monkeypatch.setenv("ROS_DISTRO", installed)
    check = cli._ros_distro_check()
    assert check.ok and check.detail.startswith(installed), check
    monkeypatch.setenv("ROS_DISTRO", "humble" if installed != "humble" else "jazzy")
    check = cli._ros_distro_check()
    assert not check.ok and "distributions disagree" in check.detail, check
