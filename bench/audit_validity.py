"""Does the audit flag the individuals whose decision truly changes with the protected attribute?

Two kinds of ground truth:

- **planted worlds** (``--worlds``): a binary protected attribute ``c``; four features
  independent of it (f1..f4) and two proxies ``p_j = s_j * c + e_j`` (``e_j`` standard normal)
  at a proxy strength ``s``; the label ``1[f1 + 0.5 f2 + (p1 + p2) / 2 + e > t]``. Models are
  trained on f1..f4, p1, p2 (never on c). The true counterfactual of a row holds every noise
  term fixed and flips c, so it moves each proxy by ``s_j (1 - 2c)``; a row's decision *truly
  changes* when the model's decision at 0.5 differs between the row and that counterfactual.
  Models: a logistic regression, an MLP, a gradient-boosted tree ensemble, and a model that
  ignores c and its proxies (a logistic regression on f1..f4 alone), for which every flag is a
  false one (expected: at most about alpha * N within binomial noise).
- **Adult** (``--adult``, from the data root): an MLP Pipeline that one-hot encodes Adult's
  string columns itself, trained without sex and race, audited on the raw rows; swapping
  relationship Husband <-> Wife (only that) is a partial ground truth: the rows whose
  decision flips under it should be among those the audit flags (recall).

For each model: the rows flagged, the rows whose decision truly changes, precision and recall
of the flags against them, and the audit's wall time. Prints ``name: value`` lines and a table.

    PYTHONPATH=src .venv/bin/python bench/audit_validity.py --worlds --rows 4000
    FAUX_DATA_DIR=<data root> PYTHONPATH=src .venv/bin/python bench/audit_validity.py --adult
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import pandas as pd

FEATURES = ["f1", "f2", "f3", "f4", "p1", "p2"]
PROXY_RATIO = (1.0, 0.5)  # p1 carries c at strength s, p2 at s / 2


def planted_world(n: int, strength: float, seed: int = 0):
    """``(X, c, y, X_cf)``: rows, protected attribute, label, and each row's counterfactual
    (c flipped, every noise term held fixed)."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    f = rng.normal(size=(n, 4))
    e = rng.normal(size=(n, 2))
    s = strength * np.asarray(PROXY_RATIO)
    p = c[:, None] * s + e
    p_cf = (1 - c)[:, None] * s + e
    score = f[:, 0] + 0.5 * f[:, 1] + p.mean(axis=1) + 0.5 * rng.normal(size=n)
    y = (score > np.median(score)).astype(int)
    X = pd.DataFrame(np.hstack([f, p]), columns=FEATURES)
    X_cf = pd.DataFrame(np.hstack([f, p_cf]), columns=FEATURES)
    return X, c, y, X_cf


class Blind:
    """A model that ignores c and its proxies: a classifier fitted on f1..f4 only."""

    def __init__(self, est, n_used: int = 4):
        self.est, self.n_used = est, n_used

    def __call__(self, x):
        return self.est.predict_proba(np.asarray(x)[:, :self.n_used])[:, 1]


def world_models(X, y, seed: int = 0) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "logistic": LogisticRegression(max_iter=1000).fit(X.to_numpy(), y),
            "mlp": make_pipeline(StandardScaler(), MLPClassifier(
                (32, 32), max_iter=300, random_state=seed)).fit(X.to_numpy(), y),
            "trees": HistGradientBoostingClassifier(max_iter=100, random_state=seed)
            .fit(X.to_numpy(), y),
            "blind": Blind(LogisticRegression(max_iter=1000).fit(X.to_numpy()[:, :4], y)),
        }


