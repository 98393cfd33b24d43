"""Where data lives: ``$FAUX_DATA_DIR`` if set, else ``./data``."""

from __future__ import annotations

import os
from pathlib import Path


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root: the argument, else ``$FAUX_DATA_DIR``, else ``./data``."""
    if root is not None:
        return Path(root).expanduser().resolve()
    env = os.environ.get("FAUX_DATA_DIR")
    return Path(env).expanduser().resolve() if env else Path("data").resolve()
