import numpy as np
import pytest
import torch

from faux.errors import ConfigError
from faux.synth.cvae import CVAE, block_softmax, gumbel_noise, train_cvae
from faux.synth.encoding import block_bounds

SIZES = (3, 2, 4)


def _valid(x, sizes=SIZES):
    assert (x >= 0).all()
    for a, b in block_bounds(sizes):
        torch.testing.assert_close(x[:, a:b].sum(1), torch.ones(x.shape[0]))


@pytest.mark.parametrize("c", [0.0, 1.0, 0.37])
def test_decode_gives_mode_probabilities(c):
    torch.manual_seed(0)
    m = CVAE(SIZES, hidden=16, depth=2, latent_dim=3)
    z = torch.randn(20, 3)
    _valid(m.decode(z, torch.full((20,), c)))
    noise = gumbel_noise((20, 9), torch.Generator().manual_seed(1))
    x1 = m.decode(z, torch.full((20,), c), noise, tau=0.3)
    _valid(x1)
    torch.testing.assert_close(x1, m.decode(z, torch.full((20,), c), noise, tau=0.3))


def test_gumbel_decoding_samples_the_decoder_categorical():
    # with tau -> small, argmax of the relaxed sample follows softmax(logits): check frequencies
    logits = torch.tensor([[0.0, 1.0, -1.0]]).expand(20000, 3)
    noise = gumbel_noise((20000, 3), torch.Generator().manual_seed(0))
    x = block_softmax((logits + noise) / 0.05, (3,))
    freq = torch.bincount(x.argmax(1), minlength=3).float() / 20000
    torch.testing.assert_close(freq, torch.softmax(logits[0], 0), atol=0.015, rtol=0)


def test_condition_is_a_differentiable_float():
    torch.manual_seed(0)
    m = CVAE(SIZES, hidden=16, depth=1, latent_dim=2)
    c = torch.full((5,), 0.5, requires_grad=True)
    m.decode(torch.randn(5, 2), c).sum().backward()  # flows
    assert c.grad is not None
    # the gradient of a block sum is zero (each block sums to 1 for every c)
    c2 = torch.full((5,), 0.5, requires_grad=True)
    m.decode(torch.randn(5, 2), c2)[:, :3].sum().backward()
    assert c2.grad.abs().max() < 1e-5


def test_gumbel_noise_deterministic():
    a = gumbel_noise((4, 5), torch.Generator().manual_seed(3))
    b = gumbel_noise((4, 5), torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and torch.isfinite(a).all()


def test_training_learns_the_label_dependence():
    # two features whose mode depends on the label: the decoder must learn it
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    x = np.zeros((600, 4), dtype=np.float32)
    x[np.arange(600), y] = 1.0                      # feature 1: mode = label
    x[np.arange(600), 2 + rng.integers(0, 2, 600)] = 1.0  # feature 2: noise
    m, info = train_cvae(x, y, (2, 2), hidden=32, depth=1, latent_dim=2, beta=0.5, epochs=40,
                         batch_size=64, patience=None, seed=0)
    assert info["epochs"] >= 1
    z = torch.zeros(2, 2)
    p = m.decode(z, torch.tensor([0.0, 1.0]))
    assert p[0, 0] > 0.8 and p[1, 1] > 0.8  # chance is 0.5
    assert abs(float(p[0, 2]) - 0.5) < 0.2


def test_bad_config():
    with pytest.raises(ConfigError):
        CVAE((), hidden=4)
    with pytest.raises(ConfigError):
        CVAE((2,), hidden=0)
    with pytest.raises(ConfigError):
        CVAE((2,), beta=-1)
    m = CVAE((2,), hidden=4, depth=1, latent_dim=1)
    with pytest.raises(ConfigError, match="tau"):
        m.decode(torch.zeros(1, 1), torch.zeros(1), torch.zeros(1, 2), tau=0.0)
