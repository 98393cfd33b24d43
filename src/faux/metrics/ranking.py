"""Ranking metrics: thin wrappers over scikit-learn with the checks the harness needs."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

from faux.errors import FauxError


def _np(a) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a, dtype=np.float64).reshape(-1)


def average_precision(labels, scores) -> float:
    """AP of ``scores`` against binary ``labels`` (NaN when labels hold one class only)."""
    y, s = _np(labels), _np(scores)
    if y.shape != s.shape:
        raise FauxError(f"labels ({y.size}) and scores ({s.size}) differ in length")
    if not np.isfinite(s).all():
        raise FauxError(f"{int((~np.isfinite(s)).sum())} non-finite scores; check the scorer")
    if y.min() == y.max():
        return float("nan")
    return float(average_precision_score(y.astype(int), s))


def top_fraction_labels(ifs, fraction: float = 0.3) -> np.ndarray:
    """Binary labels marking the top ``fraction`` of individuals by IFS (ties broken by order)."""
    v = _np(ifs)
    k = max(1, int(round(fraction * v.size)))
    lab = np.zeros(v.size, dtype=int)
    lab[np.argsort(-v, kind="stable")[:k]] = 1
    return lab


def ap_top_fraction(ifs, scores, fraction: float = 0.3) -> float:
    """AP when the top ``fraction`` by ground-truth IFS are the positives."""
    return average_precision(top_fraction_labels(ifs, fraction), scores)


def auroc(labels, scores) -> float:
    y, s = _np(labels), _np(scores)
    if y.min() == y.max():
        return float("nan")
    return float(roc_auc_score(y.astype(int), s))


def separation_auroc(scores_unfair, scores_fair) -> float:
    """AUROC of telling the unfair model's scores from the fair model's (0.5 = no separation)."""
    a, b = _np(scores_unfair), _np(scores_fair)
    return auroc(np.r_[np.ones(a.size), np.zeros(b.size)], np.r_[a, b])


def ndcg(true_relevance, predicted_scores, k: int | None = None) -> float:
    """NDCG of a predicted feature ranking against true relevances (scikit-learn)."""
    t, p = _np(true_relevance), _np(predicted_scores)
    if t.shape != p.shape:
        raise FauxError(f"relevance ({t.size}) and scores ({p.size}) differ in length")
    return float(ndcg_score(t[None, :], p[None, :], k=k))
