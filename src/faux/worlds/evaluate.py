"""The truth of a world for a model, and how an estimated counterfactual scores against it.

Per row, with ``p = proba(X)`` and ``p_cf = proba(X_cf)`` (a model that reads c gets ``c``
with X and ``1 - c`` with X_cf): the true effect ``p_cf - p`` and the true flip
``(p_cf >= t) != (p >= t)``, t = 0.5 (the audit's default decision threshold).

An estimate is a per-row effect and a per-row flag. For a counterfactual ``X_hat``
(:func:`score_transport`) they are ``proba(X_hat) - p`` and the decision change there; for
``faux audit`` (:func:`score_audit`) its ``effect`` column (median over its aux models of
``p_cf - p``) and its ``flagged`` column (the decision changes under every aux model).
:func:`agreement` compares them with the truth: precision and recall of the flags against
the true flips (NaN when nothing is flagged, or nothing truly flips), Spearman's rank
correlation and the mean absolute error of the estimated effect against the true one
(Spearman is NaN when either is constant: a fair model's true effect is 0 everywhere), the
rows flagged, the true flips, the hits and the false flags (flagged rows that do not truly
flip; for a fair model every flag is false).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: the decision threshold: a decision is p >= THRESHOLD
THRESHOLD = 0.5


def predict(model, X: pd.DataFrame, c) -> np.ndarray:
    """``model``'s P(y = 1) on rows X of groups c (c is read only by a model that reads it)."""
    if model.reads_c:
        from faux.worlds.models import with_c

        return np.asarray(model.proba(with_c(X, c)), dtype=float)
    return np.asarray(model.proba(X), dtype=float)


@dataclass
class Truth:
    """A model's predictions at a world's rows and at their exact counterfactuals."""

    p: np.ndarray
    p_cf: np.ndarray
    threshold: float = THRESHOLD

    @property
    def effect(self) -> np.ndarray:
        return self.p_cf - self.p

    @property
    def flips(self) -> np.ndarray:
        t = self.threshold
        return (self.p_cf >= t) != (self.p >= t)


def truth(model, world, threshold: float = THRESHOLD) -> Truth:
    return Truth(predict(model, world.X, world.c), predict(model, world.X_cf, 1 - world.c),
                 threshold)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho, NaN when either side is constant."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b).statistic)


def agreement(true_flips, flags, true_effect, est_effect) -> dict:
    """The scores of an estimate (flags, effects) against the truth; see the module."""
    true_flips = np.asarray(true_flips, dtype=bool)
    flags = np.asarray(flags, dtype=bool)
    true_effect = np.asarray(true_effect, dtype=float)
    est_effect = np.asarray(est_effect, dtype=float)
    if not (len(true_flips) == len(flags) == len(true_effect) == len(est_effect)):
        raise ValueError("the truth and the estimate need one value per row")
    hits, n_flagged, n_true = int((flags & true_flips).sum()), int(flags.sum()), int(true_flips.sum())
    return {"n_rows": len(flags), "n_true_flips": n_true, "n_flagged": n_flagged, "hits": hits,
            "precision": hits / n_flagged if n_flagged else float("nan"),
            "recall": hits / n_true if n_true else float("nan"),
            "spearman": spearman(est_effect, true_effect),
            "mae": float(np.mean(np.abs(est_effect - true_effect))) if len(flags) else float("nan"),
            "false_flags": n_flagged - hits}


def score_transport(model, world, X_hat: pd.DataFrame, tr: Truth | None = None,
                    threshold: float = THRESHOLD) -> dict:
    """Scores of an estimated counterfactual ``X_hat`` of the world's rows (moved to 1 - c)."""
    tr = truth(model, world, threshold) if tr is None else tr
    if list(X_hat.columns) != list(world.X.columns) or len(X_hat) != len(world.X):
        raise ValueError("X_hat must have X's shape and columns")
    p_hat = predict(model, X_hat, 1 - world.c)
    flags = (p_hat >= tr.threshold) != (tr.p >= tr.threshold)
    return agreement(tr.flips, flags, tr.effect, p_hat - tr.p)


def audit_rows(result, n: int) -> pd.DataFrame:
    """An ``AuditResult``'s per-row table (``scores``, or ``out_dir/scores.parquet``) in row
    order, checked to hold ``n`` rows and the effect verdict's columns."""
    scores = result.scores
    if scores is None:
        raise ValueError("the audit result holds no per-row scores")
    missing = sorted({"flagged", "effect", "p"} - set(scores.columns))
    if missing:
        raise ValueError(f"the audit's scores lack {missing}: run it with the effect verdict")
    if "row_id" in scores.columns:
        scores = scores.sort_values("row_id", kind="stable")
    if len(scores) != n:
        raise ValueError(f"the audit scored {len(scores)} rows, the world has {n}")
    return scores.reset_index(drop=True)


def score_audit(result, model, world, tr: Truth | None = None,
                threshold: float = THRESHOLD) -> dict:
    """``faux audit``, end to end: its per-row ``flagged`` and ``effect`` against the truth;
    ``p_gap`` is the largest difference between its ``p`` and ``model.proba`` (the audit
    called the same model on the same rows: about 0); ``chance_hi``: the upper end of the
    interval of what chance flags by the audit's own measure (None where it gives none)."""
    tr = truth(model, world, threshold) if tr is None else tr
    scores = audit_rows(result, len(world.X))
    effect = scores["effect"].to_numpy(float)
    out = agreement(tr.flips, scores["flagged"].to_numpy(bool), tr.effect,
                    np.nan_to_num(effect, nan=0.0))
    out["p_gap"] = float(np.max(np.abs(scores["p"].to_numpy(float) - tr.p)))
    effects = result.summary.get("effects") or {}
    first = next(iter(effects.values()), {})
    interval = (first.get("expected_false_flags") or {}).get("interval")
    out["chance_hi"] = None if interval is None else float(interval[1])
    return out


def run_audit(model, world, seed: int = 0, **kwargs):
    """``faux.audit`` of the model's fitted object on the world's rows (X without c), at the
    audit's defaults unless ``kwargs`` say otherwise; in memory, quiet."""
    from faux.audit.core import audit

    if model.reads_c:
        raise ValueError("the audit reads X without c; a model that reads c is not audited")
    kwargs = {"progress": False, "report": False, "seed": seed, **kwargs}
    return audit(model.obj, world.X, world.c, **kwargs)
