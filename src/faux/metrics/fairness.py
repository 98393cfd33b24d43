"""Fairness metrics: pure functions of arrays (no model, no training loop).

* probes: how well a fresh classifier reads an attribute off a hidden layer
  (:func:`logistic_probe_auroc`, :func:`mlp_probe_auroc`, :func:`either_direction`);
* counterfactual proxy swap: the rows a declared edit changes (:func:`swapped_rows`) and
  how far the model's output moves (:func:`mean_abs_change`);
* demographic parity: :func:`demographic_parity_gap`;
* mutual information between each column and a binary attribute
  (:func:`mutual_information`), the ground truth Table 3's feature rankings are scored
  against.

AUROCs are :func:`faux.metrics.ranking.auroc` (NaN when the labels hold one class).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from faux.metrics.ranking import auroc


def logistic_probe_auroc(h_fit, t_fit, h_eval, t_eval) -> float:
    """Held-out AUROC of a logistic regression (scikit-learn, L2, C = 1) of ``t`` on the
    standardised hidden layer: fitted on ``h_fit``, scored on ``h_eval``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(h_fit)
    lr = LogisticRegression(C=1.0, max_iter=1000).fit(scaler.transform(h_fit), t_fit)
    return auroc(t_eval, lr.decision_function(scaler.transform(h_eval)))


def mlp_probe_auroc(h_fit, t_fit, h_eval, t_eval, *, width: int = 32, steps: int = 200,
                    lr: float = 1e-2, seed: int = 0) -> float:
    """Held-out AUROC of a one-hidden-layer MLP (``width`` ReLU units, ``steps`` full-batch
    Adam steps at ``lr``, seeded by ``seed``) of ``t`` on the standardised hidden layer:
    fitted on ``h_fit``, scored on ``h_eval``. A cheap nonlinear probe (no early stopping)."""
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(h_fit)
    hf = torch.as_tensor(scaler.transform(h_fit), dtype=torch.float32)
    tf = torch.as_tensor(np.asarray(t_fit).reshape(-1), dtype=torch.float32)
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        torch.manual_seed(int(seed))
        net = torch.nn.Sequential(torch.nn.Linear(hf.shape[1], int(width)), torch.nn.ReLU(),
                                  torch.nn.Linear(int(width), 1))
        opt = torch.optim.Adam(net.parameters(), lr=float(lr))
        for _ in range(int(steps)):
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(hf)[:, 0], tf)
            loss.backward()
            opt.step()
    with torch.no_grad():
        score = net(torch.as_tensor(scaler.transform(h_eval), dtype=torch.float32))[:, 0]
    return auroc(t_eval, score.numpy())


def either_direction(auc: float) -> float:
    """An AUROC read in either direction, ``max(auc, 1 - auc)`` (>= 0.5; NaN stays NaN): a
    probe that ranks the groups the wrong way round reads them as well."""
    return max(auc, 1.0 - auc)


def swapped_rows(x, edits: Sequence[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per edit ``(i, j)`` whose columns some row of ``x`` holds (one-hot == 1): those rows,
    and the same rows with columns i and j exchanged. Edits no row holds are left out."""
    x = np.asarray(x, dtype=np.float32)
    out = []
    for i, j in edits:
        sel = (x[:, i] == 1) | (x[:, j] == 1)
        if not sel.any():
            continue
        xs = x[sel].copy()
        xs[:, [i, j]] = xs[:, [j, i]]
        out.append((x[sel], xs))
    return out


def mean_abs_change(before: Sequence, after: Sequence) -> tuple[float, int]:
    """Mean ``|after - before|`` over every value of the paired arrays, and their count;
    ``(nan, 0)`` when there is none."""
    diffs = [np.abs(np.asarray(a) - np.asarray(b)) for b, a in zip(before, after)]
    if not diffs:
        return float("nan"), 0
    d = np.concatenate(diffs)
    return float(d.mean()), int(d.size)


def demographic_parity_gap(yhat, group) -> float:
    """``|P(yhat = 1 | group = 1) - P(yhat = 1 | group = 0)|`` of binary predictions."""
    yhat, group = np.asarray(yhat).reshape(-1), np.asarray(group).reshape(-1)
    return float(abs(yhat[group == 1].mean() - yhat[group == 0].mean()))


def mutual_information(x: np.ndarray, c: np.ndarray, discrete: np.ndarray, seed: int,
                       n_neighbors: int = 3) -> np.ndarray:
    """Per-column MI (nats) between x and binary c (scikit-learn's Ross 2014 estimator;
    ``discrete`` flags the columns treated as discrete)."""
    from sklearn.feature_selection import mutual_info_classif

    return mutual_info_classif(x, c, discrete_features=np.asarray(discrete, dtype=bool),
                               n_neighbors=n_neighbors, random_state=int(seed))
