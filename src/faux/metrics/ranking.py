"""Ranking metrics: thin wrappers over scikit-learn with the checks the harness needs.

AP and AUROC are scikit-learn's (tied scores form one threshold: AP is the step-wise
precision-recall sum over distinct scores, AUROC counts a tied pair as one half). Both are
NaN when the labels hold one class only (AP's recall, AUROC's pairs are undefined there);
aggregates must treat NaN as "no value", not as 0. Bad input (lengths that differ, labels
that are not 0/1, non-finite scores, empty arrays) raises :class:`~faux.errors.FauxError`.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

from faux.errors import DataError, FauxError


def _np(a) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a, dtype=np.float64).reshape(-1)


def _labels_scores(labels, scores, what: str = "scores") -> tuple[np.ndarray, np.ndarray]:
    y, s = _np(labels), _np(scores)
    if y.shape != s.shape:
        raise FauxError(f"labels ({y.size}) and {what} ({s.size}) differ in length")
    if y.size == 0:
        raise FauxError(f"no labels and {what}: the ranking is empty")
    if not np.isin(y, (0.0, 1.0)).all():
        raise FauxError(f"labels must be 0/1, got values {np.unique(y)[:5].tolist()}")
    if not np.isfinite(s).all():
        raise FauxError(f"{int((~np.isfinite(s)).sum())} non-finite {what}; check the scorer")
    return y.astype(int), s


def average_precision(labels, scores) -> float:
    """AP of ``scores`` against binary ``labels`` (NaN when labels hold one class only)."""
    y, s = _labels_scores(labels, scores)
    if y.min() == y.max():
        return float("nan")
    return float(average_precision_score(y, s))


#: the ``ap_top30`` metric's share of positives: the top 30 % by IFS, fixed whatever the
#: reading's own ``fraction`` (faux.harness.schema.Reading), so it compares across readings
TOP30 = 0.3


def top_fraction_labels(ifs, fraction: float) -> np.ndarray:
    """Binary labels marking the top ``fraction`` of individuals by IFS.

    ``k = max(1, round(fraction * n))`` positives; ties at the cut are broken by position
    (the earlier individual wins), so exactly ``k`` are marked."""
    if not 0.0 < float(fraction) <= 1.0:
        raise FauxError(f"fraction must be in (0, 1], got {fraction}")
    v = _np(ifs)
    if not np.isfinite(v).all():
        raise FauxError(f"{int((~np.isfinite(v)).sum())} non-finite IFS values")
    k = max(1, int(round(float(fraction) * v.size)))
    lab = np.zeros(v.size, dtype=int)
    lab[np.argsort(-v, kind="stable")[:k]] = 1
    return lab


def ap_top_fraction(ifs, scores, fraction: float = TOP30) -> float:
    """AP when the top ``fraction`` by ground-truth IFS are the positives."""
    return average_precision(top_fraction_labels(ifs, fraction), scores)


def auroc(labels, scores) -> float:
    """ROC AUC of ``scores`` against binary ``labels`` (NaN when labels hold one class)."""
    y, s = _labels_scores(labels, scores)
    if y.min() == y.max():
        return float("nan")
    return float(roc_auc_score(y, s))


def separation_auroc(scores_unfair, scores_fair) -> float:
    """AUROC of telling the unfair model's scores from the fair model's (0.5 = no separation)."""
    a, b = _np(scores_unfair), _np(scores_fair)
    return auroc(np.r_[np.ones(a.size), np.zeros(b.size)], np.r_[a, b])


def ndcg(true_relevance, predicted_scores, k: int | None = None) -> float:
    """NDCG of a predicted feature ranking against true relevances (scikit-learn; linear
    gains, ties in the prediction averaged)."""
    t, p = _np(true_relevance), _np(predicted_scores)
    if t.shape != p.shape:
        raise FauxError(f"relevance ({t.size}) and scores ({p.size}) differ in length")
    if t.size < 2:
        raise FauxError(f"NDCG needs at least 2 items to rank, got {t.size}")
    if not (np.isfinite(t).all() and np.isfinite(p).all()):
        raise FauxError("non-finite relevance or scores in NDCG")
    if (t < 0).any():
        raise FauxError("NDCG relevances must be >= 0 (use absolute values)")
    return float(ndcg_score(t[None, :], p[None, :], k=k))



def ndcg_by_name(scores: dict[str, float], relevance: dict[str, float]) -> float:
    """:func:`ndcg` (all items) of per-item scores against true relevances, both keyed by the
    item's name (a feature ranking against its ground truth); ``scores`` must cover every
    item of ``relevance``."""
    names = list(relevance)
    missing = [n for n in names if n not in scores]
    if missing:
        raise DataError(f"feature score lacks {len(missing)} feature(s), e.g. {missing[0]!r}")
    return ndcg([relevance[n] for n in names], [scores[n] for n in names])


def random_ndcg(relevance, n: int, seed: int) -> float:
    """Mean NDCG of ``n`` uniformly random rankings of items with true ``relevance`` (an
    array, or a dict of name -> relevance): the floor to read a ranking's NDCG against."""
    if isinstance(relevance, dict):
        relevance = list(relevance.values())
    rel = np.asarray(relevance, dtype=float)[None, :]
    rng = np.random.default_rng(int(seed))
    return float(np.mean([ndcg_score(rel, rng.random(rel.shape)) for _ in range(int(n))]))

# ------------------------------------------------------------------ prevalence-aware AP
#
# AP's floor rises with the positive rate pi: a ranking that puts every positive last still
# has AP close to ``min_ap(pi)`` on many rows, so raw APs at different prevalences do not
# compare. ``normalised_ap`` rescales to 0 = chance (AP = pi), 1 = perfect.


def normalised_ap(ap: float, prevalence: float) -> float:
    """``(AP - pi) / (1 - pi)``: 0 for a random ranking, 1 for a perfect one, negative below
    chance. NaN where it is undefined: pi = 0 or 1 (one class), or either input NaN."""
    ap, pi = float(ap), float(prevalence)
    if not (np.isfinite(ap) and np.isfinite(pi)) or not 0.0 < pi < 1.0:
        return float("nan")
    return (ap - pi) / (1.0 - pi)


def min_ap(prevalence: float) -> float:
    """The lowest AP any ranking can reach at positive rate ``pi`` (many rows; every positive
    ranked after every negative): ``1 - ((1 - pi) / pi) * ln(1 / (1 - pi))``. It rises from 0
    at pi -> 0 to 1 at pi = 1. NaN outside [0, 1]."""
    pi = float(prevalence)
    if not 0.0 <= pi <= 1.0 or not np.isfinite(pi):
        return float("nan")
    if pi == 0.0:
        return 0.0
    if pi == 1.0:
        return 1.0
    return float(1.0 - ((1.0 - pi) / pi) * np.log(1.0 / (1.0 - pi)))


def prevalence_cap(lowest_ap: float, tol: float = 1e-12) -> float:
    """The largest positive rate at which ``lowest_ap`` is still reachable: the pi solving
    ``min_ap(pi) = lowest_ap`` (bisection; ``min_ap`` is increasing). A table whose lowest AP
    in a column is ``a`` cannot have had more than ``prevalence_cap(a)`` positives there."""
    a = float(lowest_ap)
    if not 0.0 <= a <= 1.0:
        raise FauxError(f"an AP lies in [0, 1], got {lowest_ap}")
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if min_ap(mid) <= a:
            lo = mid
        else:
            hi = mid
    return lo
