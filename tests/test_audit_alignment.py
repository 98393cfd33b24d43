"""In-memory audits match c and y to X by index label, never by position."""

import numpy as np
import pandas as pd
import pytest

from faux.audit.sources.array_source import ArraySource
from faux.errors import DataError


def frame(n=6):
    X = pd.DataFrame({"a": np.arange(n, dtype=float), "b": np.arange(n, dtype=float) ** 2},
                     index=[f"r{i}" for i in range(n)])
    return X


def rows(src):
    return next(src.batches(["a", "b"], src.c_names, src.y_name, 100))


def test_a_shuffled_series_is_matched_by_label():
    X = frame()
    c = pd.Series(np.arange(6) % 2, index=X.index, name="sex")
    b = rows(ArraySource(X, c.sample(frac=1.0, random_state=0)))
    np.testing.assert_array_equal(b.c, c.to_numpy())
    y = pd.Series(np.arange(6), index=X.index)
    src = ArraySource(X, c, y.iloc[::-1])
    np.testing.assert_array_equal(rows(src).y, y.to_numpy())


def test_a_named_series_keeps_its_name():
    X = frame()
    src = ArraySource(X, pd.Series(np.arange(6) % 2, index=X.index, name="sex"))
    assert src.c_names == ["sex"]
    assert ArraySource(X, np.arange(6) % 2).c_names == ["c"]


def test_a_misaligned_slice_is_one_clear_error():
    X = frame()
    c = pd.Series(np.arange(6) % 2, index=X.index)
    with pytest.raises(DataError, match=r"c's index does not match X's: 2 row label"):
        ArraySource(X, c.iloc[2:])
    with pytest.raises(DataError, match="y's index"):
        ArraySource(X, c, pd.Series(np.arange(6)))            # a RangeIndex y


def test_a_dataframe_of_attributes_is_aligned_too():
    X = frame()
    cs = pd.DataFrame({"sex": np.arange(6) % 2, "race": list("aabbcc")}, index=X.index)
    b = rows(ArraySource(X, cs.iloc[::-1]))
    np.testing.assert_array_equal(b.cs["race"], cs["race"].to_numpy())


def test_an_array_x_keeps_positions():
    X = frame().to_numpy()
    c = pd.Series([0, 1, 0, 1, 0, 1], index=[5, 4, 3, 2, 1, 0])
    np.testing.assert_array_equal(rows_np(ArraySource(X, c)), c.to_numpy())


def rows_np(src):
    return next(src.batches(["x0", "x1"], src.c_names, None, 100)).c
