"""The groups' outcomes under the model, as a model-risk file needs them beside the scores:
per group the selection rate, true and false positive rates and accuracy (fairlearn's
``MetricFrame``), the demographic-parity and equalized-odds differences and ratios, and the
model's performance, each with an interval.

The data are read in batches, so the rows are kept as counts per (group, label, decision)
cell (:class:`OutcomeCounts`); ``MetricFrame`` is evaluated on those cells with the counts as
sample weights, which gives exactly the metrics of the rows. Intervals:

- a rate of a group (k of n): Wilson's score interval (``scipy.stats.binomtest``), which
  does not collapse at 0 or 1; a group with no rows is reported as empty, never as a rate;
- a difference or a ratio between groups: the percentile bootstrap over rows (the cells
  resampled as one multinomial draw of all rows, ``B`` draws, a fixed seed); a ratio whose
  denominator is 0 is reported as undefined.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BOOTSTRAP = 1000
LEVEL = 0.95
SEED = 20240607


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson's interval of a rate k/n, None when n is 0."""
    if n <= 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


class OutcomeCounts:
    """Rows counted per (group, label, decision)."""

    def __init__(self):
        self.cells: dict[tuple, int] = {}

    def add(self, groups, y, decision) -> None:
        frame = pd.DataFrame({"g": np.asarray(groups).astype(str),
                              "y": np.asarray(y).astype(int),
                              "d": np.asarray(decision).astype(int)})
        for key, n in frame.value_counts(sort=False).items():
            self.cells[key] = self.cells.get(key, 0) + int(n)

    def table(self) -> pd.DataFrame:
        rows = [(*k, n) for k, n in sorted(self.cells.items())]
        return pd.DataFrame(rows, columns=["group", "y", "decision", "n"])


def _rates(t: pd.DataFrame, counts: np.ndarray, groups) -> dict:
    """Per group: rows, selection rate, TPR, FPR, accuracy of the cells of ``t`` with
    ``counts`` rows each ((cells,), or (cells, B) for B bootstrap draws at once)."""
    out = {}
    for g in groups:
        m = (t["group"] == g).to_numpy()
        y, d = t["y"].to_numpy()[m], t["decision"].to_numpy()[m]
        n = counts[m]
        tot = n.sum(axis=0)
        pos = n[y == 1].sum(axis=0)
        neg = n[y == 0].sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[g] = {"rows": tot,
                      "selection_rate": n[d == 1].sum(axis=0) / tot,
                      "tpr": n[(y == 1) & (d == 1)].sum(axis=0) / pos,
                      "fpr": n[(y == 0) & (d == 1)].sum(axis=0) / neg,
                      "accuracy": n[y == d].sum(axis=0) / tot}
    return out


def _metric_frame(t: pd.DataFrame):
    from fairlearn.metrics import (
        MetricFrame,
        count,
        false_positive_rate,
        selection_rate,
        true_positive_rate,
    )
    from sklearn.metrics import accuracy_score

    metrics = {"selection_rate": selection_rate, "tpr": true_positive_rate,
               "fpr": false_positive_rate, "accuracy": accuracy_score}
    w = t["n"].to_numpy().astype(float)
    mf = MetricFrame(metrics={**metrics, "rows": count}, y_true=t["y"].to_numpy(),
                     y_pred=t["decision"].to_numpy(), sensitive_features=t["group"].to_numpy(),
                     sample_params={m: {"sample_weight": w} for m in metrics})
    return mf


def _gaps(rates: dict, groups) -> dict:
    """Largest minus smallest over groups (differences) and smallest over largest (ratios)
    of the selection rate, and equalized odds (the larger of the TPR and FPR gaps)."""
    def stack(key):
        return np.stack([np.asarray(rates[g][key], dtype=float) for g in groups])

    sel, tpr, fpr = stack("selection_rate"), stack("tpr"), stack("fpr")
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "demographic_parity_difference": np.nanmax(sel, 0) - np.nanmin(sel, 0),
            "demographic_parity_ratio": np.where(np.nanmax(sel, 0) > 0,
                                                 np.nanmin(sel, 0) / np.nanmax(sel, 0), np.nan),
            "equalized_odds_difference": np.maximum(np.nanmax(tpr, 0) - np.nanmin(tpr, 0),
                                                    np.nanmax(fpr, 0) - np.nanmin(fpr, 0)),
        }


