"""Transparency reports (paper A.10): one importance score per feature.

- ``faux_report``: ``|mean over rows of v(x)|`` where ``v`` is the aux model's input
  gradient (eq. 40, ``method="faux"``), its normalised gradient (``"faux_ng"``), or its
  integrated-gradients attributions (``"faux_ig"``). The paper evaluates it on the rows with
  c = 0 (select them before calling). Only the aux model is used, as in eq. 40.
- ``fliptest_report``: ``|mean over rows of (x - G(x))|`` (eq. 39).
- ``aggregate_groups``: one-hot columns of a categorical feature aggregated by their mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from faux.errors import ConfigError, DataError
from faux.methods.alignment import check_aux_not_constant, normalise_gradients
from faux.methods.autograd import (
    DEFAULT_BATCH_SIZE,
    apply_weights,
    check_batch_size,
    check_model,
    check_output,
    check_x,
    input_grads,
    scoring_mode,
)
from faux.methods.ig import ig_attributions
from faux.methods.options import IGMethod, NGReading, Output, ScoreOptions

REPORT_METHODS = ("faux", "faux_ng", "faux_ig")


def faux_report(aux: nn.Module, x0: torch.Tensor, method: str = "faux", *,
                output: Output = ScoreOptions.aux_output, ng: NGReading = "sample",
                ig_steps: int = ScoreOptions.ig_steps, ig_baseline=ScoreOptions.ig_baseline,
                ig_method: IGMethod = ScoreOptions.ig_method,
                batch_size: int = DEFAULT_BATCH_SIZE) -> torch.Tensor:
    """Feature scores ``(d,)`` (``(k, d)`` for an aux with k > 1 outputs) from the aux model.

    ``output`` is the aux output differentiated (as ``aux_output`` in ``faux.score``). ``ng``
    (for "faux_ng") defaults to "sample" (unit-norm rows), not ``faux.score``'s default: the
    per-feature reading divides each feature by its own spread, which would erase the
    feature-magnitude information a ranking needs (a linear aux would rank all features
    equal).
    """
    if method not in REPORT_METHODS:
        raise ConfigError(f"unknown report method {method!r}; valid: {', '.join(REPORT_METHODS)}")
    x0 = check_x(x0)
    check_output(output)
    b = check_batch_size(batch_size)
    check_model(aux, x0, "aux")
    with scoring_mode(aux):
        if method == "faux_ig":
            v, any_grad = ig_attributions(aux, x0, ig_baseline, ig_steps, output, ig_method, b,
                                          "aux")
            if not any_grad:
                check_aux_not_constant(torch.zeros(1))
        else:
            g, w = input_grads(aux, x0, output, b, "aux")
            check_aux_not_constant(g, w)
            v = apply_weights(g, w)
            if method == "faux_ng":
                v = normalise_gradients(v, ng)
    r = v.mean(dim=0).abs().detach()  # (k, d)
    return r[0] if r.shape[0] == 1 else r


def fliptest_report(x0, gx0) -> torch.Tensor:
    """``|mean(x0 - G(x0))|`` per feature (eq. 39), ``(d,)``; ``gx0`` is the generator's output."""
    a = torch.as_tensor(x0)
    g = torch.as_tensor(gx0)
    if a.ndim != 2 or a.shape != g.shape:
        raise DataError(f"x0 {tuple(a.shape)} and G(x0) {tuple(g.shape)} must both have shape "
                        "(n, d); pass the generator's output for the same rows")
    diff = a.to(torch.promote_types(a.dtype, g.dtype)) - g
    if not bool(torch.isfinite(diff).all()):
        raise DataError("x0 - G(x0) has non-finite values; check the generator's output")
    return diff.mean(dim=0).abs()


def aggregate_groups(scores, groups: Sequence[str]) -> dict[str, float]:
    """``{feature name: mean of its columns' scores}``, in order of first appearance.

    ``groups[j]`` names the original feature of column j (the same name on every one-hot
    column of a categorical feature), as in A.10.
    """
    s = np.asarray(torch.as_tensor(scores).detach().cpu(), dtype=np.float64)
    if s.ndim != 1 or len(groups) != s.shape[0]:
        raise DataError(f"scores has shape {s.shape} but {len(groups)} group names were given; "
                        "pass one original-feature name per column")
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for name, v in zip(groups, s):
        sums[name] = sums.get(name, 0.0) + float(v)
        counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sums}
