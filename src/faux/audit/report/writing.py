"""Small helpers of the audit's output writing: the process's umask (temporary files and
folders are created private, the outputs get the permissions the user's umask gives), and
the one-line message for a disk that filled while writing."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def umask() -> int:
    """The process's umask, read without changing it where Linux reports it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # elsewhere: set and restore at once
    os.umask(mask)
    return mask


def dir_mode() -> int:
    """The mode ``mkdir`` gives a new folder under the current umask."""
    return 0o777 & ~umask()


def file_mode() -> int:
    """The mode ``open(..., "w")`` gives a new file under the current umask."""
    return 0o666 & ~umask()


def human_bytes(n: float) -> str:
    """``123456789`` -> ``117.7 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def free_space(path) -> str:
    """The space left on the disk holding ``path`` (or its nearest existing folder)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return human_bytes(shutil.disk_usage(p).free)
    except OSError:
        return "an unknown amount"


def folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 where it cannot be read)."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def disk_full_message(path, *, what: str = "", staged: int | None = None) -> str:
    """One line for a disk that filled while writing ``path`` (``what``: the file being
    written, when ``path`` is its folder; ``staged``: bytes written when it filled)."""
    detail = f"{what}; " if what else ""
    detail += f"{free_space(path)} free there"
    if staged:
        detail += f", {human_bytes(staged)} of outputs written before it filled"
    return (f"no space left on the disk writing {path} ({detail}); free some space or write "
            "elsewhere (--out), then rerun; nothing written")
