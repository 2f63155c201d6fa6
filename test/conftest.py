"""Shared fixtures: ROS isolation (one ROS_DOMAIN_ID per test, localhost only),
paths of the repository, the installation and ../shared."""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"

# Humble's generated messages always check every field's type on assignment; Jazzy's and Kilted's only with
# this set (read when a message module is imported: before any is). The tests and every node they start
# check as Humble does, so a float field given a numpy scalar or an int fails here, not on a lab's Humble.
os.environ.setdefault("ROS_PYTHON_CHECK_FIELDS", "1")

_domain_counter = itertools.count()


def _rclpy_available() -> bool:
    return importlib.util.find_spec("rclpy") is not None


def next_domain_id() -> int:
    """A ROS_DOMAIN_ID unused by earlier tests of this run, in DVRK_IDENT_TEST_DOMAINS ("low:high", both
    included; default 1:100, valid on Linux): tools/test.sh gives two pytest runs side by side disjoint
    ranges, and under pytest-xdist each worker takes its own slice of its run's range."""
    low, _, high = os.environ.get("DVRK_IDENT_TEST_DOMAINS", "1:100").partition(":")
    first, last = int(low), int(high)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker.startswith("gw") and workers > 1:
        size = (last - first + 1) // workers
        if size < 1:
            raise RuntimeError(f"DVRK_IDENT_TEST_DOMAINS={low}:{high} has fewer domains than {workers} workers")
        first += int(worker[2:]) * size
        last = first + size - 1
    return first + (os.getpid() * 13 + next(_domain_counter)) % (last - first + 1)


@pytest.fixture
def ros_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment of this test and its subprocesses: own domain, localhost only."""
    if not _rclpy_available():
        pytest.skip("rclpy is not installed (run `make setup`)")
    from dvrk_ident_ros.environment import ensure_ament_prefix_path
    from dvrk_ident_ros.jobs.launcher import localhost_only

    ensure_ament_prefix_path()
    monkeypatch.setenv("ROS_DOMAIN_ID", str(next_domain_id()))
    isolated = dict(os.environ)
    localhost_only(isolated)
    for name in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY"):
        if name in isolated:
            monkeypatch.setenv(name, isolated[name])
    monkeypatch.setenv("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    return dict(os.environ)


@pytest.fixture
def nodes_env(ros_env: dict[str, str]) -> dict[str, str]:
    """The environment the package's node processes get in this test's domain (the launcher's)."""
    from dvrk_ident_ros.jobs.launcher import ros_environment

    return ros_environment(int(ros_env["ROS_DOMAIN_ID"]))


@pytest.fixture
def rclpy_context(ros_env: dict[str, str]):
    """An initialised rclpy context for this test, shut down afterwards."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    context.try_shutdown()


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: the real dVRK recordings ship separately from the package")
    return SHARED


@pytest.fixture
def python() -> str:
    return sys.executable


#: ROS tests that check the installed package itself (interfaces, launch files): they also run inside colcon test.
_INSTALLATION_CHECKS = {"test_interfaces_ros", "test_launch_files"}


def pytest_collection_modifyitems(config, items):
    """Inside `colcon test` (a check of the built package) the slow tests (set-up script, colcon itself,
    simulation) and the node integration tests, already run by `make test`, are skipped: what remains
    is the core's tests and the checks of the installed interfaces and launch files."""
    if not os.environ.get("DVRK_IDENT_COLCON_TEST"):
        return
    skip = pytest.mark.skip(reason="slow or node integration test: run by `make test`, not inside colcon test")
    # make test's own colcon check (test_setup_script.py) has just run the core's tests itself: inside its
    # colcon test only the checks of the installed package run (the colcon wiring is what it tests)
    installation_only = os.environ.get("DVRK_IDENT_COLCON_SCOPE") == "installation"
    only = pytest.mark.skip(reason="already run by `make test` (DVRK_IDENT_COLCON_SCOPE=installation)")
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module is not None else ""
        if installation_only and module not in _INSTALLATION_CHECKS:
            item.add_marker(only)
        elif "slow" in item.keywords or ("ros" in item.keywords and module not in _INSTALLATION_CHECKS):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def psm_compensation():
    """The simulated PSM1's own identified-model compensation (its true parameters' file), ROS-free."""
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.gc.runtime.model_law import load_model_compensation
    from dvrk_ident_ros.sim.config import load_sim_config

    return load_model_compensation(load_sim_config("psm").parameter_file, arm_spec("PSM1"))
