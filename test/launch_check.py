"""Static checks of ROS 2 launch files, for machines without ros2launch.

A launch file must compile; every ``executable=`` it names must be a console
script of this package; every ``config/...`` file it references must exist.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

_CONFIG_REF = re.compile(r"^(?:config/)?[\w./-]+\.(?:yaml|yml|json)$")


def check_launch_file(path: Path, executables: set[str], config_dir: Path) -> list[str]:
    """Return the problems found in one launch file (empty when it is fine)."""
    source = path.read_text()
    try:
        tree = ast.parse(source, filename=str(path))
        compile(tree, str(path), "exec")
    except SyntaxError as exc:
        return [f"{path.name}:{exc.lineno}: does not compile: {exc.msg}"]
    problems = []
    if not any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body):
        problems.append(f"{path.name}: no generate_launch_description()")
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "executable":
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                problems.append(f"{path.name}:{node.value.lineno}: executable is not a literal string")
            elif node.value.value not in executables:
                problems.append(f"{path.name}:{node.value.lineno}: unknown executable {node.value.value!r}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CONFIG_REF.match(node.value):
            name = node.value.removeprefix("config/")
            if not (config_dir / name).is_file():
                problems.append(f"{path.name}:{node.lineno}: config file {node.value!r} does not exist")
    return problems
