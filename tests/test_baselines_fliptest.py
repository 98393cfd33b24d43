"""FlipTest: counterparts from the right generator, scores, transparency, quality."""

import pytest
import torch

from faux.errors import ConfigError, DataError
from faux.methods.fliptest import FlipTest
from linear_model import Linear

SHIFT = torch.tensor([2.0, -1.0, 0.0])


def _toy(n=500, seed=0):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn(n, 3, generator=g)
    x1 = torch.randn(n, 3, generator=g) + SHIFT
    return torch.cat([x0, x1]), torch.cat([torch.zeros(n), torch.ones(n)])

@pytest.fixture(scope="module")
def fitted():
    x, c = _toy()
    return x, c, FlipTest(width=32, gen_steps=120, accelerator="cpu").fit(x, c, seed=0)


def test_counterparts_use_each_rows_own_generator(fitted):
    x, c, ft = fitted
    cp = ft.counterparts(x, c)
    with torch.no_grad():
        torch.testing.assert_close(cp[c == 0], ft.gen01(x[c == 0]))
        torch.testing.assert_close(cp[c == 1], ft.gen10(x[c == 1]))
    d0, d1 = (cp - x)[c == 0].mean(0), (cp - x)[c == 1].mean(0)
    assert float(d0 @ SHIFT) / float(d0.norm() * SHIFT.norm()) > 0.9
    assert float(d1 @ -SHIFT) / float(d1.norm() * SHIFT.norm()) > 0.9
    torch.testing.assert_close(ft.transparency(x, c), x - cp)


def test_scores(fitted):
    x, c, ft = fitted
    f = Linear(torch.tensor([1.0, 0.0, 0.0]), -1.0)
    s = ft.score(f, x, c=c)
    cp = ft.counterparts(x, c)
    with torch.no_grad():
        ref = (torch.sigmoid(f(x)) - torch.sigmoid(f(cp))).abs()
    torch.testing.assert_close(s, ref)
    assert s.shape == (len(x),) and float(s.min()) >= 0 and float(s.max()) <= 1
    # a target that ignores x is perfectly fair; one along the shift is not
    assert float(ft.score(Linear(torch.zeros(3), 0.5), x, c=c).abs().max()) == 0
    assert float(s.mean()) > 0.2
    logit = FlipTest(output="logit")
    logit.__dict__.update({k: v for k, v in ft.__dict__.items() if k != "output"})
    torch.testing.assert_close(logit.score(f, x, c=c), (f(x) - f(cp)).detach().abs())
    flips = ft.flipset(f, x, c)
    assert torch.equal(flips, (f(x) > 0) != (f(cp) > 0))


def test_groups_fall_back_to_the_fitted_classifier(fitted):
    x, c, ft = fitted
    guess = ft.groups(x)
    assert float((guess == c).float().mean()) > 0.85 and ft.info["group_acc"] > 0.85
    f = Linear(torch.tensor([1.0, 0.0, 0.0]))
    torch.testing.assert_close(ft.score(f, x), ft.score(f, x, c=guess))


def test_quality(fitted):
    x, c, ft = fitted
    q = ft.quality(x, c)
    assert {"ks", "mse", "mse_real", "ks_01", "ks_10"} <= set(q)
    assert 0 <= q["ks"] <= 1 and q["ks"] == pytest.approx(0.5 * (q["ks_01"] + q["ks_10"]))
    # the generated data moved toward the target group: their means are closer to it
    x0, x1 = x[c == 0], x[c == 1]
    cp = ft.counterparts(x, c)
    assert (cp[c == 0].mean(0) - x1.mean(0)).norm() < 0.5 * (x0.mean(0) - x1.mean(0)).norm()
    assert (cp[c == 1].mean(0) - x0.mean(0)).norm() < 0.5 * (x0.mean(0) - x1.mean(0)).norm()


def test_bad_inputs(fitted):
    x, c, ft = fitted
    with pytest.raises(DataError, match="single value"):
        FlipTest(gen_steps=1).fit(x, torch.ones(len(x)))
    with pytest.raises(DataError, match="binary"):
        FlipTest(gen_steps=1).fit(x, c * 3)
    with pytest.raises(ConfigError, match="before fit"):
        FlipTest().score(Linear(torch.ones(3)), x)
    with pytest.raises(DataError, match="columns"):
        ft.score(Linear(torch.ones(2)), x[:, :2])
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(DataError, match="non-finite"):
        ft.transparency(bad, c)
    with pytest.raises(DataError, match="rows"):
        ft.score(Linear(torch.ones(3)), x, c=c[:10])
    with pytest.raises(ConfigError):
        FlipTest(n_critic=0)


def test_fit_many_gives_what_fit_gives_per_seed(fitted):
    x, c, ft = fitted
    many = FlipTest(width=32, gen_steps=120, accelerator="cpu").fit_many(x, c, [7, 0])
    f = Linear(torch.tensor([1.0, 0.0, 0.0]), -1.0)
    torch.testing.assert_close(many[1].score(f, x, c=c), ft.score(f, x, c=c), rtol=1e-4, atol=1e-4)
    assert not torch.allclose(many[0].score(f, x, c=c), ft.score(f, x, c=c))
    assert many[0].info["n_seeds_trained_together"] == 2 and many[1].group_clf is not None
