"""A job's own peak memory, for the sweep reports (Linux ``/proc``; rusage elsewhere)."""

from __future__ import annotations

import resource
import time
from contextlib import contextmanager
from pathlib import Path


def reset_peak_rss() -> str:
    """Reset this process's peak-RSS mark (Linux ``clear_refs`` 5), so that a job run in a
    reused worker (joblib) reports its own peak. Returns the scope ``peak_rss_mb`` will
    measure: ``"job"`` after a reset, ``"process"`` where the kernel refuses it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return "job"
    except OSError:
        return "process"


def peak_rss_mb() -> float:
    """Peak resident memory (MiB) since ``reset_peak_rss`` (else since the process began)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Phases:
    """Seconds per named phase of a job, summed over repeats (``with phases("aux"): ...``)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + float(seconds)
