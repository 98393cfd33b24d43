"""Each row's id on a Ray worker. ``ray.data.read_parquet(..., include_paths=True,
include_row_hash=True)`` gives every row its file (``path``) and a ``row_hash``: Ray's
splitmix64 finaliser of (the first 8 bytes of the md5 of the path, little-endian) + the
row's position in its file. The finaliser is a bijection of 64-bit integers, so the
position is recovered exactly by running it backwards; the row's id is its file's first
row id plus that position. The positions are checked (inside their file), so that a Ray
that hashed rows differently fails here in one line instead of misplacing a row."""

from __future__ import annotations

import hashlib

import numpy as np

from faux.errors import DataError

_MASK = (1 << 64) - 1
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_M1_INV, _M2_INV = pow(_M1, -1, 1 << 64), pow(_M2, -1, 1 << 64)


def path_seed(path: str) -> int:
    return int.from_bytes(hashlib.md5(path.encode("utf-8")).digest()[:8], "little")


def _unshift_xor(x: np.ndarray, s: int) -> np.ndarray:
    """The inverse of ``x ^= x >> s``."""
    y = x.copy()
    for _ in range(64 // s):
        y = x ^ (y >> np.uint64(s))
    return y


def unmix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser run backwards: the keys whose hashes are ``h``."""
    x = np.asarray(h, dtype=np.uint64).copy()
    x = _unshift_xor(x, 31)
    x *= np.uint64(_M2_INV)
    x = _unshift_xor(x, 27)
    x *= np.uint64(_M1_INV)
    return _unshift_xor(x, 30)


def mix(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (what ``unmix`` undoes)."""
    x = np.asarray(keys, dtype=np.uint64).copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(_M1)
    x ^= x >> np.uint64(27)
    x *= np.uint64(_M2)
    x ^= x >> np.uint64(31)
    return x


def row_ids(names: list[str], codes: np.ndarray, hashes, offsets: dict[str, int],
            rows: dict[str, int]) -> np.ndarray:
    """The row ids of rows read from files ``names[codes]`` with Ray's ``hashes``;
    ``offsets``: each file's first row id, ``rows``: its rows."""
    codes = np.asarray(codes)
    keys = unmix(np.asarray(hashes, dtype=np.uint64))
    out = np.empty(len(keys), dtype=np.int64)
    for code, p in enumerate(names):
        if p not in offsets:
            raise DataError(f"Ray read a file the audit did not list ({p}); do not change the "
                            "data while it is audited")
        here = codes == code
        with np.errstate(over="ignore"):
            pos = keys[here] - np.uint64(path_seed(p))
        if (pos >= np.uint64(rows[p])).any():
            raise DataError("cannot place Ray's rows in their files (this Ray's row_hash is "
                            "not the one faux reads); use --engine local, or the Ray version "
                            "faux pins (constraints.txt)")
        out[here] = offsets[p] + pos.astype(np.int64)
    return out
