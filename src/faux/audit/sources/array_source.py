"""In-memory data to audit: a DataFrame or 2-D array ``X`` with the protected values ``c``
(values, column names of ``X``, or a DataFrame of attributes) and the label ``y``; pandas
``c`` / ``y`` are matched to ``X`` by index, values passed as arrays get names no column of
``X`` has."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faux.audit.sources.columns import protected_list, suggestion
from faux.audit.sources.source import Batch, Source, as_float
from faux.errors import ConfigError, DataError


def free_name(candidates, taken) -> str:
    """The first of ``candidates`` not in ``taken``, else the last one numbered."""
    for name in candidates:
        if name not in taken:
            return name
    i = 2
    while f"{candidates[-1]}_{i}" in taken:
        i += 1
    return f"{candidates[-1]}_{i}"


def aligned(v, frame: pd.DataFrame, what: str):
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
        self.named = isinstance(X, pd.DataFrame)  # an array's columns have no names of its own
        if isinstance(X, pd.DataFrame):
            self.frame = X.copy(deep=False)  # the caller's frame and its labels stay as they are
        else:
            arr = np.asarray(X)
            if arr.ndim != 2:
                raise DataError(f"X must be 2-D (rows, features), got shape {arr.shape}")
            self.frame = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
        n = len(self.frame)
        if isinstance(X, pd.DataFrame):
            c = aligned(c, self.frame, "c")
            y = aligned(y, self.frame, "y")
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
                                    f"{suggestion(name, list(map(str, self.frame.columns)))}")
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
                                f"{suggestion(y, list(map(str, self.frame.columns)))}")
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
            self.c_name = free_name(("c", "c_protected"), taken)
            self.cs = {self.c_name: self.c}
        taken.add(self.c_name)
        self.c_names = list(self.cs)
        if self.y is not None and self.y_name is None:
            self.y_name = free_name(("y", "y_label"), taken)
        self.n_rows = n
        self.name = name

    def batches(self, features, protected, label, batch_size):
        x_all = self.frame[list(features)]
        for s in range(0, self.n_rows, batch_size):
            part = x_all.iloc[s:s + batch_size]
            x = np.column_stack([as_float(part[f].to_numpy(), f) for f in features])
            y = None if self.y is None else self.y[s:s + batch_size]
            cs = {p: self.cs[p][s:s + batch_size] for p in protected_list(protected)}
            yield Batch(s, x, next(iter(cs.values())), y, cs)
