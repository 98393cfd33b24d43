"""Integrated gradients: completeness, closed forms, equality with captum, chunking, errors."""

import numpy as np
import pytest
import torch
from captum.attr import IntegratedGradients
from torch import nn

import faux
from faux.errors import ConfigError, DataError, FauxError
from faux.methods.ig import integrated_gradients, quadrature

D = 5


def mlp(k=1, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(D, 16), nn.Tanh(), nn.Linear(16, 16), nn.Softplus(),
                         nn.Linear(16, k)).double()


def data(n=12, seed=1):
    return torch.randn(n, D, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def f(model, z, output):
    with torch.no_grad():
        out = model(z)
    return torch.sigmoid(out) if output == "prob" else out


@pytest.mark.parametrize("output", ["logit", "prob"])
@pytest.mark.parametrize("baseline", ["zeros", "mean", "row"])
def test_completeness(output, baseline):
    model, x = mlp(seed=2), data()
    if baseline == "row":
        baseline = data(seed=3)  # one baseline per row
        b = baseline
    else:
        b = torch.zeros(1, D, dtype=torch.float64) if baseline == "zeros" else x.mean(0,
                                                                                     keepdim=True)
    attr = integrated_gradients(model, x, baseline=baseline, steps=64, output=output)
    assert attr.shape == x.shape and attr.dtype == torch.float64
    gap = (f(model, x, output) - f(model, b.expand_as(x), output)).squeeze(1)
    err = (attr.sum(1) - gap).abs()
    assert bool((err <= 0.01 * gap.abs() + 1e-9).all()), (err / gap.abs()).max()


def test_quadratic_closed_form_exact_for_every_rule():
    # f(x) = (w.x)^2: the path gradient is linear in alpha, so every rule is exact and
    # IG(x; 0) = x * w * (w.x)
    w = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(4))

    class Quad(nn.Module):
        def forward(self, z):
            return (z @ w) ** 2

    x = data()
    want = x * w * (x @ w)[:, None]
    for rule in ("midpoint", "trapezoid", "gausslegendre"):
        got = integrated_gradients(Quad(), x, steps=3, method=rule)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_quadrature_rules_integrate_polynomials():
    for rule, steps, degree in (("midpoint", 4, 1), ("trapezoid", 4, 1),
                                ("gausslegendre", 4, 7)):
        a, w = quadrature(rule, steps)
        assert a.min() >= 0 and a.max() <= 1
        for p in range(degree + 1):
            assert abs((w * a**p).sum() - 1 / (p + 1)) < 1e-12, (rule, p)
        # one degree higher is not exact for the Riemann rules (the test can fail)
        if rule != "gausslegendre":
            assert abs((w * a ** (degree + 1)).sum() - 1 / (degree + 2)) > 1e-4


@pytest.mark.parametrize("output", ["logit", "prob"])
@pytest.mark.parametrize("rule,captum_rule", [("midpoint", "riemann_middle"),
                                              ("gausslegendre", "gausslegendre")])
def test_equals_captum(output, rule, captum_rule):
    model, x = mlp(k=2, seed=5), data(seed=6)
    fwd = (lambda z: torch.sigmoid(model(z))) if output == "prob" else model
    ig = IntegratedGradients(fwd)
    base = x.mean(0, keepdim=True).expand_as(x).contiguous()
    ours = integrated_gradients(model, x, baseline="mean", steps=64, output=output, method=rule)
    assert ours.shape == (len(x), 2, D)
    for j in range(2):
        ref = ig.attribute(x, baselines=base, target=j, n_steps=64, method=captum_rule)
        torch.testing.assert_close(ours[:, j], ref, rtol=1e-5, atol=1e-10)


