"""The one lock helper of the studies: an exclusive file lock in the cache folder.

Parallel jobs (joblib workers, SLURM array tasks on one file system) share cached artifacts;
a shared build (a dataset's CVAE, a column's target and bias-0 reference) runs under
``cache_lock(cache.root, name)`` so that the first job builds it and the others wait and
load it. ``fcntl.flock`` locks hold between processes of one machine (and on shared file
systems that support flock).

Note: ``faux.cache`` (another owner) is adding a single-flight ``Cache.get_or_build`` and a
``Cache.lock(name)``; when it lands, ``cache_lock`` should delegate to it so that the studies
and the cache use one lock per name. Until then this is the only lock code in the studies.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path


def _lock_path(cache_root, name: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))
    if len(safe) > 120:
        safe = safe[:80] + hashlib.sha256(safe.encode()).hexdigest()[:16]
    path = Path(cache_root) / "locks" / f"{safe}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def cache_lock(cache_root, name: str, blocking: bool = True) -> Iterator[bool]:
    """An exclusive lock ``<cache_root>/locks/<name>.lock`` held for the ``with`` block.

    Yields True when held; with ``blocking=False`` yields False at once (holding nothing)
    when another process holds it."""
    with open(_lock_path(cache_root, name), "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def key_name(prefix: str, key: dict) -> str:
    """A short lock name for a key dict (``prefix-<hash>``)."""
    blob = json.dumps(key, sort_keys=True, default=str).encode()
    return f"{prefix}-{hashlib.sha256(blob).hexdigest()[:16]}"
