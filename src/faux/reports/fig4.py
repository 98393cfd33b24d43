"""Fig. 4/10 from the real-data sweep (jobs ``real_cell``).

``build_fig4``: ``fig4.csv`` (one row per dataset and method: medians of the models'
scores, the AUROC of telling the unfair model's scores from the fair model's, mean ± std
over seeds; with the proxy-blind fair model of ``profile.real.blind_model`` also
``median_blind``, ``auroc_blind``, ``paired_win_blind``: the unfair model against it),
``fig4.md`` (the AUROCs, and a status line per dataset: which fair model fAux+NG separates
from the unfair one), ``real_models.{csv,md}`` (the fairness check of the targets and
the aux: probe AUROC, proxy-swap |Δp|, parity gap, accuracy, and each fair model's
pass/fail against the targets; the adversaries and the GANs) and
``figures/fig4_<dataset>.png``.

The fair model's verdict and the flags of a failing one: :mod:`faux.reports.real_models`;
the figure: :mod:`faux.reports.fig4_plot`.

Methods: whatever the jobs scored (``metrics.method_names``), in the registry's order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods import registry
from faux.methods.builtin import FAuxNGMethod
from faux.reports.base import Report, fmt, write_tables
from faux.reports.fig4_plot import MODEL_NAMES, MODELS, fig4_figure
from faux.reports.real_models import flags_md, models_frame, models_md, row_of, verdict_cell
from faux.reports.real_sweep import (
    DATASET_LABELS,
    RealSweep,
    finish,
    method_names,
    ms,
)

NAME = "fig4"
#: fAux+NG "separates" an unfair model from a fair one at AUROC >= 0.5 + SEPARATES_MARGIN and
#: "reverses" them at <= 0.5 - SEPARATES_MARGIN (the status line of fig4.md)
SEPARATES_MARGIN = 0.1
STATUS_METHOD = FAuxNGMethod.name


def _per_model(per: list[dict], model: str, key: str) -> float:
    vals = [p[model][key] for p in per if model in p]
    return float(np.mean(vals)) if vals else float("nan")


def _fig4_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        for method in method_names(res):
            per = [r["metrics"]["methods"][method] for r in res
                   if method in r["metrics"]["methods"]]
            au_m, au_s = ms([p["auroc"] for p in per])
            win_m, _ = ms([p["paired_win"] for p in per])
            row = {"dataset": d, "method": method,
                   "median_unfair": _per_model(per, "unfair", "median"),
                   "median_fair": _per_model(per, "fair", "median"),
                   "auroc": au_m, "auroc_std": au_s, "paired_win": win_m,
                   "n_seeds": len(per),
                   "n_score": int(np.mean([r["metrics"]["n_score"] for r in res]))}
            blind = [p for p in per if "auroc_blind" in p]
            row["median_blind"] = _per_model(blind, "blind", "median")
            row["auroc_blind"], row["auroc_blind_std"] = ms([p["auroc_blind"] for p in blind])
            row["paired_win_blind"] = ms([p["paired_win_blind"] for p in blind])[0]
            row["n_seeds_blind"] = len(blind)
            for q in ("q25", "q75"):
                for model in MODELS:
                    row[f"{q}_{model}"] = _per_model(per, model, q)
            rows.append(row)
    return pd.DataFrame(rows)


def separation_word(auroc: float) -> str:
    """``separates`` / ``reverses`` / ``does not separate`` (``SEPARATES_MARGIN`` around 0.5)."""
    if auroc is None or not np.isfinite(auroc):
        return "not measured"
    if auroc >= 0.5 + SEPARATES_MARGIN:
        return "separates"
    if auroc <= 0.5 - SEPARATES_MARGIN:
        return "reverses"
    return "does not separate"


def status_lines(frame: pd.DataFrame, models: pd.DataFrame, method: str = STATUS_METHOD
                 ) -> str:
    """Per dataset: which fair model ``method`` (fAux+NG) separates from the unfair one."""
    out = []
    for d in dict.fromkeys(frame["dataset"]):
        sub = frame[(frame.dataset == d) & (frame.method == method)]
        if sub.empty:
            continue
        r = sub.iloc[0]
        mr = row_of(models, d)
        parts = []
        for model, au, sd in (("fair", r.auroc, r.auroc_std),
                              ("blind", r.auroc_blind, r.auroc_blind_std)):
            if model == "blind" and not np.isfinite(au):
                continue
            ok = mr.fair_pass if model == "fair" else mr.blind_pass
            name = f"the {MODEL_NAMES[model]} ({'passes' if ok else 'fails'} the check)"
            word = separation_word(au)
            what = {"separates": f"ranks the unfair model above {name}",
                    "reverses": f"ranks {name} above the unfair model (reversed)",
                    }.get(word, f"{word} the unfair model from {name}")
            parts.append(f"{what}: AUROC {fmt(au, sd)}")
        out.append(f"- **{DATASET_LABELS.get(d, d)}**: {registry.label(method)} "
                   + "; ".join(parts) + ".\n")
    if not out:
        return ""
    return (f"Status ({registry.label(method)}; separates: AUROC ≥ "
            f"{0.5 + SEPARATES_MARGIN:.1f}, reverses: ≤ {0.5 - SEPARATES_MARGIN:.1f}):\n\n"
            + "".join(out))


def _fig4_md(frame: pd.DataFrame, models: pd.DataFrame) -> str:
    ds = list(dict.fromkeys(frame["dataset"]))
    blind = bool(np.isfinite(frame["auroc_blind"]).any())
    cols = [(d, "fair") for d in ds] + ([(d, "blind") for d in ds] if blind else [])
    cols.sort(key=lambda c: (ds.index(c[0]), c[1] != "fair"))
    head = {"fair": "vs Adel fair", "blind": "vs proxy-blind"}
    out = ["Fig. 4/10: AUROC of telling the unfair model's scores from a fair model's "
           "(0.5 = no separation, < 0.5 = the fair model scores higher), mean ± std over "
           "seeds; in brackets the median score of the unfair model / of that fair model. Fair "
           "models: "
           "the Adel fair model (adversarially trained to hide c)"
           + (" and the proxy-blind fair model (the unfair recipe blind to the declared "
              "proxy edit by construction)" if blind else "") + ".\n\n",
           "| method | " + " | ".join(f"{DATASET_LABELS.get(d, d)} {head[m]}" for d, m in cols)
           + " |\n",
           "|---|" + "---|" * len(cols) + "\n"]

    def cell(d, model, method):
        sub = frame[(frame.dataset == d) & (frame.method == method)]
        if sub.empty:
            return "—"
        r = sub.iloc[0]
        if model == "fair":
            return f"{fmt(r.auroc, r.auroc_std)} ({r.median_unfair:.3g} / {r.median_fair:.3g})"
        if not np.isfinite(r.auroc_blind):
            return "—"
        return (f"{fmt(r.auroc_blind, r.auroc_blind_std)} ({r.median_unfair:.3g} / "
                f"{r.median_blind:.3g})")

    for method in dict.fromkeys(frame["method"]):
        out.append(f"| {registry.label(method)} | "
                   + " | ".join(cell(d, m, method) for d, m in cols) + " |\n")
    out.append("| *fair model vs the fairness check* | "
               + " | ".join(verdict_cell(row_of(models, d), m) for d, m in cols) + " |\n")
    status = status_lines(frame, models)
    if status:
        out.append("\n" + status)
    flags = flags_md(models)
    if flags:
        out.append("\n" + flags)
    out.append("\n" + models_md(models))
    return "".join(out)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    models = models_frame(rs)
    report = finish(rs, NAME, _fig4_frame(rs), lambda f: _fig4_md(f, models), results_dir)
    if not report.files:
        return report
    frame = report.frame
    report.files += write_tables(models, models_md(models), None, "real_models",
                                 Path(results_dir))
    for d in rs.datasets():
        sub = frame[frame.dataset == d]
        methods = list(sub["method"])
        aurocs = dict(zip(sub["method"], sub["auroc"]))
        aurocs_blind = dict(zip(sub["method"], sub["auroc_blind"]))
        check = row_of(models, d)._asdict() if d in set(models["dataset"]) else {}
        report.files.append(fig4_figure(d, rs.of(d), methods, aurocs,
                                        Path(figures_dir) / f"fig4_{d}.png", check,
                                        aurocs_blind))
    report.lines[-1] = "wrote " + ", ".join(str(f) for f in report.files)
    return report