def test_chunking_invariant_and_many_steps():
    model, x = mlp(seed=7), data(n=23, seed=8)
    whole = integrated_gradients(model, x, steps=50)
    chunked = integrated_gradients(model, x, steps=50, batch_size=4)
    torch.testing.assert_close(chunked, whole, rtol=1e-12, atol=1e-14)
    # more steps than 2**18 / rows forces one row per chunk; still equal
    big = integrated_gradients(model, x[:3], steps=2**18 // 2 + 1, batch_size=2)
    torch.testing.assert_close(big, integrated_gradients(model, x[:3], steps=2**18 // 2 + 1),
                               rtol=1e-10, atol=1e-12)


def test_faux_ig_uses_ig_of_both_models():
    tar, aux, x = mlp(seed=9), mlp(seed=10), data(seed=11)
    it = integrated_gradients(tar, x, output="prob", steps=20)
    ia = integrated_gradients(aux, x, output="logit", steps=20)
    want = (it * ia).sum(1).abs() / (ia * ia).sum(1)
    got = faux.score("faux_ig", tar, aux, x, ig_steps=20)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=0)
    # a different baseline changes the scores
    other = faux.score("faux_ig", tar, aux, x, ig_steps=20, ig_baseline="mean")
    assert (other - got).abs().max() > 1e-4
    vec = faux.score("faux_ig", tar, aux, x, ig_steps=20, ig_baseline=x.mean(0))
    torch.testing.assert_close(vec, other)


def test_ig_errors():
    model, x = mlp(seed=12), data()
    with pytest.raises(ConfigError, match="ig_method"):
        integrated_gradients(model, x, method="left")
    with pytest.raises(ConfigError, match="ig_steps must be an integer >= 2"):
        integrated_gradients(model, x, steps=1, method="trapezoid")
    with pytest.raises(ConfigError, match="ig_steps"):
        integrated_gradients(model, x, steps=2.5)
    with pytest.raises(DataError, match="ig_baseline has shape"):
        integrated_gradients(model, x, baseline=torch.zeros(3, D, dtype=torch.float64))
    with pytest.raises(DataError, match="non-finite"):
        integrated_gradients(model, x, baseline=torch.full((D,), np.nan, dtype=torch.float64))

    class Const(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(D, 1).double()

        def forward(self, z):
            return 0.0 * self.lin(z) + 2.0

    with pytest.raises(FauxError, match="aux model's gradient is zero everywhere"):
        faux.score("faux_ig", model, Const(), x)

    class BadGrad(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(D, 1).double()

        def forward(self, z):
            return self.lin(z) + z[:, :1].abs().sqrt()  # infinite slope where z_0 = 0

    xz = x.clone()
    xz[[0, 2], 0] = 0.0  # the whole path of these rows has z_0 = 0
    with pytest.raises(FauxError, match="non-finite values in aux gradients at 2 rows"):
        faux.score("faux_ig", model, BadGrad(), xz)

    class Inf(BadGrad):
        def forward(self, z):
            return self.lin(z) / (z[:, :1] > 0).double()

    n_bad = int((x[:, 0] <= 0).sum())  # their whole path has z_0 <= 0
    with pytest.raises(FauxError, match=f"non-finite values in target outputs at {n_bad} rows"):
        faux.score("faux_ig", Inf(), model, x)
    # a baseline equal to x gives zero attributions but is not a constant aux: scores are 0
    s = faux.score("faux_ig", model, mlp(seed=13), x, ig_baseline=x)
    assert bool((s == 0).all())


def test_wide_inputs_chunk_by_floats(monkeypatch):
    import faux.methods.ig as ig_mod

    model, x = mlp(seed=7), data(n=23, seed=8)
    whole = integrated_gradients(model, x, steps=10)
    seen = []
    real_forward = model.forward

    def spy(z):
        seen.append(z.shape[0])
        return real_forward(z)

    monkeypatch.setattr(model, "forward", spy)
    monkeypatch.setattr(ig_mod, "FLOATS_PER_CHUNK", 10 * x.shape[1] * 5)   # 5 rows per chunk
    chunked = integrated_gradients(model, x, steps=10)
    torch.testing.assert_close(chunked, whole, rtol=1e-12, atol=1e-14)
    assert max(seen) <= 10 * 5 and len(seen) >= 5
