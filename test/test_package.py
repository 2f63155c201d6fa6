"""The package's metadata is consistent: one version, every interface built,
every console script installed as a ROS executable."""
from __future__ import annotations

import configparser
import importlib
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

import dvrk_ident_ros


def _console_scripts() -> dict[str, str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO_ROOT / "setup.cfg")
    lines = cfg["options.entry_points"]["console_scripts"].strip().splitlines()
    return dict(tuple(part.strip() for part in line.split("=", 1)) for line in lines)


def test_version_matches_package_xml():
    xml = (REPO_ROOT / "package.xml").read_text()
    assert re.search(r"<version>([^<]+)</version>", xml).group(1) == dvrk_ident_ros.__version__


def test_package_xml_is_valid_for_catkin_pkg():
    catkin_pkg = pytest.importorskip("catkin_pkg.package")
    package = catkin_pkg.parse_package(str(REPO_ROOT / "package.xml"))
    package.validate()
    assert package.name == "dvrk_ident"
    assert package.get_build_type() == "ament_cmake"


def test_every_interface_file_is_generated():
    cmake = (REPO_ROOT / "CMakeLists.txt").read_text()
    listed = set(re.findall(r'"((?:msg|srv|action)/\w+\.(?:msg|srv|action))"', cmake))
    on_disk = {
        str(p.relative_to(REPO_ROOT)) for kind in ("msg", "srv", "action") for p in (REPO_ROOT / kind).glob("*.*")
    }
    assert listed == on_disk


def test_console_scripts_resolve():
    for name, target in _console_scripts().items():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), name


def test_console_scripts_installed_as_ros_executables():
    exe_dir = Path(sys.prefix) / "lib" / "dvrk_ident"
    if not exe_dir.is_dir():
        pytest.skip(f"{exe_dir} absent: not running from the `make setup` environment")
    missing = [name for name in _console_scripts() if not (exe_dir / name).exists()]
    assert not missing, f"not installed in {exe_dir}: {missing} (run `make setup`)"
