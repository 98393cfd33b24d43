"""Verified downloads: bounded in time, checked against a recorded SHA-256, written atomically.

``download_verified(url, dest, sha256)`` streams ``url`` into ``dest.part`` with a short
connect/read timeout and an overall deadline, checks the SHA-256 of the bytes received, and
only then renames the file to ``dest``. A mismatch deletes the partial file and raises
:class:`ChecksumError`; a network error, an HTTP error or a timeout raises
:class:`~faux.errors.DataError`; both messages are one line and name the fix.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path

from faux.errors import DataError
from faux.harness.files import file_sha256 as sha256_of

log = logging.getLogger("faux.data")

#: (connect, read) seconds: a server that accepts but never answers costs at most this
DEFAULT_TIMEOUT = (10.0, 30.0)
#: a download (of any size) that takes longer than this is abandoned
DEFAULT_MAX_SECONDS = 300.0


#: SHA-256 of the raw real-data files faux knows (the copies in shared/data/aif360, UCI's
#: originals), by file name: pass ``RECORDED_SHA256.get(path.name)`` to
#: :func:`download_verified`, or :func:`verify_file` after extracting an archive.
RECORDED_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    "bank-additional-full.csv": "74adfc578bf77a7ff4bb1ba4a9f8709d9e3c6907342959c2c8416847e0afb4d8",
    "bank-additional.csv": "7e59cf650004d65d1c9d6b08553bad2ee9a9ad70d594f536e3c584ee6ed5df50",
    "bank-additional-names.txt": "10045462a4c026f858dffa159370c4270510230c1fc63c6c91ca51bba4b3df26",
}


class ChecksumError(DataError):
    """Downloaded bytes differ from the recorded SHA-256."""


class DownloadError(DataError):
    """The download failed (network, HTTP status, timeout); ``reason`` says how, briefly."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def verify_file(path: str | os.PathLike, sha256: str) -> Path:
    """``path`` if its SHA-256 is ``sha256``; else :class:`ChecksumError` (the file is left
    in place, so the user can inspect it)."""
    path = Path(path)
    got = sha256_of(path)
    if got != sha256.lower():
        raise ChecksumError(f"sha256 mismatch: {path} has sha256 {got[:16]}…, expected {sha256[:16]}…; replace it "
                            f"with a good copy (or delete it to re-download)")
    return path


def download_verified(url: str, dest: str | os.PathLike, sha256: str | None, *,
                      timeout: tuple[float, float] | float | None = None,
                      max_seconds: float | None = None) -> Path:
    """Fetch ``url`` to ``dest`` and check its SHA-256 (``None``: no recorded sum; logged).

    ``timeout``: (connect, read) seconds, default :data:`DEFAULT_TIMEOUT`; ``max_seconds``:
    the whole transfer, default :data:`DEFAULT_MAX_SECONDS`.

    Returns ``dest``. Nothing is left at ``dest`` unless the whole file arrived and matched.
    Raises :class:`DownloadError` (network, HTTP status, timeout) or :class:`ChecksumError`."""
    import requests

    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    max_seconds = DEFAULT_MAX_SECONDS if max_seconds is None else float(max_seconds)
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create {dest.parent} ({type(exc).__name__}); set "
                        f"FAUX_DATA_DIR to a writable folder") from None
    h = hashlib.sha256()
    start = time.monotonic()
    try:
        with requests.get(url, stream=True, timeout=timeout) as resp:
            resp.raise_for_status()
            with open(part, "wb") as f:
                for chunk in resp.iter_content(1 << 16):
                    if time.monotonic() - start > max_seconds:
                        raise TimeoutError(f"not complete after {max_seconds:.0f} s")
                    h.update(chunk)
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
    except (requests.RequestException, TimeoutError, OSError) as exc:
        part.unlink(missing_ok=True)
        detail = str(exc).splitlines()[0][:160] if str(exc) else ""
        reason = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        raise DownloadError(f"download of {url} failed ({reason}); check the network, or "
                            f"place the file at {dest} yourself", reason) from None
    got = h.hexdigest()
    if sha256 is not None and got != sha256.lower():
        part.unlink(missing_ok=True)
        raise ChecksumError(f"sha256 mismatch: download of {url} has sha256 {got[:16]}…, expected "
                            f"{sha256[:16]}…; refused (not written to {dest}); the server "
                            f"sent other bytes: retry later or place a verified copy there")
    if sha256 is None:
        log.warning("no recorded sha256 for %s; downloaded %s unverified (sha256 %s)", url,
                    dest, got)
    os.replace(part, dest)
    return dest
