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

import hashlib
import json
import logging
import os
from pathlib import Path

from faux.harness import files
from faux.harness.identity import config_yaml_key

log = logging.getLogger("faux.run")          # the job's own log (run.log)

RESULT = "result.json"
STALE = "result.stale.json"


def metrics_digest(metrics) -> str:
    """The SHA-256 of a job's metrics as JSON (keys sorted), stored beside them in
    ``result.json`` (``metrics_sha256``): a file edited or corrupted after the job wrote it
    no longer matches."""
    text = json.dumps(json.loads(json.dumps(metrics, default=float)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def digest_problem(res: dict) -> str | None:
    """Why ``res``'s metrics cannot be trusted (None: they can): they differ from the digest
    the job stored. A result without a digest (written by hand, or by an older faux) is
    read as it is."""
    want = res.get("metrics_sha256")
    if want is None:
        return None
    try:
        ok = metrics_digest(res.get("metrics")) == want
    except (TypeError, ValueError):
        ok = False
    return None if ok else ("result.json's metrics do not match the checksum its job wrote "
                            "(edited or corrupted)")


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
    why = digest_problem(res)
    if why is not None:
        log.warning("%s: %s; rerunning the job", path, why)
        return None
    ok = res.get("config_hash") == chash and res.get("status") == "ok"
    # a job that skipped (e.g. a dataset the user has not placed yet) is retried on rerun
    skipped = isinstance(res.get("metrics"), dict) and res["metrics"].get("skipped")
    return res if ok and not skipped else None


def write_json_atomic(path: Path, obj: dict) -> None:
    """``obj`` as indented JSON at ``path``, atomically and durably
    (``faux.harness.files.write_atomic``: a temporary file of its own, fsynced, renamed over
    ``path``, the folder fsynced; after a crash ``path`` holds the old or the new content,
    never a part). A full disk raises ``faux.harness.disk.DiskFull`` naming ``path``."""
    files.write_json_atomic(path, obj, default=float, suffix=".part", sync_dir=True)


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
