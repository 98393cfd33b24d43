"""FlipTest's WGANs: the generators learn the shift between groups; clipping; metrics."""

import numpy as np
import pytest
import torch

from faux.errors import ConfigError, DataError
from faux.models.wgan import GANSpec, gan_quality, train_fliptest_gans

SHIFT = torch.tensor([2.0, -1.0])


def _toy(n=800, seed=0):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn(n, 2, generator=g)
    x1 = torch.randn(n, 2, generator=g) * 0.7 + SHIFT
    return torch.cat([x0, x1]), torch.cat([torch.zeros(n), torch.ones(n)])


@pytest.fixture(scope="module")
def gans():
    x, c = _toy()
    spec = GANSpec(width=32, depth=2, gen_steps=150)
    return x, c, spec, train_fliptest_gans(x, c, spec, seed=0, accelerator="cpu")


def _cos(a, b):
    return float(a @ b / (a.norm() * b.norm()))


def test_generators_recover_the_direction_of_the_shift(gans):
    x, c, _, (g01, g10, info) = gans
    x0, x1 = x[c == 0], x[c == 1]
    with torch.no_grad():
        d01 = (g01(x0) - x0).mean(0)
        d10 = (g10(x1) - x1).mean(0)
    assert _cos(d01, SHIFT) > 0.9 and _cos(d10, -SHIFT) > 0.9
    assert info["n_params"] > info["n_params_generators"] > 0 and info["train_time_s"] > 0


def test_training_is_deterministic(gans):
    x, c, spec, (g01, _, _) = gans
    g01b, _, _ = train_fliptest_gans(x, c, spec, seed=0, accelerator="cpu")
    with torch.no_grad():
        torch.testing.assert_close(g01(x[:50]), g01b(x[:50]), rtol=0, atol=0)


def test_clipping_bounds_the_critic():
    from faux.models.mlp import MLP
    from faux.models.training import fit
    from faux.models.wgan import FlipGAN, SeedsPairSampler, StackedMLP

    x, c = _toy(200)
    spec = GANSpec(width=8, gen_steps=3, clip=0.003, lr=1e-2)
    m, s = x.mean(0), x.std(0)
    torch.manual_seed(0)
    module = FlipGAN(StackedMLP([MLP(2, 8, 1, d_out=2) for _ in range(2)]),
                     StackedMLP([MLP(2, 8, 1) for _ in range(2)]), spec)
    z = (x - m) / s
    fit(module, SeedsPairSampler(z[c == 0], z[c == 1], seeds=[0], batch_size=16, n_critic=5,
                                 gen_steps=3), None, max_epochs=1, accelerator="cpu")
    w = torch.cat([p.flatten() for p in module.critics.parameters()])
    assert float(w.detach().abs().max()) <= 0.003 + 1e-9
    assert float(torch.cat([p.detach().flatten() for p in module.gens.parameters()]).abs().max()) > 0.003


def test_stacked_mlp_equals_its_members():
    from faux.models.mlp import MLP
    from faux.models.wgan import StackedMLP

    torch.manual_seed(0)
    members = [MLP(5, 7, 2, d_out=3) for _ in range(3)]
    stack = StackedMLP(members)
    x = torch.randn(3, 11, 5)
    out = stack(x)
    for e, net in enumerate(members):
        torch.testing.assert_close(out[e], net(x[e]), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(stack.member(e)(x[e]), net(x[e]), rtol=1e-6, atol=1e-6)


def test_seeds_trained_together_equal_seeds_trained_alone():
    from faux.models.wgan import train_fliptest_gans_many

    x, c = _toy(300)
    spec = GANSpec(width=16, depth=2, gen_steps=40)
    together = train_fliptest_gans_many(x, c, spec, seeds=[3, 5], accelerator="cpu")
    alone = train_fliptest_gans(x, c, spec, seed=5, accelerator="cpu")
    other = train_fliptest_gans(x, c, spec, seed=3, accelerator="cpu")
    with torch.no_grad():
        for (g01, g10, info), (a01, a10, _) in zip(together, (other, alone)):
            torch.testing.assert_close(g01(x[:64]), a01(x[:64]), rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(g10(x[:64]), a10(x[:64]), rtol=1e-4, atol=1e-4)
            assert info["n_seeds_trained_together"] == 2
            assert info["n_params"] == alone[2]["n_params"]
        # and the two seeds really differ
        assert not torch.allclose(together[0][0](x[:64]), together[1][0](x[:64]))


def test_closed_form_mse_equals_per_feature_regressions():
    from sklearn.linear_model import LinearRegression, Ridge

    from faux.models.wgan import _linear_mse

    rng = np.random.default_rng(0)
    real = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6))
    gen = rng.normal(size=(200, 6)) @ rng.normal(size=(6, 6))

    def loop(model, real, gen):
        on_gen, on_real = [], []
        for j in range(real.shape[1]):
            rest = [k for k in range(real.shape[1]) if k != j]
            reg = model().fit(real[:, rest], real[:, j])
            on_gen.append(np.mean((gen[:, j] - reg.predict(gen[:, rest])) ** 2))
            on_real.append(np.mean((real[:, j] - reg.predict(real[:, rest])) ** 2))
        return np.mean(on_gen), np.mean(on_real)

    assert _linear_mse(real, gen, ridge=0.0) == pytest.approx(loop(LinearRegression, real, gen),
                                                               rel=1e-8)
    # fewer rows than features: the ridge form equals scikit-learn's Ridge(alpha = ridge * n)
    wide, wide_gen = rng.normal(size=(20, 40)), rng.normal(size=(30, 40))
    got = _linear_mse(wide, wide_gen, ridge=0.5)
    assert got == pytest.approx(loop(lambda: Ridge(alpha=0.5 * 20), wide, wide_gen), rel=1e-6)


def test_quality_metrics():
    g = torch.Generator().manual_seed(0)
    real = torch.randn(400, 3, generator=g)
    real[:, 2] = real[:, 0] + 0.1 * real[:, 2]
    m, s = torch.zeros(3), torch.ones(3)
    same = gan_quality(real, real, m, s)
    assert same["ks"] == 0 and same["mse"] == pytest.approx(same["mse_real"])
    shifted = gan_quality(real, real + 3.0, m, s)
    assert shifted["ks"] > 0.8
    # breaking the correlation between features 0 and 2 raises the regression error
    broken = real.clone()
    broken[:, 2] = broken[torch.randperm(400, generator=g), 2]
    q = gan_quality(real, broken, m, s)
    assert q["mse"] > 5 * same["mse"] and q["ks"] < 0.05
    one = gan_quality(real[:, :1], real[:, :1] + 1.0, m[:1], s[:1])
    assert one["mse"] == pytest.approx(float(np.mean(real[:, 0].numpy() ** 2)) + 1.0, rel=0.2)


def test_bad_inputs():
    x, c = _toy(50)
    with pytest.raises(ConfigError):
        GANSpec(n_critic=0)
    with pytest.raises(ConfigError):
        GANSpec(lr=0.0)
    with pytest.raises(DataError, match="single value"):
        train_fliptest_gans(x, torch.zeros(100))
    with pytest.raises(DataError, match="single binary"):
        train_fliptest_gans(x, torch.stack([c, c], 1))
    bad = x.clone()
    bad[1, 1] = float("nan")
    with pytest.raises(DataError, match="NaN"):
        train_fliptest_gans(bad, c)
