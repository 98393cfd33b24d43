"""FTA with a linear-aux fair metric: closed forms on linear targets, subspace, errors."""

import pytest
import torch

from faux.errors import ConfigError, DataError
from faux.methods.fta_lin import FTALin, sensitive_subspace
from linear_model import Linear

U = torch.tensor([1.0, 2.0, 0.0, 0.0, 0.0])


def _data(n=800, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    c = (x @ U + 0.3 * torch.randn(n, generator=g) > 0).float()
    return x, c

def test_subspace_is_the_unit_lr_direction():
    x, c = _data()
    V = sensitive_subspace(x, c)
    assert V.shape == (1, 5)
    torch.testing.assert_close(V.norm(dim=1), torch.ones(1))
    assert float(V[0] @ U / U.norm()) > 0.98   # LR recovers the leaking direction, sign fixed


def test_closed_form_on_a_linear_target():
    x, c = _data()
    a = torch.tensor([1.0, -1.0, 3.0, 0.0, 0.5])
    target = Linear(a, 0.2)
    m = FTALin(output="logit").fit(x, c)
    v = m.V[0]
    torch.testing.assert_close(m.score(target, x), (a @ v).abs().expand(len(x)))
    prob = FTALin(output="prob").fit(x, c).score(target, x)
    z = x @ a + 0.2
    torch.testing.assert_close(prob, torch.sigmoid(z) * torch.sigmoid(-z) * (a @ v).abs())
    w = FTALin(norm="weighted", p=1.0, output="logit").fit(x, c).score(target, x)
    torch.testing.assert_close(w, (v.abs() * a.abs()).sum().expand(len(x)))
    # a target orthogonal to the sensitive direction is fair under this metric
    orth = a - (a @ v) * v
    torch.testing.assert_close(m.score(Linear(orth), x), torch.zeros(len(x)), atol=1e-6, rtol=0)


def test_several_attributes_span_an_orthonormal_subspace():
    x, c = _data()
    c2 = (x[:, 3] - x[:, 4] > 0).float()
    m = FTALin(output="logit").fit(x, torch.stack([c, c2], 1))
    assert m.V.shape == (2, 5)
    torch.testing.assert_close(m.V @ m.V.T, torch.eye(2), atol=1e-5, rtol=0)
    a = torch.tensor([0.3, 0.1, -2.0, 1.0, 0.7])
    torch.testing.assert_close(m.score(Linear(a), x), (m.V @ a).norm().expand(len(x)))
    multi = sensitive_subspace(x, (x[:, 0] > 0.5).long() + (x[:, 0] > -0.5).long())
    assert multi.shape[0] in (2, 3)   # one coefficient row per class, rank-reduced


def test_bad_inputs():
    x, c = _data(100)
    with pytest.raises(DataError, match="single value"):
        FTALin().fit(x, torch.zeros(100))
    bad = x.clone()
    bad[2, 2] = float("nan")
    with pytest.raises(DataError, match="non-finite"):
        FTALin().fit(bad, c)
    with pytest.raises(DataError, match="rows"):
        FTALin().fit(x, c[:50])
    m = FTALin().fit(x, c)
    with pytest.raises(DataError, match="columns"):
        m.score(Linear(torch.ones(4)), x[:, :4])
    with pytest.raises(ConfigError, match="before fit"):
        FTALin().score(Linear(torch.ones(5)), x)
    with pytest.raises(ConfigError):
        FTALin(norm="nope")
    with pytest.raises(ConfigError):
        FTALin(output="odds")
