"""The autograd passes the gradient tests read (FTA, fAux, fAux+NG, fAux+IG): their options
checked, the target's input gradients or integrated-gradients attributions (kept across
calls that score the same target on the same rows), the aux's, and the final check of the
scores. Each method class (``faux.methods.builtin``) combines these with its own formula
from ``faux.methods.alignment``.

Every gradient comes back factored, ``(g, w)`` with the gradient ``w[..., None] * g``
(``w`` None for a logit: see ``faux.methods.alignment``). The passes assume validated rows
and models and an active ``scoring_mode``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from faux.errors import ConfigError, FauxError
from faux.methods.alignment import (
    as_target_gradient,
    check_aux_not_constant,
    check_ng,
    row_factor,
)
from faux.methods.autograd import (
    check_batch_size,
    check_output,
    input_grads,
    nonfinite_rows,
)
from faux.methods.ig import ig_attributions
from faux.methods.options import ScoreOptions

#: results a target memo keeps (oldest dropped first)
MEMO_ENTRIES = 8

Factored = tuple[torch.Tensor, torch.Tensor | None]


def checked_options(options: ScoreOptions) -> ScoreOptions:
    """``options`` with ``p`` as a float and ``batch_size`` as an int; ConfigError in one line
    for an output, ``ng``, ``p``, ``eps`` or ``batch_size`` out of range (the integrated
    gradients' options are checked where they are read, ``faux.methods.ig``)."""
    check_output(options.output, "output")
    check_output(options.aux_output, "aux_output")
    batch_size = check_batch_size(options.batch_size)
    check_ng(options.ng)
    try:
        p = float(options.p)
    except (TypeError, ValueError):
        p = -1.0
    if not p > 0:
        raise ConfigError(f"p must be a positive number (or inf), got {options.p!r}")
    if not (isinstance(options.eps, int | float) and options.eps >= 0):
        raise ConfigError(f"eps must be a non-negative number, got {options.eps!r}")
    return options.replace(p=p, batch_size=batch_size)


def _baseline_key(baseline):
    if isinstance(baseline, torch.Tensor):
        return ("tensor", id(baseline), baseline._version)
    return baseline


def _memo_target(memo: dict | None, target: nn.Module, x: torch.Tensor, opts: tuple,
                 compute: Callable[[], Factored]) -> Factored:
    """``compute()`` (a model's factored gradients), or a copy of a stored result for the
    same model object with the same weights, the same ``x`` tensor (unchanged since: the
    tensors' version counters, which in-place updates such as an optimiser step advance) and
    the options ``opts`` the target part reads."""
    if memo is None:
        return compute()
    weights = tuple(p._version for p in target.parameters())
    key = (id(target), id(x), x._version, weights, opts)
    hit = memo.get(key)
    if hit is None or hit[0] is not target or hit[1] is not x:
        g, w = compute()
        while len(memo) >= MEMO_ENTRIES:      # a caller scoring batch after batch (the audit)
            memo.pop(next(iter(memo)))        # keeps only the latest few
        memo[key] = hit = (target, x, g, w)   # the objects kept alive: their ids stay theirs
    g, w = hit[2], hit[3]
    return g.clone(), (None if w is None else w.clone())


def target_gradients(target: nn.Module, x: torch.Tensor, o: ScoreOptions,
                     memo: dict | None = None) -> Factored:
    """The target's input gradient ``(n, d)`` of ``o.output``, factored; with ``memo`` (a dict
    the caller keeps), computed once per target, rows and options and copied after."""
    def compute():
        g, w = input_grads(target, x, o.output, o.batch_size, "target")
        return as_target_gradient(g), (None if w is None else w[:, 0])

    return _memo_target(memo, target, x, ("grad", o.output, o.batch_size), compute)


def target_attributions(target: nn.Module, x: torch.Tensor, o: ScoreOptions,
                        memo: dict | None = None) -> Factored:
    """The target's integrated-gradients attributions ``(n, d)`` of ``o.output``, factored by
    ``row_factor``; memoised as :func:`target_gradients`."""
    def compute():
        attr, _ = ig_attributions(target, x, o.ig_baseline, o.ig_steps, o.output, o.ig_method,
                                  o.batch_size, "target")
        return row_factor(as_target_gradient(attr))

    opts = ("ig", o.output, o.ig_steps, o.ig_method, _baseline_key(o.ig_baseline),
            o.batch_size)
    return _memo_target(memo, target, x, opts, compute)


def aux_gradients(aux: nn.Module, x: torch.Tensor, o: ScoreOptions,
                  memo: dict | None = None) -> Factored:
    """The aux's input gradients ``(n, k, d)`` of ``o.aux_output``, factored; FauxError when
    they are zero on every row (the aux ignores x). With ``memo``, computed once per aux, rows
    and options (several tests scoring the same rows with the same aux share it)."""
    def compute():
        g_a, w_a = input_grads(aux, x, o.aux_output, o.batch_size, "aux")
        check_aux_not_constant(g_a, w_a)
        return g_a, w_a

    return _memo_target(memo, aux, x, ("aux_grad", o.aux_output, o.batch_size), compute)


def aux_attributions(aux: nn.Module, x: torch.Tensor, o: ScoreOptions) -> Factored:
    """The aux's integrated-gradients attributions ``(n, k, d)`` of ``o.aux_output``, factored
    by ``row_factor``; FauxError when no path gradient is non-zero."""
    g_a, any_grad = ig_attributions(aux, x, o.ig_baseline, o.ig_steps, o.aux_output,
                                    o.ig_method, o.batch_size, "aux")
    if not any_grad:
        check_aux_not_constant(torch.zeros(1))
    return row_factor(g_a)


def finished(s: torch.Tensor, method: str) -> torch.Tensor:
    """The scores detached; FauxError naming ``method`` when any is not finite (an overflow of
    the dtype)."""
    s = s.detach()
    n_bad = nonfinite_rows(s)
    if n_bad:
        raise FauxError(f"non-finite {method} scores at {n_bad} rows; check inputs/model "
                        "(the score overflows the dtype: try float64 or aux_output='logit')")
    return s
