"""Bootstrap intervals of average precision and the three-state rule that decides a claim.

A cell of a table (a method on a column) has a mean AP over runs (its aux seeds, GAN seeds...)
on one set of test rows. Its variability has two sources: which runs were drawn and which
rows were drawn. :func:`cell_draws` resamples both in one bootstrap replicate: the rows by
multinomial counts (``B x n`` weights, :func:`row_weights`) shared by every method of the
column (a *paired* bootstrap: every method is scored on the same resampled rows), and the
runs by indices shared by every method with the same run seeds (fAux, fAux+NG and fAux+IG
share their aux models, so their runs pair). AP on resampled rows is the weighted AP of the
original ranking (:func:`weighted_ap`), so the replicates cost two cumulative sums per run.

A claim is a statistic of the cells (a difference of APs, or an AP against a bound); its
interval is the percentile interval of that statistic over the replicates, and
:func:`decide` reads the interval: *holds* when the whole interval lies on the claim's side
of the bound, *fails* when it lies on the other side, *undecided* otherwise. Two machines
whose numbers differ within the noise then decide the same way, or one of them stays
undecided; they never decide opposite ways unless the noise is beyond the interval.

The replicates use a fixed seed (:data:`SEED`) and :data:`B` draws: rerunning on the same
numbers gives the same intervals.
"""

from __future__ import annotations

import numpy as np

#: bootstrap replicates (the one place the default is written)
B = 2000
#: the bootstrap's seed: the same numbers always give the same intervals
SEED = 20240607
#: two-sided coverage of the intervals
LEVEL = 0.95
HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
STATES = (HOLDS, FAILS, UNDECIDED)


def rng(seed: int = SEED) -> np.random.Generator:
    return np.random.default_rng(int(seed))


def row_weights(n: int, b: int, gen: np.random.Generator) -> np.ndarray:
    """``(b, n)`` float32 counts: how often each of ``n`` rows is drawn in each of ``b``
    resamples of ``n`` rows with replacement."""
    n, b = int(n), int(b)
    draws = gen.integers(0, n, size=(b, n)) + n * np.arange(b)[:, None]
    return np.bincount(draws.ravel(), minlength=b * n).reshape(b, n).astype(np.float32)


def run_indices(r: int, b: int, gen: np.random.Generator) -> np.ndarray:
    """``(b, r)`` indices: ``r`` runs drawn with replacement, ``b`` times."""
    return gen.integers(0, int(r), size=(int(b), int(r)))


def weighted_ap(labels, scores, weights) -> np.ndarray:
    """AP of ``scores`` against 0/1 ``labels`` with row weights (``(b, n)`` or ``(n,)``),
    one AP per weight row: scikit-learn's AP (tied scores form one threshold) with each row
    counted as often as its weight. All-ones weights give ``average_precision_score``; NaN
    where a weight row holds no positive."""
    y = np.asarray(labels).reshape(-1).astype(bool)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float32))
    if y.shape != s.shape or w.shape[1] != s.size:
        raise ValueError(f"labels ({y.size}), scores ({s.size}) and weights ({w.shape[1]}) "
                         "differ in length")
    order = np.argsort(-s, kind="mergesort")
    ys = y[order]
    pos = np.flatnonzero(ys)                         # the positives' places in the ranking
    if pos.size == 0:
        return np.full(w.shape[0], np.nan)
    ends = np.r_[np.flatnonzero(np.diff(s[order])), s.size - 1]    # last place of each tie
    group_end = np.repeat(ends, np.diff(np.r_[-1, ends]))[pos]     # ... of each positive's
    wo = w[:, order]
    # weights are counts: their float32 sums are exact below 2**24 rows
    seen = np.cumsum(wo, axis=1, dtype=np.float32)[:, group_end].astype(np.float64)
    wp = wo[:, pos]
    tp_cum = np.cumsum(wp, axis=1, dtype=np.float32)
    tp = (tp_cum if np.array_equal(group_end, pos)            # no positive in a tie
          else tp_cum[:, np.searchsorted(pos, group_end, side="right") - 1]).astype(np.float64)
    total = tp_cum[:, -1].astype(np.float64)
    # each positive adds its weight times the precision at the end of its tie
    ap = (wp * (tp / np.where(seen > 0, seen, 1.0))).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, ap / np.where(total > 0, total, 1.0), np.nan)


def percentile_interval(draws, level: float = LEVEL) -> tuple[float, float]:
    """The two-sided percentile interval of bootstrap ``draws`` (NaN draws left out)."""
    d = np.asarray(draws, dtype=np.float64).reshape(-1)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan"), float("nan")
    a = (1.0 - float(level)) / 2.0
    lo, hi = np.quantile(d, [a, 1.0 - a])
    return float(lo), float(hi)


def bootstrap_mean(values, b: int = B, seed: int = SEED,
                   level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    idx = run_indices(x.size, b, rng(seed))
    return percentile_interval(x[idx].mean(axis=1), level)


def cell_draws(labels, cells: dict, b: int = B, seed: int = SEED) -> tuple[dict, list[str]]:
    """Bootstrap replicates of each method's mean AP on one column.

    ``cells``: ``{method: {"scores": (runs, n) array or None, "ap_runs": [AP per run],
    "seeds": run seeds or None}}``. Rows are resampled when ``labels`` and every method's
    scores are given (the same resampled rows for all), runs always; methods with equal
    seeds share their run draws (paired), the others draw their own. Returns
    ``({method: (b,) mean AP per replicate}, what was resampled)``."""
    gen = rng(seed)
    rows = labels is not None and all(c.get("scores") is not None for c in cells.values())
    w = row_weights(len(np.asarray(labels).reshape(-1)), b, gen) if rows else None
    runs_of: dict = {}
    out = {}
    for name in sorted(cells):
        c = cells[name]
        if rows:
            sc = np.atleast_2d(np.asarray(c["scores"]))
            per_run = np.stack([weighted_ap(labels, s, w) for s in sc], axis=1)
        else:
            ap = np.asarray(c["ap_runs"], dtype=np.float64).reshape(1, -1)
            per_run = np.broadcast_to(ap, (b, ap.shape[1]))
        r = per_run.shape[1]
        key = (tuple(int(x) for x in c["seeds"]) if c.get("seeds") is not None
               else ("own", name))
        if key not in runs_of:
            runs_of[key] = run_indices(r, b, gen)
        idx = runs_of[key]
        out[name] = np.take_along_axis(per_run, idx, axis=1).mean(axis=1)
    what = (["rows"] if rows else []) + (["runs"] if any(
        len(np.asarray(c["ap_runs"]).reshape(-1)) > 1 for c in cells.values()) else [])
    return out, what


def decide(lo: float, hi: float, bound: float = 0.0, strict: bool = True) -> str:
    """The state of a claim "statistic > bound" (``strict``) or "statistic >= bound" whose
    interval is ``[lo, hi]``: holds when the interval clears the bound on the claim's side,
    fails when it clears it on the other side, undecided otherwise (or without an interval)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return UNDECIDED
    if (lo > bound) if strict else (lo >= bound):
        return HOLDS
    if (hi <= bound) if strict else (hi < bound):
        return FAILS
    return UNDECIDED


def counts(states) -> dict[str, int]:
    """``{holds: .., fails: .., undecided: ..}`` of a list of states."""
    states = list(states)
    return {s: states.count(s) for s in STATES}


def summary(states) -> str:
    """``holds 4/8, fails 1/8, undecided 3/8``."""
    states = list(states)
    n = len(states)
    return ", ".join(f"{s} {k}/{n}" for s, k in counts(states).items())
