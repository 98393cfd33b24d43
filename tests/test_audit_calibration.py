"""The calibrated thresholds: each score's null distribution from aux models trained on a
permuted protected attribute, a row flagged above the null's (1 - alpha) quantile (or by
Benjamini-Hochberg over the rows), and the summary stating the rule."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

import faux
from audit_world import proxy_world
from faux.audit.scores.calibration import bh_cut

ALPHA = 0.01


class Ignores(torch.nn.Module):
    """Reads x1..x3 only: neither c nor its proxy."""

    def forward(self, x):
        return 0.8 * x[:, 0] - 0.5 * x[:, 1] + 0.3 * torch.tanh(2 * x[:, 2])


class GatedProxy(torch.nn.Module):
    """tests/test_audit.py's ProxyModel with the proxy's coefficient as a parameter."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return 0.5 * x[:, 0] + self.k * torch.sigmoid(8 * x[:, 1]) * (x[:, 3] - 0.5)


class LinearProxy(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return 0.5 * x[:, 0] - 0.3 * x[:, 2] + self.k * (x[:, 3] - 0.5)


def _bound(n, alpha=ALPHA):
    """alpha N (1 + tolerance), the tolerance 3.1 binomial standard deviations of the count
    of rows flagged by chance (sd ~ sqrt(alpha N)): exceeded with probability < 0.1% if
    rows were flagged independently with probability alpha."""
    tol = 3.1 / np.sqrt(alpha * n)
    return alpha * n * (1 + tol)


@pytest.mark.parametrize("fdr", [False, True])
def test_a_model_that_ignores_c_and_every_proxy_is_flagged_at_most_at_alpha(fdr):
    n = 2000
    X, c = proxy_world(n)
    res = faux.audit(torch.jit.script(Ignores()), X, c, aux_epochs=8, progress=False, fdr=fdr,
                     verdict="score")  # the score's calibration decides flagged
    assert res.summary["aux_quality"]["auroc"] > 0.9  # the proxy carries c
    flagged = int(res.scores.flagged.sum())
    assert flagged == res.summary["flagged"]["count"]
    assert flagged <= _bound(n), (flagged, _bound(n))
    for m, t in res.summary["thresholds"].items():
        assert t["rows_above"] <= _bound(n), (m, t)
    cal = res.summary["calibration"]
    assert cal["rule"] == ("benjamini-hochberg" if fdr else "null quantile")
    assert cal["alpha"] == ALPHA and cal["null_permutations"] == 3
    assert cal["null_rows_per_permutation"] == n
    if not fdr:
        assert cal["expected_false_flags"] == pytest.approx(ALPHA * n)
        t = res.summary["settings"]["threshold"]
        assert t == cal["null_quantiles"][res.summary["settings"]["primary"]]["0.99"]
        assert (res.scores.flagged == (res.scores[res.summary["settings"]["primary"]] > t)).all()


def _gate_open_rate(model, X, c, methods):
    res = faux.audit(torch.jit.script(model), X, c, methods=methods, aux_epochs=10,
                     progress=False)
    f = res.scores.flagged.values
    return f[X.x2.values > 0.5].mean(), f[X.x2.values < -0.5].mean()


def _true_off_rate(model, X, c) -> float:
    """Where the gate shuts the proxy off, the share of rows whose decision truly changes
    (the world's counterfactual: proxy = c + noise moves by 1 - 2c)."""
    x = torch.tensor(X.to_numpy(), dtype=torch.float32)
    cf = x.clone()
    cf[:, 3] += torch.tensor(1 - 2 * c, dtype=torch.float32)
    with torch.no_grad():
        flips = ((model(x) >= 0) != (model(cf) >= 0)).numpy()
    return float(flips[X.x2.values < -0.5].mean())


def test_the_planted_proxys_rows_are_flagged_more_as_its_coefficient_grows():
    X, c = proxy_world(1500)
    rates = []
    for k in (0.0, 2.0, 4.0, 8.0):
        on, off = _gate_open_rate(GatedProxy(k), X, c, ["faux_ng", "faux"])
        # where the gate shuts the proxy off (it still moves a logit by up to 0.15 at k = 8,
        # so rows at the boundary truly flip): hardly more flags than true flips there
        assert off <= _true_off_rate(GatedProxy(k), X, c) + 0.01, (k, off)
        rates.append(on)
    assert rates[0] <= 0.02
    assert all(a < b for a, b in zip(rates, rates[1:])), rates
    assert rates[-1] > 0.5, rates


def test_faux_calibrated_flags_a_linear_proxy_more_as_its_coefficient_grows():
    """Up to where the model saturates: fAux is not scale-free in the model's slope, and the
    pooled null is set by the rows where the sigmoid is steepest (docs/audit.md)."""
    X, c = proxy_world(1500, seed=1)
    rates = []
    for k in (0.0, 2.0, 4.0):
        res = faux.audit(torch.jit.script(LinearProxy(k)), X, c, methods=["faux"],
                         aux_epochs=10, progress=False)
        rates.append(res.flagged_rate)
    assert rates[0] <= _bound(len(X)) / len(X)
    assert all(a < b for a, b in zip(rates, rates[1:])), rates
    assert rates[-1] > 0.1, rates


def test_bh_cut_is_benjamini_hochberg():
    rng = np.random.default_rng(0)
    m, n = 999, 400
    e = np.concatenate([np.zeros(30, int), rng.integers(0, m + 1, n - 30)])
    hist = np.bincount(e, minlength=m + 1)
    p = np.sort((1 + e) / (m + 1))
    k = np.flatnonzero(p <= 0.05 * np.arange(1, n + 1) / n)
    expected = int(((1 + e) / (m + 1) <= p[k[-1]]).sum()) if k.size else 0
    cut = bh_cut(hist, n, 0.05)
    assert int(hist[:cut + 1].sum()) == expected and expected >= 30


def test_the_summary_and_report_state_the_rule(tmp_path):
    from faux.audit.cli import main

    X, c = proxy_world(600)
    data = tmp_path / "d.csv"
    X.assign(sex=c).to_csv(data, index=False)
    model = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(GatedProxy(4.0)), model)
    out = tmp_path / "out"
    rc = main(["audit", "--model", str(model), "--data", str(data), "--protected", "sex",
               "--out", str(out), "--aux-epochs", "4", "--no-progress", "--alpha", "0.05",
               "--null-permutations", "2", "--verdict", "score"])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    cal = s["calibration"]
    assert cal["alpha"] == 0.05 and cal["null_permutations"] == 2
    assert cal["expected_false_flags"] == pytest.approx(0.05 * 600)
    assert set(cal["null_quantiles"]) == {"faux", "faux_ng"}
    assert "0.95 quantile" in cal["text"] and "2 permuted-c aux models" in cal["text"]
    html = (out / "report.html").read_text()
    assert "null quantile" in html and "expected false flags" in html
    scores = pd.read_parquet(out / "scores.parquet")
    assert (scores.flagged == (scores.faux_ng > s["settings"]["threshold"])).all()
    # BH: the flagged column is the final cut, also in the file
    rc = main(["audit", "--model", str(model), "--data", str(data), "--protected", "sex",
               "--out", str(out), "--aux-epochs", "4", "--no-progress", "--fdr",
               "--alpha", "0.2", "--methods", "faux_ng", "--verdict", "score"])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    scores = pd.read_parquet(out / "scores.parquet")
    assert s["calibration"]["rule"] == "benjamini-hochberg"
    assert int(scores.flagged.sum()) == s["flagged"]["count"]
    t = s["settings"]["threshold"]
    if t is not None:
        assert (scores.flagged == (scores.faux_ng > t)).all()
    # a manual threshold overrides, and the summary says so
    rc = main(["audit", "--model", str(model), "--data", str(data), "--protected", "sex",
               "--out", str(out), "--aux-epochs", "4", "--no-progress", "--threshold", "0.02"])
    s = json.loads((out / "summary.json").read_text())
    assert s["calibration"]["rule"] == "manual threshold"
    assert s["settings"]["threshold"] == 0.02 and s["calibration"]["null_permutations"] == 0
