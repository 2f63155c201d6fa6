"""``--help`` of the node executables: purpose and parameters, without starting ROS (ROS-free).

The purpose is the first paragraph of the node module's docstring; the
parameters, their defaults and one-line descriptions come from the node's
parameter file ``config/<node>.yaml`` (the comment block above each
parameter). A parameter the file leaves out on purpose (commented out, e.g.
``# extra_topics: [...]``) is listed as "not set".
"""
from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

#: A commented-out parameter: ``# name: value`` (one space at most after the ``#``, a lower-case name).
_COMMENTED_PARAMETER = re.compile(r"^#\s?([a-z_][a-z0-9_]*):\s+(\S.*)$")
#: A sentence ends at a full stop followed by an upper-case word (so "e.g. config/..." does not end one).
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z(\"`])")


def wants_help(argv: list[str]) -> bool:
    """True when ``-h`` or ``--help`` comes before any ``--ros-args`` (ROS arguments are rcl's)."""
    for arg in argv:
        if arg in ("--ros-args", "--"):
            return False
        if arg in ("-h", "--help"):
            return True
    return False


@dataclass(frozen=True)
class ParameterDoc:
    """One parameter of a node parameter file."""

    name: str
    default: str  # as written on the command line (-p name:=default); "" when not set
    description: str
    is_set: bool = True


def _render(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    return str(value)


def _one_line(comment: list[str], limit: int = 100) -> str:
    """The first sentence of a comment block (joined across its lines), cut at a word to ``limit`` characters."""
    text = " ".join(line.strip() for line in comment if line.strip())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0].strip()
    if len(sentence) <= limit:
        return sentence
    return sentence[:limit - 4].rsplit(" ", 1)[0].rstrip(",;:") + " ..."


def parameter_docs(path: Path) -> list[ParameterDoc]:
    """The parameters of a ``/**: ros__parameters:`` file in file order, with their comment's first sentence."""
    text = path.read_text()
    values = yaml.safe_load(text)["/**"]["ros__parameters"]
    docs: list[ParameterDoc] = []
    comment: list[str] = []
    indent: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            match = _COMMENTED_PARAMETER.match(stripped)
            if match and indent is not None and match.group(1) not in values:
                name = match.group(1)
                if not any(d.name == name for d in docs):
                    docs.append(ParameterDoc(name, "", _one_line(comment), is_set=False))
                comment = []
            else:
                comment.append(stripped[1:])
            continue
        if not stripped:
            comment = []
            continue
        current = len(line) - len(line.lstrip())
        key = stripped.split(":", 1)[0].strip().strip("'\"")
        if key == "ros__parameters":
            indent, comment = None, []
            continue
        if indent is None and key != "/**":
            indent = current
        if indent is not None and current == indent and key in values:
            value = values[key]
            if isinstance(value, dict):  # nested parameters: dotted names, the block's comment on each
                for sub, sub_value in _flatten(value, f"{key}."):
                    docs.append(ParameterDoc(sub, _render(sub_value), _one_line(comment)))
            else:
                docs.append(ParameterDoc(key, _render(value), _one_line(comment)))
        comment = []
    return docs


def _flatten(mapping: dict, prefix: str):
    for key, value in mapping.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def module_purpose(module: str) -> str:
    """The first paragraph of a module's docstring, read from its source (the module is not imported)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) or ""
    return doc.split("\n\n", 1)[0].strip()


def node_help(module: str, config_dir: Path | None = None) -> str:
    """The ``--help`` text of the node in ``module`` (``dvrk_ident_ros.nodes.<node>``)."""
    node = module.rsplit(".", 1)[-1]
    if config_dir is None:
        from dvrk_ident_ros.model.description import config_directory

        config_dir = config_directory()
    lines = [
        f"usage: ros2 run dvrk_ident {node} [--ros-args [--params-file FILE] [-p NAME:=VALUE ...]]",
        f"       dvrk-ident run {node} [--ros-args ...]          (in the project's virtual environment)",
        "",
        module_purpose(module),
        "",
    ]
    path = config_dir / f"{node}.yaml"
    if not path.is_file():
        lines.append(f"parameters: no {path.name} (the node's own defaults apply)")
        return "\n".join(lines)
    docs = parameter_docs(path)
    lines.append(f"parameters (defaults and full descriptions: {path}, the file the launch files give the node; "
                 "set one with -p NAME:=VALUE):")
    width = max(len(d.name) for d in docs) if docs else 0
    value_width = min(max((len(d.default) for d in docs if d.is_set), default=0), 24)
    for d in docs:
        default = d.default if d.is_set else "(not set)"
        lines.append(f"  {d.name:<{width}}  {default:<{value_width}}  {d.description}".rstrip())
    lines.append("")
    lines.append("Every node also has use_sim_time (bool, default false). SIGINT (Ctrl-C) stops it.")
    lines.append("Exit status: 0 when it ends normally, non-zero when it cannot do its job (2: a configuration it "
                 "cannot run with).")
    return "\n".join(lines)
