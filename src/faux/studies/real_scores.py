"""What the methods say in one real-data job: scores (Fig. 4/10) and feature reports (Table 3).

Scores (step 3 of :mod:`faux.studies.real`): every registered method whose needs the study
meets (target, aux, training rows, GANs; not LIC-UB, which needs the true dx/dc) plus named
``variants`` (another option set of a method taking ``faux.score`` options), per scored
individual, under the unfair and every fair target; per method the AUROC of telling the
unfair model's scores from a fair model's (0.5 = no separation; below 0.5 = the fair model
scores higher) and the paired win rate (share of individuals scored higher under the unfair
model).

Transparency reports (step 4, Table 3, A.10) of every method with one: over the c = 0
individuals of the test split, FlipTest's ``|mean(x - G01(x))|`` (eq. 39) and fAux's
``|mean grad f_aux(x)|`` (eq. 40) and its NG/IG variants, one-hot columns averaged to their
original feature. Ground truth: ``mutual_info_classif`` (Ross 2014) between each column and
c on the training rows, with ``discrete_features`` set for every non-continuous column
(one-hot and other 0/1 columns), then averaged over one-hot columns like the scores; NDCG
(scikit-learn) of each report against it, and the mean NDCG of random rankings as a floor.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from faux.data.real import RealData
from faux.errors import ConfigError
from faux.methods.protocol import Batch
from faux.studies.real_rows import Rows
from faux.studies.real_settings import BLIND, QUANTILES, RealSettings, methods, report_methods
from faux.studies.real_trained import Trained


def score_one(method: str, target: torch.nn.Module, tr: Trained, rows: Rows,
              options: dict | None = None) -> np.ndarray:
    """Scores of one fitted method for the scored individuals under ``target`` (float64,
    (n,)); ``options`` override its ``faux.score`` options (a variant)."""
    batch = Batch(torch.as_tensor(rows.x_score), rows.c_score, rows.y_score)
    f = tr.fitted[method]
    s = f.score(target, batch, options) if options else f.score(target, batch)
    return torch.as_tensor(s).detach().reshape(-1).double().numpy()


def summarise_pair(unfair: np.ndarray, fair: np.ndarray, blind: np.ndarray | None = None
                   ) -> dict:
    """Quantiles of both models' scores, separation AUROC and paired win rate; with
    ``blind`` (the proxy-blind model's scores) also its quantiles, ``auroc_blind`` and
    ``paired_win_blind`` (the unfair model against it)."""
    from faux.metrics.ranking import separation_auroc

    out = {}
    pairs = [("unfair", unfair), ("fair", fair)] + ([] if blind is None else [(BLIND, blind)])
    for name, s in pairs:
        q = np.quantile(s, QUANTILES)
        out[name] = {"mean": float(s.mean()), **{f"q{int(round(100 * p)):02d}": float(v)
                                                 for p, v in zip(QUANTILES, q)}}
        out[name]["median"] = out[name]["q50"]
    for suffix, other in (("", fair), ("_blind", blind)):
        if other is not None:
            out[f"auroc{suffix}"] = separation_auroc(unfair, other)
            out[f"paired_win{suffix}"] = float(np.mean(unfair > other)
                                               + 0.5 * np.mean(unfair == other))
    return out


def score_all(tr: Trained, rows: Rows, settings: RealSettings) -> tuple[dict, dict]:
    """Per method: summaries (metrics) and the raw scores (arrays ``<method>__<model>``)."""
    summaries, arrays = {}, {}
    jobs = [(m, m, {}) for m in methods()]
    jobs += [(name, v["method"], {k: w for k, w in v.items() if k != "method"})
             for name, v in settings.variants.items()]
    for name, method, opts in jobs:
        t = time.perf_counter()
        s = {model: score_one(method, getattr(tr, model), tr, rows, opts)
             for model in tr.models}
        elapsed = time.perf_counter() - t
        for model in tr.models:
            if not np.isfinite(s[model]).all():
                raise ConfigError(f"{name}: non-finite scores for the {model} model")
            arrays[f"{name}__{model}"] = s[model].astype(np.float32)
        summaries[name] = {**summarise_pair(s["unfair"], s["fair"], s.get(BLIND)),
                           "score_s": elapsed}
    return summaries, arrays


def discrete_mask(data: RealData) -> np.ndarray:
    """True for every column that is not a standardised continuous feature."""
    cont = set(data.continuous)
    return np.array([n not in cont for n in data.feature_names], dtype=bool)


def transparency(tr: Trained, rows: Rows, data: RealData, settings: RealSettings,
                 seed: int) -> dict:
    """Feature reports (A.10), the MI ground truth, NDCGs and top features."""
    from faux.methods.transparency import aggregate_groups
    from faux.metrics.fairness import mutual_information
    from faux.metrics.ranking import ndcg_by_name, random_ndcg

    t = time.perf_counter()
    mi_cols = mutual_information(rows.x, rows.c, discrete_mask(data), seed)
    mi = aggregate_groups(mi_cols, data.feature_groups)
    t_mi = time.perf_counter() - t
    x0 = torch.as_tensor(rows.x0)
    reports = {}
    t = time.perf_counter()
    for m in report_methods():
        r = tr.fitted[m].report(x0, **settings.report_options)
        reports[m] = aggregate_groups(r, data.feature_groups)
    for name, v in settings.report_variants.items():
        opts = {**settings.report_options, **{k: a for k, a in v.items() if k != "method"}}
        reports[name] = aggregate_groups(tr.fitted[v["method"]].report(x0, **opts),
                                         data.feature_groups)
    t_rep = time.perf_counter() - t
    ndcg = {m: ndcg_by_name(r, mi) for m, r in reports.items()}

    def top(d, k=5):
        return [n for n, _ in sorted(d.items(), key=lambda kv: -kv[1])[:k]]

    return {"mi": mi, "reports": reports, "ndcg": ndcg,
            "ndcg_random": random_ndcg(mi, settings.n_random_rankings, seed),
            "top_mi": top(mi), "top": {m: top(r) for m, r in reports.items()},
            "n_x0": int(len(x0)), "n_features": len(mi), "mi_s": t_mi, "reports_s": t_rep}

