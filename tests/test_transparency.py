"""Transparency reports (A.10): closed forms on linear aux models, rankings, aggregation."""

import numpy as np
import pytest
import torch
from torch import nn

from faux.errors import ConfigError, DataError, FauxError
from faux.methods.transparency import aggregate_groups, faux_report, fliptest_report

D = 5


def linear(v, b=0.0):
    m = nn.Linear(len(v), 1).double()
    with torch.no_grad():
        m.weight.copy_(torch.as_tensor(v, dtype=torch.float64).view(1, -1))
        m.bias.fill_(b)
    return m


@pytest.fixture
def xv():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, D, generator=g, dtype=torch.float64) + 0.5
    v = torch.tensor([2.0, -1.0, 0.0, 0.5, -3.0], dtype=torch.float64)
    return x, v


def test_faux_report_closed_forms(xv):
    x, v = xv
    aux = linear(v, 0.2)
    torch.testing.assert_close(faux_report(aux, x), v.abs(), rtol=1e-12, atol=1e-14)
    s = torch.sigmoid(x @ v + 0.2)
    torch.testing.assert_close(faux_report(aux, x, output="prob"), (s * (1 - s)).mean() * v.abs())
    torch.testing.assert_close(faux_report(aux, x, "faux_ng"), v.abs() / v.norm())
    torch.testing.assert_close(faux_report(aux, x, "faux_ig", ig_steps=5),
                               (x.mean(0) * v).abs(), rtol=1e-12, atol=1e-14)
    # mean baseline: attributions (x - mean(x)) * v average to zero
    assert faux_report(aux, x, "faux_ig", ig_baseline="mean").abs().max() < 1e-12


def test_faux_report_ranks_the_features_the_aux_reads():
    torch.manual_seed(1)
    aux = nn.Sequential(nn.Linear(D, 16), nn.Tanh(), nn.Linear(16, 1)).double()
    with torch.no_grad():
        aux[0].weight[:, 1:] = 0.0
        aux[0].weight[:, 3] = 0.1 * aux[0].weight[:, 0]  # reads 0 strongly, 3 weakly
    x = torch.randn(200, D, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    for method in ("faux", "faux_ng", "faux_ig"):
        r = faux_report(aux, x, method)
        assert r.shape == (D,)
        assert r[0] > r[3] > 0, method
        assert r[[1, 2, 4]].abs().max() == 0, method


def test_two_output_aux_gives_one_row_per_output(xv):
    x, v = xv
    aux = nn.Linear(D, 2).double()
    with torch.no_grad():
        aux.weight.copy_(torch.stack([v, torch.arange(D, dtype=torch.float64)]))
    r = faux_report(aux, x)
    assert r.shape == (2, D)
    torch.testing.assert_close(r[1], torch.arange(D, dtype=torch.float64))


def test_fliptest_report():
    x0 = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    gx0 = torch.tensor([[0.0, 3.0], [1.0, 6.0]])
    torch.testing.assert_close(fliptest_report(x0, gx0), torch.tensor([1.5, 1.5]))
    torch.testing.assert_close(fliptest_report(x0.numpy(), gx0.numpy()), torch.tensor([1.5, 1.5]))
    with pytest.raises(DataError, match="must both have shape"):
        fliptest_report(x0, gx0[:1])


def test_aggregate_groups():
    scores = torch.tensor([1.0, 3.0, 0.5, 2.0, 4.0])
    groups = ["age", "job", "job", "hours", "job"]
    got = aggregate_groups(scores, groups)
    assert list(got) == ["age", "job", "hours"]
    assert got == pytest.approx({"age": 1.0, "job": 2.5, "hours": 2.0})
    assert aggregate_groups(np.array([1.0, 2.0]), ("a", "b")) == {"a": 1.0, "b": 2.0}
    with pytest.raises(DataError, match="one original-feature name per column"):
        aggregate_groups(scores, groups[:4])


def test_report_errors(xv):
    x, v = xv
    with pytest.raises(ConfigError, match="unknown report method 'fta'"):
        faux_report(linear(v), x, "fta")
    with pytest.raises(FauxError, match="zero everywhere"):
        faux_report(linear(torch.zeros(D)), x)
    with pytest.raises(FauxError, match="zero everywhere"):
        faux_report(linear(torch.zeros(D)), x, "faux_ig")
    with pytest.raises(FauxError, match="x has 4 columns"):
        faux_report(nn.Sequential(linear(v)), x[:, :4])
