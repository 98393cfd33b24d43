"""How c enters the c-side CVAE's decoder (``c_path``): as an input beside z, or as a learned
bias ``c * b`` on the pre-softmax logits. Under the logit bias the logits are affine in c, so
a target linear in those logits is linear along c -> x(c) and LIC-UB's one-point derivative
equals the label's secant; the default's cache keys are those of before."""

import numpy as np
import pytest
import torch
from torch import nn

from faux.errors import ConfigError
from faux.harness.cache import key_of
from faux.methods.lic_ub import lic_ub, lic_ub_composite
from faux.synth.cvae import CVAE, cvae_from_state, cvae_state, train_cvae
from faux.synth.dataset_generator import generator_cache_key
from faux.synth.encoding import block_bounds
from faux.synth.generator_settings import C_PATHS, generator_config
from faux.synth.sampler import SyntheticGenerator

TINY = {"hidden": 24, "depth": 1, "latent_dim": 3, "epochs": 30, "max_steps": 150,
        "patience": None, "batch_size": 64}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("c-path-cache")


def _gen(cache_dir, c_path, fusion_dxdc="observed"):
    return SyntheticGenerator("backache", "backache", {"backache": TINY}, cache_dir=cache_dir,
                              seed=0, decoding="softmax", dxdc_at=fusion_dxdc, c_path=c_path)


@pytest.fixture(scope="module")
def gen_bias(cache_dir):
    return _gen(cache_dir, "logit_bias")


@pytest.fixture(scope="module")
def gen_input(cache_dir):
    return _gen(cache_dir, "decoder_input")


