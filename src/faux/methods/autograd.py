"""The autograd core every gradient scorer shares: input checks, scoring mode, chunked
input gradients of a model's logits (with the sigmoid's slope kept as a separate row factor).

``faux.methods.gradients`` (FTA, fAux, NG), ``faux.methods.ig`` (integrated gradients),
``faux.methods.lic_ub`` and ``faux.methods.transparency`` build on these public helpers;
this module imports none of them (no import cycle).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from faux.errors import ConfigError, DataError, FauxError
from faux.methods.options import DEFAULT_BATCH_SIZE, OUTPUTS

# --------------------------------------------------------------------------- validation


def check_x(x) -> torch.Tensor:
    """``x`` as a 2-D floating tensor with finite values (numpy arrays are converted)."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except Exception as err:  # anything unconvertible is a data error
            raise DataError(f"x must be a float tensor of shape (n, d), got {type(x).__name__}; "
                            "pass torch.as_tensor(x, dtype=torch.float32)") from err
    if x.ndim != 2:
        raise DataError(f"x must have shape (n, d), got {tuple(x.shape)}; reshape it "
                        "(one row per individual)")
    if not x.is_floating_point():
        raise DataError(f"x must be a floating tensor, got {x.dtype}; pass x.float() or x.double()")
    if x.shape[0] == 0:
        raise DataError("x has no rows; pass at least one individual to score")
    n_bad = nonfinite_rows(x)
    if n_bad:
        raise DataError(f"x has non-finite values at {n_bad} rows; "
                        "impute or drop those rows before scoring")
    return x


def nonfinite_rows(t: torch.Tensor) -> int:
    """Number of rows (dim 0) of ``t`` holding a NaN or an infinity.

    Fast path: the sum of a finite tensor is finite (unless it overflows, then rows are
    counted exactly), so a full elementwise check only runs when something is wrong.
    """
    t = t.detach()
    if t.numel() == 0 or bool(torch.isfinite(t.sum())):
        return 0
    return int((~torch.isfinite(t).reshape(t.shape[0], -1).all(dim=1)).sum())


def check_output(output, what: str = "output") -> str:
    """``output`` when it is one of :data:`faux.methods.options.OUTPUTS`; ConfigError naming
    ``what`` otherwise."""
    if output not in OUTPUTS:
        raise ConfigError(f"{what}={output!r} is not one of {list(OUTPUTS)}")
    return output


def check_batch_size(batch_size) -> int:
    try:
        b = int(batch_size)
    except (TypeError, ValueError):
        b = 0
    if b < 1 or b != batch_size:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    return b


def _first_linear_in_sequential(model: nn.Module) -> nn.Linear | None:
    """The Linear that certainly sees x first: the first leaf of (nested) Sequentials."""
    m = model
    while isinstance(m, nn.Sequential) and len(m) > 0:
        m = m[0]
    return m if isinstance(m, nn.Linear) else None


def _any_first_linear(model: nn.Module) -> nn.Linear | None:
    for m in model.modules():
        if isinstance(m, nn.Linear):
            return m
    return None


def check_model(model, x: torch.Tensor, name: str) -> nn.Module:
    """Model is a Module on x's device with x's dtype and (when knowable) x's width."""
    if not isinstance(model, nn.Module):
        raise FauxError(f"{name} must be a torch.nn.Module mapping (n, d) to logits, "
                        f"got {type(model).__name__}")
    for prm in model.parameters():
        if prm.device != x.device:
            raise FauxError(f"{name} model's parameters are on {prm.device} but x is on "
                            f"{x.device}; call {name}.to(x.device) or move x")
        if prm.is_floating_point() and prm.dtype != x.dtype:
            raise FauxError(f"{name} model's parameters are {prm.dtype} but x is {x.dtype}; "
                            f"call {name}.to({x.dtype}) or convert x")
        break
    lin = _first_linear_in_sequential(model)
    if lin is not None and lin.in_features != x.shape[1]:
        raise FauxError(f"x has {x.shape[1]} columns but the {name} model's first layer reads "
                        f"{lin.in_features}; pass the features the {name} model was trained on")
    return model


# --------------------------------------------------------------------------- autograd core


@contextlib.contextmanager
def scoring_mode(*models: nn.Module | None) -> Iterator[None]:
    """Grad enabled (even under no_grad / inference_mode), submodules in eval, then restored."""
    modes = [(m, m.training) for model in models if model is not None for m in model.modules()]
    try:
        for m, _ in modes:
            m.training = False
        with torch.inference_mode(False), torch.enable_grad():
            yield
    finally:
        for m, mode in modes:
            m.training = mode


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300]