def group_outcomes(counts: OutcomeCounts, *, groups=None, B: int = BOOTSTRAP,
                   seed: int = SEED, level: float = LEVEL) -> dict:
    """Per group metrics with Wilson intervals, and the gaps between the groups with
    bootstrap intervals. ``groups``: every level of the attribute, so that a level with no
    rows is reported as empty."""
    t = counts.table()
    seen = sorted(t["group"].unique().tolist())
    groups = seen if groups is None else [str(g) for g in groups]
    present = [g for g in groups if g in seen and t.loc[t["group"] == g, "n"].sum() > 0]
    mf = _metric_frame(t)
    by = {}
    for g in groups:
        if g not in present:
            by[g] = {"rows": 0, "empty": True}
            continue
        sub = t[t["group"] == g]
        n = int(sub["n"].sum())
        k_sel = int(sub.loc[sub["decision"] == 1, "n"].sum())
        pos = sub[sub["y"] == 1]
        neg = sub[sub["y"] == 0]
        row = {"rows": n, "empty": False}
        for key, (k, m) in {"selection_rate": (k_sel, n),
                            "tpr": (int(pos.loc[pos["decision"] == 1, "n"].sum()),
                                    int(pos["n"].sum())),
                            "fpr": (int(neg.loc[neg["decision"] == 1, "n"].sum()),
                                    int(neg["n"].sum())),
                            "accuracy": (int(sub.loc[sub["y"] == sub["decision"], "n"].sum()),
                                         n)}.items():
            row[key] = float(mf.by_group.loc[g, key]) if m else None
            row[f"{key}_interval"] = wilson(k, m, level)
        by[g] = row
    out = {"by_group": by, "empty_groups": [g for g in groups if g not in present],
           "interval": {"rates": "Wilson", "gaps": f"percentile bootstrap over rows, B={B}, "
                        f"seed {seed}", "level": level}}
    if len(present) < 2:
        out["gaps"] = None
        out["note"] = "fewer than two groups with rows: no difference between groups"
        return out
    total = t["n"].to_numpy()
    point = _gaps(_rates(t, total, present), present)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(int(total.sum()), total / total.sum(), size=B).T  # (cells, B)
    boot = _gaps(_rates(t, draws, present), present)
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    gaps = {}
    for key, v in point.items():
        b = boot[key][np.isfinite(boot[key])]
        gaps[key] = {"value": None if not np.isfinite(v) else float(v),
                     "interval": None if b.size < B // 2 else
                     (float(np.percentile(b, lo)), float(np.percentile(b, hi)))}
    out["gaps"] = gaps
    return out


def performance(counts: OutcomeCounts, level: float = LEVEL) -> dict:
    """The model's accuracy and balanced accuracy over every row at its decision threshold,
    with Wilson's interval for the accuracy."""
    t = counts.table()
    n = int(t["n"].sum())
    if n == 0:
        return {"rows": 0}
    right = int(t.loc[t["y"] == t["decision"], "n"].sum())
    pos, neg = t[t["y"] == 1], t[t["y"] == 0]
    tpr = pos.loc[pos["decision"] == 1, "n"].sum() / max(pos["n"].sum(), 1)
    tnr = neg.loc[neg["decision"] == 0, "n"].sum() / max(neg["n"].sum(), 1)
    return {"rows": n, "accuracy": right / n, "accuracy_interval": wilson(right, n, level),
            "balanced_accuracy": float((tpr + tnr) / 2),
            "positive_rate": float(t.loc[t["decision"] == 1, "n"].sum() / n)}
