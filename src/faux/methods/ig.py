"""Integrated gradients (Sundararajan et al., 2017), batched over rows and path steps.

``IG_j(x) = (x_j - b_j) * integral_0^1 df(b + a (x - b))/dx_j da``, approximated by a
quadrature rule with ``steps`` nodes:

- ``"midpoint"`` (default): nodes ``(i + 1/2) / steps``, weights ``1 / steps``; error
  O(1/steps^2), and identical to captum's ``method="riemann_middle"``.
- ``"trapezoid"``: nodes ``i / (steps - 1)``, weights ``1 / (steps - 1)`` halved at both ends
  (the textbook rule; captum's ``"riemann_trapezoid"`` uses weights ``1 / steps`` instead,
  whose sum is ``1 - 1/steps``, so it is not identical).
- ``"gausslegendre"``: Gauss-Legendre nodes and weights on [0, 1] (captum's default).

All path points of a chunk of rows go through the model in one forward and one backward
pass (per output column); chunks hold about ``2**18`` path points (rows * steps) and at most
``2**24`` input floats (rows * steps * d, so memory stays bounded on wide inputs), or
``batch_size`` rows if fewer. Baselines: ``"zeros"`` (default, the usual IG baseline: an
attribution is then measured from the origin of the features, the same for every row and
every sample; how it compares with the mean: docs/notebook/methods_notes.md), ``"mean"``
(column means of the ``x`` given), or a tensor ``(d,)`` / ``(n, d)``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from faux.errors import ConfigError, DataError
from faux.methods.autograd import (
    DEFAULT_BATCH_SIZE,
    NonFiniteCounter,
    check_batch_size,
    check_model,
    check_output,
    check_x,
    forward_logits,
    grads_of_outputs,
    scoring_mode,
)
from faux.methods.options import BASELINES, IG_METHODS, IGMethod, Output, ScoreOptions

PATH_POINTS_PER_CHUNK = 2**18
#: and at most this many input floats (rows * steps * d): ~64 MB per path tensor on wide inputs
FLOATS_PER_CHUNK = 2**24


def quadrature(method: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``alphas`` in [0, 1] and weights (float64 numpy) of an IG quadrature rule."""
    if method not in IG_METHODS:
        raise ConfigError(f"ig_method={method!r} is not one of {list(IG_METHODS)}")
    if not isinstance(steps, int | np.integer) or steps < 1 or (method == "trapezoid"
                                                                 and steps < 2):
        raise ConfigError(f"ig_steps must be an integer >= {2 if method == 'trapezoid' else 1}"
                          f" for ig_method={method!r}, got {steps!r}")
    steps = int(steps)
    if method == "midpoint":
        alphas = (np.arange(steps) + 0.5) / steps
        weights = np.full(steps, 1.0 / steps)
    elif method == "trapezoid":
        alphas = np.linspace(0.0, 1.0, steps)
        weights = np.full(steps, 1.0 / (steps - 1))
        weights[[0, -1]] /= 2
    else:
        nodes, w = np.polynomial.legendre.leggauss(steps)
        alphas, weights = 0.5 * (nodes + 1.0), 0.5 * w
    return alphas, weights


def resolve_baseline(baseline, x: torch.Tensor) -> torch.Tensor:
    """The baseline as a tensor broadcastable to ``x`` (``(1, d)`` or ``(n, d)``)."""
    n, d = x.shape
    if isinstance(baseline, str):
        if baseline == "zeros":
            return torch.zeros((1, d), dtype=x.dtype, device=x.device)
        if baseline == "mean":
            return x.detach().mean(dim=0, keepdim=True)
        raise ConfigError(f"ig_baseline={baseline!r} is not one of {list(BASELINES)} "
                          "or a tensor of shape (d,) or (n, d)")
    b = torch.as_tensor(baseline, dtype=x.dtype, device=x.device).detach()
    if b.ndim == 1 and b.shape[0] == d:
        b = b.unsqueeze(0)
    if not (b.ndim == 2 and b.shape[1] == d and b.shape[0] in (1, n)):
        raise DataError(f"ig_baseline has shape {tuple(b.shape)} but x is {(n, d)}; pass a "
                        f"baseline of shape ({d},) or ({n}, {d}), or 'zeros'/'mean'")
    if not bool(torch.isfinite(b).all()):
        raise DataError("ig_baseline has non-finite values; pass a finite baseline")
    return b


def ig_attributions(model: nn.Module, x: torch.Tensor, baseline, steps: int, output: str,
                    method: str, batch_size: int, name: str) -> tuple[torch.Tensor, bool]:
    """``(n, k, d)`` IG attributions and whether any path gradient was non-zero.

    Assumes a validated ``x``/model and an active ``scoring_mode``.
    """
    alphas_np, weights_np = quadrature(method, steps)
    s = len(alphas_np)
    n, d = x.shape
    xd = x.detach()
    if xd.is_inference():
        xd = xd.clone()
    base = resolve_baseline(baseline, xd)
    alphas = torch.as_tensor(alphas_np, dtype=x.dtype, device=x.device).view(s, 1, 1)
    weights = torch.as_tensor(weights_np, dtype=x.dtype, device=x.device).view(s, 1, 1, 1)
    rows = max(1, min(batch_size, PATH_POINTS_PER_CHUNK // s, FLOATS_PER_CHUNK // (s * d)))
    result = None
    any_grad = False
    bad = NonFiniteCounter(name)
    for start in range(0, n, rows):
        xc = xd[start:start + rows]
        m = xc.shape[0]
        bc = base if base.shape[0] == 1 else base[start:start + m]
        delta = xc - bc
        path = (bc + alphas * delta).reshape(s * m, d).requires_grad_(True)
        out = forward_logits(model, path, name, d)
        g = grads_of_outputs(out, path, output)  # (s*m, k, d)
        k = g.shape[1]
        avg = (g.view(s, m, k, d) * weights).sum(dim=0)  # (m, k, d)
        # non-finite path gradients propagate into avg (weights > 0): check per row of x
        bad.add(out.view(s, m, k).transpose(0, 1), avg)
        any_grad = any_grad or bool((avg != 0).any())
        attr = avg * delta.unsqueeze(1)
        if result is None:
            if n <= rows:
                result = attr
                break
            result = torch.empty((n, k, d), dtype=attr.dtype, device=attr.device)
        result[start:start + m] = attr
    bad.raise_if_any()
    return result.detach(), any_grad


def integrated_gradients(model: nn.Module, x: torch.Tensor, baseline=ScoreOptions.ig_baseline,
                         steps: int = ScoreOptions.ig_steps,
                         output: Output = ScoreOptions.aux_output,
                         method: IGMethod = ScoreOptions.ig_method,
                         batch_size: int = DEFAULT_BATCH_SIZE) -> torch.Tensor:
    """IG attributions of ``model``'s logit (or sigmoid, ``output="prob"``): ``(n, d)``,
    or ``(n, k, d)`` for a model with k > 1 outputs. Rows sum to ~ ``f(x) - f(baseline)``.
    """
    x = check_x(x)
    check_output(output)
    b = check_batch_size(batch_size)
    check_model(model, x, "model")
    with scoring_mode(model):
        attr, _ = ig_attributions(model, x, baseline, steps, output, method, b, "model")
    return attr[:, 0] if attr.shape[1] == 1 else attr
