"""Baselines the audit's scores are compared with, on the audit's sample (the rows that are
held in memory; at most ``MAX_ROWS`` of them):

- ``consistency``: the kNN consistency of Zemel et al. (2013) as aif360 computes it
  (``aif360.sklearn.metrics.consistency_score``), per row: ``|yhat_i - mean_{j in kNN(i)}
  yhat_j|`` over the ``N_NEIGHBORS`` nearest rows (the row itself included, as in aif360)
  in the audit's standardised feature units, ``yhat`` the model's predicted label
  (probability > 0.5; a regressor's predicted value, in its own units). The protected attribute is not a feature of the audit, so the
  neighbours never see it. aif360's number is ``1 - mean`` of the per-row terms. The
  neighbours are found by brute force (aif360 uses a ball tree, which is far slower on
  wide one-hot encoded data): the same neighbours, except which of several rows at exactly
  the same distance (duplicate rows) is taken.
- ``fta``: Fairness Through Awareness, the norm of the model's gradient in standardised
  units (the registered ``fta`` method, scored as the audit scores it).

Each is compared with the primary score on the same rows: Spearman's rank correlation and
the overlap of the top ``k`` (``k`` = the sample rows the primary flags; ``FIXED_K`` when
it flags none), ties at the cut shared evenly (the expected overlap under random
tie-breaking).
"""

from __future__ import annotations

import math

import numpy as np

from faux.methods.builtin import FTAMethod

FTA = FTAMethod.name
N_NEIGHBORS = 5  # aif360's default
FIXED_K = 100  # top-k when the primary flags no sample row
MAX_ROWS = 20_000  # rows compared (the sample is subsampled above this)
METHODS = ("consistency", FTA)


def consistency_rows(x: np.ndarray, yhat: np.ndarray, n_neighbors: int = N_NEIGHBORS
                     ) -> np.ndarray:
    """Per-row inconsistency ``|yhat_i - mean of yhat over the n_neighbors nearest rows|``
    (the row itself among them); ``1 - mean`` is aif360's ``consistency_score(x, yhat)``
    (up to the choice among rows at tied distances)."""
    from sklearn.neighbors import NearestNeighbors

    x = np.asarray(x, dtype=np.float64)
    yhat = np.asarray(yhat, dtype=np.float64).reshape(-1)
    nn = NearestNeighbors(n_neighbors=min(n_neighbors, len(x)), algorithm="brute").fit(x)
    idx = nn.kneighbors(x, return_distance=False)
    return np.abs(yhat - yhat[idx].mean(axis=1))


def _membership(s: np.ndarray, k: int) -> np.ndarray:
    """Probability that each row is among the ``k`` highest of ``s`` when ties are broken
    at random (1 above the k-th value, a share of the remaining places at it, 0 below)."""
    if k <= 0:
        return np.zeros(len(s))
    kth = np.sort(s)[::-1][k - 1]
    above, at = s > kth, s == kth
    out = above.astype(np.float64)
    out[at] = (k - above.sum()) / at.sum()
    return out


def top_k_overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Expected fraction of the ``k`` highest rows of ``a`` that are among the ``k`` highest
    of ``b`` (ties at either cut broken at random)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    k = min(int(k), len(a))
    if k <= 0:
        return math.nan
    return float((_membership(a, k) * _membership(b, k)).sum() / k)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either is constant."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(spearmanr(a, b).statistic)


def _num(v: float) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def compare(primary_name: str, primary: np.ndarray, flagged: np.ndarray,
            baselines: dict[str, np.ndarray], *, of_rows: int,
            values: dict[str, float] | None = None) -> dict:
    """``summary["baselines"]``: each baseline's Spearman with the primary score and its
    overlap with the primary's top ``k`` on the same rows (``flagged``: the rows the
    primary flags; ``of_rows``: the rows of the whole data)."""
    n = len(primary)
    n_flag = int(np.asarray(flagged).sum())
    k = n_flag if n_flag else min(FIXED_K, n)
    k_text = (f"k = {k:,}, the sample rows {primary_name} flags" if n_flag else
              f"k = {k:,} (no sample row flagged: the {k:,} highest {primary_name} scores)")
    chance = k / n if n else math.nan
    out = {"rows": int(n), "of_rows": int(of_rows), "sampled": bool(n < of_rows), "k": int(k),
           "flagged_in_sample": n_flag, "k_text": k_text, "top_k_chance": _num(chance),
           "primary": primary_name, "methods": {}}
    labels = {"consistency": f"kNN consistency ({N_NEIGHBORS} neighbours, aif360)",
              FTA: "FTA (gradient norm)"}
    for name, s in baselines.items():
        r, ov = spearman(primary, s), top_k_overlap(primary, s, k)
        r_text = "undefined (constant scores)" if math.isnan(r) else f"{r:+.3f}"
        text = (f"{labels.get(name, name)}: Spearman with {primary_name} {r_text}; "
                f"{ov:.1%} of {primary_name}'s top {k:,} are in its top {k:,} "
                f"({chance:.1%} by chance)")
        m = {"label": labels.get(name, name), "spearman_with_primary": _num(r),
             "top_k_overlap": _num(ov), "text": text}
        if values and name in values:
            m["value"] = _num(values[name])
        out["methods"][name] = m
    return out


def sample_baselines(target, aux_z, sc, primary: str, primary_scores: np.ndarray,
                     threshold: float, *, fd_step: float, batch_size: int, seed: int = 0
                     ) -> dict:
    """The baselines on the audit's sample ``sc`` (``faux.audit.sources.data_scan.Scan``), whose rows
    score ``primary_scores`` with the primary method: FTA scored there (a row's score does not
    depend on its batch), the kNN consistency of the model's predicted labels, and their
    comparison with the primary score (``compare``)."""
    from faux.audit.scores.scoring import Scorer

    x, scores = sc.x, {primary: np.asarray(primary_scores)}
    if len(x) > MAX_ROWS:
        keep = np.sort(np.random.default_rng([seed, 2]).choice(len(x), MAX_ROWS,
                                                               replace=False))
        x, scores[primary] = x[keep], scores[primary][keep]
    if primary != FTA:
        scorer = Scorer(target, aux_z, sc.mean, sc.scale, [FTA], fd_step=fd_step,
                        batch_size=batch_size)
        scores[FTA] = np.concatenate([scorer.score(x[s:s + batch_size])[FTA]
                                      for s in range(0, len(x), batch_size)])
    # a classifier's predicted label; a regressor's predicted value (it has no label)
    out = target.proba(x)
    yhat = out if getattr(target, "regressor", False) else (out > 0.5).astype(np.float64)
    inconsistency = consistency_rows((x - sc.mean) / sc.scale, yhat)
    flagged = scores[primary] > threshold
    return compare(primary, scores[primary], flagged,
                   {"consistency": inconsistency, FTA: scores[FTA]}, of_rows=sc.n_rows,
                   values={"consistency": 1 - float(inconsistency.mean()),
                           FTA: float(np.mean(scores[FTA]))})
