"""Group outcomes from streamed counts equal fairlearn's on the rows; intervals behave."""

import numpy as np
import pytest
from fairlearn.metrics import (
    demographic_parity_difference,
    demographic_parity_ratio,
    equalized_odds_difference,
    selection_rate,
)

from faux.audit.verdict.outcomes import OutcomeCounts, group_outcomes, performance, wilson


def rows(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["f", "m", "x"], n, p=[0.45, 0.45, 0.10])
    y = rng.integers(0, 2, n)
    d = (rng.random(n) < np.where(g == "m", 0.6, 0.35) + 0.2 * y).astype(int)
    return g, y, d


def counted(g, y, d, parts=7):
    c = OutcomeCounts()
    for idx in np.array_split(np.arange(len(g)), parts):     # streamed in batches
        c.add(g[idx], y[idx], d[idx])
    return c


def test_streamed_counts_give_fairlearns_metrics_on_the_rows():
    g, y, d = rows()
    out = group_outcomes(counted(g, y, d), B=200)
    for grp in ("f", "m", "x"):
        m = g == grp
        assert out["by_group"][grp]["rows"] == m.sum()
        assert out["by_group"][grp]["selection_rate"] == pytest.approx(
            selection_rate(y[m], d[m]), abs=1e-12)
        assert out["by_group"][grp]["accuracy"] == pytest.approx((y[m] == d[m]).mean())
    gaps = out["gaps"]
    assert gaps["demographic_parity_difference"]["value"] == pytest.approx(
        demographic_parity_difference(y, d, sensitive_features=g), abs=1e-12)
    assert gaps["demographic_parity_ratio"]["value"] == pytest.approx(
        demographic_parity_ratio(y, d, sensitive_features=g), abs=1e-12)
    assert gaps["equalized_odds_difference"]["value"] == pytest.approx(
        equalized_odds_difference(y, d, sensitive_features=g), abs=1e-12)
    for v in gaps.values():
        lo, hi = v["interval"]
        assert lo <= v["value"] <= hi


def test_a_rate_of_zero_has_an_interval_that_does_not_collapse():
    lo, hi = wilson(0, 200)
    assert lo == 0.0 and 0.005 < hi < 0.03
    assert wilson(0, 0) is None


def test_an_empty_group_is_reported_as_empty_not_as_a_rate():
    g, y, d = rows()
    out = group_outcomes(counted(g, y, d), groups=["f", "m", "x", "unseen"], B=100)
    assert out["by_group"]["unseen"] == {"rows": 0, "empty": True}
    assert out["empty_groups"] == ["unseen"]
    one = group_outcomes(counted(g[g == "f"], y[g == "f"], d[g == "f"]), B=100)
    assert one["gaps"] is None and "fewer than two groups" in one["note"]


def test_the_bootstrap_interval_covers_the_truth_about_as_often_as_it_says():
    hits = 0
    for s in range(40):
        rng = np.random.default_rng(100 + s)
        n = 800
        g = rng.choice(["a", "b"], n)
        y = rng.integers(0, 2, n)
        d = (rng.random(n) < np.where(g == "a", 0.5, 0.4)).astype(int)
        lo, hi = group_outcomes(counted(g, y, d), B=300, seed=s)["gaps"][
            "demographic_parity_difference"]["interval"]
        hits += lo <= 0.1 <= hi
    assert 32 <= hits <= 40


def test_performance_is_the_accuracy_of_every_row():
    g, y, d = rows()
    p = performance(counted(g, y, d))
    assert p["rows"] == len(y) and p["accuracy"] == pytest.approx((y == d).mean())
    lo, hi = p["accuracy_interval"]
    assert lo < p["accuracy"] < hi
