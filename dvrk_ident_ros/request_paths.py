"""What a service request may touch on disk (ROS-free).

A request comes from any participant of the ROS domain, so the paths it names
are checked before anything is read or written:

- **writing**: a request's output directory is a *relative* path taken inside
  the node's own output directory (the base). Absolute paths, ``~`` paths and
  any path that resolves outside the base (``..``, a symbolic link leaving it)
  are refused; an empty one is the base itself.
- **reading**: every data path must be an existing regular file or directory
  (a bag, a CUHK directory) that the node's user may read; devices, FIFOs and
  sockets are refused (reading ``/dev/zero`` or a FIFO would block the service
  for ever). With a data directory configured, data paths must also resolve
  inside it (relative ones are taken relative to it); without one, any such
  path is accepted (relative ones are taken relative to the working directory).

Both rules follow symbolic links (``Path.resolve``) before checking. They guard
against requests over ROS, not against a local user who can write into the
base directory (such a user can swap a checked directory for a link).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from dvrk_ident_ros.errors import PathRefusedError


def _resolve(path: Path, what: str) -> Path:
    try:
        return path.resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # NUL byte, symlink loop, ...
        raise PathRefusedError(f"{what} {str(path)!r}: not a usable path ({exc})") from exc


def output_directory_within(base: str | Path, requested: str) -> Path:
    """The absolute directory a request may write to: ``requested`` taken inside ``base``.

    ``requested`` empty (or blanks) -> the base itself. Absolute, ``~``-prefixed, or resolving
    (after ``..`` and symbolic links) outside the base -> :class:`PathRefusedError` naming the rule.
    Nothing is created here.
    """
    root = _resolve(Path(base).expanduser(), "output directory")
    text = str(requested).strip()
    if not text:
        return root
    rule = f"a request's output_directory must be a relative path inside the service's output_directory ({root})"
    given = Path(text)
    if given.is_absolute() or text.startswith("~"):
        raise PathRefusedError(f"output_directory {text!r} refused: {rule}; absolute paths are not accepted")
    target = _resolve(root / given, "output_directory")
    if not target.is_relative_to(root):
        raise PathRefusedError(f"output_directory {text!r} refused: {rule}; it resolves to {target}, outside it")
    return target


def readable_data_path(given: str, data_directory: str | Path | None = None) -> Path:
    """The absolute path of a data file or directory a request may read.

    Must exist, be a regular file or a directory, and be readable by this process; with
    ``data_directory`` (not empty) it must also resolve inside that directory, and a relative
    ``given`` is taken relative to it (else relative to the working directory).
    """
    text = str(given).strip()
    if not text:
        raise PathRefusedError("data_files: an empty path")
    path = Path(text).expanduser()
    root = None
    if data_directory is not None and str(data_directory).strip():
        root = _resolve(Path(str(data_directory).strip()).expanduser(), "data directory")
        path = root / path  # an absolute ``path`` stays as it is
    resolved = _resolve(path, "data file")
    if root is not None and not resolved.is_relative_to(root):
        raise PathRefusedError(f"{text}: refused: data files must be inside the service's data_directory ({root}); "
                          f"it resolves to {resolved}")
    try:
        mode = resolved.stat().st_mode
    except FileNotFoundError:
        raise PathRefusedError(f"{text}: no such file or bag") from None
    except OSError as exc:
        raise PathRefusedError(f"{text}: cannot read: {exc.strerror or exc}") from exc
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise PathRefusedError(f"{text}: refused: not a regular file or directory (devices, FIFOs and sockets are "
                          "never read)")
    if not os.access(resolved, os.R_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)):
        raise PathRefusedError(f"{text}: cannot read: permission denied")
    return resolved
