"""The allocator settings of the audit's processes (faux.harness.malloc): with them a batch's
large arrays reuse the memory the last batch freed instead of coming as fresh pages from the
kernel, on the main thread (the ``faux`` command) and on a thread of a process started with
``ENV`` (a Ray worker); without them, each array is fresh pages again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from faux.harness import malloc

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION")),
    reason="glibc's malloc settings")

#: a batch's worth of arrays: three of 40 MB alive at once (each past glibc's largest
#: automatic mmap threshold, 32 MB; together past a thread arena's 64 MB heap), zeroed, freed,
#: 12 times; the minor page faults of the last 10 counted (bytearray: no huge pages asked for)
PROGRAM = """
import json, resource, sys, threading
from faux.harness.malloc import keep_freed_memory

def batches():
    for i in range(12):
        if i == 2:
            out["before"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        arrays = [bytearray(40_000_000) for _ in range(3)]
        del arrays
    out["faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - out["before"]

out = {}
if sys.argv[1] == "tuned":
    out["set"] = keep_freed_memory()
if sys.argv[2] == "thread":
    t = threading.Thread(target=batches)
    t.start()
    t.join()
else:
    batches()
print(json.dumps(out))
"""

PAGES = 40_000_000 // 4096  # the pages of one array


def _faults(how: str, where: str, env=None) -> dict:
    run = subprocess.run([sys.executable, "-c", PROGRAM, how, where], capture_output=True,
                         text=True, check=True, env={**os.environ, **(env or {})})
    return json.loads(run.stdout)


def test_the_main_thread_reuses_freed_memory_once_set():
    plain, tuned = _faults("plain", "main"), _faults("tuned", "main")
    assert tuned["set"] is True
    assert plain["faults"] > 20 * PAGES  # every array fresh pages
    assert tuned["faults"] < PAGES  # the same memory again


def test_a_thread_needs_the_settings_before_the_process_starts():
    """mallopt from the running process leaves a thread's arena as it was; the environment
    the process starts with (what Ray's workers get) does not."""
    late = _faults("tuned", "thread")
    started = _faults("plain", "thread", env=malloc.ENV)
    assert late["faults"] > 8 * PAGES  # at least one array a batch fresh pages
    assert started["faults"] < PAGES
