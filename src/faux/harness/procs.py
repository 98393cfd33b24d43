"""The processes under a process, read from Linux's ``/proc``: what the benchmarks and tests
watch of a run's children (Ray's actors, their memory). Elsewhere there are none to read."""

from __future__ import annotations

import os
from pathlib import Path


def descendants(root: int) -> list[int]:
    """The processes under ``root`` (its children, theirs, ...), parents before children;
    empty where there is no ``/proc``."""
    if not os.path.isdir("/proc"):
        return []
    children: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = Path(f"/proc/{p}/stat").read_text()
            except OSError:  # gone since it was listed
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(p))
    out, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def cmdline(pid: int) -> bytes:
    """A process's command line (NUL-separated), empty once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
