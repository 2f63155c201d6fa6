"""Reading the package's JSON and YAML files with one-line errors naming the file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from dvrk_ident_ros.errors import DataError, DvrkIdentError


def read_document(path: str | Path, error: type[DvrkIdentError] = DataError) -> Any:
    """Parse a .json file as JSON, anything else as YAML; unreadable or malformed -> ``error``."""
    path = Path(path)
    is_json = path.suffix == ".json"
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return json.loads(text) if is_json else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise error(f"{path}: not valid {'JSON' if is_json else 'YAML'}: {first}") from exc


def add_command_group(sub, name: str, help_text: str):
    """A sub-command with sub-commands of its own (``dvrk-ident <name> <command>``)."""
    group = sub.add_parser(name, help=help_text)
    commands = group.add_subparsers(dest=f"{name}_command", metavar="COMMAND")
    commands.required = True
    return commands
