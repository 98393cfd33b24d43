"""MLP shapes, projection, training recipe, determinism, architecture draws, configs."""

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from faux.errors import ConfigError, DataError
from faux.models.mlp import MLP, MLPSpec, random_architecture, train_mlp

CONF = Path(__file__).resolve().parents[1] / "conf" / "model"


def test_shapes():
    x = torch.randn(7, 5)
    assert MLP(5, 16, 2)(x).shape == (7,)
    assert MLP(5, 16, 3, d_out=4)(x).shape == (7, 4)
    assert MLP(5, 16, 2).hidden(x).shape == (7, 16)
    lin = MLP(5, 16, 0)  # depth 0: logistic regression
    assert lin(x).shape == (7,) and sum(p.numel() for p in lin.parameters()) == 6
    assert sum(p.numel() for p in MLP(5, 16, 2).parameters()) == 5 * 16 + 16 + 16 * 16 + 16 + 17
    assert len([m for m in MLP(5, 16, 3).modules() if isinstance(m, torch.nn.ReLU)]) == 3


def test_projection_is_a_fixed_linear_map_before_the_first_layer():
    W = torch.randn(3, 5)
    x = torch.randn(11, 5)
    torch.manual_seed(0)
    proj = MLP(5, 8, 2, projection=W)
    torch.manual_seed(0)
    plain = MLP(3, 8, 2)
    torch.testing.assert_close(proj(x), plain(x @ W.T))
    assert "projection" in proj.state_dict()
    assert all(p.shape != W.shape for p in proj.parameters())  # a buffer, not trained
    with pytest.raises(ConfigError, match="projection"):
        MLP(5, 8, 2, projection=torch.randn(3, 4))


def test_bad_widths_and_sizes():
    with pytest.raises(DataError, match=r"\(n, 5\)"):
        MLP(5, 8, 2)(torch.randn(3, 4))
    with pytest.raises(ConfigError):
        MLP(5, 8, -1)
    with pytest.raises(ConfigError):
        MLP(0, 8, 1)


def _toy(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return x, (x[:, 0] + 0.5 * x[:, 2] > 0).float()


def test_train_mlp_learns_a_separable_toy_and_is_deterministic():
    x, t = _toy(600, 0)
    xv, tv = _toy(300, 1)
    kw = dict(width=16, depth=2, max_epochs=15, patience=5, seed=0, accelerator="cpu")
    a, info = train_mlp(x, t, xv, tv, **kw)
    b, _ = train_mlp(x, t, xv, tv, **kw)
    c, _ = train_mlp(x, t, xv, tv, **{**kw, "seed": 1})
    assert info["accuracy"] > 0.9
    assert info["n_params"] == 4 * 16 + 16 + 16 * 16 + 16 + 17
    assert info["train_time_s"] > 0 and 1 <= info["epochs"] <= 15
    for p, q in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(p, q)
    assert not torch.equal(a.head.weight, c.head.weight)
    assert not a.training


def test_train_mlp_multi_output_and_bad_inputs():
    x, t = _toy(200, 0)
    tt = torch.stack([t, 1 - t], 1)
    net, info = train_mlp(x, tt, max_epochs=2, width=8, depth=1, accelerator="cpu")
    assert net(x).shape == (200, 2) and 0 <= info["accuracy"] <= 1
    bad = x.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(DataError, match="NaN"):
        train_mlp(bad, t, max_epochs=1)
    with pytest.raises(DataError, match="single value"):
        train_mlp(x, torch.zeros(200), max_epochs=1)
    with pytest.raises(DataError, match="features"):
        train_mlp(x, t, x[:, :3], t, max_epochs=1)


def test_random_architecture():
    draws = {random_architecture(s) for s in range(40)}
    assert all(8 <= w <= 128 and 1 <= d <= 4 for w, d in draws)
    assert len(draws) > 20 and random_architecture(3) == random_architecture(3)
    assert {d for _, d in draws} == {1, 2, 3, 4}
    with pytest.raises(ConfigError):
        random_architecture(0, width_range=(10, 5))


def test_spec_trains_with_its_hyper_parameters():
    x, t = _toy(200, 0)
    net, info = MLPSpec(width=8, depth=1, max_epochs=2).train(x, t, seed=0, accelerator="cpu")
    assert net.width == 8 and net.depth == 1 and info["epochs"] == 2


@pytest.mark.parametrize("path", sorted(CONF.glob("*/*.yaml")), ids=lambda p: p.parent.name + "/" + p.stem)
def test_each_model_config_instantiates_alone(path):
    # model configs take their epoch caps from the profile: give them one
    profile = {"max_epochs": 7, "patience": 3, "gan_steps": 11}
    cfg = OmegaConf.create({"profile": profile, "m": OmegaConf.load(path)}).m
    obj = instantiate(cfg)
    fields = {k for k in cfg if k != "_target_"}
    assert all(getattr(obj, k) == cfg[k] for k in fields)
