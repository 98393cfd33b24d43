"""Small helpers of the audit's output writing: the process's umask (temporary files and
folders are created private, the outputs get the permissions the user's umask gives) and the
bytes staged. The one-line message for a disk that filled while writing is the harness's
(``faux.harness.disk.disk_full_message``)."""

from __future__ import annotations

import os
from pathlib import Path


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
