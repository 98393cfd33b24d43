"""faux.metrics.fairness against hand-computed values, and the Adel training's determinism."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from faux.metrics.fairness import (
    demographic_parity_gap,
    either_direction,
    logistic_probe_auroc,
    mean_abs_change,
    mlp_probe_auroc,
    mutual_information,
    swapped_rows,
)


def test_either_direction():
    assert either_direction(0.8) == 0.8
    assert either_direction(0.25) == 0.75
    assert either_direction(0.5) == 0.5
    assert np.isnan(either_direction(float("nan")))


def test_swapped_rows_exchanges_the_edits_columns_on_the_rows_holding_one():
    x = np.array([[1, 0, 5.0],      # holds column 0
                  [0, 1, 6.0],      # holds column 1
                  [0, 0, 7.0]])     # holds neither: left out
    ((rows, swapped),) = swapped_rows(x, [(0, 1)])
    np.testing.assert_array_equal(rows, [[1, 0, 5], [0, 1, 6]])
    np.testing.assert_array_equal(swapped, [[0, 1, 5], [1, 0, 6]])
    # an edit no row holds gives no pair; every other edit its own
    pairs = swapped_rows(np.c_[x, np.zeros(3), np.zeros(3)], [(3, 4), (0, 1)])
    assert len(pairs) == 1 and pairs[0][0].shape == (2, 5)


def test_mean_abs_change_pools_every_pair():
    assert mean_abs_change([np.array([0.1, 0.5]), np.array([0.9])],
                           [np.array([0.4, 0.2]), np.array([0.3])]) == (
        pytest.approx((0.3 + 0.3 + 0.6) / 3), 3)
    mean, n = mean_abs_change([], [])
    assert np.isnan(mean) and n == 0


def test_demographic_parity_gap():
    # P(yhat = 1 | g = 1) = 1/2, P(yhat = 1 | g = 0) = 2/2
    assert demographic_parity_gap([True, False, True, True], [1, 1, 0, 0]) == 0.5
    assert demographic_parity_gap(np.array([1, 0, 0, 1]), np.array([1, 0, 1, 0])) == 0.0


def test_probes_read_a_separable_attribute_and_return_nan_on_one_class():
    rng = np.random.default_rng(0)
    h, hv = rng.normal(size=(200, 3)), rng.normal(size=(100, 3))
    t, tv = (h[:, 1] > 0).astype(int), (hv[:, 1] > 0).astype(int)
    assert logistic_probe_auroc(h, t, hv, tv) == 1.0
    assert mlp_probe_auroc(h, t, hv, tv, seed=0) > 0.98
    # a probe reading the attribute backwards is as good in either direction
    assert either_direction(logistic_probe_auroc(h, t, hv, 1 - tv)) == 1.0
    assert np.isnan(logistic_probe_auroc(h, t, hv, np.ones(100, dtype=int)))


def test_mutual_information_and_one_hot_aggregation():
    from faux.methods.transparency import aggregate_groups

    rng = np.random.default_rng(0)
    n = 4000
    c = rng.integers(0, 2, n)
    noise = rng.normal(size=n)
    # a one-hot feature whose first level is c itself and whose other two split c = 0
    lvl = np.where(c == 1, 0, 1 + rng.integers(0, 2, n))
    onehot = np.eye(3)[lvl]
    x = np.c_[c, noise, onehot]
    mi = mutual_information(x, c, np.array([True, False, True, True, True]), seed=0)
    assert mi[0] == pytest.approx(np.log(2), abs=0.01)       # MI(c; c) = H(c) = ln 2
    assert mi[1] < 0.02                                      # independent noise
    agg = aggregate_groups(mi, ["copy", "noise", "colour", "colour", "colour"])
    assert agg["colour"] == pytest.approx(mi[2:].mean())
    assert list(agg) == ["copy", "noise", "colour"]
    assert agg["copy"] > agg["colour"] > agg["noise"]


def _data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    c = (torch.rand(n, generator=g) < 0.4).float()
    x[:, 4] = ((c == 1) & (torch.rand(n, generator=g) < 0.7)).float()   # a proxy pair of c
    x[:, 5] = ((c == 0) & (torch.rand(n, generator=g) < 0.6)).float()
    x[:, 0] += c
    y = ((x[:, 0] + 0.5 * x[:, 1] + 0.3 * torch.randn(n, generator=g)) > 0.4).float()
    return x, y, c


@pytest.mark.parametrize("recipe", ["aux", "fair", "steered"])
def test_adel_training_is_deterministic(recipe):
    """The same spec, data and seed give the same weights, bit for bit, and the same info
    (the aux's recipe, the fair model's with pairing and MMD, and one steered by a probe)."""
    from faux.models.adel import GUARDS, AdelSpec, train_adel

    x, y, c = _data(300, 0)
    xv, yv, cv = _data(200, 1)
    sizes = dict(width=16, max_epochs=3, patience=5)
    spec, kw = {
        "aux": (replace(GUARDS, **sizes), {}),
        "fair": (AdelSpec(last_width=8, mmd=3.0, **sizes), {"pair_edits": [(4, 5)]}),
        "steered": (replace(GUARDS, alpha=1.05, alpha_min=1.0, decor=1.0, reinit=True,
                            probe_target=0.7, probe_kind="mlp", probe_rows=100, **sizes), {}),
    }[recipe]
    runs = [train_adel(spec, x, y, c, xv, yv, cv, seed=3, accelerator="cpu", **kw)
            for _ in range(2)]
    (a, ia), (b, ib) = runs
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k
    ia.pop("train_time_s"), ib.pop("train_time_s")
    assert ia == ib
    if recipe == "steered":
        assert len(ia["probe_history"]) == 3
    other = train_adel(spec, x, y, c, xv, yv, cv, seed=4, accelerator="cpu", **kw)[0]
    assert not torch.equal(other.state_dict()["net.head.weight"], sa["net.head.weight"])
