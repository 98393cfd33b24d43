import gzip
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from faux.errors import ConfigError, DataError
from faux.synth.generator_settings import generator_config
from faux.synth.sampler import SyntheticGenerator

ROOT = Path(__file__).resolve().parents[1]
TINY = {"hidden": 24, "depth": 1, "latent_dim": 3, "epochs": 30, "max_steps": 150,
        "patience": None, "batch_size": 128}
CFGS = {"magic": TINY, "backache": TINY}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("synth-cache")


@pytest.fixture(scope="module")
def gen(cache_dir):
    return SyntheticGenerator("magic", "backache", generator_cfgs=CFGS, cache_dir=cache_dir,
                              seed=0)


@pytest.mark.parametrize("fusion,dim", [("outer", 360), ("concat", 38)])
def test_shapes_types_and_projections(gen, fusion, dim):
    s = gen.sample(300, bias=0.5, fusion=fusion, seed=3)
    assert s.x.shape == s.x_cf.shape == s.dx_dc.shape == (300, dim)
    assert s.x.dtype == s.x_cf.dtype == s.dx_dc.dtype == torch.float32
    assert s.y.dtype == s.c.dtype == torch.int64
    assert set(s.y.tolist()) <= {0, 1} and set(s.c.tolist()) <= {0, 1}
    assert s.x_hat.shape == (300, 18) and s.x_tilde.shape == (300, 20)
    torch.testing.assert_close(s.x @ s.w_hat.T, s.x_hat, atol=2e-6, rtol=0)
    torch.testing.assert_close(s.x @ s.w_tilde.T, s.x_tilde, atol=2e-6, rtol=0)
    # the counterfactual keeps the y side and changes the c side
    torch.testing.assert_close(s.x_cf @ s.w_hat.T, s.x_hat, atol=2e-6, rtol=0)
    torch.testing.assert_close(s.x_cf @ s.w_tilde.T, s.x_tilde_cf, atol=2e-6, rtol=0)
    total = 60.0 if fusion == "outer" else 16.0  # 6 x 10 features, or 6 + 10
    torch.testing.assert_close(s.x.sum(1), torch.full((300,), total), atol=1e-4, rtol=0)


def test_deterministic_in_seed(gen):
    a = gen.sample(50, 0.5, "concat", seed=7)
    b = gen.sample(50, 0.5, "concat", seed=7)
    c = gen.sample(50, 0.5, "concat", seed=8)
    assert torch.equal(a.x, b.x) and torch.equal(a.x_cf, b.x_cf) and torch.equal(a.c, b.c)
    assert not torch.equal(a.x, c.x)


def test_counterfactual_is_the_same_individual_with_c_flipped(gen):
    s = gen.sample(200, 1.0, "outer", seed=4)
    f = gen.fused_of_c(200, 1.0, "outer", seed=4)
    with torch.no_grad():
        torch.testing.assert_close(f(s.c.float()), s.x)
        torch.testing.assert_close(f(1.0 - s.c.float()), s.x_cf)


@pytest.mark.parametrize("bias", [0.0, 0.5, 1.0])
def test_sampled_joint_matches_p_bias(gen, bias):
    s = gen.sample(20_000, bias, "concat", seed=11)
    emp = np.zeros((2, 2))
    np.add.at(emp, (s.c.numpy(), s.y.numpy()), 1)
    emp /= emp.sum()
    P = gen.joint(bias)
    assert np.abs(emp - P).max() < 0.02
    assert P[1].sum() == pytest.approx(gen.p_c1) and P[:, 1].sum() == pytest.approx(gen.p_y1)


def test_marginals_come_from_the_two_datasets(gen):
    assert gen.p_y1 == pytest.approx(25 / 180)          # backache label frequency
    assert gen.p_c1 == pytest.approx(0.35163, abs=1e-4)  # magic label frequency
    mi = [gen.mutual_information(b) for b in (0.0, 0.5, 1.0)]
    assert mi[0] == pytest.approx(0, abs=1e-12) and mi[0] < mi[1] < mi[2]


