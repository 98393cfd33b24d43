"""The two remaining readings of A.7.6: the counterfactual by abduction (the CVAE encoder's
posterior mean of the observed c-side features, decoded with 1 - c) and the bias-0
reference pooled over targets of A.7.5's random widths and depths."""

import dataclasses

import pytest
import torch

from faux.errors import ConfigError
from faux.harness.cache import Cache
from faux.models.mlp import MLPSpec
from faux.studies.column import (
    POOL_DEPTHS,
    POOL_SIZE,
    POOL_WIDTHS,
    Column,
    pool_specs,
    prepare_column,
)
from faux.studies.column import (
    test_x_of_c as x_of_c_of,
)
from faux.synth import abduction
from faux.synth.ground_truth import ifs, ifs_threshold

TINY = {"epochs": 2, "max_steps": 20, "hidden": 16, "depth": 1}
SPEC = MLPSpec(width=4, depth=1, max_epochs=1, batch_size=32)
SIZES = {"n_train": 60, "n_val": 20, "n_test": 40}


def _column(tmp_path, decoding="softmax", **kw):
    return prepare_column(Column("backache", "backache", 1.0, "concat"), sizes=SIZES,
                          target_spec=SPEC, gen_cfgs={"backache": TINY},
                          gen_opts={"decoding": decoding, "tau": 0.3}, cache=Cache(tmp_path),
                          accelerator="cpu", seed=2, output="logit", **kw)


@pytest.mark.parametrize("decoding", ["softmax", "gumbel"])
def test_abduction_with_the_true_latent_is_algorithm_2s_counterfactual(tmp_path, monkeypatch,
                                                                       decoding):
    """Give the abduction the latent that made x: its counterfactual is the shared one, bit
    for bit (same noise, same fusion, c flipped)."""
    pc = _column(tmp_path, decoding)
    gen, seed = pc.generator, int(pc.key["data_seed"]) + 3
    true_z = gen._draw(len(pc.test), 1.0, seed)["z_tilde"]
    monkeypatch.setattr(abduction, "abduced_latent", lambda cvae, x, c: true_z)
    cf, cf_tilde, f = abduction.abduced_counterfactual(gen, len(pc.test), 1.0, "concat", seed)
    assert torch.equal(cf, pc.test.x_cf)
    assert torch.equal(cf_tilde, pc.test.x_tilde_cf)
    c = pc.test.c.float()
    assert torch.equal(f(c), pc.test.x)


def test_the_abduction_column_uses_the_encoders_mean(tmp_path):
    shared = _column(tmp_path)
    abd = _column(tmp_path, counterfactual="abduction")
    assert torch.equal(abd.test.x, shared.test.x)              # the same individuals
    assert not torch.equal(abd.test.x_cf, shared.test.x_cf)    # other counterfactuals
    c = abd.test.c.float()
    mu, _ = abd.generator.gen_c.cvae.encode(abd.test.x_tilde, c)
    f = x_of_c_of(abd)
    assert torch.allclose(f(1.0 - c), abd.test.x_cf)           # x' = F(x^, decode(mu, 1 - c))
    assert torch.allclose(f(c)[:, : abd.test.x_hat.shape[1]], abd.test.x_hat)
    assert torch.allclose(abd.ifs_test, ifs(abd.target, abd.test.x, abd.test.x_cf, "logit"))


def test_pool_specs_draw_in_the_papers_ranges_and_repeat():
    base = MLPSpec(width=64, depth=2)
    a, b = pool_specs(base, 3), pool_specs(base, 3)
    assert a == b and len(a) == POOL_SIZE
    assert all(POOL_WIDTHS[0] <= s.width <= POOL_WIDTHS[1] for s in a)
    assert all(POOL_DEPTHS[0] <= s.depth <= POOL_DEPTHS[1] for s in a)
    assert len({(s.width, s.depth) for s in a}) > 1
    assert pool_specs(base, 4) != a
    assert all(dataclasses.replace(s, width=64, depth=2) == base for s in a)


def test_the_pooled_reference_is_the_pool_of_its_targets_ifs(tmp_path):
    own = _column(tmp_path)
    pooled = _column(tmp_path, reference="pooled")
    n = SIZES["n_test"]
    assert own.ifs_reference.shape == (n,)
    assert pooled.ifs_reference.shape == (POOL_SIZE * n,)
    assert pooled.threshold == pytest.approx(ifs_threshold(pooled.ifs_reference, 3.0))
    assert torch.equal(pooled.ifs_test, own.ifs_test)          # the column itself is unchanged


def test_bad_values_are_one_config_error(tmp_path):
    with pytest.raises(ConfigError, match="counterfactual must be one of shared, abduction"):
        _column(tmp_path, counterfactual="dream")
    with pytest.raises(ConfigError, match="reference must be one of own, pooled"):
        _column(tmp_path, reference="everyone")