def proba(model, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return model(x) if callable(model) and not hasattr(model, "predict_proba") \
        else model.predict_proba(x)[:, 1]


def agreement(flagged: np.ndarray, truth: np.ndarray) -> dict:
    """Precision and recall of the flags against the rows whose decision truly changes."""
    tp = int((flagged & truth).sum())
    return {"flagged": int(flagged.sum()), "true_changes": int(truth.sum()), "both": tp,
            "precision": tp / flagged.sum() if flagged.sum() else float("nan"),
            "recall": tp / truth.sum() if truth.sum() else float("nan")}


def run_audit(model, X, c, *, seed: int, audit_kw: dict):
    import faux

    t0 = time.perf_counter()
    res = faux.audit(model, X, c, seed=seed, progress=False, report=False, **audit_kw)
    return res, time.perf_counter() - t0


def worlds(rows: int, strengths, seed: int, audit_kw: dict) -> list[dict]:
    out = []
    for s in strengths:
        X, c, y, X_cf = planted_world(rows, s, seed)
        for name, model in world_models(X, y, seed).items():
            p, p_cf = proba(model, X), proba(model, X_cf)
            truth = (p >= 0.5) != (p_cf >= 0.5)
            res, wall = run_audit(model, X, c, seed=seed, audit_kw=audit_kw)
            flagged = res.scores["flagged"].to_numpy().astype(bool)
            row = {"world": f"planted s={s:g}", "model": name, "rows": rows,
                   "primary": res.summary["settings"].get("verdict",
                                                          res.summary["settings"]["primary"]),
                   "mean_abs_true_effect": float(np.abs(p_cf - p).mean()),
                   **agreement(flagged, truth), "wall_s": round(wall, 1)}
            if name == "blind":  # every flag is false: against what the audit expects
                eff = (res.summary.get("effects") or {}).get("c") or {}
                row["expected_false_flags"] = (eff.get("expected_false_flags") or {}).get("count")
                row["alpha_n"] = 0.01 * rows
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def adult_model(seed: int = 0, rows: int | None = None):
    """``(df, X, y, model)``: Adult from the data root (``rows``: a sample of them), its
    features without sex, race, the label and fnlwgt, and an MLP Pipeline (one-hot encoder on
    the string columns, scaler, MLPClassifier (64, 32)) fitted on them."""
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from faux.data.real import read_adult_frame

    df = read_adult_frame(download=False).dropna().reset_index(drop=True)
    if rows:
        df = df.sample(n=min(rows, len(df)), random_state=seed).reset_index(drop=True)
    y = df["income-per-year"].str.startswith(">50K").astype(int).to_numpy()
    X = df.drop(columns=["sex", "race", "income-per-year", "fnlwgt"])
    cats = [c for c in X.columns if X[c].dtype == object]
    nums = [c for c in X.columns if c not in cats]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cats),
                             ("num", StandardScaler(), nums)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Pipeline([("pre", pre), ("mlp", MLPClassifier(
            (64, 32), max_iter=60, random_state=seed))]).fit(X, y)
    return df, X, y, model


def adult(seed: int, audit_kw: dict, rows: int | None = None) -> list[dict]:
    """The MLP Pipeline of :func:`adult_model` on Adult without sex and race, audited for sex
    on the raw rows; the partial ground truth: the married rows whose decision flips when
    relationship Husband <-> Wife (only that)."""
    df, X, y, model = adult_model(seed, rows)
    swap = X.copy()
    rel = X["relationship"]
    swap["relationship"] = rel.map({"Husband": "Wife", "Wife": "Husband"}).fillna(rel)
    married = rel.isin(["Husband", "Wife"]).to_numpy()
    p = model.predict_proba(X)[:, 1]
    p_sw = model.predict_proba(swap)[:, 1]
    truth = ((p >= 0.5) != (p_sw >= 0.5)) & married
    c = (df["sex"] == "Male").astype(int).rename("sex")
    res, wall = run_audit(model, X, c, seed=seed, audit_kw=audit_kw)
    flagged = res.scores["flagged"].to_numpy().astype(bool)
    row = {"world": "adult (Husband <-> Wife)", "model": "mlp pipeline", "rows": len(X),
           "primary": res.summary["settings"].get("verdict", res.summary["settings"]["primary"]),
           "married": int(married.sum()),
           "mean_abs_true_effect": float(np.abs(p_sw - p)[married].mean()),
           **agreement(flagged, truth), "wall_s": round(wall, 1)}
    print(json.dumps(row), flush=True)
    return [row]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", action="store_true", help="the planted worlds")
    ap.add_argument("--adult", action="store_true", help="Adult from the data root")
    ap.add_argument("--rows", type=int, default=4000, help="rows per planted world")
    ap.add_argument("--adult-rows", type=int, default=None, help="a sample of Adult's rows")
    ap.add_argument("--strengths", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", type=int, default=4000, help="the audit's sample")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    a = ap.parse_args(argv)
    if not (a.worlds or a.adult):
        ap.error("choose --worlds and/or --adult")
    kw = {"sample": a.sample}
    rows = []
    if a.worlds:
        rows += worlds(a.rows, a.strengths, a.seed, kw)
    if a.adult:
        rows += adult(a.seed, kw, a.adult_rows)
    table = pd.DataFrame(rows)
    cols = [c for c in ["world", "model", "primary", "rows", "flagged", "true_changes", "both",
                        "precision", "recall", "expected_false_flags", "alpha_n", "wall_s"]
            if c in table]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for r in rows:
        key = f"{r['world'].split()[0]}_{r['model']}"
        print(f"validity_recall_{key}: {r['recall']:.3f}")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
