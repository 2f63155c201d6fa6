"""Setuptools entry for the Python side (metadata, dependencies and entry points live in setup.cfg).

The full ROS 2 package (with its generated interfaces) is built by CMake
(ament_cmake + ament_cmake_python); this file lets `pip install .` install the
ROS-free core and the `dvrk-ident` command line on machines without ROS, with
the package's share directory (package.xml, config/, launch/) where the core
looks for it: <prefix>/share/dvrk_ident, as a ROS installation has it.
"""
import re
from pathlib import Path

from setuptools import setup

_ROOT = Path(__file__).resolve().parent
_VERSION = re.search(r"<version>([^<]+)</version>", (_ROOT / "package.xml").read_text()).group(1)


def _share_files() -> list[tuple[str, list[str]]]:
    """(share/dvrk_ident/<dir>, [files]) for package.xml and every file under config/ and launch/."""
    entries = [("share/dvrk_ident", ["package.xml"])]
    for top in ("config", "launch"):
        for directory in [_ROOT / top, *sorted(p for p in (_ROOT / top).rglob("*") if p.is_dir())]:
            files = sorted(str(f.relative_to(_ROOT)) for f in directory.iterdir()
                           if f.is_file() and f.suffix != ".pyc")
            if files:
                entries.append((f"share/dvrk_ident/{directory.relative_to(_ROOT)}", files))
    return entries


setup(version=_VERSION, data_files=_share_files())
