"""The package through the real ROS 2 command line (issue 33): ``ros2 launch``, ``ros2 param``, ``ros2 service``
from the upstream sources that `make setup` builds beside the environment (tools/ros2_tools.sh, from
../shared/vendor/ros2-tools). Skipped, with the reason, where they are not built.

- every launch file loads in the real launch (``--show-args``), and its arguments are the ones
  ``dvrk-ident launch`` reads from it;
- a collect paused during its ramp-in keeps its bag (the arm moved), as ``<bag>-FAILED``, with one clock in
  it (sim time: the arm's latched state arrives before the first /clock);

``ros2 param describe/set`` on a running node and ``ros2 service call /identify`` are the README's own
blocks, run by test_docs.py.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

ROS2 = Path(sys.prefix) / "bin" / "ros2"
LAUNCH_FILES = sorted(p.name for p in (REPO_ROOT / "launch").glob("*.launch.py"))

pytestmark = pytest.mark.skipif(not ROS2.exists(), reason=f"{ROS2} is absent: the real ros2 tools are built by "
                                                           "`make setup` from ../shared/vendor/ros2-tools")


def ros2(*args: str, env: dict[str, str], cwd: Path | None = None,
         timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROS2), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def tools_env(ros_env: dict[str, str]) -> dict[str, str]:
    """The test's ROS environment for the installed package (the real tools find it in the venv's share)."""
    env = dict(ros_env)
    env.pop("PYTHONPATH", None)  # the tools and the nodes they start use the installed package
    return env


class Launch:
    """``ros2 launch`` in its own process group; :meth:`interrupt` is Ctrl-C."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path):
        self.log = cwd / "launch.log"
        self._out = open(self.log, "w")
        self.proc = subprocess.Popen([str(ROS2), "launch", "dvrk_ident", *args], env=env, cwd=cwd,
                                     stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text()

    def interrupt(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise AssertionError(f"ros2 launch still running after {timeout} s:\n{self.output()}") from None
        finally:
            self._out.close()


@pytest.mark.ros
@pytest.mark.parametrize("launch_file", LAUNCH_FILES)
def test_every_launch_file_loads_in_the_real_launch(launch_file: str, tools_env):
    from dvrk_ident_ros.jobs.launch_plans import launch_file as planned

    proc = ros2("launch", "dvrk_ident", launch_file, "--show-args", env=tools_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = re.findall(r"^    '(\w+)':", proc.stdout, flags=re.MULTILINE)
    arguments = planned(launch_file).arguments
    assert shown == [a.name for a in arguments], proc.stdout
    text = " ".join(proc.stdout.split())
    for a in arguments:  # the plan's own descriptions (their first words: launch wraps long lines)
        assert " ".join(a.description.split()[:4]) in text, (a.name, proc.stdout)


@pytest.mark.ros
def test_a_collect_paused_during_its_ramp_in_keeps_its_bag(tmp_path: Path, tools_env, rclpy_context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from dvrk_ident.msg import PlayerStatus
    from dvrk_ident_ros.arm.player_phase import PlayerPhase
    from dvrk_ident_ros.ros.messages import crtk_messages

    crtk = crtk_messages()
    if crtk is None:
        pytest.skip("crtk_msgs is not installed (make setup builds its stand-in)")
    node = rclpy.create_node("pause_during_ramp_in", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    phases: list[int] = []
    node.create_subscription(PlayerStatus, "/dvrk_ident/PSM1/player_status", lambda m: phases.append(m.phase), 10)
    console = node.create_publisher(crtk.StringStamped, "/PSM1/state_command", 10)
    launch = Launch(["collect.launch.py", "arm:=PSM1", "sim:=true", "output_directory:=recordings"], tools_env,
                    tmp_path)
    try:
        deadline = time.monotonic() + 60.0
        while PlayerPhase.RAMP_IN not in phases and time.monotonic() < deadline and launch.proc.poll() is None:
            executor.spin_once(timeout_sec=0.05)
        assert PlayerPhase.RAMP_IN in phases, f"no ramp-in: {phases}\n{launch.output()}"
        console.publish(crtk.StringStamped(string="pause"))
        status = launch.wait(60.0)
    finally:
        node.destroy_node()
        if launch.proc.poll() is None:
            launch.interrupt()
    out = launch.output()
    assert PlayerPhase.PLAYING not in phases, f"the pause came after the ramp-in: {phases}"
    assert status != 0, out  # the player aborted: the launch says so
    bags = sorted((tmp_path / "recordings").glob("PSM1-*"))
    assert [b.name.endswith("-FAILED") for b in bags] == [True], (bags, out)
    info = yaml.safe_load((bags[0] / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["custom_data"]["dvrk_ident.outcome"] == "failed", info["custom_data"]
    assert "before any data (during RAMP_IN)" in info["custom_data"]["dvrk_ident.outcome_reason"]
    assert info["message_count"] > 0 and info["duration"]["nanoseconds"] < 120e9, info["duration"]  # one clock


@pytest.mark.ros
def test_gc_calibration_takes_a_short_run_from_its_launch_arguments(tmp_path: Path, tools_env):
    """The README's short run on the simulated MTML: pose_stride, sweep_stride and orders reach the job (its
    first line says them, its progress counts the thinned grid's poses: 160 of the shipped 4760)."""
    launch = Launch(["gc_calibration.launch.py", "arm:=MTML", "serial:=0", "sim:=true", "pose_stride:=12",
                     "sweep_stride:=4", "orders:=1,1,1,1,1,1", "hold_poses:=1"], tools_env, tmp_path)
    try:
        deadline = time.monotonic() + 90.0
        # the job prints its progress every few seconds: the first line may come at any pose
        while not re.search(r"pose \d+ of \d+", launch.output()) and time.monotonic() < deadline \
                and launch.proc.poll() is None:
            time.sleep(0.5)
    finally:
        launch.interrupt(60.0)
    out = launch.output()
    assert "(pose_stride 12, sweep_stride 4; fit orders 1,1,1,1,1,1) on MTML" in out, out
    assert re.search(r"pose \d+ of 160\b", out), out


@pytest.mark.ros
@pytest.mark.parametrize(("args", "status", "said"), [
    # the required node (the second process: the safety net starts first) exits 2 (its gc file is missing):
    # the exit handler fails the launch
    (["gravity_compensation.launch.py", "arm:=mtml", "parameter_file:=gc-MTML-0.json"], 1,
     "the gravity compensation (gravity_compensation-2) exited with status 2: the launch fails"),
    # a trajectory found nowhere stops the launch before any node starts
    (["collect.launch.py", "sim:=true", "trajectory_file:=no/such.yaml"], 1,
     "trajectory file 'no/such.yaml' not found"),
])
def test_the_real_launch_ends_with_the_exit_rules(args: list[str], status: int, said: str, tmp_path: Path,
                                                   tools_env):
    launch = Launch(args, tools_env, tmp_path)
    assert launch.wait(90.0) == status, launch.output()
    assert said in launch.output(), launch.output()
