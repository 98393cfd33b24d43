"""fAux path: the counterfactual effect of c by successive first-order steps (A.12's remedy).

eq. 9 reads the target's slope along the aux inverse at x only: one first-order expansion,
blind to a target that is flat around x and steep further on (a row far from the decision
boundary whose counterfactual crosses it; A.12, "it may be necessary to consider
successive first order expansions"). This module walks the aux inverse instead. The moved
quantity ``h(x) = u . a(x)`` (a combination of the aux's outputs, below) goes from
``h(x_0)`` to a goal in K equal steps ``delta = (goal - h(x_0)) / K``; each step is eq. 23's
minimum-norm solution of the first-order expansion at the current point,

    x_{k+1} = x_k + delta * g_k / (g_k . g_k),   g_k = grad h(x_k),

so the gradient is re-evaluated K times, and the effect is ``f_tar(x_K) - f_tar(x_0)``. For a
linear aux the path is a straight line and the effect of a linear target is eq. 9's score
times the aux step, exactly; for a curved aux the end point's h differs from the goal by a
first-order error that shrinks with K.

The aux is read on its logits (the project's aux MLPs return logits; a probability would
saturate and make ``1 / g.g`` blow up). ``aux_kind`` says what c is:

- ``"logit"`` (binary c): each aux output column is one binary logit, moved to its mirror
  ``-a(x_0)`` (the other group, as confidently); several columns (several protected
  attributes) are several candidates.
- ``"softmax"`` (one k-class c, a logit per class): towards each class j other than the
  current one (the argmax at x_0), the margin ``a_j - a_cur`` is moved to its mirror.
- ``"regression"`` (continuous c): each output column is moved by ``+sd`` and by ``-sd``.

Of the candidates the one with the largest ``|effect|`` is reported (``which``: its column or
class; ``direction``: the sign of its aux step).

Rows that cannot move: where the gradient of h vanishes (or the step is not finite) on a
candidate's path, that candidate is abandoned; a row none of whose candidates reaches its
K-th step is ``stuck``: effect 0, end point x_0 (as eq. 9 scores 0 where the aux gradient
vanishes), and the flag says so. Every row stuck raises FauxError (the aux ignores x).

Support rule: with training rows given (``support_box``), the box of their per-feature
``[min, max]`` widened on both sides by ``margin`` times the feature's range; a row whose
reported path has any point ``x_1..x_K`` outside it is flagged ``outside``. Points are
never clipped: the effect is the one of the path as walked.

Cost, all batched over rows (the Python loop is over the K steps only): K aux forward and
backward passes over n * m rows (m candidates) and one more forward for the end values; two
target calls (x_0, and the m end points), K + 1 with ``trace`` (the target along the
reported path). A black-box target is a ``target_fn`` taking numpy rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from faux.errors import ConfigError, FauxError
from faux.methods.alignment import row_factor
from faux.methods.autograd import (
    DEFAULT_BATCH_SIZE,
    check_batch_size,
    check_model,
    check_output,
    check_x,
    forward_logits,
    scoring_mode,
)
from faux.methods.first_order import min_norm_step, outside, scalar_gradient, widened_range
from faux.methods.options import AUX_KINDS, AuxKind, Output, PathOptions, ScoreOptions


@dataclass
class PathResult:
    """Per row: ``effect`` the signed ``f_tar(x_K) - f_tar(x_0)`` of the reported candidate;
    ``end`` its x_K (n, d); ``which`` its aux column (logit, regression) or class (softmax),
    -1 where stuck; ``direction`` the sign of its aux step (0 where it did not move);
    ``stuck``/``outside`` the flags of the module docstring; ``aux_start``/``aux_end`` the
    moved quantity h at x_0 and x_K and ``aux_goal`` where it was sent; ``trace`` (n, K + 1)
    the target's outputs along the reported path when asked for, else None."""

    effect: torch.Tensor
    end: torch.Tensor
    which: torch.Tensor
    direction: torch.Tensor
    stuck: torch.Tensor
    outside: torch.Tensor
    aux_start: torch.Tensor
    aux_end: torch.Tensor
    aux_goal: torch.Tensor
    trace: torch.Tensor | None = None


def check_steps(steps) -> int:
    """K as an int >= 1; ConfigError in one line otherwise."""
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ConfigError(f"faux_path steps must be an integer >= 1 (K first-order steps), "
                          f"got {steps!r}; e.g. steps=8")
    return int(steps)


