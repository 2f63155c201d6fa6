"""Where generated code is cached, and how it is written and imported.

The directory is ``$DVRK_IDENT_CACHE``, else ``$XDG_CACHE_HOME/dvrk_ident``, else
``~/.cache/dvrk_ident``; a read-only home falls back to a private directory in the
temporary directory. Imports nothing heavy, so fast paths can use it.
"""
from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from types import ModuleType


def cache_directory() -> Path:
    root = os.environ.get("DVRK_IDENT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dvrk_ident")
    return Path(root)


def writable_directory(directory: Path) -> Path:
    """``directory``, created; a private temporary one when it cannot be (read-only home)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        directory = Path(tempfile.gettempdir()) / f"dvrk_ident-cache-{os.getuid()}"
        directory.mkdir(parents=True, exist_ok=True)
    return directory


def write_text_atomically(path: Path, text: str) -> None:
    """Write through a per-process temporary file and rename: readers never see half a file."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def source_file(module_name: str) -> Path:
    """The source file of a module, found without importing it (cache keys that hash a generator's source
    must not load sympy on every start)."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ImportError(f"{module_name}: source file not found")
    return Path(spec.origin)


def import_file(path: Path, name: str) -> ModuleType:
    """Import a generated module from its file."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