class LogitLinear(nn.Module):
    """A target linear in the c-side decoder's logits: ``sum_j w_j log x~_j`` with ``w``
    summing to zero within each feature block, so each block's log-sum-exp cancels and the
    output is ``w . logits``. ``x~`` is read off the fused x by the projection ``W~``."""

    def __init__(self, w_tilde: torch.Tensor, block_sizes, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(w_tilde.shape[0], generator=g)
        for a, b in block_bounds(block_sizes):
            w[a:b] -= w[a:b].mean()
        self.register_buffer("w", w)
        self.register_buffer("w_tilde", w_tilde)

    def forward(self, x):
        return torch.log(x @ self.w_tilde.T) @ self.w


# ------------------------------------------------------------------ cache keys
# generator_cache_key hashes under the code before c_path existed, with the code version
# and the CPU kernel set (both machine/edit dependent by design) held fixed
KEYS_BEFORE = {("magic", None, 0): "456773685741daa015926529d1a76428",
               ("australian", None, 0): "0adb8d52b713670a27d17dde8b971170",
               ("backache", None, 0): "c319a24958bf8739f2e616992dc2e07d",
               ("credit_g", None, 0): "c83d00e5da9cf41611bdfa4a0d3dc25b",
               ("magic", (("beta", 1.0), ("latent_dim", 16)), 3):
                   "38b261aa67ef6688e3aaa1b00118774f"}


def _key(name, over, seed):
    k = generator_cache_key(name, generator_config(name, over), seed=seed)
    return key_of({**k, "code": "CODE", "cpu": "CPU"})


@pytest.mark.parametrize("name,over,seed", list(KEYS_BEFORE))
def test_default_c_path_keeps_the_generator_keys_of_before(name, over, seed):
    over = dict(over or {})
    assert _key(name, over, seed) == KEYS_BEFORE[(name, tuple(over.items()) or None, seed)]
    # naming the default explicitly is the same generator, the same key
    assert _key(name, {**over, "c_path": "decoder_input"}, seed) == _key(name, over, seed)
    assert "c_path" not in generator_config(name, {**over, "c_path": "decoder_input"})


def test_logit_bias_makes_its_own_key():
    cfg = generator_config("magic", {"c_path": "logit_bias"})
    assert cfg["c_path"] == "logit_bias"
    assert _key("magic", {"c_path": "logit_bias"}, 0) != KEYS_BEFORE[("magic", None, 0)]


def test_the_reading_names_c_path_only_off_its_default():
    from faux.studies.reading_check import AXES
    from faux.studies.readings import generator_settings

    assert AXES["c_path"] == C_PATHS
    base = {"beta": 0.2, "latent_dim": "table2", "decoding": "softmax", "tau": 0.3,
            "lic_ub_at": "mid", "c_path": "decoder_input"}
    over, opts = generator_settings(base, ("magic", "backache"))
    assert over == {} and opts == {"decoding": "softmax", "tau": 0.3, "dxdc_at": "mid"}
    over, opts = generator_settings({**base, "c_path": "logit_bias"}, ("magic", "backache"))
    assert over == {} and opts["c_path"] == "logit_bias"


def test_bad_c_path_is_one_clear_error():
    with pytest.raises(ConfigError, match="c_path must be one of decoder_input, logit_bias"):
        CVAE((2, 3), hidden=4, depth=1, latent_dim=2, c_path="bias")
    with pytest.raises(ConfigError, match="c_path for 'magic' must be one of"):
        generator_config("magic", {"c_path": "input"})


# ------------------------------------------------------------------ the CVAE
def test_logit_bias_logits_are_affine_in_c_and_the_decoder_never_sees_c():
    torch.manual_seed(0)
    m = CVAE((3, 2, 4), hidden=16, depth=2, latent_dim=3, c_path="logit_bias")
    assert m.decoder[0].in_features == 3                      # z only
    with torch.no_grad():
        m.c_bias.copy_(torch.randn(9))
    z = torch.randn(7, 3)
    l0, l1, lc = (m.decode_logits(z, torch.full((7,), c)) for c in (0.0, 1.0, 0.3))
    torch.testing.assert_close(lc, l0 + 0.3 * (l1 - l0), atol=1e-6, rtol=0)
    torch.testing.assert_close(l1 - l0, m.c_bias.expand(7, 9), atol=1e-6, rtol=0)
    # the default decoder reads c as an input: its logits are not affine in c
    torch.manual_seed(0)
    d = CVAE((3, 2, 4), hidden=16, depth=2, latent_dim=3)
    assert d.decoder[0].in_features == 4
    k0, k1, kc = (d.decode_logits(z, torch.full((7,), c)) for c in (0.0, 1.0, 0.3))
    assert (kc - (k0 + 0.3 * (k1 - k0))).abs().max() > 1e-4


def test_logit_bias_trains_on_tiny_data_and_round_trips():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    x = np.zeros((600, 5), np.float32)
    x[np.arange(600), np.where(y == 1, 1, 0)] = 1.0                     # block 1: mode = y
    x[np.arange(600), 2 + rng.integers(0, 3, 600)] = 1.0               # block 2: noise
    m, info = train_cvae(x, y, (2, 3), hidden=32, depth=1, latent_dim=2, beta=0.5, epochs=40,
                         patience=None, seed=0, c_path="logit_bias")
    assert m.c_path == "logit_bias" and m.hparams.c_path == "logit_bias"
    # the learned bias moves block 1 towards mode 1 as c goes 0 -> 1 (360 steps: further
    # than lr x steps = 0.36, so b learns at its own rate); block 2 barely
    b = m.c_bias.detach()
    assert b[1] - b[0] > 2.0 and (b[2:].max() - b[2:].min()) < 0.5
    z = torch.zeros(1, 2)
    with torch.no_grad():
        p0, p1 = m.decode(z, torch.zeros(1)), m.decode(z, torch.ones(1))
    assert p0[0, 0] > 0.8 and p1[0, 1] > 0.8
    state = cvae_state(m)
    assert state["hparams"]["c_path"] == "logit_bias"
    again = cvae_from_state(state)
    zz = torch.randn(10, 2)
    with torch.no_grad():
        torch.testing.assert_close(again.decode(zz, torch.full((10,), 0.5)),
                                   m.decode(zz, torch.full((10,), 0.5)), atol=0, rtol=0)
    # a default CVAE's saved state is the one it always was (no c_path entry)
    plain = CVAE((2, 3), hidden=4, depth=1, latent_dim=2)
    assert "c_path" not in cvae_state(plain)["hparams"]


# ------------------------------------------------------------------ the sampler
def test_only_the_c_side_takes_the_logit_bias(gen_bias, gen_input):
    assert gen_bias.c_path == "logit_bias" and gen_bias.gen_c.cvae.c_path == "logit_bias"
    assert gen_bias.gen_y.cvae.c_path == "decoder_input"
    assert gen_bias.gen_y is not gen_bias.gen_c              # xc == xy: two CVAEs
    assert gen_bias.gen_y.key == gen_input.gen_y.key         # the y side is the default one
    assert gen_bias.gen_c.key != gen_input.gen_c.key
    assert gen_input.gen_y is gen_input.gen_c


@pytest.mark.parametrize("fusion", ["concat", "outer"])
def test_lic_ub_at_the_observed_c_is_the_secant_under_the_logit_bias(gen_bias, fusion):
    n = 400
    s = gen_bias.sample(n, 0.5, fusion, seed=5)
    target = LogitLinear(s.w_tilde, gen_bias.gen_c.cvae.block_sizes)
    f = gen_bias.fused_of_c(n, 0.5, fusion, seed=5)
    with torch.no_grad():
        secant = (target(f(torch.ones(n))) - target(f(torch.zeros(n)))).double().abs()
        ifs = (target(s.x) - target(s.x_cf)).double().abs()   # eq. 38 on the logit
    torch.testing.assert_close(ifs, secant, rtol=1e-4, atol=1e-5)
    assert secant.median() > 0.05                             # the bias moves the logits
    one_point = lic_ub_composite(target, f, s.c, at="observed", output="logit")
    torch.testing.assert_close(one_point, secant, rtol=1e-4, atol=1e-5)
    mid = lic_ub_composite(target, f, s.c, at="mid", output="logit")
    torch.testing.assert_close(mid, secant, rtol=1e-4, atol=1e-5)
    # the sampler's own dx/dc (stored at the observed c) gives the same number
    stored = lic_ub(target, s.x, s.dx_dc, output="logit").double()
    torch.testing.assert_close(stored, secant, rtol=1e-4, atol=1e-5)


def test_with_c_as_a_decoder_input_the_one_point_derivative_is_not_the_secant(gen_input):
    n = 400
    s = gen_input.sample(n, 0.5, "concat", seed=5)
    target = LogitLinear(s.w_tilde, gen_input.gen_c.cvae.block_sizes)
    f = gen_input.fused_of_c(n, 0.5, "concat", seed=5)
    with torch.no_grad():
        secant = (target(f(torch.ones(n))) - target(f(torch.zeros(n)))).double().abs()
    one_point = lic_ub_composite(target, f, s.c, at="observed", output="logit")
    gap = (one_point - secant).abs() / secant.clamp_min(1e-6)
    assert gap.median() > 1e-2


@pytest.mark.parametrize("dxdc_at", ["observed", "mid"])
def test_dx_dc_of_the_logit_bias_matches_a_central_difference(gen_bias, dxdc_at):
    n, h = 300, 1e-2
    s = gen_bias.sample(n, 1.0, "outer", seed=2, dxdc_at=dxdc_at)
    f = gen_bias.fused_of_c(n, 1.0, "outer", seed=2)
    c = s.c.float() if dxdc_at == "observed" else torch.full((n,), 0.5)
    with torch.no_grad():
        fd = (f(c + h) - f(c - h)) / (2 * h)
        torch.testing.assert_close(f(s.c.float()), s.x)
        torch.testing.assert_close(f(1.0 - s.c.float()), s.x_cf)   # the counterfactual
    assert s.dx_dc.abs().max() > 1e-3
    torch.testing.assert_close(s.dx_dc, fd, atol=2e-3, rtol=1e-2)
