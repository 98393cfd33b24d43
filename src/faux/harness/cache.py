"""Content-addressed store for trained artifacts (CVAEs, target models, ...).

An entry is keyed by the SHA-256 of a canonical JSON dump of a plain dict (the config that
made the artifact, the checksums of the data files it read (:func:`data_checksum`) and the
version of the code that made it (:func:`code_version`)). It lives in
``<root>/<kind>/<key>.bin``: one file holding a one-line JSON header (payload SHA-256 and
length, the key dict) and the payload bytes.

Entries are data, not code: payloads are written by :func:`torch_dumps` from plain data
only (dicts, lists, tuples, str, int, float, bool, None, tensors; numpy arrays become
tensors) and read by :func:`torch_loads` with ``torch.load(weights_only=True)``, which
refuses any pickled object that is not plain data. The header checksum only detects
damage; it is not a signature, so the loader, not the checksum, keeps a hostile entry from
running code: such an entry is reported as corrupt and rebuilt.

One build per key: :meth:`Cache.get_or_build` holds an exclusive lock on the key
(``<root>/locks/entries/<kind>-<key>.lock``, ``fcntl.flock``) around check, build and write,
so concurrent jobs that need the same artifact train it once; the others wait and load it.
:meth:`Cache.lock` gives a named lock (``<root>/locks/<name>.lock``) for other shared
builds. Writes go to a temporary file in the same folder, then a rename
(``faux.harness.files.write_atomic``); temporary files left by killed writers are removed
when a cache is opened once they are older than ``stale_tmp_hours``.

Root: the ``root`` argument, else ``$FAUX_CACHE_DIR``, else ``outputs/cache``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import io
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from faux.harness.files import file_sha256, write_atomic

log = logging.getLogger("faux.cache")

_FILE_SUMS: dict[tuple[str, int, int], str] = {}
_CODE_SUMS: dict[tuple, str] = {}

#: temporary files of killed writers older than this are removed when a cache is opened
STALE_TMP_HOURS = 6.0


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
        _FILE_SUMS[k] = file_sha256(p)
    return _FILE_SUMS[k]


def data_checksum(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> str:
    """One SHA-256 over the bytes of the given data files (folders: every file inside).

    Depends on the files' contents and their names (not their folder), in a fixed order, so
    the same data under another ``FAUX_DATA_DIR`` gives the same checksum and a changed row
    gives another one."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file())
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"data_checksum: {p} does not exist")
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: (f.name, file_checksum(f))):
        h.update(f"{f.name}:{file_checksum(f)}\n".encode())
    return h.hexdigest()


def code_version(*modules: str) -> str:
    """A version of the code that made an artifact: SHA-256 of the named modules' sources.

    ``code_version("faux.synth.cvae", "faux.synth.encoding")`` changes whenever one of those
    files changes, so a key holding it cannot outlive the code (no hand-bumped constants).
    The torch / numpy / scikit-learn / Lightning versions are part of it too, since they
    change what training produces."""
    names = sorted(set(modules))
    if not names:
        raise ValueError("code_version needs at least one module name")
    files = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not Path(spec.origin).is_file():
            raise ValueError(f"code_version: module {name!r} has no source file")
        files.append(Path(spec.origin))
    return _sources_hash(list(zip(names, files)))


def package_version() -> str:
    """A version of the whole faux package: SHA-256 of every source file under it and the
    numeric libraries' versions (as :func:`code_version`). The key of a memoised job result:
    any changed line of faux makes every memo entry unreachable."""
    root = Path(__file__).resolve().parents[1]          # src/faux
    return _sources_hash([(f.relative_to(root).as_posix(), f) for f in sorted(root.rglob("*.py"))])


