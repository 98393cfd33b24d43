"""Fig. 4/10 from the real-data sweep (jobs ``real_cell``).

``build_fig4``: ``fig4.csv`` (one row per dataset and method: medians of both models'
scores, the AUROC of telling the unfair model's scores from the fair model's, mean ± std
over seeds), ``fig4.md``, ``real_models.{csv,md}`` (accuracy, adversary/probe accuracy,
parity gap of both targets, the aux model and the GANs) and ``figures/fig4_<dataset>.png``.
Scores of different methods live on different scales, so the figure has one panel per
method, each with its own y axis: two boxes, unfair model grey, fair model blue; box =
25-75 %, line = median, whiskers = 5-95 % of the individuals' scores pooled over seeds (from
``scores.npz``; without it, the per-seed quantiles averaged over seeds), no outliers.

Methods: whatever the jobs scored (``metrics.method_names``), in the registry's order.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods import registry
from faux.reports.base import Report, fmt, write_tables
from faux.reports.real_sweep import (
    DATASET_LABELS,
    RealSweep,
    dataset_cells,
    finish,
    method_names,
    ms,
)

NAME = "fig4"
UNFAIR_COLOR, FAIR_COLOR = "#9e9e9e", "#4a7fc1"


def _load_scores(res: dict) -> dict | None:
    path = Path(res.get("_dir", "")) / res["metrics"].get("scores_file", "scores.npz")
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError):
        return None


def _box_stats(values: np.ndarray) -> dict:
    q05, q25, q50, q75, q95 = np.quantile(values, (0.05, 0.25, 0.5, 0.75, 0.95))
    return {"med": q50, "q1": q25, "q3": q75, "whislo": q05, "whishi": q95, "fliers": []}


def box_stats(results: list[dict], method: str, model: str) -> tuple[dict, str]:
    """Box statistics of one method and model pooled over seeds, and their source."""
    pooled = []
    for r in results:
        z = _load_scores(r)
        key = f"{method}__{model}"
        if z is None or key not in z:
            pooled = None
            break
        pooled.append(z[key])
    if pooled:
        return _box_stats(np.concatenate(pooled).astype(np.float64)), "pooled scores"
    qs = [r["metrics"]["methods"][method][model] for r in results
          if method in r["metrics"]["methods"]]
    mean = {k: float(np.mean([q[k] for q in qs])) for k in ("q05", "q25", "q50", "q75", "q95")}
    return ({"med": mean["q50"], "q1": mean["q25"], "q3": mean["q75"], "whislo": mean["q05"],
             "whishi": mean["q95"], "fliers": []}, "per-seed quantiles averaged")


def fig4_figure(dataset: str, results: list[dict], methods: list[str], aurocs: dict,
                path: Path) -> Path:
    """One panel per method: unfair (grey) and fair (blue) boxes on the method's own axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(methods)
    ncols = min(4, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.9 * nrows), squeeze=False)
    sources = set()
    for ax, method in zip(axes.ravel(), methods):
        stats = []
        for model in ("unfair", "fair"):
            st, src = box_stats(results, method, model)
            st["label"] = model
            stats.append(st)
            sources.add(src)
        parts = ax.bxp(stats, showfliers=False, patch_artist=True, widths=0.6)
        for patch, color in zip(parts["boxes"], (UNFAIR_COLOR, FAIR_COLOR)):
            patch.set_facecolor(color)
        for med in parts["medians"]:
            med.set_color("black")
        ax.set_title(f"{registry.label(method)}\nAUROC {aurocs.get(method, float('nan')):.2f}",
                     fontsize=9)
        ax.tick_params(labelsize=8)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    seeds = len(results)
    protected = results[0]["metrics"].get("protected", "c") if results else "c"
    fig.suptitle(f"{DATASET_LABELS.get(dataset, dataset)} (c = {protected}): unfairness scores of the unfair (grey) and fair (blue) model; boxes "
                 f"25-75 %, whiskers 5-95 %, {seeds} seed(s), {' / '.join(sorted(sources))}",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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
                   "median_unfair": float(np.mean([p["unfair"]["median"] for p in per])),
                   "median_fair": float(np.mean([p["fair"]["median"] for p in per])),
                   "auroc": au_m, "auroc_std": au_s, "paired_win": win_m,
                   "n_seeds": len(per),
                   "n_score": int(np.mean([r["metrics"]["n_score"] for r in res]))}
            for q in ("q25", "q75"):
                for model in ("unfair", "fair"):
                    row[f"{q}_{model}"] = float(np.mean([p[model][q] for p in per]))
            rows.append(row)
    return pd.DataFrame(rows)


