"""``--help`` of the node executables: purpose and parameters, without starting ROS (ROS-free).

The purpose is the first paragraph of the node module's docstring; the
parameters (type, default, unit, one-line description, range or choices,
whether they may change while the node runs) come from the node's schema
(:mod:`dvrk_ident_ros.parameters`), the one the node declares from.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from dvrk_ident_ros.parameters import NodeSchema, schema_of


def wants_help(argv: list[str]) -> bool:
    """True when ``-h`` or ``--help`` comes before any ``--ros-args`` (ROS arguments are rcl's)."""
    for arg in argv:
        if arg in ("--ros-args", "--"):
            return False
        if arg in ("-h", "--help"):
            return True
    return False


def module_purpose(module: str) -> str:
    """The first paragraph of a module's docstring, read from its source (the module is not imported)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) or ""
    return doc.split("\n\n", 1)[0].strip()


def parameter_lines(schema: NodeSchema) -> list[str]:
    """One line per parameter: name, type, default, description [unit]; range or choices; "run time"."""
    width = max(len(p.name) for p in schema)
    kind_width = max(len(p.kind.value) for p in schema)
    default_width = min(max(len(p.render_default()) for p in schema), 24)
    lines = []
    for p in schema:
        text = p.description + (f" [{p.unit}]" if p.unit else "")
        if p.constraints():
            text += f"; {p.constraints()}"
        if p.runtime:
            text += "; run time"
        lines.append(f"  {p.name:<{width}}  {p.kind.value:<{kind_width}}  {p.render_default():<{default_width}}  "
                     f"{text}")
    return lines


def node_help(module: str, schema: NodeSchema | None = None) -> str:
    """The ``--help`` text of the node in ``module`` (``dvrk_ident_ros.nodes.<node>``)."""
    node = module.rsplit(".", 1)[-1]
    schema = schema or schema_of(node)
    lines = [
        f"usage: ros2 run dvrk_ident {node} [--ros-args [--params-file FILE] [-p NAME:=VALUE ...]]",
        f"       dvrk-ident run {node} [--ros-args ...]          (in the project's virtual environment)",
        "",
        module_purpose(module),
        "",
    ]
    if schema is None:
        lines.append("parameters: none of its own")
    else:
        lines.append(f"parameters (name, type, default, description [unit]; range or choices; set one with "
                     f"-p NAME:=VALUE; defaults and full descriptions also in config/{node}.yaml, the file the "
                     "launch files give the node). Only those marked \"run time\" may be changed while the node "
                     "runs (ros2 param set); the others are read-only:")
        lines.extend(parameter_lines(schema))
    lines.append("")
    lines.append("Every node also has use_sim_time (bool, default false). SIGINT (Ctrl-C) stops it.")
    lines.append("Exit status: 0 when it ends normally, non-zero when it cannot do its job (2: a configuration it "
                 "cannot run with).")
    return "\n".join(lines)
