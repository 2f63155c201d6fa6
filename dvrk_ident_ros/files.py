"""Reading the package's JSON and YAML files with one-line errors naming the file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from dvrk_ident_ros.errors import DataError, DvrkIdentError

#: libyaml's safe loader where PyYAML was built with it (its wheels are): the same documents, much faster than the
#: pure-Python one (docs/results.md; an arm's description and trajectory files are read at every node's start)
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_document(path: str | Path, error: type[DvrkIdentError] = DataError) -> Any:
    """Parse a .json file as JSON, anything else as YAML; unreadable or malformed -> ``error``."""
    path = Path(path)
    is_json = path.suffix == ".json"
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return json.loads(text) if is_json else yaml.load(text, Loader=YAML_LOADER)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise error(f"{path}: not valid {'JSON' if is_json else 'YAML'}: {first}") from exc


def add_command_group(sub, name: str, help_text: str):
    """A sub-command with sub-commands of its own (``dvrk-ident <name> <command>``)."""
    group = sub.add_parser(name, help=help_text)
    commands = group.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
    commands.required = True
    return commands


def resolve_package_file(given: str | Path, what: str = "file") -> Path:
    """One rule for every path a user names (launch argument, action goal, parameter, CLI).

    Absolute (``~`` expanded), else relative to the working directory if it exists
    there, else relative to the package's share directory (so
    ``config/grids/mtml_gc_grid.yaml`` works from anywhere). A path found nowhere
    raises :class:`DataError` naming every place that was looked at.
    """
    from dvrk_ident_ros.environment import find_share_directory

    text = str(given).strip()
    if not text:
        raise DataError(f"no {what} given")
    path = Path(text).expanduser()
    if path.is_absolute():
        if path.is_file():
            return path
        raise DataError(f"{what} {path} does not exist")
    if path.is_file():
        return path.resolve()
    share = find_share_directory()
    if share is not None and (share / path).is_file():
        return share / path
    places = str(Path.cwd()) + (f" or {share}" if share is not None and share.resolve() != Path.cwd().resolve() else "")
    raise DataError(f"{what} {text!r} not found (looked in {places})")
