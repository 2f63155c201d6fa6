"""The ROS-free core imports and runs in a process where rclpy cannot be imported (which modules may
import rclpy at all, even inside a function: test_layers.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import REPO_ROOT

_BLOCK_ROS = textwrap.dedent(
    """
    import importlib, importlib.abc, pkgutil, sys

    class BlockRos(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("rclpy", "rosidl_runtime_py", "dvrk_ident"):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, BlockRos())
    try:
        import rclpy  # noqa
        raise SystemExit("rclpy should not be importable here")
    except ImportError:
        pass

    import dvrk_ident_ros
    names = []
    for info in pkgutil.walk_packages(dvrk_ident_ros.__path__, "dvrk_ident_ros."):
        if info.name.startswith(("dvrk_ident_ros.nodes", "dvrk_ident_ros.ros")):
            continue
        importlib.import_module(info.name)
        names.append(info.name)
    from dvrk_ident_ros.app.cli import main
    assert main(["doctor", "--json"]) == 1  # interfaces are unavailable here: reported, not raised
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("rclpy", "dvrk_ident"))
    assert not leaked, leaked
    print("imported", len(names), "core modules")
    """
)


def test_core_imports_with_rclpy_blocked():
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCK_ROS], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "core modules" in proc.stdout
