"""The test-independent fairness check: fresh probe, proxy swap, parity gap, accuracy."""

import numpy as np
import pytest
import torch
from torch import nn

from faux.errors import ConfigError, DataError
from faux.models.adel import AdelSpec, train_adel
from faux.models.mlp import train_mlp
from faux.studies.fairness_check import (
    PROXY_EDITS,
    edit_columns,
    fairness_check,
    probe_auroc,
    proxy_edits,
    proxy_swap,
)


class Linear(nn.Module):
    """logit = x @ w + b; the hidden layer is the chosen columns of x."""

    def __init__(self, w, b=0.0, hidden_cols=(0,)):
        super().__init__()
        self.w = torch.as_tensor(w, dtype=torch.float32)
        self.b = float(b)
        self.cols = list(hidden_cols)

    def forward(self, x):
        return x @ self.w + self.b

    def hidden(self, x):
        return x[:, self.cols]


def _planted(n, seed):
    """x = [x1, noise, a, b]: y is read from x1 (and c), c only from the one-hot pair (a, b)."""
    g = torch.Generator().manual_seed(seed)
    c = (torch.rand(n, generator=g) < 0.5).float()
    x1, noise = torch.randn(n, generator=g), torch.randn(n, generator=g)
    keep = (torch.rand(n, generator=g) < 0.9).float()       # a = 1 for 90 % of c = 1 rows
    a = c * keep + (1 - c) * (1 - keep)
    y = (x1 + 0.7 * (2 * c - 1) + 0.5 * torch.randn(n, generator=g) > 0).float()
    return torch.stack([x1, noise, a, 1 - a], 1), y, c


def test_a_model_that_ignores_the_proxy_columns_does_not_move():
    x, _, _ = _planted(500, 0)
    m = Linear([1.5, -0.3, 0.0, 0.0], 0.2)
    d, n = proxy_swap(m, x.numpy(), [(2, 3)])
    assert d == 0.0 and n == 500                  # every row holds a or b


def test_proxy_swap_closed_form():
    x, _, _ = _planted(400, 1)
    w = torch.tensor([1.0, 0.0, 0.8, 0.0])
    m = Linear(w, -0.1)
    z = x @ w - 0.1
    flipped = z + torch.where(x[:, 2] == 1, -0.8, 0.8)     # a -> b removes w_a, b -> a adds it
    expect = (torch.sigmoid(flipped) - torch.sigmoid(z)).abs().mean()
    d, n = proxy_swap(m, x.numpy(), [(2, 3)])
    assert d == pytest.approx(float(expect), rel=1e-5) and n == 400
    # rows holding neither column are not edited
    xs = x.clone()
    xs[:100, 2:] = 0
    assert proxy_swap(m, xs.numpy(), [(2, 3)])[1] == 300


def test_probe_reads_c_only_when_the_hidden_layer_holds_it():
    x, _, c = _planted(3000, 2)
    xv, _, cv = _planted(1000, 3)
    xt, _, ct = _planted(1000, 4)
    blind = probe_auroc(Linear([1, 0, 0, 0], hidden_cols=(0, 1)), x, c, xv, cv, xt, ct,
                        max_epochs=5)
    sees = probe_auroc(Linear([1, 0, 0, 0], hidden_cols=(0, 2)), x, c, xv, cv, xt, ct,
                       max_epochs=5)
    assert abs(blind["probe_auroc"] - 0.5) < 0.06        # x1 and noise are independent of c
    assert sees["probe_auroc"] > 0.85                     # a agrees with c on 90 % of rows
    assert sees["probe_auroc"] == max(sees["probe_auroc_lr"], sees["probe_auroc_mlp"])


