"""Facts about the installation, shared by the command line and the nodes.

ROS-free: it only looks for modules and files, it never imports rclpy.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_NAME = "dvrk_ident"
INTERFACE_MODULES = ("dvrk_ident.msg", "dvrk_ident.srv", "dvrk_ident.action")
CORE_DEPENDENCIES = ("numpy", "scipy", "sympy", "cvxpy", "clarabel", "yaml", "rosbags", "matplotlib")


def ensure_ament_prefix_path(prefix: str | None = None) -> str:
    """Make sure ``AMENT_PREFIX_PATH`` lists ``prefix`` (default: this Python's prefix).

    In a sourced ROS 2 workspace the variable is already set and the prefix is
    appended only if absent; in the project's virtual environment (the wheels'
    underlay, with dvrk_ident installed into it) this is what lets
    ``ament_index_python`` and rclpy find their resources with no set-up.
    """
    prefix = prefix or sys.prefix
    parts = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    if prefix not in parts and (Path(prefix) / "share" / "ament_index").is_dir():
        parts.append(prefix)
        os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join(parts)
    return os.environ.get("AMENT_PREFIX_PATH", "")


def find_share_directory() -> Path | None:
    """The package's share directory: the source tree when the code runs from it,
    else the installed ``share/dvrk_ident`` of this prefix or of AMENT_PREFIX_PATH."""
    source_root = Path(__file__).resolve().parent.parent
    if (source_root / "package.xml").is_file():
        return source_root
    for prefix in [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]:
        if prefix and (Path(prefix) / "share" / PACKAGE_NAME / "package.xml").is_file():
            return Path(prefix) / "share" / PACKAGE_NAME
    return None


def executables_directory() -> Path:
    """Where the node executables of this installation live (``<prefix>/lib/dvrk_ident``)."""
    return Path(sys.prefix) / "lib" / PACKAGE_NAME


@dataclass(frozen=True)
class Check:
    """One line of ``dvrk-ident doctor``."""

    name: str
    ok: bool
    detail: str


def run_checks() -> list[Check]:
    """Check the core dependencies, rclpy, the generated interfaces and the executables."""
    checks = []
    for module in CORE_DEPENDENCIES:
        try:
            mod = importlib.import_module(module)
            checks.append(Check(module, True, str(getattr(mod, "__version__", ""))))
        except Exception as exc:  # noqa: BLE001 - report any import failure
            checks.append(Check(module, False, f"{type(exc).__name__}: {exc}"))
    try:
        rclpy_found = importlib.util.find_spec("rclpy") is not None
    except ImportError:
        rclpy_found = False
    checks.append(Check("rclpy", rclpy_found, "found" if rclpy_found else "not importable"))
    for module in INTERFACE_MODULES:
        try:
            importlib.import_module(module)
            checks.append(Check(module, True, "imports"))
        except Exception as exc:  # noqa: BLE001
            checks.append(Check(module, False, f"{type(exc).__name__}: {exc}"))
    checks.append(crtk_messages_check())
    exe_dir = executables_directory()
    checks.append(
        Check("executables", (exe_dir / "dvrk-ident").exists(), str(exe_dir))
    )
    return checks


def crtk_messages_check() -> Check:
    """Which crtk_msgs the nodes use: the dVRK workspace's, the stand-in make setup builds, or none."""
    try:
        module = importlib.import_module("crtk_msgs.msg")
    except Exception as exc:  # noqa: BLE001
        return Check("crtk_msgs", False, f"absent ({type(exc).__name__}): the arm's operating state cannot be "
                     "read, so the player, the gravity compensation and gc_calibration refuse to command it")
    if module.__file__ is None:
        return Check("crtk_msgs", True, "crtk_msgs.msg imports but has no module file (a namespace package)")
    location = Path(module.__file__).resolve()
    for parent in location.parents:
        manifest = parent / "share" / "crtk_msgs" / "package.xml"
        if manifest.is_file():
            stand_in = "Stand-in for the CRTK interface package" in manifest.read_text(encoding="utf-8")
            which = "dvrk_ident's stand-in (tools/crtk_msgs, built by make setup)" if stand_in \
                else "the workspace's crtk_msgs"
            return Check("crtk_msgs", True, f"{which}: {parent}")
    return Check("crtk_msgs", True, f"imports from {location.parent}")
