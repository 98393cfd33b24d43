import pytest
import torch

from faux.errors import ConfigError
from faux.synth.fusion import fuse, fused_dim, projections


def _blocks(n, sizes, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.softmax(torch.randn(n, k, generator=g) * 3, 1) for k in sizes], 1)


@pytest.mark.parametrize("fusion", ["concat", "outer"])
def test_projections_recover_both_blocks(fusion):
    hat_sizes, tilde_sizes = [3] * 6, [2] * 10  # backache (y side), magic (c side)
    xh, xt = _blocks(50, hat_sizes, 0), _blocks(50, tilde_sizes, 1)
    x = fuse(xh, xt, fusion)
    assert x.shape == (50, fused_dim(18, 20, fusion))
    wh, wt = projections(18, 20, fusion, s_hat=len(hat_sizes), s_tilde=len(tilde_sizes))
    assert wh.shape == (18, x.shape[1]) and wt.shape == (20, x.shape[1])
    torch.testing.assert_close(x @ wh.T, xh, atol=1e-6, rtol=0)
    torch.testing.assert_close(x @ wt.T, xt, atol=1e-6, rtol=0)


def test_outer_layout_and_row_sums():
    xh, xt = _blocks(7, [3] * 6, 2), _blocks(7, [2] * 10, 3)
    x = fuse(xh, xt, "outer")
    assert x.shape == (7, 360)
    # x_hat is the slow index: x[i*N~ + j] = xh[i] * xt[j]
    assert torch.allclose(x[:, 5 * 20 + 7], xh[:, 5] * xt[:, 7])
    torch.testing.assert_close(x.sum(1), torch.full((7,), 60.0))  # 6 features * 10 features
    torch.testing.assert_close(fuse(xh, xt, "concat").sum(1), torch.full((7,), 16.0))


def test_paper_factor_holds_for_unit_sums():
    # with each vector summing to 1, the projections need no factor (the paper's 1/N is for
    # a different normalisation); with s = number of features they are exact
    xh = torch.softmax(torch.randn(4, 5), 1)
    xt = torch.softmax(torch.randn(4, 3), 1)
    wh, wt = projections(5, 3, "outer")
    x = fuse(xh, xt, "outer")
    torch.testing.assert_close(x @ wh.T, xh)
    torch.testing.assert_close(x @ wt.T, xt)


def test_errors():
    with pytest.raises(ConfigError, match="unknown fusion"):
        fuse(torch.ones(2, 2), torch.ones(2, 2), "sum")
    with pytest.raises(ConfigError, match="same number of rows"):
        fuse(torch.ones(2, 2), torch.ones(3, 2), "concat")
    with pytest.raises(ConfigError, match="unknown fusion"):
        projections(2, 2, "kron")
