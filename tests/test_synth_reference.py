import pytest
import torch

from faux.synth.fusion import fuse
from faux.synth.ground_truth import ifs, ifs_labels, ifs_threshold, positive_rate
from faux.synth.reference import MLP, Projected, disentangled_aux, fair_target, train_mlp
from faux.synth.sampler import SyntheticGenerator

TINY = {"hidden": 24, "depth": 1, "latent_dim": 3, "epochs": 30, "max_steps": 150,
        "patience": None, "batch_size": 128}


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    return SyntheticGenerator("magic", "backache", generator_cfgs={"magic": TINY,
                              "backache": TINY}, cache_dir=tmp_path_factory.mktemp("c"), seed=0)


def test_projected_keeps_projection_fixed():
    w = torch.randn(3, 5)
    m = Projected(w, MLP(3, 4, 1))
    assert "projection" in dict(m.named_buffers())
    assert all("projection" not in n for n, _ in m.named_parameters())
    x = torch.randn(7, 5)
    torch.testing.assert_close(m(x), m.inner(x @ w.T))
    assert m(x).shape == (7,)


@pytest.mark.parametrize("fusion", ["outer", "concat"])
def test_fair_target_has_zero_ifs_and_aux_ignores_y_side(gen, fusion):
    train = gen.sample(1500, 1.0, fusion, seed=1)
    test = gen.sample(1000, 1.0, fusion, seed=2)
    w0 = train.w_hat.clone()
    fair = fair_target(train.x, train.y, train.w_hat, width=16, depth=1, epochs=3, seed=0)
    torch.testing.assert_close(fair.projection, w0, atol=0, rtol=0)  # not trained
    v = ifs(fair, test.x, test.x_cf)
    assert v.shape == (1000,) and v.max() < 1e-6
    aux = disentangled_aux(train.x, train.c, train.w_tilde, width=16, depth=1, epochs=3, seed=0)
    other_hat = test.x_hat.roll(1, dims=0)  # another individual's y side
    with torch.no_grad():
        torch.testing.assert_close(aux(fuse(other_hat, test.x_tilde, fusion)), aux(test.x),
                                   atol=1e-5, rtol=0)
    # while a plain model does see the c side
    plain = train_mlp(train.x, train.y, width=16, depth=1, epochs=3, seed=0)
    assert ifs(plain, test.x, test.x_cf).max() > 1e-4


def test_ifs_threshold_and_labels():
    v0 = torch.tensor([0.0, 0.1, 0.2, 0.1])
    thr = ifs_threshold(v0, k=3.0)
    assert thr == pytest.approx(float(v0.double().mean() + 3 * v0.double().std()))
    lab = ifs_labels(torch.tensor([0.0, thr + 1e-6, 1.0]), thr)
    assert lab.tolist() == [0, 1, 1] and lab.dtype == torch.int64
    assert positive_rate(lab) == pytest.approx(2 / 3)


def test_ifs_logit_vs_prob():
    lin = torch.nn.Linear(2, 1)
    with torch.no_grad():
        lin.weight[:] = torch.tensor([[1.0, 0.0]])
        lin.bias.zero_()
    x, xc = torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 0.0]])
    assert float(ifs(lin, x, xc, output="logit")) == pytest.approx(2.0)
    assert float(ifs(lin, x, xc)) == pytest.approx(float(torch.sigmoid(torch.tensor(2.0))) - 0.5)
