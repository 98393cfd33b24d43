"""The audit's baselines: the per-row kNN consistency (pinned to aif360's number), the
ranking comparison (Spearman, top-k overlap with ties shared), and their values in an audit
(FTA of a logistic model in closed form, the primary compared with itself)."""

import logging
import math

import numpy as np
import pytest

import faux
from audit_world import proxy_world
from faux.audit.scores.baselines import (
    FIXED_K,
    compare,
    consistency_rows,
    spearman,
    top_k_overlap,
)


@pytest.fixture(scope="module")
def aif360_consistency():
    logging.getLogger().setLevel(logging.ERROR)  # aif360 logs its missing optional extras
    from aif360.sklearn.metrics import consistency_score

    return consistency_score


@pytest.mark.parametrize("n_neighbors", [1, 5, 9])
def test_one_minus_mean_inconsistency_is_aif360s_consistency(aif360_consistency, n_neighbors):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 6))
    yhat = (x[:, 0] + 0.8 * rng.normal(size=400) > 0).astype(float)
    rows = consistency_rows(x, yhat, n_neighbors)
    assert rows.shape == (400,) and ((rows >= 0) & (rows <= 1)).all()
    assert 1 - rows.mean() == pytest.approx(aif360_consistency(x, yhat, n_neighbors), abs=1e-12)
    if n_neighbors == 1:  # the row itself is its own nearest neighbour
        assert (rows == 0).all()


def test_an_odd_label_in_a_tight_cluster_scores_its_share():
    rng = np.random.default_rng(0)
    a = rng.normal(scale=0.01, size=(10, 2))  # a tight cluster, far from the other
    b = 100 + rng.normal(scale=0.01, size=(10, 2))
    x = np.vstack([a, b])
    yhat = np.r_[np.zeros(10), np.ones(10)]
    assert (consistency_rows(x, yhat) == 0).all()  # neighbours agree everywhere
    yhat[0] = 1  # one odd label: its 5 neighbours (itself included) hold 1 one
    rows = consistency_rows(x, yhat)
    assert rows[0] == pytest.approx(1 - 1 / 5)
    others = rows[1:10][rows[1:10] > 0]
    np.testing.assert_allclose(others, 1 / 5)  # those that count row 0 among their 5
    assert (rows[10:] == 0).all()


def test_top_k_overlap_closed_forms():
    a = np.arange(100.0)
    assert top_k_overlap(a, a, 10) == 1.0
    assert top_k_overlap(a, 2 * a + 5, 10) == 1.0  # ranks only
    assert top_k_overlap(a, -a, 10) == 0.0
    assert top_k_overlap(a, -a, 60) == pytest.approx(20 / 60)  # 40..59 shared
    assert top_k_overlap(a, np.zeros(100), 10) == pytest.approx(10 / 100)  # all tied: chance
    b = np.r_[np.zeros(95), np.ones(5)]  # 5 ones (rows 95..99) then ties at 0 for 5 places
    assert top_k_overlap(a, b, 10) == pytest.approx((5 + 5 * 5 / 95) / 10)


def test_spearman_reads_ranks_and_constants():
    rng = np.random.default_rng(1)
    a = rng.normal(size=200)
    assert spearman(a, np.exp(a)) == pytest.approx(1.0)
    assert spearman(a, -a ** 3) == pytest.approx(-1.0)
    assert math.isnan(spearman(a, np.zeros(200)))


def test_compare_takes_k_from_the_flagged_rows_or_a_fixed_k():
    rng = np.random.default_rng(2)
    p = rng.normal(size=500)
    noise = rng.normal(size=500)
    out = compare("faux", p, p > 1.5, {"fta": p + 0.01 * noise, "consistency": noise},
                  of_rows=5000)
    k = int((p > 1.5).sum())
    assert out["k"] == k == out["flagged_in_sample"] and out["top_k_chance"] == k / 500
    assert out["rows"] == 500 and out["of_rows"] == 5000 and out["sampled"]
    close, rand = out["methods"]["fta"], out["methods"]["consistency"]
    assert close["spearman_with_primary"] > 0.99 and close["top_k_overlap"] > 0.8
    assert abs(rand["spearman_with_primary"]) < 0.15 and rand["top_k_overlap"] < 0.35
    assert f"top {k}" in close["text"]
    none = compare("faux", p, np.zeros(500, bool), {"fta": p}, of_rows=500)
    assert none["k"] == FIXED_K and not none["sampled"]
    assert none["methods"]["fta"]["top_k_overlap"] == 1.0
    const = compare("faux", p, p > 1.5, {"consistency": np.zeros(500)}, of_rows=500)
    assert const["methods"]["consistency"]["spearman_with_primary"] is None
    assert "undefined" in const["methods"]["consistency"]["text"]


def test_audit_of_a_logistic_model_fta_in_closed_form_and_sampled():
    from sklearn.linear_model import LogisticRegression

    X, c = proxy_world(900)
    y = (X.x1 - 0.5 * X.x2 + X.proxy + 0.3 * np.random.default_rng(5).normal(size=900) > 0.5)
    lr = LogisticRegression().fit(X.values, y)
    res = faux.audit(lr, X, c, aux_epochs=2, null_permutations=1, sample=900,
                     progress=False)
    b = res.summary["baselines"]
    assert b["rows"] == b["of_rows"] == 900 and not b["sampled"]
    assert set(b["methods"]) == {"consistency", "fta"}
    # FTA of sigmoid(w.x + b) in standardised units: p (1 - p) ||w * std||
    p = lr.predict_proba(X.values)[:, 1]
    scale = X.values.std(axis=0)
    expect = np.mean(p * (1 - p)) * np.linalg.norm(lr.coef_[0] * scale)
    assert b["methods"]["fta"]["value"] == pytest.approx(expect, rel=2e-2)
    c_val = b["methods"]["consistency"]["value"]
    assert 0.5 < c_val <= 1
    for m in b["methods"].values():
        r = m["spearman_with_primary"]
        assert r is None or -1 <= r <= 1
        assert 0 <= m["top_k_overlap"] <= 1
    # fewer sample rows than rows: the comparison says it is sampled
    res = faux.audit(lr, X, c, aux_epochs=2, null_permutations=1, sample=300,
                     progress=False)
    b = res.summary["baselines"]
    assert b["rows"] == 300 and b["of_rows"] == 900 and b["sampled"]


def test_fta_as_primary_is_its_own_baseline():
    import torch

    X, c = proxy_world(500)

    class Proxy(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x[:, 0] + 3 * torch.tanh(x[:, 3] - 0.5) * x[:, 1]

    res = faux.audit(Proxy(), X, c, methods=["fta"], aux_epochs=2, null_permutations=1,
                     progress=False)
    fta = res.summary["baselines"]["methods"]["fta"]
    assert fta["spearman_with_primary"] == pytest.approx(1.0)
    assert fta["top_k_overlap"] == pytest.approx(1.0)
    assert fta["value"] == pytest.approx(res.scores.fta.mean(), rel=1e-5)
