"""The C allocator of a process that streams batches (the audit's pass): keep the memory a
batch freed for the next one.

Every batch of the pass allocates the same large arrays again (design matrices, the model's
activations, the scores' columns: tens of MB each at 65,536 rows). glibc's malloc hands
blocks past its mmap threshold straight from the kernel and returns them on free, and gives
the top of its heap back once more than its trim threshold is free there; either way the
next batch's arrays come as fresh pages, each zeroed by the kernel on first touch (on the
audit's benchmark, about 320 MB a batch and a fifth to a third of the CPU time). With both
thresholds raised, a batch reuses the memory the batch before it freed.

``keep_freed_memory`` is called where the process is the audit's own: the ``faux`` command
calls it, and a program calling ``faux.audit`` may. It changes the whole process's
allocator for the rest of its life (glibc cannot read the old settings back), and does
nothing where the C library is not glibc. A Ray worker gets the same settings as
environment variables (``ENV``) when Ray starts it: it scores its batches on a thread of its
own, whose allocations come from one of glibc's per-thread arenas (heaps of at most 64 MB,
whose larger blocks always come from the kernel) unless there is one arena only, and the
number of arenas is fixed before any of the audit's code runs."""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 << 20  # larger than any one array of a batch
TRIM_THRESHOLD = 1 << 30  # about two batches' worth of arrays kept, not more
ENV = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
       "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD)}


def keep_freed_memory() -> bool:
    """Raise glibc's mmap threshold to ``MMAP_THRESHOLD`` and its trim threshold to
    ``TRIM_THRESHOLD`` (again: the same); True where both were set (glibc), False
    elsewhere."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the process runs on
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, Windows, musl without mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