def test_fair_model_hides_c_and_moves_less_under_the_proxy_swap():
    x, y, c = _planted(2000, 0)
    xv, yv, cv = _planted(800, 1)
    xt, yt, ct = _planted(1000, 2)
    sizes = dict(width=16, depth=2, max_epochs=20, patience=None)
    unfair, _ = train_mlp(x, y, xv, yv, seed=0, accelerator="cpu", **sizes)
    # the fair recipe, with the declared edit for its pairing as the real study passes it
    fair, _ = train_adel(AdelSpec(alpha_decay=0.85, **sizes), x, y, c, xv, yv, cv,
                         pair_edits=[(2, 3)], seed=0, accelerator="cpu")
    args = (x, c, xv, cv, xt, ct, yt)
    u = fairness_check(unfair, *args, proxy_edits=[(2, 3)], probe={"max_epochs": 10})
    f = fairness_check(fair, *args, proxy_edits=[(2, 3)], probe={"max_epochs": 10})
    assert u["probe_auroc"] > 0.8                          # the plain hidden layer reads c
    assert f["probe_auroc"] < u["probe_auroc"] - 0.15, (f, u)   # measured 0.72 against 0.89
    assert f["proxy_swap_mean_abs_dprob"] < 0.5 * u["proxy_swap_mean_abs_dprob"]
    assert f["dp_gap"] < u["dp_gap"]
    assert f["accuracy"] > 0.6 and u["accuracy"] > f["accuracy"] - 0.02


def test_dp_gap_accuracy_and_the_y_target():
    x, y, c = _planted(600, 5)
    m = Linear([0, 0, 1, 0], -0.5, hidden_cols=(0, 1))   # yhat = a: agrees with c on 90 %
    out = fairness_check(m, x, c, x, c, x, c, y, probe={"max_epochs": 2})
    yhat = x[:, 2].numpy() == 1
    cn = c.numpy()
    assert out["dp_gap"] == pytest.approx(abs(yhat[cn == 1].mean() - yhat[cn == 0].mean()))
    assert out["accuracy"] == pytest.approx(float((yhat == y.numpy()).mean()))
    assert np.isnan(out["proxy_swap_mean_abs_dprob"]) and out["proxy_swap_n"] == 0
    aux = fairness_check(m, x, c, x, c, x, c, y, target="y", y_train=y, y_val=y,
                         probe={"max_epochs": 2})
    assert aux["probe_target"] == "y"
    assert aux["accuracy"] == pytest.approx(float((yhat == c.numpy()).mean()))


def test_declared_edits_and_bad_input():
    for name, edits in PROXY_EDITS.items():
        assert proxy_edits(name) == edits
        for a, b in edits:                     # two levels of the same categorical feature
            assert a.split("=")[0] == b.split("=")[0] and a != b
    assert proxy_edits("nope") == ()
    names = ["x1", "noise", "g=a", "g=b"]
    assert edit_columns([("g=a", "g=b")], names) == [(2, 3)]
    with pytest.raises(ConfigError, match="feature_names"):
        edit_columns([("g=a", "g=b")])
    with pytest.raises(DataError, match="no column"):
        edit_columns([("g=a", "g=z")], names)
    x, y, c = _planted(100, 0)
    m = Linear([1, 0, 0, 0])
    with pytest.raises(ConfigError, match="target"):
        fairness_check(m, x, c, x, c, x, c, y, target="z")
    with pytest.raises(ConfigError, match="y_train"):
        fairness_check(m, x, c, x, c, x, c, y, target="y")
    with pytest.raises(DataError, match="one value"):
        probe_auroc(m, x, torch.ones(100), x, c, x, c)
    with pytest.raises(ConfigError, match="hidden"):
        probe_auroc(nn.Linear(4, 1), x, c, x, c, x, c)


def test_mlp_probe_reads_a_ring_the_logistic_probe_cannot():
    """t = 1 inside a ring of radius 1: no hyperplane separates it (logistic AUROC ~ 0.5), a
    32-unit MLP does; the same seed gives the same AUROC."""
    from faux.metrics.fairness import logistic_probe_auroc, mlp_probe_auroc

    rng = np.random.default_rng(0)
    h, hv = rng.normal(size=(2000, 4)), rng.normal(size=(1000, 4))
    t, tv = (((a[:, :2] ** 2).sum(1) < 1.0).astype(int) for a in (h, hv))
    lin = logistic_probe_auroc(h, t, hv, tv)
    mlp = mlp_probe_auroc(h, t, hv, tv, seed=3)
    assert abs(lin - 0.5) < 0.06
    assert mlp > 0.95
    assert mlp_probe_auroc(h, t, hv, tv, seed=3) == mlp
