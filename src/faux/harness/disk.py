"""A full disk under a sweep: one line naming the path and the free space, the sweep stopped.

The harness's own writers (``result.json``, the progress events, cache entries) turn ENOSPC /
EDQUOT into :class:`DiskFull`, which names the file that could not be written; they leave no
partial file behind (every write goes to a temporary file that is removed on failure). A job
that fails on a full disk stops its sweep (``faux.harness.guard.SweepGuard`` raises
:class:`SweepStopped`): every later job would fail the same way after minutes of work.
``python -m faux.run`` then prints the sweep's summary (every job counted: ok, failed, not
run) and :func:`message` as one ``error:`` line, exit 1. The job's log file on that disk
stays quiet about the failed writes (:func:`quiet_log_files`): the one line says it.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys
from pathlib import Path

#: the errors of a disk (or a quota) without room for the write
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFull(OSError):
    """A write of the harness failed for want of space; ``path`` is the file it wrote."""

    def __init__(self, path, cause: OSError | None = None):
        code = getattr(cause, "errno", None) or errno.ENOSPC
        super().__init__(code, os.strerror(code), str(path))
        self.path = Path(path)

    def __reduce__(self):          # travels from a joblib worker to the launching process
        return (DiskFull, (self.path,))


class SweepStopped(BaseException):
    """Stops a sweep from inside a job's callback (not an Exception: Hydra's callback runner
    and launchers pass it on). ``line`` is the one line to print."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line

    def __reduce__(self):
        return (SweepStopped, (self.line,))


def is_full(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an exception it was raised from) is ENOSPC / EDQUOT."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def full_path(exc: BaseException | None) -> Path | None:
    """The file a disk-full error names, if any (``DiskFull.path``, else ``filename``)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, DiskFull):
            return exc.path
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS and exc.filename:
            return Path(exc.filename)
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def free_space(path) -> tuple[str, str]:
    """(free bytes as text, the existing folder it was measured on) for ``path``."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return _fmt_bytes(shutil.disk_usage(p).free), str(p)
    except OSError:
        return "?", str(p)


def message(exc: BaseException | None, path=None) -> str:
    """The one line for a full disk: the file, the free space, how to go on."""
    where = full_path(exc) or (Path(path) if path is not None else Path.cwd())
    free, on = free_space(where)
    return (f"no space left on device writing {where} ({free} free on {on}); free some "
            f"space, then rerun the same command to resume (finished jobs are reused)")


def raise_if_full(exc: OSError, path) -> None:
    """Re-raise ``exc`` as :class:`DiskFull` naming ``path`` when it is a full disk."""
    if is_full(exc) and not isinstance(exc, DiskFull):
        raise DiskFull(path, exc) from exc


def quiet_log_files(logger: logging.Logger | None = None) -> int:
    """Make the file handlers of ``logger`` (the root logger) drop a record they cannot write
    for want of space, instead of printing a traceback per record; other errors are reported
    as before. Returns how many handlers were changed."""
    n = 0
    for h in (logger or logging.getLogger()).handlers:
        if isinstance(h, logging.FileHandler) and not getattr(h, "_faux_quiet", False):
            h.handleError = _quiet_handle_error(h.handleError)
            h._faux_quiet = True
            n += 1
    return n


def _quiet_handle_error(original):
    def handle_error(record):
        if is_full(sys.exc_info()[1]):
            return
        original(record)
    return handle_error