MODEL_FACTS = (
    ("unfair_accuracy", "unfair", "accuracy"), ("fair_accuracy", "fair", "accuracy"),
    ("fair_adv_accuracy", "fair", "adv_accuracy"), ("c_chance", "fair", "c_chance"),
    ("unfair_probe_c", "unfair", "probe_c_accuracy"), ("fair_probe_c", "fair", "probe_c_accuracy"),
    ("unfair_probe_c_auroc", "unfair", "probe_c_auroc"),
    ("fair_probe_c_auroc", "fair", "probe_c_auroc"),
    ("unfair_dp_gap", "unfair", "dp_gap"), ("fair_dp_gap", "fair", "dp_gap"),
    ("unfair_proxy_swap", "unfair", "proxy_swap"), ("fair_proxy_swap", "fair", "proxy_swap"),
    ("aux_accuracy", "aux", "accuracy"), ("aux_auroc", "aux", "auroc"),
    ("aux_adv_y_accuracy", "aux", "adv_accuracy"), ("gan_ks", "fliptest", "ks"),
)


def _models_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        row = {"dataset": d, "n_seeds": len(res),
               "n_train": int(np.mean([r["metrics"]["n_train"] for r in res]))}
        for col, part, key in MODEL_FACTS:
            m, s = ms([r["metrics"]["models"][part].get(key) for r in res])
            row[col], row[f"{col}_std"] = m, s
        rows.append(row)
    return pd.DataFrame(rows)


def _fig4_md(frame: pd.DataFrame, models: pd.DataFrame) -> str:
    ds = list(dict.fromkeys(frame["dataset"]))
    out = ["Fig. 4/10: AUROC of telling the unfair model's scores from the fair model's "
           "(0.5 = no separation, < 0.5 = the fair model scores higher), mean ± std over "
           "seeds; in brackets the median score of the unfair / fair model.\n\n",
           "| method | " + " | ".join(DATASET_LABELS.get(d, d) for d in ds) + " |\n",
           "|---|" + "---|" * len(ds) + "\n"]
    for method in dict.fromkeys(frame["method"]):
        cells = dataset_cells(frame, ds, method, lambda r: (
            f"{fmt(r.auroc, r.auroc_std)} ({r.median_unfair:.3g} / {r.median_fair:.3g})"))
        out.append(f"| {registry.label(method)} | " + " | ".join(cells) + " |\n")
    out.append("\n" + _models_md(models))
    return "".join(out)


def _models_md(models: pd.DataFrame) -> str:
    ds = list(models["dataset"])
    lines = ["The two targets (test split; probe: a fresh MLP reading c off the model's last "
             "hidden layer, validation accuracy; swap: mean |Δp| when relationship=Husband and "
             "=Wife are exchanged, Adult only), the aux model and FlipTest's GANs, mean ± std "
             "over seeds.\n\n",
             "| | " + " | ".join(DATASET_LABELS.get(d, d) for d in ds) + " |\n",
             "|---|" + "---|" * len(ds) + "\n"]
    labels = {
        "unfair_accuracy": "unfair model: y accuracy", "fair_accuracy": "fair model: y accuracy",
        "fair_adv_accuracy": "fair model: its adversary's c accuracy",
        "c_chance": "c majority rate", "unfair_probe_c": "unfair model: probe c accuracy",
        "fair_probe_c": "fair model: probe c accuracy",
        "unfair_probe_c_auroc": "unfair model: probe c AUROC",
        "fair_probe_c_auroc": "fair model: probe c AUROC",
        "unfair_dp_gap": "unfair model: parity gap", "fair_dp_gap": "fair model: parity gap",
        "unfair_proxy_swap": "unfair model: proxy swap |Δp|",
        "fair_proxy_swap": "fair model: proxy swap |Δp|",
        "aux_accuracy": "aux: c accuracy", "aux_auroc": "aux: c AUROC",
        "aux_adv_y_accuracy": "aux: its adversary's y accuracy", "gan_ks": "GANs: mean KS",
    }
    m = models.set_index("dataset")
    for col, text in labels.items():
        cells = [fmt(m.loc[d, col], m.loc[d, f"{col}_std"]) for d in ds]
        lines.append(f"| {text} | " + " | ".join(cells) + " |\n")
    return "".join(lines)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    models = _models_frame(rs)
    report = finish(rs, NAME, _fig4_frame(rs), lambda f: _fig4_md(f, models), results_dir)
    if not report.files:
        return report
    frame = report.frame
    report.files += write_tables(models, _models_md(models), None, "real_models",
                                 Path(results_dir))
    for d in rs.datasets():
        sub = frame[frame.dataset == d]
        methods = list(sub["method"])
        aurocs = dict(zip(sub["method"], sub["auroc"]))
        report.files.append(fig4_figure(d, rs.of(d), methods, aurocs,
                                        Path(figures_dir) / f"fig4_{d}.png"))
    report.lines[-1] = "wrote " + ", ".join(str(f) for f in report.files)
    return report
