"""The scan: one pass over the data before anything is trained. It counts the rows, refuses
inf features (and NaN ones, unless the model reads NaN), describes each protected attribute
(``faux.audit.sources.protected``), counts the rows of every combination of the categorical ones
(for their intersection) and draws a uniform random sample of rows (for the aux models and
the plots), with the features' standardisation measured on it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from faux.audit.sources.columns import protected_list
from faux.audit.sources.protected import (
    MAX_CATEGORIES,
    PROTECTED_TYPES,
    ProtectedInfo,
    describe_protected,
    missing,
    value_key,
)
from faux.audit.sources.source import Batch, Source
from faux.errors import ConfigError, DataError


@dataclass
class Scan:
    n_rows: int
    sample_rows: np.ndarray  # row ids of the sample, sorted
    x: np.ndarray  # (s, d) float64 sample
    c: np.ndarray  # the first protected attribute's sample values
    y: np.ndarray | None
    protected: ProtectedInfo  # the first protected attribute
    mean: np.ndarray  # standardisation of each feature (0/1 columns: 0 and 1)
    scale: np.ndarray
    attrs: dict = field(default_factory=dict)  # name -> ProtectedInfo, every attribute
    cs: dict = field(default_factory=dict)  # name -> sample values, every attribute
    # rows of each combination of the attributes' values (None for a continuous one), or
    # None when there were more than MAX_JOINT combinations
    joint: dict | None = None
    nan_rows: int = 0  # rows with a NaN feature (allowed for a black box that reads NaN)


MAX_JOINT = 10_000  # combinations of protected values counted for the intersection


def is_numeric(values: np.ndarray) -> bool:
    try:
        np.asarray(values, dtype=np.float64)
        return True
    except (TypeError, ValueError):
        return False


class ColumnScan:
    """Running description of one protected column over the scan."""

    def __init__(self, name: str, protected_type: str):
        self.name, self.type = name, protected_type
        self.counts: dict = {}
        self.too_many = False
        self.numeric = True
        self.n_null = 0
        self.first_null: list[int] = []  # row ids of the first missing values

    def add(self, c: np.ndarray, start: int = 0) -> np.ndarray | None:
        """Count a batch's values (its first row is row ``start``); returns them as counted
        (None where missing)."""
        null_c = missing(c)
        if null_c.any():
            self.n_null += int(null_c.sum())
            self.first_null += (start + np.flatnonzero(null_c)[:5 - len(self.first_null)]
                                ).tolist()
        if self.numeric and not is_numeric(c[~null_c]):
            self.numeric = False
        if self.too_many:
            return None
        cv = c[~null_c]
        cv = np.asarray(cv, dtype=np.float64) if self.numeric else np.asarray(cv).astype(str)
        vals, cnt = np.unique(cv, return_counts=True)
        for v, k in zip(vals, cnt):
            self.counts[value_key(v)] = self.counts.get(value_key(v), 0) + int(k)
        self.too_many = len(self.counts) > 1000
        return None if null_c.any() else cv

    @property
    def categorical(self) -> bool:
        """Still a candidate for the intersection (not continuous, not too many values)."""
        if self.type == "continuous" or self.too_many:
            return False
        if self.type == "auto":
            return not (self.numeric and len(self.counts) > MAX_CATEGORIES)
        return True


def rows_text(n: int, first: list[int]) -> str:
    """``N rows (first rows: a, b, ...)``."""
    more = ", ..." if n > len(first) else ""
    return (f"{n} row{'s' if n != 1 else ''} (first rows: {', '.join(map(str, first))}"
            f"{more})")


def count_joint(joint: dict, cols: list) -> None:
    """Add a batch's combinations (``cols``: one array per attribute, None for one left out
    of the intersection) to ``joint``."""
    parts = [np.unique(v, return_inverse=True) if v is not None else None for v in cols]
    m = next(len(v) for v in cols if v is not None)
    code = np.zeros(m, dtype=np.int64)
    for part in parts:
        if part is not None:
            code = code * len(part[0]) + part[1].reshape(-1)
    codes, cnt = np.unique(code, return_counts=True)
    for cd, k in zip(codes.tolist(), cnt.tolist()):
        key = []
        for part in reversed(parts):
            if part is None:
                key.append(None)
                continue
            key.append(value_key(part[0][cd % len(part[0])]))
            cd //= len(part[0])
        key = tuple(reversed(key))
        joint[key] = joint.get(key, 0) + k


def drop_from_joint(joint: dict, i: int) -> dict:
    out: dict = {}
    for key, k in joint.items():
        key = (*key[:i], None, *key[i + 1:])
        out[key] = out.get(key, 0) + k
    return out


def _types(prot: list[str], protected_type) -> list[str]:
    """One protected type per attribute: ``protected_type`` one for all or one per column."""
    types = ([protected_type] * len(prot) if isinstance(protected_type, str)
             else list(protected_type))
    if len(types) == 1:
        types = types * len(prot)
    if len(types) != len(prot):
        raise ConfigError(f"{len(types)} protected types for {len(prot)} protected columns; "
                          "pass one type, or one per column")
    for t in types:
        if t not in PROTECTED_TYPES:
            raise ConfigError(f"protected_type={t!r} is not one of {PROTECTED_TYPES}")
    return types


#: the fewest rows an audit can train and check its aux models on
MIN_ROWS = 20

#: the largest magnitude a feature may hold: the audit computes in float32 (torch models,
#: aux models, standardisation), where the square of a larger value (a variance) is infinite
LARGEST = float(np.sqrt(np.finfo(np.float32).max))


class _Finite:
    """Rows with NaN / inf features over the scan (NaN allowed with ``allow_nan``), and
    values too large to compute with (beyond ``LARGEST``), with the first such column."""

    def __init__(self, allow_nan: bool, features):
        self.allow_nan, self.features = allow_nan, list(features)
        self.n_bad = self.n_nan = self.n_huge = 0
        self.first_bad: list[int] = []
        self.first_huge: tuple[str, float, int] | None = None

    def add(self, b: Batch) -> None:
        nan = np.isnan(b.x).any(axis=1)
        self.n_nan += int(nan.sum())
        bad = ~(np.isfinite(b.x) | (self.allow_nan & np.isnan(b.x))).all(axis=1)
        if bad.any():
            self.n_bad += int(bad.sum())
            self.first_bad += (b.start + np.flatnonzero(bad)[:5 - len(self.first_bad)]).tolist()
        with np.errstate(invalid="ignore"):
            huge = np.isfinite(b.x) & (np.abs(b.x) > LARGEST)
        if huge.any():
            self.n_huge += int(huge.any(axis=1).sum())
            if self.first_huge is None:
                i, j = np.argwhere(huge)[0]
                self.first_huge = (self.features[j], float(b.x[i, j]), b.start + int(i))

    def refuse(self) -> None:
        """One-line DataError when a row could not be scored."""
        if self.n_bad:
            why = ("; the model is scored by its gradients (autograd), which NaN breaks: "
                   "impute or drop them, or audit a model that reads NaN (e.g. a tree "
                   "ensemble) as a black box" if self.n_nan and not self.allow_nan else
                   "; impute or drop them before auditing")
            raise DataError(f"features hold {'inf' if self.allow_nan else 'NaN or inf'} in "
                            f"{self.n_bad} rows (first rows: "
                            f"{', '.join(map(str, self.first_bad))}){why}")
        if self.first_huge is not None:
            col, v, row = self.first_huge
            raise DataError(f"column {col!r} holds {v:.3g} in row {row} ({self.n_huge} rows "
                            f"hold values beyond ±{LARGEST:.3g}), too large for the float32 "
                            "arithmetic the models are scored in; rescale the column or drop "
                            "those rows")


class _Joint:
    """Rows of every combination of the categorical attributes' values (their
    intersection); ``counts`` None with one attribute or more than ``MAX_JOINT``
    combinations. An attribute that turns out continuous leaves the combinations."""

    def __init__(self, n_attrs: int):
        self.counts: dict | None = {} if n_attrs > 1 else None
        self.in_joint = [True] * n_attrs

    def add(self, cols: list[ColumnScan], counted: list) -> None:
        joint = self.counts
        if joint is None:
            return
        in_joint = self.in_joint
        for i, col in enumerate(cols):
            if in_joint[i] and not col.categorical:
                in_joint[i] = False
                joint = drop_from_joint(joint, i)
        if any(in_joint) and all(v is not None for v, j in zip(counted, in_joint) if j):
            count_joint(joint, [v if j else None for v, j in zip(counted, in_joint)])
        self.counts = None if len(joint) > MAX_JOINT else joint

    def finish(self, cols: list[ColumnScan], attrs: dict) -> dict | None:
        """The counts, only the categorical attributes left in them."""
        joint = self.counts
        if joint is not None:
            for i, col in enumerate(cols):
                if self.in_joint[i] and attrs[col.name].kind == "continuous":
                    joint = drop_from_joint(joint, i)
        return joint


class _Sample:
    """A uniform sample of ``size`` rows without replacement: the rows with the ``size``
    smallest random keys seen so far."""

    def __init__(self, size: int, d: int, prot: list[str], label: bool, rng):
        self.size, self.rng = size, rng
        self.keys = np.empty(0)
        self.rows = np.empty(0, dtype=np.int64)
        self.xs = np.empty((0, d))
        self.cs = {p: np.empty(0, dtype=object) for p in prot}
        self.ys = np.empty(0, dtype=object) if label else None

    def add(self, b: Batch) -> None:
        m = b.x.shape[0]
        self.keys = np.concatenate([self.keys, self.rng.random(m)])
        self.rows = np.concatenate([self.rows, b.start + np.arange(m)])
        self.xs = np.concatenate([self.xs, b.x])
        for p in self.cs:
            self.cs[p] = np.concatenate([self.cs[p], np.asarray(b.cs[p], dtype=object)])
        if self.ys is not None:
            self.ys = np.concatenate([self.ys, np.asarray(b.y, dtype=object)])
        if self.keys.shape[0] > self.size:
            keep = np.argpartition(self.keys, self.size)[:self.size]
            self.keys, self.rows, self.xs = self.keys[keep], self.rows[keep], self.xs[keep]
            self.cs = {p: v[keep] for p, v in self.cs.items()}
            self.ys = None if self.ys is None else self.ys[keep]

    def in_row_order(self):
        """``(rows, x, cs, y)`` sorted by row id."""
        order = np.argsort(self.rows)
        ys = None if self.ys is None else self.ys[order]
        return self.rows[order], self.xs[order], {p: v[order] for p, v in self.cs.items()}, ys


def _refuse_missing(cols: list[ColumnScan], ys, label: str | None) -> None:
    """One-line DataError for missing protected values, or a label missing in the sample."""
    for col in cols:
        if col.n_null:
            raise DataError(f"protected column {col.name!r} is missing in "
                            f"{rows_text(col.n_null, col.first_null)}; fill or drop those "
                            "rows")
    if ys is not None and pd.isna(ys).any():
        raise DataError(f"label column {label!r} is missing in {int(pd.isna(ys).sum())} sampled "
                        "rows; fill or drop those rows")


def scan(source: Source, features, protected, label: str | None, *, sample: int,
         batch_size: int, seed: int = 0, protected_type="auto",
         progress=None, allow_nan: bool = False) -> Scan:
    """One pass: count rows, refuse inf features and NaN ones unless ``allow_nan`` (a black
    box that reads NaN; ``Scan.nan_rows`` counts them), describe each protected attribute
    (``protected``: a column name or a list; ``protected_type``: one type for all or one
    per attribute), count their combinations, sample ``sample`` rows."""
    prot = protected_list(protected)
    types = _types(prot, protected_type)
    rng = np.random.default_rng(seed)
    cols = [ColumnScan(p, t) for p, t in zip(prot, types)]
    finite, joint = _Finite(allow_nan, features), _Joint(len(prot))
    kept = _Sample(sample, len(features), prot, label is not None, rng)
    n = 0
    for b in source.batches(features, prot, label, batch_size):
        m = b.x.shape[0]
        finite.add(b)
        joint.add(cols, [col.add(b.cs[col.name], b.start) for col in cols])
        kept.add(b)
        n += m
        if progress is not None:
            progress(m)
    if n < MIN_ROWS:
        raise DataError(f"{source.name} has {n or 'no'} rows; the audit needs at least "
                        f"{MIN_ROWS} (its aux models are trained and checked on them)")
    finite.refuse()
    _refuse_missing(cols, kept.ys, label)
    rows, xs, cs, ys = kept.in_row_order()
    attrs = {col.name: describe_protected(col.name, col.counts, col.too_many, col.numeric,
                                           cs[col.name], col.type) for col in cols}
    mean, scale = standardisation(xs)
    return Scan(n, rows, xs, cs[prot[0]], ys, attrs[prot[0]], mean, scale, attrs, cs,
                joint.finish(cols, attrs), finite.n_nan)


def standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample mean/std per column, NaN left out; 0/1 columns (one-hot, flags) are left as
    they are."""
    nan = np.isnan(x)
    binary = (np.isin(x, (0.0, 1.0)) | nan).all(axis=0)
    if not nan.any():
        mean, std = x.mean(axis=0), x.std(axis=0)
    else:
        seen = (~nan).any(axis=0)
        filled = np.where(nan, 0.0, x)
        n = np.maximum((~nan).sum(axis=0), 1)
        mean = np.where(seen, filled.sum(axis=0) / n, 0.0)
        std = np.sqrt(np.where(nan, 0.0, (x - mean) ** 2).sum(axis=0) / n)
    mean = np.where(binary, 0.0, mean)
    scale = np.where(binary | (std <= 0), 1.0, std)
    return mean, scale
