"""LIC-UB's one-point derivatives of c -> f_tar(x(c)) against closed forms: a linear
generator x(c) = a + c b and a quadratic target make g(c) = f_tar(x(c)) quadratic in c, so
its derivative at c = 1/2, eq. 17's central difference there and the path mean all equal
the secant g(1) - g(0) (the label), and the derivative at the individual's own c does not."""

import pytest
import torch
from torch import nn

from faux.errors import ConfigError
from faux.methods.lic_ub import LIC_AT, lic_ub, lic_ub_composite, secant_gap


class Quadratic(nn.Module):
    def __init__(self, q: torch.Tensor, w: torch.Tensor):
        super().__init__()
        self.q, self.w = q, w

    def forward(self, x):
        return ((x @ self.q) * x).sum(1) + x @ self.w


def _case(n=64, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
    q = torch.randn(d, d, generator=g)
    target = Quadratic((q + q.T).double(), torch.randn(d, generator=g).double())
    a, b = a.double(), b.double()

    def x_of_c(c):
        return a + c.double()[:, None] * b
    c = (torch.rand(n, generator=g) > 0.5).double()
    secant = (target(x_of_c(torch.ones(n))) - target(x_of_c(torch.zeros(n)))).abs()
    return target, x_of_c, c, secant


@pytest.mark.parametrize("at", ["mid", "fd", "path"])
def test_one_point_forms_equal_the_secant_of_a_quadratic(at):
    target, x_of_c, c, secant = _case()
    got = lic_ub_composite(target, x_of_c, c, at=at, output="logit", fd_step=0.01)
    assert torch.allclose(got, secant.double(), rtol=1e-6, atol=1e-8)


def test_the_derivative_at_the_own_c_is_not_the_secant():
    target, x_of_c, c, secant = _case()
    got = lic_ub_composite(target, x_of_c, c, at="observed", output="logit")
    assert not torch.allclose(got, secant.double(), rtol=1e-2)
    # it is the derivative at c: 2 b'Q(a + c b) + w.b, by hand
    q, w = target.q, target.w
    n = c.shape[0]
    a, b = x_of_c(torch.zeros(n)), x_of_c(torch.ones(n)) - x_of_c(torch.zeros(n))
    x = a + c[:, None] * b
    by_hand = (2 * ((x @ q) * b).sum(1) + b @ w).abs()
    assert torch.allclose(got, by_hand, rtol=1e-6)


def test_mid_equals_the_mixed_product_at_the_same_point():
    """lic_ub with x and dx/dc both at c = 1/2 is the composition's derivative there."""
    target, x_of_c, c, _ = _case()
    n = c.shape[0]
    x_mid = x_of_c(torch.full((n,), 0.5))
    dxdc = x_of_c(torch.ones(n)) - x_of_c(torch.zeros(n))
    assert torch.allclose(lic_ub(target, x_mid, dxdc, output="logit"),
                          lic_ub_composite(target, x_of_c, c, at="mid", output="logit"),
                          rtol=1e-6)


def test_prob_output_differs_from_logit_by_the_sigmoid_slope_at_mid():
    target, x_of_c, c, _ = _case()
    n = c.shape[0]
    p = lic_ub_composite(target, x_of_c, c, at="mid", output="prob")
    lg = lic_ub_composite(target, x_of_c, c, at="mid", output="logit")
    s = torch.sigmoid(target(x_of_c(torch.full((n,), 0.5))))
    assert torch.allclose(p, lg * s * (1 - s), rtol=1e-6)


def test_secant_gap_is_zero_for_a_quadratic_and_not_for_a_cubic():
    target, x_of_c, _, _ = _case()
    gap = secant_gap(target, x_of_c, 64, output="logit")
    assert gap["gap_ratio_median"] < 1e-9

    class Cubic(nn.Module):
        def forward(self, x):
            return (x ** 3).sum(1)
    gap3 = secant_gap(Cubic(), x_of_c, 64, output="logit")
    assert gap3["gap_ratio_median"] > 1e-3


def test_bad_settings_are_one_config_error():
    target, x_of_c, c, _ = _case()
    with pytest.raises(ConfigError, match="is not one of " + ", ".join(LIC_AT)):
        lic_ub_composite(target, x_of_c, c, at="nowhere")
    with pytest.raises(ConfigError, match="fd_step"):
        lic_ub_composite(target, x_of_c, c, at="fd", fd_step=0.0)


@pytest.mark.parametrize("decoding", ["softmax", "gumbel"])
def test_the_columns_map_c_to_x_reproduces_its_test_rows(tmp_path, decoding):
    """test_x_of_c redraws the test set's latents and noise: at the observed c it gives the
    test rows bit for bit, at 1 - c their counterfactuals; and the composite LIC-UB at
    ``path`` on a tiny column ranks the IFS better than chance."""
    from faux.harness.cache import Cache
    from faux.metrics.ranking import auroc
    from faux.models.mlp import MLPSpec
    from faux.studies.column import Column, prepare_column, test_x_of_c

    tiny = {"epochs": 2, "max_steps": 20, "hidden": 16, "depth": 1}
    pc = prepare_column(Column("backache", "backache", 1.0, "concat"),
                        sizes={"n_train": 60, "n_val": 20, "n_test": 40},
                        target_spec=MLPSpec(width=4, depth=1, max_epochs=1, batch_size=32),
                        gen_cfgs={"backache": tiny}, gen_opts={"decoding": decoding, "tau": 0.3},
                        cache=Cache(tmp_path), accelerator="cpu", seed=2, output="logit")
    f = test_x_of_c(pc)
    c = pc.test.c.float()
    assert torch.equal(f(c), pc.test.x)
    assert torch.equal(f(1.0 - c), pc.test.x_cf)
    path = lic_ub_composite(pc.target, f, c, at="path", output="logit", path_points=50)
    top = (pc.ifs_test >= pc.ifs_test.median()).long()
    assert auroc(top, path) > 0.9          # the path mean is the secant in the limit


def test_the_path_mean_row_is_the_secant_and_a_table1_method_only():
    from faux.methods import registry
    from faux.methods.protocol import Batch, MethodConfig

    target, x_of_c, c, secant = _case()
    cls = registry.get("lic_ub_path")
    test = cls.build(MethodConfig({"output": "logit"})).fit(None, 0)
    got = test.score(target, Batch(x_of_c(c), c, x_of_c=x_of_c))
    assert torch.allclose(got, secant, rtol=1e-6, atol=1e-8)
    assert "lic_ub_path" in registry.names(provides=("target", "aux", "train", "gan", "dxdc"))
    assert "lic_ub_path" not in registry.readings_methods()
    with pytest.raises(ConfigError, match="x_of_c"):
        test.score(target, Batch(x_of_c(c), c))
