"""LIC-UB: the Local Independence Criterion (eq. 5) with the generator's true derivative.

On synthetic data the sampler knows how the fused features move with the protected
variable (the c-side decoder, latent and decoding noise held fixed), so the criterion of
eqs. 15-17 can be evaluated without an aux model. This is the upper-bound reference of
Table 1. Two forms:

- :func:`lic_ub`: ``|grad f_tar(x) . dx/dc|`` per row, for a given point ``x`` and a given
  derivative ``dx/dc``. Both factors must be taken at the same point for the product to be
  the derivative of the composition ``c -> f_tar(x(c))`` (the chain rule).
- :func:`lic_ub_composite`: the derivative of the composition ``g(c) = f_tar(x(c))`` (A.4,
  eq. 16) from the map ``x_of_c`` itself, at a point chosen by ``at`` (:data:`LIC_AT`).

The label of an individual (eq. 38) is the secant ``|g(1) - g(0)|``; its best one-point
approximation is ``g'(1/2)`` (exact when g is quadratic in c), which is what ``mid`` takes.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from faux.errors import ConfigError, DataError, FauxError
from faux.methods.autograd import DEFAULT_BATCH_SIZE, check_x, input_gradients
from faux.methods.options import LIC_AT, LicAt, Output, ScoreOptions

# LIC_AT (the values of faux.methods.options.LicAt), where :func:`lic_ub_composite` takes
# the derivative of ``c -> f_tar(x(c))``: ``mid``: at c = 1/2 (both factors at one point);
# ``fd``: eq. 17's central finite difference at c = 1/2 with step :data:`FD_STEP`;
# ``observed``: at each individual's own c; ``path``: the mean derivative over
# :data:`PATH_POINTS` midpoints of [0, 1] (the secant in the limit, so it ranks the labels by
# construction: a check of the pipeline, never a test)
FD_STEP = 0.01
PATH_POINTS = 10


def lic_ub(target: nn.Module, x: torch.Tensor, dx_dc: torch.Tensor,
           output: Output = ScoreOptions.output,
           batch_size: int = DEFAULT_BATCH_SIZE) -> torch.Tensor:
    """``|grad f_tar(x) . dx_dc|`` per row, shape ``(n,)``.

    ``dx_dc``: ``(n, d)`` for one protected variable, or ``(n, k, d)`` for k of them (then the
    infinity norm over k, as in eq. 5). ``output`` as in ``faux.score`` (default "prob").
    """
    return _dot(target, check_x(x), dx_dc, output, batch_size).abs().amax(dim=1)


def _dot(target, x, dx_dc, output, batch_size) -> torch.Tensor:
    """``grad f_tar(x) . dx_dc`` per row and protected variable, shape ``(n, k)`` (signed)."""
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
    return (v @ g.unsqueeze(2)).squeeze(2)


def _value(target: nn.Module, x: torch.Tensor, output: str) -> torch.Tensor:
    with torch.no_grad():
        o = target(x).reshape(x.shape[0], -1)[:, 0]
    return torch.sigmoid(o) if output == "prob" else o


def lic_ub_composite(target: nn.Module, x_of_c: Callable[[torch.Tensor], torch.Tensor],
                     c: torch.Tensor, at: LicAt = "mid", output: Output = "logit",
                     fd_step: float = FD_STEP, path_points: int = PATH_POINTS,
                     batch_size: int = DEFAULT_BATCH_SIZE) -> torch.Tensor:
    """``|d/dc f_tar(x(c))|`` per row, shape ``(n,)``, from the map ``x_of_c``.

    ``x_of_c``: ``(n,)`` values of c -> ``(n, d)`` fused features of the n rows (their latents
    and noise fixed; ``faux.synth.sampler.SyntheticGenerator.fused_of_c``). ``c``: the rows'
    observed protected attribute (used by ``at="observed"``). ``at`` in :data:`LIC_AT`.
    """
    if at not in LIC_AT:
        raise ConfigError(f"lic_ub at={at!r} is not one of {', '.join(LIC_AT)}")
    c = torch.as_tensor(c).reshape(-1).float()
    n = c.shape[0]
    if at == "fd":
        if not 0 < float(fd_step) <= 1:
            raise ConfigError(f"fd_step must be in (0, 1], got {fd_step}")
        h = float(fd_step) / 2
        lo = _value(target, check_x(x_of_c(torch.full((n,), 0.5 - h))), output)
        hi = _value(target, check_x(x_of_c(torch.full((n,), 0.5 + h))), output)
        return ((hi - lo) / float(fd_step)).abs()
    if at == "mid":
        points = [torch.full((n,), 0.5)]
    elif at == "observed":
        points = [c.clone()]
    else:
        if int(path_points) < 1:
            raise ConfigError(f"path_points must be >= 1, got {path_points}")
        k = int(path_points)
        points = [torch.full((n,), (i + 0.5) / k) for i in range(k)]
    total = torch.zeros(n, dtype=torch.float64)
    for p in points:
        x, v = torch.func.jvp(x_of_c, (p,), (torch.ones(n),))
        total += _dot(target, check_x(x.detach()), v.detach(), output, batch_size)[:, 0].double()
    return (total / len(points)).abs()


def secant_gap(target: nn.Module, x_of_c: Callable[[torch.Tensor], torch.Tensor], n: int,
               output: str = "logit", batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
    """How far ``g(c) = f_tar(x(c))`` is from linear on [0, 1], per row:
    ``|g(1) - g(0) - g'(1/2)|`` against ``|g(1) - g(0)|`` (0 when g is quadratic).

    Returns the medians of both and of their ratio (rows with a zero secant left out)."""
    g0 = _value(target, check_x(x_of_c(torch.zeros(n))), output).double()
    g1 = _value(target, check_x(x_of_c(torch.ones(n))), output).double()
    x, v = torch.func.jvp(x_of_c, (torch.full((n,), 0.5),), (torch.ones(n),))
    d = _dot(target, check_x(x.detach()), v.detach(), output, batch_size)[:, 0].double()
    sec = g1 - g0
    gap = (sec - d).abs()
    ok = sec.abs() > 0
    ratio = gap[ok] / sec[ok].abs()
    return {"secant_median": float(sec.abs().median()), "gap_median": float(gap.median()),
            "gap_ratio_median": float(ratio.median()) if ok.any() else float("nan")}
