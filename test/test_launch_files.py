"""Launch files are checked statically (no ros2launch wheels here)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO_ROOT
from launch_check import check_launch_file
from test_package import _console_scripts

LAUNCH_FILES = sorted((REPO_ROOT / "launch").glob("*.launch.py"))


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file(path: Path):
    assert check_launch_file(path, set(_console_scripts()), REPO_ROOT / "config") == []


_GOOD = '''
from launch import LaunchDescription
from launch_ros.actions import Node

def generate_launch_description():
    return LaunchDescription([Node(package="dvrk_ident", executable="tool", parameters=["config/p.yaml"])])
'''


def test_checker_accepts_a_good_file(tmp_path: Path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "p.yaml").write_text("{}")
    (tmp_path / "good.launch.py").write_text(_GOOD)
    assert check_launch_file(tmp_path / "good.launch.py", {"tool"}, tmp_path / "config") == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (_GOOD.replace('"tool"', '"missing_node"'), "unknown executable 'missing_node'"),
        (_GOOD.replace("p.yaml", "absent.yaml"), "config file 'config/absent.yaml' does not exist"),
        (_GOOD.replace("return", "return ("), "does not compile"),
        (_GOOD.replace("generate_launch_description", "make"), "no generate_launch_description"),
    ],
)
def test_checker_rejects_a_bad_file(tmp_path: Path, source: str, expected: str):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "p.yaml").write_text("{}")
    (tmp_path / "bad.launch.py").write_text(source)
    problems = check_launch_file(tmp_path / "bad.launch.py", {"tool"}, tmp_path / "config")
    assert any(expected in p for p in problems), problems
