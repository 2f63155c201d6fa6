"""The isolation of the package's own runs (tests, demo, benchmarks): their own domain, this machine only,
on Humble as on later distributions (dvrk_ident_ros/jobs/launcher.py)."""
from __future__ import annotations

import pytest

from dvrk_ident_ros.jobs.launcher import isolation_variables, localhost_only, ros_environment


@pytest.mark.parametrize(("distro", "humble"), [("humble", True), ("jazzy", False), ("kilted", False)])
def test_localhost_only_speaks_each_distribution_s_variable(distro: str, humble: bool):
    env = {"ROS_DISTRO": distro}
    localhost_only(env)
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"  # Iron and later
    # Humble has only ROS_LOCALHOST_ONLY; later distributions warn that it is deprecated: set on Humble alone
    assert env.get("ROS_LOCALHOST_ONLY") == ("1" if humble else None)


def test_a_user_s_own_choice_is_kept():
    env = {"ROS_DISTRO": "humble", "ROS_LOCALHOST_ONLY": "0", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    localhost_only(env)
    assert env["ROS_LOCALHOST_ONLY"] == "0" and env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"


def test_isolated_environment_and_what_this_process_takes_of_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ROS_DISTRO", "humble")
    monkeypatch.delenv("ROS_LOCALHOST_ONLY", raising=False)
    env = ros_environment(42)
    assert env["ROS_DOMAIN_ID"] == "42" and env["ROS_LOCALHOST_ONLY"] == "1"
    assert isolation_variables(env) == {k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE",
                                                            "ROS_LOCALHOST_ONLY", "RMW_IMPLEMENTATION")}
    monkeypatch.setenv("ROS_DISTRO", "jazzy")
    assert "ROS_LOCALHOST_ONLY" not in isolation_variables(ros_environment(42))
    # a lab's run: the user's ROS settings as they are
    assert "ROS_LOCALHOST_ONLY" not in ros_environment(isolated=False)
