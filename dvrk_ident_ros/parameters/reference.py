"""What the parameter schemas generate (ROS-free): the documentation's reference (``docs/reference/parameters.md``),
each node's parameter file (``config/<node>.yaml``) and the typed, frozen settings the nodes read their values
through (``dvrk_ident_ros/parameters/settings.py``). ``python -m dvrk_ident_ros.parameters.reference``
writes them, ``--check`` says whether they are up to date (test/test_node_parameters.py runs the check; ``make
docs`` writes them before it builds the site)."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import yaml

from dvrk_ident_ros.parameters import SCHEMAS
from dvrk_ident_ros.parameters.schema import NodeSchema, Parameter, render

#: the order of the nodes on the page: a lab's order of use
ORDER = ("simulated_arm", "trajectory_player", "recorder", "identification_service", "gravity_compensation",
         "gc_safety_net", "gc_calibration")
HEADER = """# Node parameters

Generated from the schemas (`dvrk_ident_ros/parameters/<node>.py`) by `python -m
dvrk_ident_ros.parameters.reference`; test/test_node_parameters.py checks that this page is up to date.
`<node> --help` (`dvrk-ident run <node> --help`) prints the same. A parameter "at run time" may be set while
the node runs (`ros2 param set`); every other one is read once, at start.
"""


def reference() -> str:
    """The whole page: every node's table under its name."""
    missing = sorted(set(SCHEMAS) - set(ORDER))
    if missing:
        raise ValueError(f"nodes without a place on the page: {', '.join(missing)}")
    parts = [HEADER]
    for node in ORDER:
        parts.append(f"## `{node}`\n\n{SCHEMAS[node].table()}\n")
    return "\n".join(parts)


def _value(value: object) -> str:
    """A default as YAML reads it back with its type: a string YAML would read as another type is quoted."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    text = render(value)
    if isinstance(value, str) and value and yaml.safe_load(text) != value:
        return json.dumps(value)
    return text


def _comment(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, 116 - len(indent), initial_indent=f"{indent}# ", subsequent_indent=f"{indent}# ",
                         break_on_hyphens=False)


def _line(p: Parameter) -> str:
    facts = ", ".join(x for x in (p.kind.value, p.unit, p.constraints(), "may change at run time" if p.runtime
                                  else "") if x)
    return f"{p.description} ({facts})"


def parameter_file(schema: NodeSchema) -> str:
    """config/<node>.yaml: every parameter with its default under ``/**`` (any node name), its description above
    it; a parameter without a default is named in a comment only (an empty list has no type in a parameter file)."""
    lines = [*_comment(f"Parameters of the `{schema.node}` node, generated from dvrk_ident_ros/parameters/"
                       f"{schema.node}.py by `python -m dvrk_ident_ros.parameters.reference` (change the schema, not "
                       "this file). The reference with every parameter's notes: docs/reference/parameters.md, "
                       "docs/nodes.md. `/**` applies them whatever the node is named; launch files and "
                       "`-p name:=value` override them.", ""), "/**:", "  ros__parameters:"]
    for p in schema:
        lines += _comment(_line(p), "    ")
        if p.default is None:
            lines += _comment(f"{p.name}: left out, {p.render_default()}: a parameter file cannot give an empty list "
                              "a type", "    ")
        else:
            lines.append(f"    {p.name}: {_value(p.default)}")
    return "\n".join(lines) + "\n"


_PYTHON_TYPES = {"bool": "bool", "integer": "int", "double": "float", "string": "str",
                 "double[]": "tuple[float, ...]", "string[]": "tuple[str, ...]"}
_CONVERT = {"bool": "bool", "integer": "int", "double": "float", "string": "str", "double[]": "_floats",
            "string[]": "_strings"}


def class_name(node: str) -> str:
    return "".join(part.capitalize() for part in node.split("_")) + "Settings"


def settings_module() -> str:
    """dvrk_ident_ros/parameters/settings.py: one frozen dataclass per node, a field per parameter with its
    Python type, and ``from_values`` (the values :func:`~dvrk_ident_ros.ros.parameters.declare_parameters`
    returns, checked by the schema) converting each value to that type once, here."""
    out = ['"""The nodes\' settings, typed and frozen: generated from the schemas (dvrk_ident_ros/parameters/',
           '<node>.py) by `python -m dvrk_ident_ros.parameters.reference`; change the schema, not this file. A node',
           'reads its parameters as ``<Node>Settings.from_values(declare_parameters(...))``: no value is cast in a',
           'node."""',
           "from __future__ import annotations", "", "from collections.abc import Callable, Mapping",
           "from dataclasses import dataclass", "from typing import Any, TypeVar", "", 'T = TypeVar("T")', "", "",
           "def _floats(value: Any) -> tuple[float, ...]:", "    return tuple(float(x) for x in value)", "", "",
           "def _strings(value: Any) -> tuple[str, ...]:", "    return tuple(str(x) for x in value)", "", "",
           "def _optional(convert: Callable[[Any], T], value: Any) -> T | None:",
           "    return None if value is None else convert(value)", ""]
    for node in ORDER:
        schema = SCHEMAS[node]
        name = class_name(node)
        out += ["", "@dataclass(frozen=True)", f"class {name}:",
                f'    """The parameters of ``{node}`` (docs/reference/parameters.md)."""', ""]
        for p in schema:
            kind = p.kind.value
            optional = " | None" if p.default is None else ""
            if p.arm_dependent:  # as given: the node checks it against the arm (one value per joint)
                out.append(f"    {p.name}: object")
            else:
                out.append(f"    {p.name}: {_PYTHON_TYPES[kind]}{optional}")
        out += ["", "    @classmethod", f"    def from_values(cls, values: Mapping[str, Any]) -> {name}:",
                "        return cls("]
        for p in schema:
            convert = _CONVERT[p.kind.value]
            if p.arm_dependent:
                out.append(f'            {p.name}=values["{p.name}"],')
            elif p.default is None:
                out.append(f'            {p.name}=_optional({convert}, values["{p.name}"]),')
            else:
                out.append(f'            {p.name}={convert}(values["{p.name}"]),')
        out += ["        )", ""]
    out += ["", "#: Each node's settings class, by node name.", "SETTINGS: dict[str, type] = {"]
    out += [f'    "{n}": {class_name(n)},' for n in ORDER]
    out += ["}"]
    return "\n".join(out) + "\n"


def settings_path(root: Path | None = None) -> Path:
    return (root or Path.cwd()) / "dvrk_ident_ros" / "parameters" / "settings.py"


def config_path(node: str, root: Path | None = None) -> Path:
    return (root or Path.cwd()) / "config" / f"{node}.yaml"


def page_path(root: Path | None = None) -> Path:
    """The page in the repository at ``root`` (default: the working directory, as ``make docs`` runs it)."""
    return (root or Path.cwd()) / "docs" / "reference" / "parameters.md"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: python -m dvrk_ident_ros.parameters.reference [--check]", file=sys.stderr)
        return 2
    wanted = {page_path(): reference(), settings_path(): settings_module(),
              **{config_path(node): parameter_file(schema) for node, schema in SCHEMAS.items()}}
    if args == ["--check"]:
        stale = [path for path, text in wanted.items() if not path.is_file() or path.read_text() != text]
        for path in stale:
            print(f"{path}: not what the schemas make; run python -m dvrk_ident_ros.parameters.reference")
        return 1 if stale else 0
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
