"""Static checks of node parameter files (config/<node>.yaml), for machines without ros2launch.

A node parameter file must have the ``/**: ros__parameters:`` form, so that it
applies whatever the node is named, and only values that a ROS parameter can
hold: no empty value, no empty list (it has no type), no mixed-type list
(:func:`check_parameter_file`).
"""
from __future__ import annotations

from pathlib import Path

import yaml


def parameter_names(path: Path) -> set[str]:
    """Names of the parameters of a ``/**: ros__parameters:`` file (nested mappings as dotted names)."""
    def names(mapping: dict, prefix: str = "") -> set[str]:
        out = set()
        for key, value in mapping.items():
            out |= names(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}"}
        return out

    data = yaml.safe_load(path.read_text())
    return names(data["/**"]["ros__parameters"])


def _check_name(key, problems: list[str], where: str) -> None:
    if not isinstance(key, str):  # `on:`, `yes:`, `1:` ... are not strings to a YAML 1.1 reader
        problems.append(f"{where}: parameter name {key!r} is read as a {type(key).__name__}: rename it")


def _check_value(name: str, value, problems: list[str], where: str) -> None:
    scalar = (bool, int, float, str)
    if isinstance(value, dict):
        if not value:
            problems.append(f"{where}: {name} is an empty mapping")
        for key, sub in value.items():
            _check_name(key, problems, where)
            _check_value(f"{name}.{key}", sub, problems, where)
    elif value is None:
        problems.append(f"{where}: {name} has no value (write \"\" for an empty string)")
    elif isinstance(value, list):
        if not value:
            problems.append(f"{where}: {name} is an empty list, which has no type in a ROS parameter file: "
                            "leave the parameter out, with a comment")
        elif type(value[0]) not in scalar or any(type(v) is not type(value[0]) for v in value):
            problems.append(f"{where}: {name} is not a list of values of one type (bool, int, float or str)")
    elif type(value) not in scalar:
        problems.append(f"{where}: {name} is a {type(value).__name__}, not a ROS parameter type")


def check_parameter_file(path: Path) -> list[str]:
    """Return the problems of one node parameter file (empty when it is fine)."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        return [f"{path.name}: does not parse: {exc}"]
    if not isinstance(data, dict) or set(data) != {"/**"}:
        return [f"{path.name}: expected exactly one top-level key '/**' (parameters for any node name)"]
    node = data["/**"]
    if not isinstance(node, dict) or set(node) != {"ros__parameters"}:
        return [f"{path.name}: expected '/**' to hold exactly 'ros__parameters'"]
    parameters = node["ros__parameters"]
    if not isinstance(parameters, dict) or not parameters:
        return [f"{path.name}: 'ros__parameters' is not a non-empty mapping"]
    problems: list[str] = []
    for name, value in parameters.items():
        _check_name(name, problems, path.name)
        _check_value(str(name), value, problems, path.name)
    return problems
