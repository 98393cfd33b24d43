import logging

import numpy as np
import pytest

from faux.data.pmlb_data import load_pmlb
from faux.errors import ConfigError, DataError
from faux.synth.encoding import ModeEncoder, block_bounds


def test_rows_are_mode_probabilities_on_backache():
    d = load_pmlb("backache")
    enc = ModeEncoder(n_components=3, seed=0)
    x = enc.fit_transform(d.X, d.feature_names)
    assert x.shape == (180, 18) and enc.block_sizes == (3,) * 6
    assert (x >= 0).all()
    for a, b in block_bounds(enc.block_sizes):
        np.testing.assert_allclose(x[:, a:b].sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(x.sum(1), 6.0, atol=1e-10)
    # modes are ordered by mean: the smallest value of a feature sits in the first mode
    j = 3
    lo = np.argmin(d.X[:, j])
    assert np.argmax(x[lo, 3 * j:3 * j + 3]) == 0


def test_deterministic_in_seed():
    d = load_pmlb("australian")
    a = ModeEncoder(5, seed=1).fit_transform(d.X)
    b = ModeEncoder(5, seed=1).fit_transform(d.X)
    np.testing.assert_array_equal(a, b)


def test_credit_g_reduces_components_to_distinct_values(caplog):
    d = load_pmlb("credit_g")
    with caplog.at_level(logging.INFO, logger="faux.synth"):
        enc = ModeEncoder(7, reg_covar=1e-3, seed=0).fit(d.X, d.feature_names)
    distinct = [len(np.unique(d.X[:, j])) for j in range(d.X.shape[1])]
    assert enc.block_sizes == tuple(min(7, k) for k in distinct)
    assert enc.reductions_["num_dependents"] == (7, 2)
    assert any("num_dependents" in r.getMessage() for r in caplog.records)
    x = enc.transform(d.X)
    np.testing.assert_allclose(x.sum(1), 7.0, atol=1e-9)
    # a 2-valued feature is encoded one-hot by its own value
    a, b = block_bounds(enc.block_sizes)[6]
    assert set(np.round(x[:, a:b].max(1), 6)) == {1.0}


def test_too_many_components_can_be_an_error():
    X = np.column_stack([np.arange(20.0), np.tile([0.0, 1.0], 10)])
    with pytest.raises(ConfigError, match="distinct values"):
        ModeEncoder(3, on_excess="error").fit(X)


def test_bad_input():
    with pytest.raises(DataError):
        ModeEncoder(2).fit(np.array([[1.0], [np.nan]]))
    with pytest.raises(ConfigError):
        ModeEncoder(0).fit(np.ones((5, 1)))
    enc = ModeEncoder(2).fit(np.random.default_rng(0).normal(size=(50, 2)))
    with pytest.raises(DataError, match="columns"):
        enc.transform(np.ones((3, 3)))
    with pytest.raises(ConfigError, match="not fitted"):
        ModeEncoder(2).transform(np.ones((3, 1)))
