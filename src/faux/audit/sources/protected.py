"""What a protected attribute is: ``ProtectedInfo`` (binary, categorical with its sorted
levels and counts, or continuous with its mean and std), told from a column's values as
counted by the scan; the aux targets it encodes; where protected values are missing."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from faux.errors import DataError

PROTECTED_TYPES = ("auto", "binary", "categorical", "continuous")
MAX_CATEGORIES = 20  # a numeric protected column with more distinct values is continuous


@dataclass
class ProtectedInfo:
    kind: str  # binary | categorical | continuous
    levels: list = field(default_factory=list)  # sorted category values (not continuous)
    counts: list = field(default_factory=list)
    mean: float = 0.0
    std: float = 1.0

    def encode(self, c: np.ndarray) -> np.ndarray:
        """Aux targets: (m,) 0/1 (binary), (m, k) one-hot (categorical), (m,) float (continuous)."""
        if self.kind == "continuous":
            return (np.asarray(c, dtype=np.float64) - self.mean) / self.std
        idx = self.index(c)
        if self.kind == "binary":
            return idx.astype(np.float32)
        return np.eye(len(self.levels), dtype=np.float32)[idx]

    def index(self, c: np.ndarray) -> np.ndarray:
        lookup = {v: i for i, v in enumerate(self.levels)}
        keys, rows = distinct_keys(c)
        return np.array([lookup.get(k, -1) for k in keys], dtype=np.int64)[rows]

    def group_labels(self, c: np.ndarray) -> np.ndarray:
        """A group name per row (continuous: below / above the median)."""
        if self.kind == "continuous":
            v = np.asarray(c, dtype=np.float64)
            return np.where(v <= self.mean, "below mean", "above mean")
        keys, rows = distinct_keys(c)
        return np.array([str(k) for k in keys], dtype=object)[rows]


def distinct_keys(c) -> tuple[list, np.ndarray]:
    """``value_key`` of the distinct values of ``c`` and, per row, the index of its own:
    ``[value_key(v) for v in c] == [keys[i] for i in rows]``. A numeric column's distinct
    values are found by ``np.unique`` (a batch holds few), any other's row by row."""
    a = np.asarray(c)
    if a.ndim == 1 and a.dtype.kind in "biuf":
        u, rows = np.unique(a, return_inverse=True)
        return [value_key(v) for v in u], rows.reshape(-1)
    return [value_key(v) for v in c], np.arange(len(c))


def value_key(v):
    if isinstance(v, float | np.floating) and float(v).is_integer():
        return int(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def missing(values) -> np.ndarray:
    """Where protected values are missing: null / NaN, or a blank string (what an empty CSV
    cell of a text column reads as)."""
    values = np.asarray(values)
    null = np.asarray(pd.isna(values), dtype=bool).reshape(-1)
    if values.dtype.kind in "OUS":
        blank = np.array([isinstance(v, str | bytes) and not v.strip() for v in values.ravel()],
                         dtype=bool)
        null |= blank
    return null


def refuse_spellings(name, counts) -> None:
    """One-line DataError when values of a text protected column differ only in case or
    surrounding spaces (``"Female"``, ``"female"``, ``" Female"``): each would be audited
    as a group of its own."""
    same: dict = {}
    for v in counts:
        if isinstance(v, str):
            same.setdefault(v.strip().casefold(), []).append(v)
    clash = [sorted(vs, key=lambda v: -counts[v]) for vs in same.values() if len(vs) > 1]
    if not clash:
        return
    first = clash[0]
    shown = ", ".join(f"{v!r} ({counts[v]:,} rows)" for v in first[:6])
    more = f" (and {len(clash) - 1} more such set{'s' if len(clash) > 2 else ''})" \
        if len(clash) > 1 else ""
    raise DataError(f"protected column {name!r} writes one value in several ways that differ "
                    f"only in case or surrounding spaces: {shown}{more}; each would be audited "
                    "as a group of its own: clean the column first (strip the spaces and write "
                    "each group one way, e.g. str.strip() and one case) and audit again")


def describe_protected(name, counts, too_many, numeric, c_sample, protected_type):
    if not numeric:
        refuse_spellings(name, counts)
    if len(counts) == 1:
        (v,) = counts
        raise DataError(f"protected column {name!r} is constant ({v!r} on every row); there is "
                        "nothing to test; check the column")
    kind = protected_type
    if kind == "auto":
        if len(counts) == 2:
            kind = "binary"
        elif numeric and (too_many or len(counts) > MAX_CATEGORIES):
            kind = "continuous"
        elif too_many or len(counts) > MAX_CATEGORIES:
            raise DataError(f"protected column {name!r} has more than {MAX_CATEGORIES} distinct "
                            "non-numeric values; group them, or pass a numeric column")
        else:
            kind = "categorical"
    if kind == "continuous":
        if not numeric:
            raise DataError(f"protected column {name!r} is not numeric; it cannot be continuous")
        v = np.asarray(c_sample, dtype=np.float64)
        return ProtectedInfo("continuous", mean=float(v.mean()), std=float(v.std() or 1.0))
    if too_many:
        raise DataError(f"protected column {name!r} has too many values for a categorical "
                        "attribute; use --protected-type continuous")
    if kind == "binary" and len(counts) != 2:
        raise DataError(f"protected column {name!r} has {len(counts)} values, not 2; use "
                        "--protected-type categorical or continuous")
    levels = sorted(counts, key=lambda v: (str(type(v)), v))
    return ProtectedInfo(kind, levels=levels, counts=[counts[v] for v in levels])