def _sources_hash(named: list[tuple[str, Path]]) -> str:
    """16 hex of SHA-256 over (label, bytes) of each file and the library versions; memoised
    on the files' paths, sizes and modification times."""
    memo = tuple((n, str(f), f.stat().st_mtime_ns, f.stat().st_size) for n, f in named)
    if memo not in _CODE_SUMS:
        h = hashlib.sha256()
        for name, f in named:
            h.update(f"{name}\n".encode())
            h.update(f.read_bytes())
        h.update(_library_versions().encode())
        _CODE_SUMS[memo] = h.hexdigest()[:16]
    return _CODE_SUMS[memo]


def _library_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("torch", "numpy", "scikit-learn", "pytorch-lightning"):
        try:
            out.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist}==absent")
    return ";".join(out)


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


def to_plain(obj: Any, _where: str = "payload") -> Any:
    """``obj`` as plain data: dicts (str/int keys), lists, tuples, str, int, float, bool,
    None and CPU tensors. numpy arrays become tensors, numpy / torch scalars Python numbers;
    anything else (a module, a fitted sklearn object, a class instance) is a TypeError."""
    import numpy as np
    import torch

    if isinstance(obj, np.generic):  # before the plain types: np.float64 is a float subclass
        return to_plain(obj.item(), _where)
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf":
            raise TypeError(f"{_where}: numpy array of dtype {obj.dtype} is not plain data")
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            k = k.item() if isinstance(k, np.generic) else k
            if type(k) not in (str, int):
                raise TypeError(f"{_where}: dict key {k!r} is not a str or int")
            out[k] = to_plain(v, f"{_where}[{k!r}]")
        return out
    if isinstance(obj, list):
        return [to_plain(v, f"{_where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple):  # namedtuples and torch.Size become plain tuples
        return tuple(to_plain(v, f"{_where}[{i}]") for i, v in enumerate(obj))
    raise TypeError(f"{_where}: {type(obj).__module__}.{type(obj).__name__} is not plain data "
                    f"(cache entries hold dicts, lists, numbers, strings and tensors only)")


def torch_dumps(obj: Any) -> bytes:
    """Serialise plain data (see :func:`to_plain`) with ``torch.save``."""
    import torch

    buf = io.BytesIO()
    torch.save(to_plain(obj), buf)
    return buf.getvalue()


def torch_loads(data: bytes) -> Any:
    """Load what :func:`torch_dumps` wrote; refuses (UnpicklingError) anything not plain data."""
    import torch

    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def json_dumps(obj: Any) -> bytes:
    return json.dumps(_canonical(obj), sort_keys=True).encode()


def json_loads(data: bytes) -> Any:
    return json.loads(data.decode())


#: the default serialisation of a cache entry
dumps = torch_dumps
loads = torch_loads


@contextlib.contextmanager
def _flock(path: Path, blocking: bool = True) -> Iterator[bool]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: bytes) -> None:
    """``data`` at ``path`` (its folder made), atomically (``faux.harness.files``): readers
    see the old entry or the new one; a full disk raises ``faux.harness.disk.DiskFull``
    naming ``path``. Mode 0o644: entries are shared between users."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


class Cache:
    """``get_or_build(kind, key_dict, build)``; ``hits``/``builds`` count what happened."""

    def __init__(self, root: str | os.PathLike | None = None, *,
                 stale_tmp_hours: float = STALE_TMP_HOURS):
        self.root = cache_root(root)
        self.hits = 0
        self.builds = 0
        self.remove_stale_tmp(stale_tmp_hours)

    def remove_stale_tmp(self, hours: float = STALE_TMP_HOURS) -> list[Path]:
        """Delete ``<root>/<kind>/*.tmp`` files older than ``hours`` (left by killed writers)."""
        removed: list[Path] = []
        if not self.root.is_dir():
            return removed
        cutoff = time.time() - float(hours) * 3600.0
        for tmp in self.root.glob("*/.*.tmp"):
            try:
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()
                    removed.append(tmp)
            except FileNotFoundError:  # another process removed or renamed it
                continue
        if removed:
            log.info("removed %d stale temporary file(s) from %s", len(removed), self.root)
        return removed

    def path(self, kind: str, key_dict: dict) -> Path:
        if not kind or "/" in kind or kind.startswith(".") or kind == "locks":
            raise ValueError(f"cache kind must be a plain folder name, got {kind!r}")
        return self.root / kind / f"{key_of(key_dict)}.bin"

    def lock_path(self, name: str) -> Path:
        """``<root>/locks/<name>.lock`` (odd characters replaced, long names hashed)."""
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))
        if not safe or safe.startswith("."):
            raise ValueError(f"lock name must be a plain file name, got {name!r}")
        if len(safe) > 120:
            safe = safe[:80] + hashlib.sha256(safe.encode()).hexdigest()[:16]
        return self.root / "locks" / f"{safe}.lock"

    @contextlib.contextmanager
    def lock(self, name: str, blocking: bool = True) -> Iterator[bool]:
        """An exclusive inter-process lock on ``name`` for the ``with`` block (for builds
        outside :meth:`get_or_build` that many jobs share). Yields True when held; with
        ``blocking=False`` yields False at once, holding nothing, if another process holds it."""
        with _flock(self.lock_path(name), blocking) as held:
            yield held

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
        _write_atomic(path, json.dumps(header, sort_keys=True).encode() + b"\n" + payload)

    def meta_path(self, kind: str, key_dict: dict) -> Path:
        """``<root>/<kind>/<key>.meta.json``: facts of an entry's build that are not a function
        of its key (e.g. how long training took), kept beside the entry, never inside it."""
        return self.path(kind, key_dict).with_suffix(".meta.json")

    def write_meta(self, kind: str, key_dict: dict, meta: dict) -> None:
        """Store ``meta`` beside the entry (atomically; the last build's facts win)."""
        _write_atomic(self.meta_path(kind, key_dict), json_dumps(meta))

    def read_meta(self, kind: str, key_dict: dict) -> dict:
        """What :meth:`write_meta` stored for the entry, ``{}`` when nothing (or damaged)."""
        try:
            meta = json.loads(self.meta_path(kind, key_dict).read_text())
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def _try_read(self, kind: str, path: Path, loads: Callable[[bytes], Any],
                  warn: bool = True) -> tuple[bool, Any]:
        if not path.exists():
            return False, None
        try:
            obj = self._read(path, loads)
        except Exception as exc:  # corrupt, truncated, hostile, or not loadable any more
            if warn:
                log.warning("cache entry %s is corrupt or not plain data (%s: %s); rebuilding",
                            path, type(exc).__name__,
                            str(exc).splitlines()[0] if str(exc) else "")
            return False, None
        self.hits += 1
        log.info("cache hit: %s %s", kind, path.name)
        return True, obj

    def get_or_build(self, kind: str, key_dict: dict, build: Callable[[], Any], *,
                     dumps: Callable[[Any], bytes] = torch_dumps,
                     loads: Callable[[bytes], Any] = torch_loads) -> Any:
        """The cached object for ``(kind, key_dict)``, building and storing it on a miss.

        Single-flight: a miss takes the key's lock, checks again, and only then builds, so
        two processes asking for one key build it once. A fresh build is returned as it will
        load from the cache (``loads(dumps(obj))``), so cold and warm runs get the same object."""
        path = self.path(kind, key_dict)
        found, obj = self._try_read(kind, path, loads)
        if found:
            return obj
        said = path.exists()  # a damaged entry: warned about once, above
        with _flock(self.root / "locks" / "entries" / f"{kind}-{path.stem}.lock"):
            found, obj = self._try_read(kind, path, loads, warn=not said)  # built meanwhile?
            if found:
                return obj
            log.info("cache miss: %s %s; building", kind, path.name)
            payload = dumps(build())
            self.builds += 1
            self._write(path, key_dict, payload)
        return loads(payload)