def forward_logits(model: nn.Module, xin: torch.Tensor, name: str, width: int) -> torch.Tensor:
    """Call ``model`` and return its logits as ``(m, k)``; shape errors become FauxError."""
    try:
        out = model(xin)
    except RuntimeError as err:
        msg = str(err)
        if any(s in msg for s in ("shape", "size", "dimension")):
            lin = _any_first_linear(model)
            reads = f"its first Linear reads {lin.in_features}" if lin is not None else (
                "its expected width is unknown")
            raise FauxError(f"calling the {name} model on x with {width} columns failed "
                            f"({reads}): {_one_line(err)}; pass the features the {name} model "
                            "was trained on") from err
        raise
    if not isinstance(out, torch.Tensor):
        raise FauxError(f"the {name} model returned {type(out).__name__}, not a tensor of logits")
    m = xin.shape[0]
    if out.ndim == 1 and out.shape[0] == m:
        out = out.unsqueeze(1)
    elif not (out.ndim == 2 and out.shape[0] == m and out.shape[1] >= 1):
        raise FauxError(f"the {name} model returned shape {tuple(out.shape)} for {m} rows; "
                        "it must return logits of shape (n,), (n, 1) or (n, k)")
    return out


def grads_of_outputs(out: torch.Tensor, xin: torch.Tensor, output: str) -> torch.Tensor:
    """``(m, k, d)`` gradients of each output column (logit or sigmoid) w.r.t. ``xin``.

    One backward pass per output column, w.r.t. the input only.
    """
    w = output_weights(out, output)
    if w is None:
        w = torch.ones_like(out)
    k = out.shape[1]
    if k == 1:
        (g,) = torch.autograd.grad(out, xin, grad_outputs=w)
        return g.unsqueeze(1)
    gs = []
    for j in range(k):
        go = torch.zeros_like(out)
        go[:, j] = w[:, j]
        (g,) = torch.autograd.grad(out, xin, grad_outputs=go, retain_graph=j < k - 1)
        gs.append(g)
    return torch.stack(gs, dim=1)


class NonFiniteCounter:
    """Counts rows with non-finite outputs / gradients over chunks; raises once at the end."""

    def __init__(self, name: str):
        self.name = name
        self.out_rows = 0
        self.grad_rows = 0

    def add(self, out: torch.Tensor | None, grad: torch.Tensor | None) -> None:
        if out is not None:
            self.out_rows += nonfinite_rows(out)
        if grad is not None:
            self.grad_rows += nonfinite_rows(grad)

    def raise_if_any(self) -> None:
        if self.out_rows:
            raise FauxError(f"non-finite values in {self.name} outputs at {self.out_rows} rows; "
                            "check inputs/model")
        if self.grad_rows:
            raise FauxError(f"non-finite values in {self.name} gradients at {self.grad_rows} "
                            "rows; check inputs/model")


def output_weights(out: torch.Tensor, output: str) -> torch.Tensor | None:
    """d output / d logit per row and output: sigma'(logit) for "prob", None for "logit"."""
    if output == "logit":
        return None
    z = out.detach()
    return torch.sigmoid(z) * torch.sigmoid(-z)  # accurate in both tails, unlike s * (1 - s)


def input_grads(model: nn.Module, x: torch.Tensor, output: str, batch_size: int,
                 name: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logit gradients ``(n, k, d)`` and row weights ``(n, k)`` (sigma'(logit) for "prob",
    None for "logit"): the gradient of the output is ``w[..., None] * g``.

    Keeping the sigmoid's slope as a separate factor keeps the gradients in the logit's
    range, so saturated rows (sigma' ~ 1e-30) neither underflow in squares nor lose digits.
    Chunked; assumes validated inputs and an active ``scoring_mode``.
    """
    n, d = x.shape
    xd = x.detach()
    if xd.is_inference():
        xd = xd.clone()
    g_all = w_all = None
    bad = NonFiniteCounter(name)
    for start in range(0, n, batch_size):
        xc = xd[start:start + batch_size].requires_grad_(True)
        out = forward_logits(model, xc, name, d)
        g = grads_of_outputs(out, xc, "logit")
        bad.add(out, g)
        w = output_weights(out, output)
        if g_all is None:
            if n <= batch_size:
                g_all, w_all = g, w
                break
            g_all = torch.empty((n, g.shape[1], d), dtype=g.dtype, device=g.device)
            if w is not None:
                w_all = torch.empty((n, g.shape[1]), dtype=g.dtype, device=g.device)
        g_all[start:start + g.shape[0]] = g
        if w is not None:
            w_all[start:start + g.shape[0]] = w
    bad.raise_if_any()
    return g_all, w_all


def apply_weights(g: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    return g if w is None else g * w.unsqueeze(-1)


def input_gradients(model: nn.Module, x: torch.Tensor, output: str = "logit",
                    batch_size: int = DEFAULT_BATCH_SIZE, name: str = "model") -> torch.Tensor:
    """Per-row input gradients of ``model``: ``(n, d)``, or ``(n, k, d)`` for k > 1 outputs.

    ``output="logit"`` differentiates the logit, ``"prob"`` its sigmoid. Detached result,
    same dtype/device as ``x``. Raises FauxError for non-finite outputs or gradients (``name``
    names the model in errors).
    """
    x = check_x(x)
    check_output(output)
    b = check_batch_size(batch_size)
    check_model(model, x, name)
    with scoring_mode(model):
        g = apply_weights(*input_grads(model, x, output, b, name))
    return g[:, 0] if g.shape[1] == 1 else g
