"""Reading the data to audit in batches: CSV / Parquet files (pyarrow) or in-memory arrays.

``open_source`` gives a ``Source`` with the column names; ``Source.batches`` yields
``Batch``es (features as float64 ``(m, d)``, the protected column, the label) of at most
``batch_size`` rows, so a file is never held in memory whole. ``scan`` makes one pass that
checks the features (NaN/inf rows are counted and refused), describes the protected
attribute and draws a uniform random sample of rows (for the aux model and the plots).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from faux.errors import ConfigError, DataError

PROTECTED_TYPES = ("auto", "binary", "categorical", "continuous")
MAX_CATEGORIES = 20  # a numeric protected column with more distinct values is continuous


@dataclass
class Batch:
    start: int  # row id of the first row
    x: np.ndarray  # (m, d) float64
    c: np.ndarray  # (m,) raw protected values
    y: np.ndarray | None


def _suggest(name: str, columns: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(columns), n=3, cutoff=0.5)
    if close:
        return f"did you mean {', '.join(repr(c) for c in close)}?"
    shown = ", ".join(list(columns)[:12]) + (", ..." if len(columns) > 12 else "")
    return f"columns are: {shown}"


def check_columns(columns: Sequence[str], protected: str, label: str | None,
                  features: Sequence[str] | None, what: str) -> list[str]:
    """The feature columns; one-line DataError for a missing or misspelled name."""
    cols = list(columns)
    for role, name in (("protected", protected), ("label", label)):
        if name is not None and name not in cols:
            raise DataError(f"{role} column {name!r} is not in {what}; {_suggest(name, cols)}")
    if features:
        for name in features:
            if name not in cols:
                raise DataError(f"feature column {name!r} is not in {what}; "
                                f"{_suggest(name, cols)}")
        feats = list(features)
        for role, name in (("protected", protected), ("label", label)):
            if name in feats:
                raise ConfigError(f"{role} column {name!r} is also listed in --features; the "
                                  "model must not read it (remove it from --features)")
    else:
        feats = [c for c in cols if c not in (protected, label)]
    if not feats:
        raise DataError(f"{what} has no feature columns besides the protected/label ones")
    return feats


class Source:
    """Rows to audit. ``columns``: all column names; ``n_rows`` when known upfront."""

    columns: list[str]
    n_rows: int | None
    name: str

    def batches(self, features: Sequence[str], protected: str, label: str | None,
                batch_size: int) -> Iterator[Batch]:
        raise NotImplementedError


def _as_float(values: np.ndarray, name: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise DataError(f"feature column {name!r} is not numeric; encode it as the model "
                        "expects (e.g. one-hot columns) before auditing") from err


def _free_name(candidates, taken) -> str:
    """The first of ``candidates`` not in ``taken``, else the last one numbered."""
    for name in candidates:
        if name not in taken:
            return name
    i = 2
    while f"{candidates[-1]}_{i}" in taken:
        i += 1
    return f"{candidates[-1]}_{i}"


class ArraySource(Source):
    """In-memory data: a DataFrame (named columns) or a 2-D array, plus c (and y)."""

    def __init__(self, X, c, y=None, name: str = "data"):
        if isinstance(X, pd.DataFrame):
            self.frame = X.copy(deep=False)  # the caller's frame and its labels stay as they are
        else:
            arr = np.asarray(X)
            if arr.ndim != 2:
                raise DataError(f"X must be 2-D (rows, features), got shape {arr.shape}")
            self.frame = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
        n = len(self.frame)
        if isinstance(c, str):
            if c not in self.frame.columns:
                raise DataError(f"protected column {c!r} is not in X; "
                                f"{_suggest(c, list(map(str, self.frame.columns)))}")
            self.c_name, self.c = c, self.frame[c].to_numpy()
        else:
            self.c_name, self.c = None, np.asarray(c).reshape(-1)
        if isinstance(y, str):
            if y not in self.frame.columns:
                raise DataError(f"label column {y!r} is not in X; "
                                f"{_suggest(y, list(map(str, self.frame.columns)))}")
            self.y_name, self.y = y, self.frame[y].to_numpy()
        else:
            self.y_name = None
            self.y = None if y is None else np.asarray(y).reshape(-1)
        for what, arr in (("c", self.c), ("y", self.y)):
            if arr is not None and arr.shape[0] != n:
                raise DataError(f"{what} has {arr.shape[0]} values but X has {n} rows; pass one "
                                "value per row")
        self.columns = [str(col) for col in self.frame.columns]
        self.frame.columns = self.columns
        # values passed as arrays get names no column of X has (a feature called "c" stays a
        # feature): "c" / "y" when free, else "c_protected" / "y_label", then numbered
        taken = set(self.columns)
        if self.c_name is None:
            self.c_name = _free_name(("c", "c_protected"), taken)
        taken.add(self.c_name)
        if self.y is not None and self.y_name is None:
            self.y_name = _free_name(("y", "y_label"), taken)
        self.n_rows = n
        self.name = name

    def batches(self, features, protected, label, batch_size):
        x_all = self.frame[list(features)]
        for s in range(0, self.n_rows, batch_size):
            part = x_all.iloc[s:s + batch_size]
            x = np.column_stack([_as_float(part[f].to_numpy(), f) for f in features])
            y = None if self.y is None else self.y[s:s + batch_size]
            yield Batch(s, x, self.c[s:s + batch_size], y)


class FileSource(Source):
    """A CSV or Parquet file, read with pyarrow in batches."""

    def __init__(self, path):
        self.path = Path(path)
        self.name = self.path.stem
        if not self.path.is_file():
            raise DataError(f"data file {self.path} not found; pass --data with an existing "
                            "CSV or Parquet file")
        if self.path.stat().st_size == 0:
            raise DataError(f"data file {self.path} is empty; it needs a header and rows")
        suffix = self.path.suffix.lower()
        self.parquet = suffix in (".parquet", ".pq")
        if not self.parquet and suffix not in (".csv", ".txt", ".gz"):
            raise DataError(f"cannot read {self.path.name}: use a .csv or .parquet file")
        try:
            if self.parquet:
                import pyarrow.parquet as pq

                pf = pq.ParquetFile(self.path)
                self.columns = list(pf.schema_arrow.names)
                self.n_rows = pf.metadata.num_rows
            else:
                import pyarrow.csv as pcsv

                reader = pcsv.open_csv(self.path)
                self.columns = list(reader.schema.names)
                self.n_rows = None
        except Exception as err:
            raise DataError(f"cannot read {self.path}: {' '.join(str(err).split())[:200]}"
                            ) from err
        if self.n_rows == 0:
            raise DataError(f"data file {self.path} has no rows")

    def _record_batches(self, columns, batch_size):
        import pyarrow as pa

        if self.parquet:
            import pyarrow.parquet as pq

            # no read-ahead, one thread: memory stays bounded by one row group
            pf = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
            yield from pf.iter_batches(batch_size=batch_size, columns=columns, use_threads=False)
            return
        import pyarrow.csv as pcsv

        types = {c: pa.float64() for c in columns[2:]}
        reader = pcsv.open_csv(
            self.path, read_options=pcsv.ReadOptions(block_size=1 << 22),
            convert_options=pcsv.ConvertOptions(include_columns=[c for c in columns if c],
                                                column_types=types))
        for rb in reader:
            for s in range(0, rb.num_rows, batch_size):
                yield rb.slice(s, batch_size)

    def batches(self, features, protected, label, batch_size):
        cols = [protected, label or "", *features]
        want = [c for c in cols if c]
        start = 0
        try:
            for rb in self._record_batches(cols if not self.parquet else want, batch_size):
                m = rb.num_rows
                if m == 0:
                    continue
                x = np.empty((m, len(features)))
                for j, f in enumerate(features):
                    col = rb.column(f)
                    try:
                        x[:, j] = col.to_numpy(zero_copy_only=False)
                    except (TypeError, ValueError) as err:
                        raise DataError(f"feature column {f!r} is not numeric; encode it as the "
                                        "model expects before auditing") from err
                c = rb.column(protected).to_numpy(zero_copy_only=False)
                y = rb.column(label).to_numpy(zero_copy_only=False) if label else None
                yield Batch(start, x, c, y)
                start += m
        except DataError:
            raise
        except Exception as err:
            msg = " ".join(str(err).split())[:200]
            hit = re.search(r"column #(\d+)", msg)
            if hit and "to double" in msg and int(hit.group(1)) < len(self.columns):
                name = self.columns[int(hit.group(1))]
                raise DataError(f"feature column {name!r} is not numeric near row {start} "
                                f"({msg}); encode it as the model expects, or leave it out of "
                                "--features") from err
            raise DataError(f"cannot read {self.path.name} near row {start}: {msg}") from err


def open_source(data) -> Source:
    if isinstance(data, Source):
        return data
    return FileSource(data)


# --------------------------------------------------------------------------- the scan


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
        return np.array([lookup.get(_key(v), -1) for v in c], dtype=np.int64)

    def group_labels(self, c: np.ndarray) -> np.ndarray:
        """A group name per row (continuous: below / above the median)."""
        if self.kind == "continuous":
            v = np.asarray(c, dtype=np.float64)
            return np.where(v <= self.mean, "below mean", "above mean")
        return np.array([str(_key(v)) for v in c], dtype=object)


def _key(v):
    if isinstance(v, float | np.floating) and float(v).is_integer():
        return int(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


@dataclass
class Scan:
    n_rows: int
    sample_rows: np.ndarray  # row ids of the sample, sorted
    x: np.ndarray  # (s, d) float64 sample
    c: np.ndarray
    y: np.ndarray | None
    protected: ProtectedInfo
    mean: np.ndarray  # standardisation of each feature (0/1 columns: 0 and 1)
    scale: np.ndarray


def _is_numeric(values: np.ndarray) -> bool:
    try:
        np.asarray(values, dtype=np.float64)
        return True
    except (TypeError, ValueError):
        return False


def scan(source: Source, features, protected: str, label: str | None, *, sample: int,
         batch_size: int, seed: int = 0, protected_type: str = "auto",
         progress=None) -> Scan:
    """One pass: count rows, refuse NaN/inf features, describe c, sample ``sample`` rows."""
    if protected_type not in PROTECTED_TYPES:
        raise ConfigError(f"protected_type={protected_type!r} is not one of {PROTECTED_TYPES}")
    rng = np.random.default_rng(seed)
    keys = np.empty(0)
    rows = np.empty(0, dtype=np.int64)
    xs = np.empty((0, len(features)))
    cs = np.empty(0, dtype=object)
    ys = None if label is None else np.empty(0, dtype=object)
    n = n_bad = n_null_c = 0
    first_bad: list[int] = []
    counts: dict = {}
    too_many = False
    numeric = True
    for b in source.batches(features, protected, label, batch_size):
        m = b.x.shape[0]
        bad = ~np.isfinite(b.x).all(axis=1)
        if bad.any():
            n_bad += int(bad.sum())
            first_bad += (b.start + np.flatnonzero(bad)[:5 - len(first_bad)]).tolist()
        null_c = pd.isna(b.c)
        n_null_c += int(null_c.sum())
        if numeric and not _is_numeric(b.c[~null_c]):
            numeric = False
        if not too_many:
            cv = b.c[~null_c]
            cv = np.asarray(cv, dtype=np.float64) if numeric else np.asarray(cv).astype(str)
            vals, cnt = np.unique(cv, return_counts=True)
            for v, k in zip(vals, cnt):
                counts[_key(v)] = counts.get(_key(v), 0) + int(k)
            too_many = len(counts) > 1000
        # uniform sample without replacement: keep the `sample` smallest random keys
        k_b = rng.random(m)
        keys = np.concatenate([keys, k_b])
        rows = np.concatenate([rows, b.start + np.arange(m)])
        xs = np.concatenate([xs, b.x])
        cs = np.concatenate([cs, np.asarray(b.c, dtype=object)])
        if ys is not None:
            ys = np.concatenate([ys, np.asarray(b.y, dtype=object)])
        if keys.shape[0] > sample:
            keep = np.argpartition(keys, sample)[:sample]
            keys, rows, xs, cs = keys[keep], rows[keep], xs[keep], cs[keep]
            ys = None if ys is None else ys[keep]
        n += m
        if progress is not None:
            progress(m)
    if n == 0:
        raise DataError(f"{source.name} has no rows to audit")
    if n_bad:
        raise DataError(f"features hold NaN or inf in {n_bad} rows (first rows: "
                        f"{', '.join(map(str, first_bad))}); impute or drop them before auditing")
    if n_null_c:
        raise DataError(f"protected column {protected!r} is missing in {n_null_c} rows; fill or "
                        "drop those rows")
    if ys is not None and pd.isna(ys).any():
        raise DataError(f"label column {label!r} is missing in {int(pd.isna(ys).sum())} sampled "
                        "rows; fill or drop those rows")
    order = np.argsort(rows)
    rows, xs, cs = rows[order], xs[order], cs[order]
    ys = None if ys is None else ys[order]
    info = _describe_protected(protected, counts, too_many, numeric, cs, protected_type)
    mean, scale = _standardisation(xs)
    return Scan(n, rows, xs, cs, ys, info, mean, scale)


def _describe_protected(name, counts, too_many, numeric, c_sample, protected_type):
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


def _standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample mean/std per column; 0/1 columns (one-hot, flags) are left as they are."""
    binary = np.isin(x, (0.0, 1.0)).all(axis=0)
    mean = np.where(binary, 0.0, x.mean(axis=0))
    std = x.std(axis=0)
    scale = np.where(binary | (std <= 0), 1.0, std)
    return mean, scale
