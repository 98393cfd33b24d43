"""Content-addressed store for trained artifacts (CVAEs, target models, ...).

An entry is keyed by the SHA-256 of a canonical JSON dump of a plain dict (the config that
made the artifact, including the checksums of the data files it read; see
:func:`file_checksum`). It lives in ``<root>/<kind>/<key>.bin``: one file holding a one-line
JSON header (payload SHA-256 and length, the key dict) and the payload bytes. Writes go to
a temporary file in the same folder, then ``os.replace`` (atomic on POSIX), so concurrent
writers of one key never leave a half-written entry: the last complete write wins. A read
checks the header and checksum; an unreadable or corrupt entry is logged and rebuilt.

Root: the ``root`` argument, else ``$FAUX_CACHE_DIR``, else ``outputs/cache``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("faux.cache")

_FILE_SUMS: dict[tuple[str, int, int], str] = {}


def cache_root(root: str | os.PathLike | None = None) -> Path:
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("FAUX_CACHE_DIR")
    return Path(env).expanduser() if env else Path("outputs") / "cache"


def file_checksum(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (memoised on path, size and mtime)."""
    p = Path(path).resolve()
    st = p.stat()
    k = (str(p), st.st_size, st.st_mtime_ns)
    if k not in _FILE_SUMS:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _FILE_SUMS[k] = h.hexdigest()
    return _FILE_SUMS[k]


def _canonical(obj: Any) -> Any:
    """Plain-JSON form of a key dict (tuples -> lists, paths -> str, numpy scalars -> python)."""
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, list | tuple):
        return [_canonical(v) for v in obj]
    if isinstance(obj, os.PathLike):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy / torch scalars
        return obj.item()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cache key values must be plain data, got {type(obj).__name__}")


def key_of(key_dict: dict) -> str:
    text = json.dumps(_canonical(key_dict), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def pickle_dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def torch_dumps(obj: Any) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def torch_loads(data: bytes) -> Any:
    import torch

    # entries are written by this process family only; full unpickling is intended
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)


class Cache:
    """``get_or_build(kind, key_dict, build)``; ``hits``/``builds`` count what happened."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = cache_root(root)
        self.hits = 0
        self.builds = 0

    def path(self, kind: str, key_dict: dict) -> Path:
        if not kind or "/" in kind or kind.startswith("."):
            raise ValueError(f"cache kind must be a plain folder name, got {kind!r}")
        return self.root / kind / f"{key_of(key_dict)}.bin"

    def _read(self, path: Path, loads: Callable[[bytes], Any]) -> Any:
        with open(path, "rb") as f:
            header = json.loads(f.readline().decode())
            payload = f.read()
        if len(payload) != header["length"] or hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise ValueError("checksum mismatch")
        return loads(payload)

    def _write(self, path: Path, key_dict: dict, payload: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"sha256": hashlib.sha256(payload).hexdigest(), "length": len(payload),
                  "key": _canonical(key_dict)}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(json.dumps(header, sort_keys=True).encode() + b"\n")
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; entries are shared between users
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_or_build(self, kind: str, key_dict: dict, build: Callable[[], Any], *,
                     dumps: Callable[[Any], bytes] = pickle_dumps,
                     loads: Callable[[bytes], Any] = pickle.loads) -> Any:
        """The cached object for ``(kind, key_dict)``, building and storing it on a miss."""
        path = self.path(kind, key_dict)
        if path.exists():
            try:
                obj = self._read(path, loads)
            except Exception as exc:  # corrupt, truncated, or not loadable any more
                log.warning("cache entry %s is corrupt (%s: %s); rebuilding", path,
                            type(exc).__name__, exc)
            else:
                self.hits += 1
                log.info("cache hit: %s %s", kind, path.name)
                return obj
        log.info("cache miss: %s %s; building", kind, path.name)
        obj = build()
        self.builds += 1
        self._write(path, key_dict, dumps(obj))
        return obj
