"""Setuptools entry for the Python side (metadata and entry points live in setup.cfg).

The full ROS 2 package (with its generated interfaces) is built by CMake
(ament_cmake + ament_cmake_python); this file lets `pip install .` install the
ROS-free core and the `dvrk-ident` command line on machines without ROS.
"""
import re
from pathlib import Path

from setuptools import setup

_PACKAGE_XML = Path(__file__).resolve().parent / "package.xml"
_VERSION = re.search(r"<version>([^<]+)</version>", _PACKAGE_XML.read_text()).group(1)

setup(version=_VERSION)
