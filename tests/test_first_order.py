"""The first-order step and support box shared by fAux path and the audit's counterfactuals
(faux.methods.first_order): closed forms on linear scalars, the factored gradient that keeps
tiny gradients from underflowing, the box on numpy and torch alike."""

import numpy as np
import torch

from faux.methods.alignment import row_factor
from faux.methods.first_order import min_norm_step, outside, scalar_gradient, widened_range


def test_a_step_moves_a_linear_scalar_by_delta_with_the_smallest_change():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(20, 5, dtype=torch.float64, generator=gen)      # h_i(x) = a_i . x
    delta = torch.randn(20, dtype=torch.float64, generator=gen)
    ok = torch.ones(20, dtype=torch.bool)
    s = min_norm_step(a, delta, ok)
    torch.testing.assert_close((a * s).sum(dim=1), delta, rtol=1e-12, atol=1e-12)
    # the minimum-norm solution is parallel to the gradient, of length |delta| / ||a||
    torch.testing.assert_close(s.norm(dim=1), delta.abs() / a.norm(dim=1), rtol=1e-12, atol=0)
    gh, w = row_factor(a)
    torch.testing.assert_close(min_norm_step(gh, delta, ok, w), s, rtol=1e-12, atol=0)


def test_rows_that_cannot_step_stay():
    g = torch.tensor([[1.0, 2.0], [0.0, 0.0], [3.0, -1.0]])
    ok = torch.tensor([True, False, False])
    s = min_norm_step(g, torch.ones(3), ok)
    assert torch.equal(s[1:], torch.zeros(2, 2)) and bool(torch.isfinite(s).all())


def test_the_factored_gradient_keeps_a_tiny_gradient_from_underflowing():
    """A float32 gradient of 1e-25 squares to 0; as a row factor times an O(1) vector the
    step is still the exact delta / ||g||."""
    g = torch.tensor([[3e-25, 4e-25]], dtype=torch.float32)
    delta = torch.tensor([1.0])
    ok = torch.tensor([True])
    assert float((g * g).sum()) == 0.0
    gh, w = row_factor(g)
    s = min_norm_step(gh, delta, ok, w)
    torch.testing.assert_close(s, torch.tensor([[1.2e24, 1.6e24]]), rtol=1e-6, atol=0)
    assert abs(float((g.double() * s.double()).sum()) - 1.0) < 1e-5


def test_scalar_gradient_is_each_rows_gradient_even_under_no_grad():
    x = torch.randn(7, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        g = scalar_gradient(lambda t: (t ** 2).sum(dim=1) + t[:, 0] * t[:, 1], x)
    expect = 2 * x
    expect[:, 0] += x[:, 1]
    expect[:, 1] += x[:, 0]
    torch.testing.assert_close(g, expect, rtol=1e-14, atol=1e-14)
    assert not g.requires_grad


def test_the_support_box_is_the_same_on_numpy_and_torch():
    x = np.random.default_rng(2).normal(size=(50, 4))
    lo_n, hi_n = widened_range(x.min(axis=0), x.max(axis=0), 0.1)
    t = torch.as_tensor(x)
    lo_t, hi_t = widened_range(t.amin(dim=0), t.amax(dim=0), 0.1)
    assert np.array_equal(lo_n, lo_t.numpy()) and np.array_equal(hi_n, hi_t.numpy())
    np.testing.assert_allclose(hi_n - lo_n, 1.2 * (x.max(axis=0) - x.min(axis=0)), rtol=1e-12)
    assert not outside(t, lo_t, hi_t).any()
    far = t.clone()
    far[3, 2] = hi_t[2] + 1
    assert outside(far, lo_t, hi_t).nonzero().flatten().tolist() == [3]
    cols = torch.tensor([True, True, False, True])
    assert not outside(far, lo_t, hi_t, cols).any()