@pytest.mark.parametrize("fusion", ["outer", "concat"])
@pytest.mark.parametrize("at", ["mid", "observed"])
def test_dx_dc_matches_central_difference(gen, fusion, at):
    s = gen.sample(64, 0.5, fusion, seed=5, dxdc_at=at)
    f = gen.fused_of_c(64, 0.5, fusion, seed=5)
    c0 = torch.full((64,), 0.5) if at == "mid" else s.c.float()
    h = 1e-2
    with torch.no_grad():
        fd = (f(c0 + h) - f(c0 - h)) / (2 * h)
    scale = s.dx_dc.abs().max()
    assert scale > 1e-3  # the c side does depend on c
    assert (fd - s.dx_dc).abs().max() < 1e-2 * scale
    assert s.dxdc_at == at
    if fusion == "concat":  # the y side does not move with c
        assert s.dx_dc[:, :18].abs().max() == 0


def test_second_build_trains_nothing(gen, cache_dir, caplog):
    with caplog.at_level(logging.INFO, logger="faux.cache"):
        again = SyntheticGenerator("magic", "backache", generator_cfgs=CFGS, cache_dir=cache_dir,
                                   seed=0)
    assert again.cache.builds == 0 and again.cache.hits == 2
    assert sum("cache hit" in r.getMessage() for r in caplog.records) == 2
    a, b = gen.sample(20, 0.5, "outer", seed=1), again.sample(20, 0.5, "outer", seed=1)
    assert torch.equal(a.x, b.x)


def test_corrupt_generator_entry_is_rebuilt(tmp_path, caplog):
    cfgs = {"backache": TINY}
    g1 = SyntheticGenerator("backache", "backache", generator_cfgs=cfgs, cache_dir=tmp_path)
    assert g1.cache.builds == 1  # one dataset used on both sides is trained once
    (entry,) = (tmp_path / "generator").glob("*.bin")
    entry.write_bytes(entry.read_bytes()[:-100])
    with caplog.at_level(logging.WARNING, logger="faux.cache"):
        g2 = SyntheticGenerator("backache", "backache", generator_cfgs=cfgs, cache_dir=tmp_path)
    assert g2.cache.builds == 1 and any("corrupt" in r.getMessage() for r in caplog.records)
    assert torch.equal(g1.sample(10, 0.5, "concat", seed=0).x,
                       g2.sample(10, 0.5, "concat", seed=0).x)  # training is deterministic


def test_table2_values():
    t2 = {"backache": (3, 186, 6), "credit_g": (7, 874, 3), "australian": (5, 977, 5),
          "wdbc": (4, 367, 1), "magic": (2, 624, 2)}
    for name, (k, h, d) in t2.items():
        cfg = generator_config(name)
        assert (cfg["n_components"], cfg["hidden"], cfg["depth"]) == (k, h, d)


def test_bad_inputs(gen, tmp_path):
    with pytest.raises(ConfigError, match="bias must be in"):
        gen.sample(10, 1.5, "outer")
    with pytest.raises(ConfigError, match="unknown fusion"):
        gen.sample(10, 0.5, "sum")
    with pytest.raises(ConfigError, match="dxdc_at"):
        gen.sample(10, 0.5, "outer", dxdc_at="end")
    with pytest.raises(ConfigError, match="n must be"):
        gen.sample(0, 0.5, "outer")
    with pytest.raises(ConfigError, match="unknown generator option"):
        generator_config("magic", {"hiden": 3})
    with pytest.raises(ConfigError, match="not in the pair"):
        SyntheticGenerator("magic", "backache", generator_cfgs={"wdbc": {}}, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="decoding"):
        SyntheticGenerator("magic", "backache", decoding="argmax", cache_dir=tmp_path)
    with pytest.raises(DataError, match="unknown dataset|not found|could not be downloaded"):
        SyntheticGenerator("magic", "no/such", generator_cfgs={"magic": TINY},
                           cache_dir=tmp_path)


def test_non_binary_label_is_rejected(tmp_path):
    root = tmp_path / "data"
    (root / "pmlb" / "three").mkdir(parents=True)
    rows = ["a\tb\ttarget"] + [f"{i * 0.5}\t{i * 1.5}\t{i % 3}" for i in range(30)]
    with gzip.open(root / "pmlb" / "three" / "three.tsv.gz", "wt") as f:
        f.write("\n".join(rows) + "\n")
    with pytest.raises(DataError, match="binary label"):
        SyntheticGenerator("three", "backache", generator_cfgs={"three": TINY},
                           cache_dir=tmp_path, root=root)
