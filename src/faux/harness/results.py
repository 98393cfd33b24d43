"""A job's ``result.json``: written atomically, read back, marked stale.

Each job writes ``result.json`` (config, config hash, data checksum, metrics, timings) into
its folder with fsync and an atomic rename (:func:`write_json_atomic`), before any logger
runs. A job whose folder already holds a finished ``result.json`` with the same config hash
is skipped (:func:`finished`), so rerunning an interrupted sweep into the same folder
completes only what is missing. A job that reruns first renames the old ``result.json`` to
``result.stale.json`` (:func:`mark_stale`): a rerun that crashes never leaves an old result
looking current.

Every write has a temporary name of its own (``tempfile.mkstemp`` beside the target), so two
launches into one sweep folder never share a partial file.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from faux.harness.disk import raise_if_full
from faux.harness.identity import config_yaml_key

log = logging.getLogger("faux.run")          # the job's own log (run.log)

RESULT = "result.json"
STALE = "result.stale.json"


def finished(out_dir: Path, chash: str) -> dict | None:
    """The stored result of a finished job with this config hash, else None. A file that is
    not a JSON object (truncated, or e.g. ``[1, 2]`` or ``null``) is no result: the job reruns
    (one warning line for a file that parses to something else)."""
    path = out_dir / RESULT
    try:
        res = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(res, dict):
        log.warning("%s holds a JSON %s, not a result object; rerunning the job", path,
                    type(res).__name__ if res is not None else "null")
        return None
    ok = res.get("config_hash") == chash and res.get("status") == "ok"
    # a job that skipped (e.g. a dataset the user has not placed yet) is retried on rerun
    skipped = isinstance(res.get("metrics"), dict) and res["metrics"].get("skipped")
    return res if ok and not skipped else None


def write_json_atomic(path: Path, obj: dict) -> None:
    """Write ``obj`` to a temporary file of its own (``tempfile.mkstemp`` in the same folder:
    two processes writing one path never share it), fsync it, rename it over ``path``, fsync
    the folder: after a crash ``path`` holds the old or the new content, never a part, and of
    two concurrent writers the last rename wins whole. A full disk raises
    ``faux.harness.disk.DiskFull`` naming ``path`` (the temporary file removed)."""
    path = Path(path)
    text = json.dumps(obj, indent=2, default=float)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    except OSError as exc:
        raise_if_full(exc, path)
        raise
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)       # mkstemp makes 0600; results are read by other users
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise_if_full(exc, path)
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def remember_config_hash(out_dir: Path, data_sha256: str | None, chash: str,
                         cache_dir=None) -> bool:
    """Record the hash this job computed for the ``.hydra/config.yaml`` Hydra wrote for it, so
    that the aggregation need not resolve the file again (``stored_config_hash`` reads the
    entry). Called once the result is written, so a config refused before training leaves
    the cache untouched; a config.yaml edited later has other bytes and is resolved afresh.
    False (nothing written) for a job run without Hydra's wrapper (no such file)."""
    path = Path(out_dir) / ".hydra" / "config.yaml"
    if not path.is_file():
        return False
    from faux.harness.cache import Cache, json_dumps, json_loads

    Cache(cache_dir).get_or_build("config_hash", config_yaml_key(path, data_sha256),
                                  lambda: chash, dumps=json_dumps, loads=json_loads)
    return True


def mark_stale(out_dir: Path) -> Path | None:
    """Rename a previous ``result.json`` to ``result.stale.json`` (a rerun is starting)."""
    old = out_dir / RESULT
    if not old.exists():
        return None
    stale = out_dir / STALE
    os.replace(old, stale)
    log.info("previous result of another config moved to %s", stale)
    return stale
