"""Worker processes of a local parallel sweep end with the process that launched it.

The joblib launcher runs jobs in loky worker processes, children of the launching process.
When that process dies without shutting them down (SIGKILL, an out-of-memory kill), an idle
worker would wait for its next job for minutes. :func:`end_with_parent`, called in a worker
as its job starts (``faux.harness.guard.SweepGuard.on_job_start``), makes the kernel kill it
when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``); elsewhere a daemon thread watches
the parent's pid. A worker whose launching process is already gone when its job starts exits
at once. Never called in the launching process itself (its parent is the user's shell).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

#: ``<linux/prctl.h>``: deliver a signal to this process when its parent thread dies
PR_SET_PDEATHSIG = 1

_armed: dict = {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prctl_deathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(1)


def end_with_parent(parent: int, poll_s: float = 0.5) -> str:
    """Make this process end when ``parent`` (the launching process) dies. Returns how:
    ``"prctl"``, ``"thread"``, ``"armed"`` (done before) or ``"not-parent"`` (``parent`` is
    alive but not this process's parent: nothing done). Exits at once when ``parent`` is gone."""
    if _armed.get("parent") == parent:
        return "armed"
    if os.getppid() != parent:
        if not _alive(parent):
            os._exit(1)               # the launching process died before this job started
        return "not-parent"
    how = "prctl" if _prctl_deathsig(signal.SIGKILL) else "thread"
    if how == "thread":
        threading.Thread(target=_watch, args=(parent, poll_s), name="faux-parent-watch",
                         daemon=True).start()
    if os.getppid() != parent:        # it died between the check and the prctl
        os._exit(1)
    _armed["parent"] = parent
    return how
