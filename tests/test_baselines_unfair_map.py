"""Unfair Map: the update rule, loss increase, confinement to the sensitive subspace."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from faux.errors import ConfigError, DataError
from faux.methods.unfair_map import UnfairMap
from linear_model import Linear

U = torch.tensor([1.0, 2.0, 0.0, 0.0, 0.0])


def _data(n=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    c = (x @ U + 0.3 * torch.randn(n, generator=g) > 0).float()
    y = (x[:, 0] + x[:, 2] > 0).float()
    return x, c, y

def _mlp(seed=0, scale=1.0):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    with torch.no_grad():
        net[2].weight.mul_(scale)
    return net


def test_update_rule_matches_the_closed_form_on_a_linear_target():
    x, c, y = _data(50)
    a = torch.tensor([1.0, -0.5, 2.0, 0.0, 0.3])
    f = Linear(a, 0.1)
    um = UnfairMap(steps=2, lr=0.1, reg=3.0).fit(x, c)
    P = um.V.T @ um.V

    def grad(z):  # dL/dx of the BCE of a linear logit
        return (torch.sigmoid(z @ a + 0.1) - y)[:, None] * a

    x1 = x + 0.1 * grad(x)
    x2 = x1 + 0.1 * (grad(x1) - 2 * 3.0 * (x1 - x) @ (torch.eye(5) - P))
    xt, l0, lt = um.attack(f, x, y)
    torch.testing.assert_close(xt, x2)
    torch.testing.assert_close(l0, F.binary_cross_entropy_with_logits(x @ a + 0.1, y, reduction="none"))
    torch.testing.assert_close(lt, F.binary_cross_entropy_with_logits(x2 @ a + 0.1, y, reduction="none"))
    torch.testing.assert_close(um.score(f, x, y), lt / l0)


def test_attack_raises_the_loss_and_stays_in_the_sensitive_subspace():
    x, c, y = _data()
    f = _mlp(scale=4.0)
    um = UnfairMap().fit(x, c)   # 200 steps, lr 1e-2, reg 25
    xt, l0, lt = um.attack(f, x, y)
    assert float((lt >= l0 - 1e-6).float().mean()) > 0.99 and float((lt / l0).mean()) > 1.05
    d = xt - x
    par = (d @ um.V.T) @ um.V
    orth = d - par
    assert float(orth.norm(dim=1).median()) < 0.1 * float(par.norm(dim=1).median())
    # without the regulariser the attack leaves the subspace
    free = UnfairMap(reg=0.0).fit(x, c).attack(f, x, y)[0] - x
    free_orth = free - (free @ um.V.T) @ um.V
    assert float(free_orth.norm(dim=1).median()) > 5 * float(orth.norm(dim=1).median())


def test_rows_are_independent_and_default_labels_are_the_predictions():
    x, c, y = _data(60)
    f = _mlp(1)
    um = UnfairMap(steps=20, batch_size=7).fit(x, c)
    whole = UnfairMap(steps=20).fit(x, c).score(f, x, y)
    torch.testing.assert_close(um.score(f, x, y), whole)
    with torch.no_grad():
        pred = (f(x)[:, 0] > 0).float()
    torch.testing.assert_close(um.score(f, x), um.score(f, x, pred))
    diff = UnfairMap(steps=20, score="difference").fit(x, c)
    _, l0, lt = diff.attack(f, x, y)
    torch.testing.assert_close(diff.score(f, x, y), lt - l0)


def test_bad_inputs():
    x, c, y = _data(50)
    with pytest.raises(DataError, match="single value"):
        UnfairMap().fit(x, torch.ones(50))
    bad = x.clone()
    bad[0, 0] = float("nan")
    um = UnfairMap(steps=1).fit(x, c)
    with pytest.raises(DataError, match="non-finite"):
        um.score(_mlp(), bad, y)
    with pytest.raises(DataError, match="columns"):
        um.score(_mlp(), x[:, :4], y)
    with pytest.raises(DataError, match="binary"):
        um.score(_mlp(), x, y * 2)
    with pytest.raises(ConfigError, match="before fit"):
        UnfairMap().score(_mlp(), x, y)
    with pytest.raises(ConfigError):
        UnfairMap(score="max")
    with pytest.raises(ConfigError):
        UnfairMap(lr=0)
