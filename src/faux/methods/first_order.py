"""Successive first-order steps along an aux model's minimum-norm inverse, and the support box
a walked path is checked against: the math that fAux path (``faux.methods.path``) and the
audit's counterfactual effects (``faux.audit.counterfactual.effects``) share.

To move a scalar ``h(x)`` of the aux's outputs by ``delta`` to first order with the smallest
change of x (eq. 23 applied to a scalar), step by ``delta * g / (g . g)`` with ``g = grad
h(x)``; K such steps, the gradient re-evaluated at each, walk the path. Each caller keeps
its own rule for rows that cannot step (a vanishing gradient) and its own bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def scalar_gradient(h: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """``grad h`` at each row of ``x`` (n, d), for ``h`` mapping rows to one value each (n,):
    the gradient of ``sum_i h(x)_i``, rows being independent. ``x`` is detached first."""
    with torch.enable_grad():
        xg = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(h(xg).sum(), xg)
    return g


def min_norm_step(g: torch.Tensor, delta: torch.Tensor, ok: torch.Tensor,
                  w: torch.Tensor | float = 1.0) -> torch.Tensor:
    """The step ``delta * G / (G . G)`` per row (n, d) for the gradient ``G = w[:, None] * g``
    (``w`` a per-row factor, ``faux.methods.alignment.row_factor``, or 1 for ``g`` itself),
    zero where ``ok`` is False (the caller's rows that cannot step).

    Computed as ``delta / (w * (g . g)) * g``: with ``g`` O(1) and ``w`` apart, the square
    neither underflows nor overflows."""
    scale = torch.where(ok, delta / torch.where(ok, w * (g * g).sum(dim=1), 1), 0)
    return scale.unsqueeze(1) * g


def widened_range(lo, hi, margin: float):
    """``[lo - margin * (hi - lo), hi + margin * (hi - lo)]``, per feature: a support box from
    the per-feature minimum and maximum of the rows it is drawn from (numpy arrays or
    tensors alike)."""
    pad = (hi - lo) * float(margin)
    return lo - pad, hi + pad


def outside(x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor,
            columns: torch.Tensor | None = None) -> torch.Tensor:
    """Per row of ``x`` (n, d): whether any feature (of ``columns``, a (d,) mask, when given)
    lies outside ``[lo, hi]``."""
    out = (x < lo) | (x > hi)
    if columns is not None:
        out = out & columns
    return out.any(dim=1)
