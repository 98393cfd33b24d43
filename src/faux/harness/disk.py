"""A full disk under a sweep: one line naming the path and the free space, the sweep stopped.

The harness's own writers (``result.json``, the progress events, cache entries) turn ENOSPC /
EDQUOT into :class:`DiskFull`, which names the file that could not be written; they leave no
partial file behind (every write goes to a temporary file that is removed on failure). A job
that fails on a full disk stops its sweep (``faux.harness.guard.SweepGuard`` raises
:class:`SweepStopped`): every later job would fail the same way after minutes of work.
``python -m faux.run`` then prints the sweep's summary (every job counted: ok, failed, not
run) and :func:`message` as one ``error:`` line, exit 1. The job's log file on that disk
stays quiet about the failed writes (:func:`quiet_log_files`): the one line says it.

``faux audit``, which writes its outputs once, says it in its own line
(:func:`disk_full_message`: nothing was written, write elsewhere with ``--out``).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys
from pathlib import Path

#: the errnos of a disk (or a quota) without room for the write
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


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
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
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
        if isinstance(exc, OSError) and exc.errno in DISK_FULL and exc.filename:
            return Path(exc.filename)
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def human_bytes(n: float) -> str:
    """``123456789`` -> ``117.7 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def free_bytes(path) -> tuple[int | None, Path]:
    """The bytes free on the disk holding ``path`` (None when they cannot be read) and the
    nearest existing folder they were measured on."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free, p
    except OSError:
        return None, p


def message(exc: BaseException | None, path=None) -> str:
    """The one line of a sweep for a full disk: the file, the free space, how to go on."""
    where = full_path(exc) or (Path(path) if path is not None else Path.cwd())
    free, on = free_bytes(where)
    return (f"no space left on device writing {where} "
            f"({'?' if free is None else human_bytes(free)} free on {on}); free some "
            f"space, then rerun the same command to resume (finished jobs are reused)")


def disk_full_message(path, *, what: str = "", staged: int | None = None) -> str:
    """The one line of ``faux audit`` for a disk that filled while writing ``path``
    (``what``: the file being written, when ``path`` is its folder; ``staged``: bytes written
    when it filled)."""
    free, _ = free_bytes(path)
    detail = f"{what}; " if what else ""
    detail += f"{'an unknown amount' if free is None else human_bytes(free)} free there"
    if staged:
        detail += f", {human_bytes(staged)} of outputs written before it filled"
    return (f"no space left on the disk writing {path} ({detail}); free some space or write "
            "elsewhere (--out), then rerun; nothing written")


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
