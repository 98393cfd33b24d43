"""The effect passes' described rows: a heap of the ``n`` flagged rows of largest |effect|,
keyed (|effect|, -row id), so that ties go to the earlier row and the heap's rows do not
depend on the order their batches were counted in."""

from __future__ import annotations

import heapq


def enters_top(top: list, key: tuple, n: int) -> bool:
    """Whether a row of ``key`` enters the heap ``top`` of the ``n`` largest."""
    return len(top) < n or key > top[0][:2]


def push_top(top: list, item: tuple, n: int) -> None:
    """``item`` (key..., record) into ``top``, the smallest out when it holds ``n``."""
    if len(top) < n:
        heapq.heappush(top, item)
    else:
        heapq.heapreplace(top, item)


def keep_top(top: list, items, n: int) -> None:
    """The heap ``top`` with ``items`` (another heap's rows) offered to it, each as when its
    row was counted."""
    for item in items:
        if enters_top(top, item[:2], n):
            push_top(top, item, n)
