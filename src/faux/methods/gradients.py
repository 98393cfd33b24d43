"""Gradient-based individual-fairness scorers: FTA, fAux (eq. 9), fAux+NG (eq. 10), fAux+IG.

``score(method, target, aux, x, options, **overrides) -> (n,)`` is the public entry point
(``faux.score`` delegates here): it finds the method's class in the registry
(``faux.methods.builtin``: each holds its own formula) and runs it. The formulas are pure
functions of gradients in ``faux.methods.alignment``; the autograd passes they read are in
``faux.methods.gradient_pass`` and ``faux.methods.autograd``. The models are ``nn.Module``s
mapping a float tensor ``(n, d)`` to logits ``(n,)`` or ``(n, 1)``; ``aux`` may return
``(n, k)``, one logit per protected attribute.

How gradients are taken
-----------------------
One autograd pass per model (per aux output) on the summed output, with respect to the
input only (``torch.autograd.grad``): rows of an MLP are independent, so
``d(sum_i f(x_i))/dx_i = df(x_i)/dx_i``. Parameters never accumulate ``.grad``. Scoring runs
under ``torch.enable_grad()`` (also inside ``no_grad``/``inference_mode``) with every
submodule temporarily in eval mode (dropout off, BatchNorm on running statistics, which
also keeps rows independent); each submodule's mode is restored afterwards. Rows are
processed in chunks of ``batch_size``. The dtype and device of ``x`` are kept; the models
must already live on ``x``'s device with ``x``'s dtype (a clear error says otherwise).

``output="prob"`` differentiates ``sigmoid(logit)``; ``"logit"`` the logit itself. Internally a
probability gradient is kept as ``sigma'(logit) * grad(logit)`` (a per-row factor times a
logit-range vector), so confident rows (sigma' ~ 1e-30 in float32) neither underflow in
squares nor lose digits; ``sigma'`` is computed as ``sigmoid(z) * sigmoid(-z)``.

Numerical safety and what is returned
-------------------------------------
- fAux rows whose aux gradient vanishes score 0 (the pseudo-inverse of a zero Jacobian);
  for k > 1 outputs, ``J^T (J J^T)^+`` uses an eigenvalue cut-off (``eps``), see
  ``faux.methods.alignment.faux_scores``. fAux+NG rows where either gradient is zero score 0.
- Non-finite model outputs or gradients raise FauxError with the number of rows; so does a
  non-finite score (an overflow of the dtype). An aux whose gradient is zero on every row
  raises FauxError ("it ignores x; retrain it").

Defaults (and why)
------------------
Every default is written once, in :class:`faux.methods.options.ScoreOptions`.

- ``output="prob"`` for the target: the paper's predictions are probabilities.
- ``aux_output="logit"`` for the aux, whatever ``output`` is: probability gradients vanish
  on confident aux predictions and blow up ``1/||grad f_aux||^2``. Which is better is an
  empirical question that has gone both ways (docs/notebook/methods_notes.md); pass
  ``aux_output="prob"`` to change it.
- ``ng="feature"`` (fAux+NG): per-feature normalisation over the scored rows, then |cosine|,
  the paper's "l2 normalisation" read per feature; ``"sample"`` (per-row unit vectors) makes
  a row's score independent of the rows scored with it (the audit uses it).
- ``ig_baseline="zeros"``, ``ig_method="midpoint"``: see ``faux.methods.ig``.
- ``eps``: relative eigenvalue cut-off of the k > 1 pseudo-inverse (see
  ``faux.methods.alignment.faux_scores``).
"""

from __future__ import annotations

import torch
from torch import nn

from faux.errors import ConfigError
from faux.methods.builtin import Gradient
from faux.methods.options import ScoreOptions
from faux.methods.registry import get, names


def gradient_methods() -> tuple[str, ...]:
    """The registered tests ``score`` computes (subclasses of ``builtin.Gradient``), in
    registry order."""
    return tuple(n for n in names() if issubclass(get(n), Gradient))


def score(method: str, target: nn.Module, aux: nn.Module | None, x: torch.Tensor,
          options: ScoreOptions | dict | None = None, *, target_memo: dict | None = None,
          **overrides) -> torch.Tensor:
    """Per-individual unfairness scores of ``target``, shape ``(n,)``, dtype/device of ``x``.

    Methods: ``fta`` (p-norm of grad f_tar; ``aux`` unused, may be None), ``faux`` (eq. 9),
    ``faux_ng`` (eq. 10), ``faux_ig`` (eq. 9 with integrated gradients of both models).

    ``options`` (a :class:`ScoreOptions` or a dict of its fields) with ``overrides`` (its
    fields as keywords) on top; an unknown name is a ConfigError naming the known ones.
    Fields (defaults in ``ScoreOptions``): ``output`` ("prob"|"logit", target), ``aux_output``
    (default "logit"), ``p`` (fta norm, default 2), ``ng`` ("feature"|"sample"|"feature_rms",
    faux_ng), ``ig_steps``, ``ig_baseline`` ("zeros"|"mean"|tensor (d,)/(n, d)),
    ``ig_method`` ("midpoint"|"trapezoid"|"gausslegendre"), ``eps`` (relative eigenvalue cut-off
    of the pseudo-inverse for k > 1 aux outputs), ``batch_size`` (rows per chunk).

    ``target_memo``: a dict the caller keeps across calls that score the same ``target`` on the
    same ``x`` with several aux models (one per seed): the target's gradients or IG
    attributions are computed once and reused (copies: the cores work in place), with results
    bit for bit those of separate calls.

    Raises ConfigError for an unknown method/option, DataError for bad ``x``, FauxError for a
    model on another device/dtype/width, non-finite outputs or gradients, or an aux whose
    gradient is zero everywhere.
    """
    o = ScoreOptions.of(options, **overrides)
    valid = gradient_methods()
    if method not in valid:
        raise ConfigError(f"unknown gradient method {method!r}; valid: {', '.join(valid)}")
    return get(method).scores(target, aux, x, o, target_memo=target_memo)
