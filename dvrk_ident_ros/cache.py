"""Where generated code is cached: ``$DVRK_IDENT_CACHE``, else ``$XDG_CACHE_HOME/dvrk_ident``,
else ``~/.cache/dvrk_ident``. Imports nothing heavy, so fast paths can ask for it."""
from __future__ import annotations

import os
from pathlib import Path


def cache_directory() -> Path:
    root = os.environ.get("DVRK_IDENT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dvrk_ident")
    return Path(root)
