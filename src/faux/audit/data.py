"""Reading the data to audit in batches: CSV / Parquet files (pyarrow) or in-memory arrays.

``open_source`` gives a ``Source`` with the column names; ``Source.batches`` yields
``Batch``es (features as float64 ``(m, d)``, the protected columns, the label) of at most
``batch_size`` rows, so a file is never held in memory whole. ``scan`` makes one pass that
checks the features (NaN/inf rows are counted and refused), describes each protected
attribute (and counts the rows of every combination of the categorical ones, for their
intersection) and draws a uniform random sample of rows (for the aux models and the plots).
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
    c: np.ndarray  # (m,) raw values of the (first) protected attribute
    y: np.ndarray | None
    cs: dict | None = None  # every protected attribute's raw values, by column name


def protected_list(protected) -> list[str]:
    """The protected column names: one name, or a list of names."""
    if protected is None:
        return []
    return [protected] if isinstance(protected, str) else list(protected)


def _suggest(name: str, columns: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(columns), n=3, cutoff=0.5)
    if close:
        return f"did you mean {', '.join(repr(c) for c in close)}?"
    shown = ", ".join(list(columns)[:12]) + (", ..." if len(columns) > 12 else "")
    return f"columns are: {shown}"


def check_columns(columns: Sequence[str], protected, label: str | None,
                  features: Sequence[str] | None, what: str) -> list[str]:
    """The feature columns; one-line DataError for a missing or misspelled name.
    ``protected``: one column name or a list of them."""
    cols = list(columns)
    prot = protected_list(protected)
    if len(set(prot)) != len(prot):
        raise ConfigError(f"protected columns are repeated: {prot}")
    if label is not None and label in prot:
        raise ConfigError(f"label column {label!r} is also a protected column; pass it once")
    for role, name in [*(("protected", p) for p in prot), ("label", label)]:
        if name is not None and name not in cols:
            raise DataError(f"{role} column {name!r} is not in {what}; {_suggest(name, cols)}")
    if features:
        for name in features:
            if name not in cols:
                raise DataError(f"feature column {name!r} is not in {what}; "
                                f"{_suggest(name, cols)}")
        feats = list(features)
        for role, name in [*(("protected", p) for p in prot), ("label", label)]:
            if name in feats:
                raise ConfigError(f"{role} column {name!r} is also listed in --features; the "
                                  "model must not read it (remove it from --features)")
    else:
        feats = [c for c in cols if c not in (*prot, label)]
    if not feats:
        raise DataError(f"{what} has no feature columns besides the protected/label ones")
    _refuse_repeated(cols, {*prot, label, *feats}, what)
    return feats


def _refuse_repeated(cols: list[str], used, what: str) -> None:
    """One-line DataError when a column the audit reads has its name more than once in the
    header (a reader would silently take one of them)."""
    seen: dict[str, list[int]] = {}
    for j, name in enumerate(cols, start=1):
        seen.setdefault(name, []).append(j)
    for name, pos in seen.items():
        if len(pos) > 1 and name in used:
            where = ", ".join(map(str, pos[:-1])) + f" and {pos[-1]}"
            raise DataError(f"column {name!r} appears {len(pos)} times in {what} (columns "
                            f"{where}); rename or drop all but one")


class Source:
    """Rows to audit. ``columns``: all column names; ``n_rows`` when known upfront."""

    columns: list[str]
    n_rows: int | None
    name: str

    def batches(self, features: Sequence[str], protected, label: str | None,
                batch_size: int) -> Iterator[Batch]:
        """Batches of ``features``; ``protected`` one column name or a list of them (the
        first one is ``Batch.c``, all of them ``Batch.cs``)."""
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


def _aligned(v, frame: pd.DataFrame, what: str):
    """A pandas ``c`` or ``y`` put in the row order of ``X`` by its index (rows are matched
    by label, never by position); DataError when the labels differ. Anything else as it is."""
    if not isinstance(v, pd.Series | pd.DataFrame):
        return v
    if v.index.equals(frame.index):
        return v
    if not frame.index.is_unique or not v.index.is_unique:
        raise DataError(f"{what} and X must have unique index labels to be matched row by row; "
                        f"reset both indexes (or pass {what} as an array in X's row order)")
    missing = frame.index.difference(v.index)
    extra = v.index.difference(frame.index)
    if len(missing) or len(extra):
        first = list(missing[:3]) if len(missing) else list(extra[:3])
        raise DataError(f"{what}'s index does not match X's: {len(missing)} row label(s) of X "
                        f"are missing from {what} and {len(extra)} of {what} are not in X "
                        f"(first: {first}); pass {what} with X's index")
    return v.reindex(frame.index)


class ArraySource(Source):
    """In-memory data: a DataFrame (named columns) or a 2-D array, plus c (and y). ``c``: the
    protected values (an array), a column name of X, a list of column names of X, or a
    DataFrame of several protected attributes (one column each)."""

    def __init__(self, X, c, y=None, name: str = "data"):
        if isinstance(X, pd.DataFrame):
            self.frame = X.copy(deep=False)  # the caller's frame and its labels stay as they are
        else:
            arr = np.asarray(X)
            if arr.ndim != 2:
                raise DataError(f"X must be 2-D (rows, features), got shape {arr.shape}")
            self.frame = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
        n = len(self.frame)
        if isinstance(X, pd.DataFrame):
            c = _aligned(c, self.frame, "c")
            y = _aligned(y, self.frame, "y")
        self.cs: dict = {}
        if isinstance(c, pd.Series) and c.name is not None and str(c.name) not in map(
                str, self.frame.columns):
            c = c.to_frame(str(c.name))  # a named Series keeps its name
        if isinstance(c, str) or (isinstance(c, list | tuple) and c and all(
                isinstance(v, str) for v in c) and (len(c) != n or all(
                    v in self.frame.columns for v in c))):  # names, not values
            for name in protected_list(c):
                if name not in self.frame.columns:
                    raise DataError(f"protected column {name!r} is not in X; "
                                    f"{_suggest(name, list(map(str, self.frame.columns)))}")
                self.cs[name] = self.frame[name].to_numpy()
            self.c_name = protected_list(c)[0]
        elif isinstance(c, pd.DataFrame):
            if c.shape[1] == 0:
                raise DataError("c is a DataFrame without columns; pass one column per "
                                "protected attribute")
            names = [str(col) for col in c.columns]
            if len(set(names)) != len(names):
                raise ConfigError(f"protected columns are repeated: {names}")
            self.cs = {nm: c.iloc[:, j].to_numpy() for j, nm in enumerate(names)}
            self.c_name = names[0]
        else:
            self.c_name = None
        self.c = (next(iter(self.cs.values())) if self.cs
                  else np.asarray(c).reshape(-1))
        if isinstance(y, str):
            if y not in self.frame.columns:
                raise DataError(f"label column {y!r} is not in X; "
                                f"{_suggest(y, list(map(str, self.frame.columns)))}")
            self.y_name, self.y = y, self.frame[y].to_numpy()
        else:
            self.y_name = None
            self.y = None if y is None else np.asarray(y).reshape(-1)
        for what, arr in (("c", self.c), *self.cs.items(), ("y", self.y)):
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
            self.cs = {self.c_name: self.c}
        taken.add(self.c_name)
        self.c_names = list(self.cs)
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
            cs = {p: self.cs[p][s:s + batch_size] for p in protected_list(protected)}
            yield Batch(s, x, next(iter(cs.values())), y, cs)


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

    def _record_batches(self, columns, features, batch_size):
        import pyarrow as pa

        if self.parquet:
            import pyarrow.parquet as pq

            # no read-ahead, one thread: memory stays bounded by one row group
            pf = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
            yield from pf.iter_batches(batch_size=batch_size, columns=columns, use_threads=False)
            return
        import pyarrow.csv as pcsv

        types = {c: pa.float64() for c in features}
        reader = pcsv.open_csv(
            self.path, read_options=pcsv.ReadOptions(block_size=1 << 22),
            convert_options=pcsv.ConvertOptions(include_columns=[c for c in columns if c],
                                                column_types=types))
        for rb in reader:
            for s in range(0, rb.num_rows, batch_size):
                yield rb.slice(s, batch_size)

    def batches(self, features, protected, label, batch_size):
        prot = protected_list(protected)
        want = [c for c in [*prot, label, *features] if c]
        start = 0
        try:
            for rb in self._record_batches(want, features, batch_size):
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
                cs = {p: rb.column(p).to_numpy(zero_copy_only=False) for p in prot}
                y = rb.column(label).to_numpy(zero_copy_only=False) if label else None
                yield Batch(start, x, cs[prot[0]], y, cs)
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


def _is_numeric(values: np.ndarray) -> bool:
    try:
        np.asarray(values, dtype=np.float64)
        return True
    except (TypeError, ValueError):
        return False


class _Column:
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
        if self.numeric and not _is_numeric(c[~null_c]):
            self.numeric = False
        if self.too_many:
            return None
        cv = c[~null_c]
        cv = np.asarray(cv, dtype=np.float64) if self.numeric else np.asarray(cv).astype(str)
        vals, cnt = np.unique(cv, return_counts=True)
        for v, k in zip(vals, cnt):
            self.counts[_key(v)] = self.counts.get(_key(v), 0) + int(k)
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


def _rows_text(n: int, first: list[int]) -> str:
    """``N rows (first rows: a, b, ...)``."""
    more = ", ..." if n > len(first) else ""
    return (f"{n} row{'s' if n != 1 else ''} (first rows: {', '.join(map(str, first))}"
            f"{more})")


def _count_joint(joint: dict, cols: list) -> None:
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
            key.append(_key(part[0][cd % len(part[0])]))
            cd //= len(part[0])
        key = tuple(reversed(key))
        joint[key] = joint.get(key, 0) + k


def _drop_from_joint(joint: dict, i: int) -> dict:
    out: dict = {}
    for key, k in joint.items():
        key = (*key[:i], None, *key[i + 1:])
        out[key] = out.get(key, 0) + k
    return out


def scan(source: Source, features, protected, label: str | None, *, sample: int,
         batch_size: int, seed: int = 0, protected_type="auto",
         progress=None, allow_nan: bool = False) -> Scan:
    """One pass: count rows, refuse inf features and NaN ones unless ``allow_nan`` (a black
    box that reads NaN; ``Scan.nan_rows`` counts them), describe each protected attribute
    (``protected``: a column name or a list; ``protected_type``: one type for all or one
    per attribute), count their combinations, sample ``sample`` rows."""
    prot = protected_list(protected)
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
    rng = np.random.default_rng(seed)
    keys = np.empty(0)
    rows = np.empty(0, dtype=np.int64)
    xs = np.empty((0, len(features)))
    cs = {p: np.empty(0, dtype=object) for p in prot}
    ys = None if label is None else np.empty(0, dtype=object)
    n = n_bad = n_nan = 0
    first_bad: list[int] = []
    cols = [_Column(p, t) for p, t in zip(prot, types)]
    joint: dict | None = {} if len(prot) > 1 else None
    in_joint = [True] * len(prot)
    for b in source.batches(features, prot, label, batch_size):
        m = b.x.shape[0]
        nan = np.isnan(b.x).any(axis=1)
        n_nan += int(nan.sum())
        bad = ~(np.isfinite(b.x) | (allow_nan & np.isnan(b.x))).all(axis=1)
        if bad.any():
            n_bad += int(bad.sum())
            first_bad += (b.start + np.flatnonzero(bad)[:5 - len(first_bad)]).tolist()
        counted = [col.add(b.cs[col.name], b.start) for col in cols]
        if joint is not None:
            for i, col in enumerate(cols):
                if in_joint[i] and not col.categorical:
                    in_joint[i] = False
                    joint = _drop_from_joint(joint, i)
            if any(in_joint) and all(v is not None for v, j in zip(counted, in_joint) if j):
                _count_joint(joint, [v if j else None for v, j in zip(counted, in_joint)])
            if len(joint) > MAX_JOINT:
                joint = None
        # uniform sample without replacement: keep the `sample` smallest random keys
        k_b = rng.random(m)
        keys = np.concatenate([keys, k_b])
        rows = np.concatenate([rows, b.start + np.arange(m)])
        xs = np.concatenate([xs, b.x])
        for p in prot:
            cs[p] = np.concatenate([cs[p], np.asarray(b.cs[p], dtype=object)])
        if ys is not None:
            ys = np.concatenate([ys, np.asarray(b.y, dtype=object)])
        if keys.shape[0] > sample:
            keep = np.argpartition(keys, sample)[:sample]
            keys, rows, xs = keys[keep], rows[keep], xs[keep]
            cs = {p: v[keep] for p, v in cs.items()}
            ys = None if ys is None else ys[keep]
        n += m
        if progress is not None:
            progress(m)
    if n == 0:
        raise DataError(f"{source.name} has no rows to audit")
    if n_bad:
        why = ("; the model is scored by its gradients (autograd), which NaN breaks: impute or "
               "drop them, or audit a model that reads NaN (e.g. a tree ensemble) as a black "
               "box" if n_nan and not allow_nan else "; impute or drop them before auditing")
        raise DataError(f"features hold {'inf' if allow_nan else 'NaN or inf'} in {n_bad} rows "
                        f"(first rows: {', '.join(map(str, first_bad))}){why}")
    for col in cols:
        if col.n_null:
            raise DataError(f"protected column {col.name!r} is missing in "
                            f"{_rows_text(col.n_null, col.first_null)}; fill or drop those "
                            "rows")
    if ys is not None and pd.isna(ys).any():
        raise DataError(f"label column {label!r} is missing in {int(pd.isna(ys).sum())} sampled "
                        "rows; fill or drop those rows")
    order = np.argsort(rows)
    rows, xs = rows[order], xs[order]
    cs = {p: v[order] for p, v in cs.items()}
    ys = None if ys is None else ys[order]
    attrs = {col.name: _describe_protected(col.name, col.counts, col.too_many, col.numeric,
                                           cs[col.name], col.type) for col in cols}
    if joint is not None:  # only the categorical attributes enter the intersection
        for i, col in enumerate(cols):
            if in_joint[i] and attrs[col.name].kind == "continuous":
                joint = _drop_from_joint(joint, i)
    mean, scale = _standardisation(xs)
    return Scan(n, rows, xs, cs[prot[0]], ys, attrs[prot[0]], mean, scale, attrs, cs, joint,
                n_nan)


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
