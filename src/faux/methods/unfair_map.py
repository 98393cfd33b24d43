"""Unfair Map (Maity et al. 2021): a gradient-flow attack inside the sensitive subspace.

The fair metric is the one of ``faux.methods.fta_lin``: the sensitive subspace S is spanned
by the orthonormalised coefficients of logistic regressions predicting c from x (rows of V),
``P = Vᵀ V``. For each individual x0 (with label y) the attack runs, vectorised over rows,

    x <- x + lr · ∇_x [ L(y, f(x)) - reg · ||(I - P)(x - x0)||² ]

for ``steps`` steps from x = x0 (no random start), with L the per-row binary cross-entropy
of the target's logit. The defaults are those of the reference implementation
(``smaityumich/individual-fairness-testing``): 200 steps, constant lr 1e-2, and
reg 25 (their loss is twice the cross-entropy and their reg 50, so 25 with plain CE). The
regulariser's gradient, ``-2 reg (I - P)(x - x0)``, is applied in closed form; autograd
differentiates only L.

Per-point score: ``L(y, f(x_T)) / L(y, f(x0))``, the reference's loss ratio (its test
compares the mean ratio's lower confidence bound with δ = 1.25); ``score="difference"``
gives ``L(x_T) - L(x0)`` instead, which does not blow up where ``L(x0)`` is tiny. The loss
of x0 is floored at 1e-12 in the ratio.

Labels: ``y`` given to ``score`` (the individuals' true labels, as in the reference); when
``y`` is None the target's own hard predictions ``1[f(x0) > 0]`` are used, so the attack
measures how far the prediction can be pushed away from what it was.

The metric is refitted for each seed by the caller (``fit(x, c, seed=s)`` for s in 10, 20,
..., 100, A.11.3).
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
from torch.nn import functional as F

from faux.errors import ConfigError, DataError
from faux.methods.autograd import check_model, check_x, forward_logits, scoring_mode
from faux.methods.fta_lin import SubspaceMetric

#: the per-point score: the loss ratio, or the loss difference (see the module docstring)
Score = Literal["ratio", "difference"]
SCORES: tuple[str, ...] = get_args(Score)


class UnfairMap(SubspaceMetric):
    """``fit(x, c, seed)`` learns the sensitive subspace; ``score(target, x, y)`` attacks."""

    def __init__(self, steps: int = 200, lr: float = 1e-2, reg: float = 25.0,
                 score: Score = "ratio", C: float = 1.0, solver: str = "lbfgs",
                 max_iter: int = 1000, batch_size: int = 8192):
        if int(steps) < 0 or not lr > 0 or not reg >= 0:
            raise ConfigError(f"UnfairMap needs steps >= 0, lr > 0, reg >= 0; got "
                              f"{steps}, {lr}, {reg}")
        if score not in SCORES:
            raise ConfigError(f"score={score!r} is not one of {list(SCORES)}")
        self.steps, self.lr, self.reg, self.score_kind = int(steps), float(lr), float(reg), score
        self._metric_settings(C, solver, max_iter, batch_size)

    def _labels(self, y, n: int, x: torch.Tensor) -> torch.Tensor | None:
        if y is None:
            return None
        y = torch.as_tensor(y).to(device=x.device, dtype=x.dtype).reshape(-1)
        if y.shape[0] != n:
            raise DataError(f"y has {y.shape[0]} values but x has {n} rows")
        if not bool(((y == 0) | (y == 1)).all()):
            raise DataError("y must be binary 0/1 labels (or None for the target's predictions)")
        return y

    def attack(self, target: torch.nn.Module, x, y=None) -> tuple[torch.Tensor, torch.Tensor,
                                                                  torch.Tensor]:
        """``(x_T, L(x0), L(x_T))``: attacked points (n, d) and per-row losses (n,)."""
        x = check_x(x)
        V = self._basis(x)
        check_model(target, x, "target")
        n = x.shape[0]
        y = self._labels(y, n, x)
        xs, l0s, lts = [], [], []
        with scoring_mode(target):
            for start in range(0, n, self.batch_size):
                x0 = x[start:start + self.batch_size].detach()
                if x0.is_inference():
                    x0 = x0.clone()
                m = x0.shape[0]
                with torch.no_grad():
                    logit0 = forward_logits(target, x0, "target", x.shape[1])
                if logit0.shape[1] != 1:
                    raise ConfigError("the target model must return one logit per row")
                yc = (logit0[:, 0] > 0).to(x.dtype) if y is None else y[start:start + m]
                l0 = F.binary_cross_entropy_with_logits(logit0[:, 0], yc, reduction="none")
                xt = x0.clone()
                for _ in range(self.steps):
                    xt.requires_grad_(True)
                    logit = forward_logits(target, xt, "target", x.shape[1])[:, 0]
                    loss = F.binary_cross_entropy_with_logits(logit, yc, reduction="sum")
                    (g,) = torch.autograd.grad(loss, xt)
                    with torch.no_grad():
                        delta = xt - x0
                        orth = delta - (delta @ V.T) @ V
                        xt = xt + self.lr * (g - 2.0 * self.reg * orth)
                with torch.no_grad():
                    lt = F.binary_cross_entropy_with_logits(
                        forward_logits(target, xt, "target", x.shape[1])[:, 0], yc,
                        reduction="none")
                xs.append(xt.detach())
                l0s.append(l0)
                lts.append(lt)
        xt, l0, lt = torch.cat(xs), torch.cat(l0s), torch.cat(lts)
        if not bool(torch.isfinite(xt).all() & torch.isfinite(lt).all()):
            raise ConfigError("the Unfair Map attack diverged (non-finite values); lower lr")
        return xt, l0, lt

    def score(self, target: torch.nn.Module, x, y=None) -> torch.Tensor:
        """Per-row score (n,): loss ratio (default) or difference after the attack."""
        _, l0, lt = self.attack(target, x, y)
        if self.score_kind == "ratio":
            return lt / l0.clamp_min(1e-12)
        return lt - l0
