"""Rewrite the wheel-builder paths baked into the ROS 2 wheels' CMake exports.

The ``export_<package>__rosidl_generator_pyExport.cmake`` files of the ROS 2
PyPI wheels' message packages name the wheel builder's Python and NumPy include
directories (``/opt/python/cp311-cp311/...``): one per message package, 14
with the pins of tools/ros/jazzy.txt as with those of tools/ros/kilted.txt
(Jazzy's and Kilted's wheels alike); CMake's generate step then fails.
This replaces them with this interpreter's include directory and NumPy's.
It is idempotent and prints what it changed.

Usage: python tools/fix_wheel_cmake_exports.py PREFIX
"""
from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

_PY_INCLUDE = re.compile(r"/opt/python/cp3\d+-cp3\d+/include/python3\.\d+")
_NUMPY_INCLUDE = re.compile(
    r"/opt/python/cp3\d+-cp3\d+/lib/python3\.\d+/site-packages/numpy/(?:_core|core)/include"
)


def fix_prefix(prefix: Path) -> list[Path]:
    """Return the files rewritten under ``prefix/share``."""
    import numpy

    py_include = sysconfig.get_paths()["include"]
    np_include = numpy.get_include()
    changed = []
    for path in sorted((prefix / "share").glob("*/cmake/*Export.cmake")):
        text = path.read_text()
        new = _NUMPY_INCLUDE.sub(np_include, text)
        new = _PY_INCLUDE.sub(py_include, new)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    prefix = Path(argv[1])
    if not (prefix / "share").is_dir():
        print(f"fix_wheel_cmake_exports: {prefix}/share does not exist", file=sys.stderr)
        return 1
    changed = fix_prefix(prefix)
    print(f"fix_wheel_cmake_exports: {len(changed)} file(s) rewritten")
    leftover = [p for p in (prefix / "share").glob("*/cmake/*.cmake") if "/opt/python/" in p.read_text()]
    if leftover:
        print(f"fix_wheel_cmake_exports: wheel-builder paths remain in {leftover[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
