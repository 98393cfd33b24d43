"""LIC-UB: the Local Independence Criterion (eq. 5) with the true derivative dx/dc.

On synthetic data the sampler knows how the fused features move with the protected
variable (the c-side decoder's derivative, latent held fixed), so eq. 5 can be evaluated
exactly: ``|grad f_tar(x) . dx/dc|`` per row. This is the upper-bound reference of Table 1.
"""

from __future__ import annotations

import torch
from torch import nn

from faux.errors import DataError, FauxError
from faux.methods.autograd import DEFAULT_BATCH_SIZE, check_x, input_gradients


def lic_ub(target: nn.Module, x: torch.Tensor, dx_dc: torch.Tensor, output: str = "prob",
           batch_size: int = DEFAULT_BATCH_SIZE) -> torch.Tensor:
    """``|grad f_tar(x) . dx_dc|`` per row, shape ``(n,)``.

    ``dx_dc``: ``(n, d)`` for one protected variable, or ``(n, k, d)`` for k of them (then the
    infinity norm over k, as in eq. 5). ``output`` as in ``faux.score`` (default "prob").
    """
    x = check_x(x)
    v = torch.as_tensor(dx_dc, dtype=x.dtype, device=x.device).detach()
    if v.ndim == 2:
        v = v.unsqueeze(1)
    if not (v.ndim == 3 and v.shape[0] == x.shape[0] and v.shape[2] == x.shape[1]):
        raise DataError(f"dx_dc has shape {tuple(torch.as_tensor(dx_dc).shape)} but x is "
                        f"{tuple(x.shape)}; pass dx/dc of shape (n, d) or (n, k, d)")
    if not bool(torch.isfinite(v).all()):
        raise DataError("dx_dc has non-finite values; check the sampler's decoder derivative")
    g = input_gradients(target, x, output, batch_size, name="target")
    if g.ndim == 3:
        raise FauxError(f"the target model returned {g.shape[1]} outputs per row; it must "
                        "return one logit per row, shape (n,) or (n, 1)")
    return (v @ g.unsqueeze(2)).squeeze(2).abs().amax(dim=1)
