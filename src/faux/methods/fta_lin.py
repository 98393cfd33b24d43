"""FTA with a fair metric from a linear auxiliary model ("FTA + lin. aux", Section 4.1.1).

The fair metric (Yurochkin et al. 2020, SenSR; the same family as Ruoss et al. 2020) comes
from logistic regressions predicting the protected attribute c from x: their coefficient
vectors, orthonormalised, span the *sensitive subspace* S (rows of ``V``, shape (k, d);
k = 1 for one binary c). The weighted (Mahalanobis) input metric

    d(x, x')² = (x - x')ᵀ (I - P + η P) (x - x'),   P = Vᵀ V,

treats moves along S as (almost, η -> 0) free: individuals that differ only in directions
that encode c are "similar". FTA bounds ``|f(x) - f(x')| <= L d(x, x')`` in a shrinking
neighbourhood of x; the local constant is the dual norm of the gradient,
``sqrt(||(I - P) ∇f||² + ||P ∇f||² / η)``, which for η -> 0 ranks individuals exactly as

    score(x) = ||V ∇f_tar(x)||_2      (``norm="projection"``, the default)

i.e. the size of the target's gradient inside the sensitive subspace; for one binary c it is
``|∇f_tar(x) · v̂|`` with v̂ the unit LR coefficient vector. This is also the metric whose
ball Unfair Map (``faux.methods.unfair_map``) searches, as the paper uses "the same weighted
l_p norm" for both.

``norm="weighted"`` is the other reading of "weighted l_p norm": a per-feature weighting,
``score = ||w ⊙ ∇f_tar(x)||_p`` with ``w_i = ||V[:, i]||_2`` (|v̂_i| for one attribute).

The target's gradient is that of its probability (``output="prob"``, default, as for FTA in
``faux.methods.gradients``) or of its logit (``output="logit"``).

The logistic regressions are scikit-learn's (``C=1``, ``max_iter=1000``). With the default
``lbfgs`` solver the fit does not depend on ``seed`` (a deterministic solver); the paper
refits "with different random seeds" and reports ±0.000 - 0.003, consistent with that.
Pass ``solver="saga"`` (or "sag", "liblinear") for a seed-dependent fit.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from faux.errors import ConfigError, DataError
from faux.methods.autograd import check_output, check_x, input_gradients
from faux.methods.options import Output, ScoreOptions

#: the fair metric's norm of the gradient (see the module docstring)
Norm = Literal["projection", "weighted"]
NORMS: tuple[str, ...] = get_args(Norm)


def _labels(c, n: int) -> np.ndarray:
    c = c.detach().cpu().numpy() if isinstance(c, torch.Tensor) else np.asarray(c)
    if c.ndim == 2 and c.shape[1] == 1:
        c = c[:, 0]
    if c.ndim not in (1, 2) or c.shape[0] != n:
        raise DataError(f"c has shape {c.shape} but x has {n} rows; pass one protected "
                        "attribute value per row (shape (n,) or (n, k))")
    if c.dtype.kind == "f" and not np.isfinite(c).all():
        raise DataError("c contains NaN values; drop those rows first")
    return c


def sensitive_subspace(x, c, *, seed: int = 0, C: float = 1.0, solver: str = "lbfgs",
                       max_iter: int = 1000) -> torch.Tensor:
    """Orthonormal basis ``V`` (k, d) of the span of logistic-regression coefficients
    predicting each protected attribute from ``x``.

    ``c``: (n,) with two or more values (more than two: multinomial, one coefficient row
    per class) or (n, k), one column per attribute. Returned as float32 on ``x``'s device.
    """
    x = check_x(x)
    n = x.shape[0]
    c = _labels(c, n)
    cols = [c] if c.ndim == 1 else [c[:, j] for j in range(c.shape[1])]
    xn = x.detach().cpu().double().numpy()
    rows = []
    for j, col in enumerate(cols):
        values = np.unique(col)
        if values.size < 2:
            raise DataError(f"protected attribute {j} takes a single value ({values[0]!r}) in "
                            "every row; both groups must be present to fit the fair metric")
        lr = LogisticRegression(C=C, solver=solver, max_iter=max_iter, random_state=seed)
        lr.fit(xn, col)
        rows.append(lr.coef_)
    W = np.concatenate(rows, axis=0)  # (m, d)
    U, sv, Vt = np.linalg.svd(W, full_matrices=False)
    if sv.size == 0 or sv[0] <= 0:
        raise DataError("the logistic regression of c on x has all-zero coefficients; x "
                        "carries no linear information about c")
    keep = sv > sv[0] * max(W.shape) * np.finfo(float).eps
    V = Vt[keep]
    # a fixed sign convention (largest |entry| positive), so results do not flip across BLAS
    sign = np.sign(V[np.arange(V.shape[0]), np.abs(V).argmax(1)])
    V = V * sign[:, None]
    return torch.as_tensor(V, dtype=x.dtype, device=x.device)


class SubspaceMetric:
    """A fair metric learnt from (x, c): the sensitive subspace spanned by the coefficients of
    logistic regressions predicting c (``sensitive_subspace``). Shared by FTA + lin. aux and
    Unfair Map: ``fit(x, c, seed)`` learns it, ``_basis(x)`` returns it for ``x``."""

    def _metric_settings(self, C: float, solver: str, max_iter: int, batch_size: int) -> None:
        self.C, self.solver, self.max_iter = float(C), solver, int(max_iter)
        self.batch_size = int(batch_size)
        self.V: torch.Tensor | None = None

    def fit(self, x, c, y=None, seed: int = 0):
        """Fit the logistic regression(s) of ``c`` on ``x``; ``y`` is unused."""
        self.V = sensitive_subspace(x, c, seed=seed, C=self.C, solver=self.solver,
                                    max_iter=self.max_iter)
        return self

    def _basis(self, x: torch.Tensor) -> torch.Tensor:
        if self.V is None:
            raise ConfigError(f"{type(self).__name__} used before fit; call fit(x, c) first")
        if self.V.shape[1] != x.shape[1]:
            raise DataError(f"x has {x.shape[1]} columns but the fair metric was fitted on "
                            f"{self.V.shape[1]}; pass the features used in fit")
        return self.V.to(device=x.device, dtype=x.dtype)


class FTALin(SubspaceMetric):
    """FTA under the fair metric of a linear aux; ``fit(x, c)`` then ``score(target, x)``."""

    def __init__(self, norm: Norm = "projection", p: float = ScoreOptions.p,
                 output: Output = ScoreOptions.output,
                 C: float = 1.0, solver: str = "lbfgs", max_iter: int = 1000,
                 batch_size: int = 65536):
        if norm not in NORMS:
            raise ConfigError(f"norm={norm!r} is not one of {list(NORMS)}")
        if not p >= 1:
            raise ConfigError(f"p must be >= 1 (a norm), got {p}")
        self.norm, self.p, self.output = norm, float(p), check_output(output)
        self._metric_settings(C, solver, max_iter, batch_size)

    def weights(self) -> torch.Tensor:
        """Per-feature weights ``w_i = ||V[:, i]||`` of ``norm="weighted"``."""
        if self.V is None:
            raise ConfigError("FTALin.weights called before fit; call fit(x, c) first")
        return self.V.norm(dim=0)

    def score(self, target: torch.nn.Module, x: torch.Tensor, y=None) -> torch.Tensor:
        """Per-row score (n,), detached, on ``x``'s device; ``y`` is unused."""
        x = check_x(x)
        V = self._basis(x)
        g = input_gradients(target, x, output=self.output, batch_size=self.batch_size)
        if g.ndim != 2:
            raise ConfigError("the target model must return one logit per row, shape (n,)")
        if self.norm == "projection":
            return torch.linalg.vector_norm(g @ V.T, ord=self.p, dim=1)
        return torch.linalg.vector_norm(g * V.norm(dim=0), ord=self.p, dim=1)