def support_box(x_train, margin: float = PathOptions.margin
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-feature ``[min - margin * range, max + margin * range]`` of the training rows."""
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin >= 0:
        raise ConfigError(f"faux_path margin must be a number >= 0, got {margin!r}; e.g. 0.1")
    xt = check_x(x_train).detach()
    return widened_range(xt.amin(dim=0), xt.amax(dim=0), margin)


def _candidates(out0: torch.Tensor, aux_kind: str, sd: float | None):
    """``(U (n, m, k), goal (n, m), valid (n, m), which (n, m))``: the moved quantities
    ``h = U . a``, where each is sent, which are real candidates, and their column/class."""
    n, k = out0.shape
    eye = torch.eye(k, dtype=out0.dtype, device=out0.device)
    cols = torch.arange(k, device=out0.device).expand(n, k)
    if aux_kind == "logit":
        U = eye.expand(n, k, k)
        return U, -out0, torch.ones_like(out0, dtype=torch.bool), cols
    if aux_kind == "softmax":
        if k < 2:
            raise ConfigError("faux_path aux_kind='softmax' needs an aux with k >= 2 logits "
                              f"(one per class), got {k}; use aux_kind='logit' for a binary c")
        cur = out0.argmax(dim=1)
        U = eye.expand(n, k, k) - eye[cur].unsqueeze(1)
        margin = out0 - out0.gather(1, cur[:, None])
        return U, -margin, cols != cur[:, None], cols
    if sd is None or isinstance(sd, bool) or not isinstance(sd, int | float) or not sd > 0:
        raise ConfigError(f"faux_path aux_kind='regression' needs sd > 0 (the step of c), "
                          f"got {sd!r}; pass sd=<std of c>")
    U = torch.cat([eye, eye]).expand(n, 2 * k, k)
    goal = torch.cat([out0 + float(sd), out0 - float(sd)], dim=1)
    return U, goal, torch.ones_like(goal, dtype=torch.bool), torch.cat([cols, cols], dim=1)


def _walk(aux: nn.Module, x0: torch.Tensor, U: torch.Tensor, goal: torch.Tensor,
          valid: torch.Tensor, h0: torch.Tensor, steps: int, box, keep: bool):
    """K steps of every candidate at once (n * m stacked rows). Returns the end points
    (n, m, d), ``moved`` (n, m: reached its K-th step), ``outside`` (n, m), h at the end
    (n, m) and, with ``keep``, the points x_1..x_{K-1} (each (n, m, d))."""
    n, m, k = U.shape
    d = x0.shape[1]
    xs = x0.unsqueeze(1).expand(n, m, d).reshape(n * m, d).clone()
    u = U.reshape(n * m, k)
    delta = ((goal - h0) / steps).reshape(n * m)
    moved = valid.reshape(n * m).clone()
    off = torch.zeros(n * m, dtype=torch.bool, device=x0.device)

    def h(t):
        return (forward_logits(aux, t, "aux", d) * u).sum(dim=1)

    points = []
    for step in range(steps):
        # the gradient as a row factor w = max |g_i| times gh: no underflow in its square
        gh, w = row_factor(scalar_gradient(h, xs))
        ok = (w > 0) & torch.isfinite(w)
        nxt = xs + min_norm_step(gh, delta, ok, w)
        ok &= torch.isfinite(nxt).all(dim=1)
        moved &= ok
        xs = torch.where(moved.unsqueeze(1), nxt, xs).detach()
        if box is not None:
            off |= moved & outside(xs, box[0], box[1])
        if keep and step < steps - 1:
            points.append(xs.view(n, m, d))
    with torch.no_grad():
        h_end = h(xs)
    return (xs.view(n, m, d), moved.view(n, m), off.view(n, m), h_end.view(n, m), points)


def _target_values(target, target_fn, x: torch.Tensor, output: str) -> torch.Tensor:
    """The target's compared output on rows x, shape (rows,)."""
    if target_fn is not None:
        out = torch.as_tensor(np.asarray(target_fn(x.detach().cpu().numpy()), dtype=np.float64))
        if out.numel() != x.shape[0]:
            raise FauxError(f"target_fn returned {out.numel()} values for {x.shape[0]} rows; "
                            "it must return one output per row, shape (rows,)")
        v = out.reshape(-1).to(dtype=x.dtype, device=x.device)
    else:
        with torch.no_grad():
            z = forward_logits(target, x, "target", x.shape[1])
        if z.shape[1] != 1:
            raise FauxError(f"the target model returned {z.shape[1]} outputs per row; it must "
                            "return one logit per row, shape (n,) or (n, 1)")
        v = torch.sigmoid(z[:, 0]) if output == "prob" else z[:, 0]
    if not bool(torch.isfinite(v).all()):
        raise FauxError("non-finite target outputs on the path; check the target model "
                        "(or the support flags: the path may have left the data)")
    return v


def _chunk(target, target_fn, aux, x0, steps, output, aux_kind, sd, box, trace) -> dict:
    """The whole computation on one chunk of rows (see :func:`path_effect`)."""
    n = x0.shape[0]
    with torch.no_grad():
        out0 = forward_logits(aux, x0, "aux", x0.shape[1])
    U, goal, valid, cols = _candidates(out0, aux_kind, sd)
    h0 = (U * out0.unsqueeze(1)).sum(dim=2)
    ends, moved, outside, h_end, points = _walk(aux, x0, U, goal, valid, h0, steps, box, trace)
    m = U.shape[1]
    f0 = _target_values(target, target_fn, x0, output)
    fk = _target_values(target, target_fn, ends.reshape(n * m, -1), output).view(n, m)
    eff = fk - f0.unsqueeze(1)
    best = torch.where(moved, eff.abs(), -1.0).argmax(dim=1)
    rows = torch.arange(n, device=x0.device)
    stuck = ~moved[rows, best]
    pick = {"effect": eff[rows, best], "end": ends[rows, best], "which": cols[rows, best],
            "direction": torch.sign(goal - h0)[rows, best], "outside": outside[rows, best],
            "aux_start": h0[rows, best], "aux_end": h_end[rows, best],
            "aux_goal": goal[rows, best]}
    keep = ~stuck
    for key in ("effect", "direction", "outside"):
        pick[key] = torch.where(keep, pick[key], torch.zeros_like(pick[key]))
    pick["end"] = torch.where(keep.unsqueeze(1), pick["end"], x0)
    pick["which"] = torch.where(keep, pick["which"], -1)
    pick["aux_end"] = torch.where(keep, pick["aux_end"], pick["aux_start"])
    pick["stuck"] = stuck
    if trace:
        mid = [_target_values(target, target_fn, p[rows, best], output) for p in points]
        tr = torch.stack([f0, *mid, f0 + pick["effect"]], dim=1)
        pick["trace"] = torch.where(keep.unsqueeze(1), tr, f0.unsqueeze(1))
    return pick


def path_effect(target: nn.Module | None, aux: nn.Module, x, *, steps: int = PathOptions.steps,
                output: Output = ScoreOptions.output, aux_kind: AuxKind = PathOptions.aux_kind,
                sd: float | None = PathOptions.sd,
                support: tuple[torch.Tensor, torch.Tensor] | None = None,
                target_fn: Callable[[np.ndarray], np.ndarray] | None = None,
                trace: bool = False, batch_size: int = DEFAULT_BATCH_SIZE) -> PathResult:
    """The counterfactual effect of c on ``target`` by K successive first-order steps of the
    aux inverse (module docstring), per row of ``x`` (n, d): a :class:`PathResult`.

    ``target``: a torch module returning one logit per row (``output`` "prob" compares its
    sigmoid, "logit" the logit); or None with ``target_fn``, a black box called on numpy
    rows (m, d) returning the compared output (m,) itself (``output`` is then unused).
    ``aux``: a torch module returning logits (n,)/(n, k), or values for ``aux_kind``
    "regression" (moved by ``+-sd``). ``support``: ``support_box(x_train, margin)``, or None
    (no row flagged). ``steps``: K >= 1. ``batch_size``: rows (times candidates) per chunk.
    """
    steps = check_steps(steps)
    x = check_x(x)
    check_output(output)
    b = check_batch_size(batch_size)
    if aux_kind not in AUX_KINDS:
        raise ConfigError(f"faux_path aux_kind={aux_kind!r} is not one of {list(AUX_KINDS)}")
    if (target is None) == (target_fn is None):
        raise ConfigError("faux_path needs exactly one of target (a torch module) and "
                          "target_fn (a black box on numpy rows)")
    if target is not None:
        check_model(target, x, "target")
    check_model(aux, x, "aux")
    box = None
    if support is not None:
        box = tuple(torch.as_tensor(s, dtype=x.dtype, device=x.device) for s in support)
    xd = x.detach().clone() if x.is_inference() else x.detach()
    with scoring_mode(target, aux):
        width = forward_logits(aux, xd[:1], "aux", x.shape[1]).shape[1]
        per = max(1, b // (2 * width if aux_kind == "regression" else width))
        parts = [_chunk(target, target_fn, aux, xd[s:s + per], steps, output, aux_kind, sd,
                        box, trace) for s in range(0, x.shape[0], per)]
    res = PathResult(**{key: torch.cat([p[key] for p in parts]) for key in parts[0]})
    if bool(res.stuck.all()):
        raise FauxError("aux model's gradient is zero on every row's path: it ignores x; "
                        "retrain it (or check that it reads these features)")
    return res
