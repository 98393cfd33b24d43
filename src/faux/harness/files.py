"""The package's file primitives: what a path is (``path_kind``), a file's SHA-256, and an
atomic write.

:func:`file_sha256` reads the file in chunks (any size, bounded memory). :func:`write_atomic`
(and :func:`write_json_atomic`, :func:`write_text_atomic` over it) writes to a temporary file
of its own beside the target (``tempfile.mkstemp``: two writers of one path never share it),
fsyncs it, sets its mode and renames it over the target: a reader sees the old file or the
new one, never a part, and of two concurrent writers the last rename wins whole. On any
failure the temporary file is removed; a full disk raises ``faux.harness.disk.DiskFull``
naming the target (an ``OSError`` with the original errno).

The harness (``result.json``, progress events, cache entries) and the audit's outputs write
through it; the callers choose the temporary file's name (the audit recognises its own), the
mode (0o644 for files other users read, the umask's for the audit) and whether the folder is
fsynced too.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

#: bytes read at a time by :func:`file_sha256`
CHUNK = 1 << 20


def path_kind(path: str | os.PathLike) -> str:
    """What ``path`` is, to follow "is" in an error line: ``"a file"``, ``"a folder"``,
    ``"not found"``, ``"a broken symbolic link"``, ``"a symbolic link that loops"``, or
    ``"not a regular file (a FIFO, socket or device)"``; never follows a loop forever."""
    import errno
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symbolic link that loops"
        return "a broken symbolic link" if os.path.islink(path) else "not found"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file (a FIFO, socket or device)"


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 (hex) of a file's bytes, read in chunks of :data:`CHUNK`."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def write_atomic(path: str | os.PathLike, data: bytes | str, *, mode: int = 0o644,
                 prefix: str | None = None, suffix: str = ".tmp",
                 sync_dir: bool = False) -> Path:
    """Write ``data`` (bytes, or text as UTF-8) to ``path`` atomically (see the module);
    ``prefix``/``suffix`` name the temporary file (default ``.<name>.XXXX.tmp``), ``mode``
    is the file's permission bits, ``sync_dir`` fsyncs the folder after the rename (the
    rename itself survives a crash). The folder must exist. Returns ``path``."""
    from faux.harness.disk import raise_if_full

    path = Path(path)
    payload = data.encode() if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=suffix,
                                   prefix=f".{path.name}." if prefix is None else prefix)
    except OSError as exc:
        raise_if_full(exc, path)
        raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)            # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise_if_full(exc, path)
        raise
    if sync_dir:
        _fsync_dir(path.parent)
    return path


def write_text_atomic(path: str | os.PathLike, text: str, **kw) -> Path:
    """:func:`write_atomic` of a text (UTF-8)."""
    return write_atomic(path, text, **kw)


def write_json_atomic(path: str | os.PathLike, obj, *, indent: int | None = 2,
                      default=None, **kw) -> Path:
    """:func:`write_atomic` of ``json.dumps(obj, indent=indent, default=default)``."""
    return write_atomic(path, json.dumps(obj, indent=indent, default=default), **kw)


def _fsync_dir(folder: Path) -> None:
    """fsync a folder (its entries, e.g. a rename), where the platform allows it."""
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
