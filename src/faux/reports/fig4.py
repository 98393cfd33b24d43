"""Fig. 4/10 from the real-data sweep (jobs ``real_cell``).

``build_fig4``: ``fig4.csv`` (one row per dataset and method: medians of both models'
scores, the AUROC of telling the unfair model's scores from the fair model's, mean ± std
over seeds), ``fig4.md``, ``real_models.{csv,md}`` (the fairness check of both
targets and the aux: probe AUROC, proxy-swap |Δp|, parity gap, accuracy, and the fair
model's pass/fail against the targets; the adversaries and the GANs) and
``figures/fig4_<dataset>.png``.

The fair model's verdict is taken on the means over seeds
(``faux.studies.fairness_check.verdict``, with the jobs' targets); the number of seeds whose
own verdict passed is beside it. A fair model that fails, or whose jobs carry no check, is
flagged in ``fig4.md`` (a line under the table) and in the figure (a red line under the
title: "fair model FAILS the check"); each panel's title gives both models' probe AUROC and
swap |Δp|.
Scores of different methods live on different scales, so the figure has one panel per
method, each with its own y axis: two boxes, unfair model grey, fair model blue; box =
25-75 %, line = median, whiskers = 5-95 % of the individuals' scores pooled over seeds (from
``scores.npz``; without it, the per-seed quantiles averaged over seeds), no outliers.

Methods: whatever the jobs scored (``metrics.method_names``), in the registry's order.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods import registry
from faux.methods.builtin import FlipTestMethod
from faux.reports.base import Report, fmt, write_tables
from faux.reports.real_sweep import (
    DATASET_LABELS,
    RealSweep,
    dataset_cells,
    finish,
    method_names,
    ms,
)
from faux.studies.fairness_check import TARGETS, verdict

NAME = "fig4"
UNFAIR_COLOR, FAIR_COLOR = "#9e9e9e", "#4a7fc1"
FAIL_COLOR = "#c62828"


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


def check_line(check: dict) -> str:
    """Both models' probe AUROC and swap |Δp| (unfair / fair), for a panel's title."""
    def g(v, f):
        return "—" if v is None or not np.isfinite(v) else format(v, f)

    return (f"probe {g(check.get('unfair_probe_auroc'), '.2f')} / "
            f"{g(check.get('fair_probe_auroc'), '.2f')}, swap "
            f"{g(check.get('unfair_swap'), '.3f')} / {g(check.get('fair_swap'), '.3f')}")


def fail_mark(check: dict) -> str | None:
    """The flag of a fair model that fails the check (or has none); None when it passes."""
    if not check.get("checked"):
        return "fair model NOT CHECKED (jobs without the fairness check)"
    if check.get("fair_pass"):
        return None
    return f"fair model FAILS the check: {check['fair_fails']}"


def fig4_figure(dataset: str, results: list[dict], methods: list[str], aurocs: dict,
                path: Path, check: dict | None = None) -> Path:
    """One panel per method: unfair (grey) and fair (blue) boxes on the method's own axis.

    ``check``: the dataset's row of ``real_models`` (probe, swap, verdict); each panel's title
    gives both models' probe AUROC and swap, and a failing fair model gets a red mark.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(methods)
    ncols = min(4, n)
    nrows = math.ceil(n / ncols)
    check = check or {}
    mark = fail_mark(check)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.2 * nrows), squeeze=False)
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
        ax.set_title(f"{registry.label(method)}: AUROC {aurocs.get(method, float('nan')):.2f}\n"
                     f"{check_line(check)}", fontsize=8,
                     color="black" if mark is None else FAIL_COLOR)
        ax.tick_params(labelsize=8)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    seeds = len(results)
    protected = results[0]["metrics"].get("protected", "c") if results else "c"
    fig.suptitle(f"{DATASET_LABELS.get(dataset, dataset)} (c = {protected}): unfairness scores "
                 f"of the unfair (grey) and fair (blue) model; boxes 25-75 %, whiskers 5-95 %, "
                 f"{seeds} seed(s), {' / '.join(sorted(sources))}\npanel titles: separation "
                 f"AUROC; fairness check, unfair / fair model: probe AUROC of c, proxy swap "
                 f"|Δp|", fontsize=9)
    top = 0.90
    if mark is not None:
        fig.text(0.5, 0.885, mark, ha="center", va="top", color=FAIL_COLOR, fontsize=10,
                 fontweight="bold")
        top = 0.85
    fig.tight_layout(rect=(0, 0, 1, top))
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


#: real_models columns: (column, part, where, key); where = "check" (metrics.fairness_check)
#: or "models" (metrics.models)
MODEL_FACTS = (
    ("unfair_probe_auroc", "unfair", "check", "probe_auroc"),
    ("fair_probe_auroc", "fair", "check", "probe_auroc"),
    ("unfair_swap", "unfair", "check", "proxy_swap_mean_abs_dprob"),
    ("fair_swap", "fair", "check", "proxy_swap_mean_abs_dprob"),
    ("unfair_dp_gap", "unfair", "check", "dp_gap"), ("fair_dp_gap", "fair", "check", "dp_gap"),
    ("unfair_accuracy", "unfair", "check", "accuracy"),
    ("fair_accuracy", "fair", "check", "accuracy"),
    ("aux_probe_y_auroc", "aux", "check", "probe_auroc"),
    ("aux_c_accuracy", "aux", "check", "accuracy"),
    ("fair_adv_accuracy", "fair", "models", "adv_accuracy"),
    ("c_chance", "fair", "models", "c_chance"),
    ("aux_auroc", "aux", "models", "auroc"),
    ("aux_adv_y_accuracy", "aux", "models", "adv_accuracy"),
    ("gan_ks", FlipTestMethod.name, "models", "ks"),
)
MODEL_LABELS = {
    "unfair_probe_auroc": "unfair model: probe AUROC of c",
    "fair_probe_auroc": "fair model: probe AUROC of c",
    "unfair_swap": "unfair model: proxy swap \\|Δp\\|",
    "fair_swap": "fair model: proxy swap \\|Δp\\|",
    "unfair_dp_gap": "unfair model: parity gap", "fair_dp_gap": "fair model: parity gap",
    "unfair_accuracy": "unfair model: y accuracy", "fair_accuracy": "fair model: y accuracy",
    "aux_probe_y_auroc": "aux: probe AUROC of y", "aux_c_accuracy": "aux: c accuracy (test)",
    "fair_adv_accuracy": "fair model: its adversary's c accuracy",
    "c_chance": "c majority rate", "aux_auroc": "aux: c AUROC (validation)",
    "aux_adv_y_accuracy": "aux: its adversary's y accuracy", "gan_ks": "GANs: mean KS",
}


def _fact(r: dict, part: str, where: str, key: str):
    m = r["metrics"]
    src = m.get("fairness_check", {}) if where == "check" else m["models"]
    return (src.get(part) or {}).get(key)


def _models_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        checked = [r for r in res if "fairness_check" in r["metrics"]]
        row = {"dataset": d, "n_seeds": len(res),
               "n_train": int(np.mean([r["metrics"]["n_train"] for r in res]))}
        for col, part, where, key in MODEL_FACTS:
            m, s = ms([_fact(r, part, where, key) for r in res])
            row[col], row[f"{col}_std"] = m, s
        row["checked"] = len(checked) == len(res)
        targets = checked[0]["metrics"]["fairness_check"]["targets"] if checked else TARGETS
        v = verdict({"probe_auroc": row["unfair_probe_auroc"], "accuracy": row["unfair_accuracy"],
                     "proxy_swap_mean_abs_dprob": row["unfair_swap"]},
                    {"probe_auroc": row["fair_probe_auroc"], "accuracy": row["fair_accuracy"],
                     "proxy_swap_mean_abs_dprob": row["fair_swap"]}, targets)
        row["fair_pass"] = bool(row["checked"] and v["pass"])
        row["fair_fails"] = "; ".join(v["fails"])
        for k, ok in v["checks"].items():
            row[f"fair_{k}_ok"] = ok
        row["n_seeds_pass"] = sum(bool(r["metrics"]["fairness_check"]["pass"]) for r in checked)
        overrides = {json.dumps(r["metrics"].get("fairness_check", {}).get("fair_overrides") or {},
                                sort_keys=True) for r in res}
        row["fair_overrides"] = " | ".join(sorted(overrides))
        rows.append(row)
    return pd.DataFrame(rows)


def _verdict_cell(r) -> str:
    if not r.checked:
        return "**NOT CHECKED**"
    word = "pass" if r.fair_pass else "**FAILS**"
    why = "" if r.fair_pass else f": {r.fair_fails}"
    return f"{word}{why} ({r.n_seeds_pass}/{r.n_seeds} seeds pass)"


def _flags_md(models: pd.DataFrame) -> str:
    lines = []
    for r in models.itertuples():
        mark = fail_mark({"checked": r.checked, "fair_pass": r.fair_pass,
                          "fair_fails": r.fair_fails})
        if mark is not None:
            lines.append(f"- **{DATASET_LABELS.get(r.dataset, r.dataset)}: {mark}** "
                         f"(on the means over {r.n_seeds} seed(s); the check's targets: probe "
                         f"AUROC ≤ 0.60, swap ≤ half the unfair model's, accuracy within 2 "
                         f"points). Its column compares the tests on a model that is not "
                         f"shown to be fair.\n")
    return "".join(lines)


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
    out.append("| *fair model vs the fairness check* | "
               + " | ".join(_verdict_cell(_row(models, d)) for d in ds) + " |\n")
    flags = _flags_md(models)
    if flags:
        out.append("\n" + flags)
    out.append("\n" + _models_md(models))
    return "".join(out)


def _row(models: pd.DataFrame, dataset: str):
    return next(r for r in models.itertuples() if r.dataset == dataset)


def _models_md(models: pd.DataFrame) -> str:
    ds = list(models["dataset"])
    lines = ["The fairness check (faux.studies.fairness_check; test split): probe = the larger "
             "held-out AUROC of two fresh probes (logistic, MLP 32×1) of c on the model's "
             "last hidden layer (of y for the aux); swap = mean |Δp| under the dataset's "
             "declared proxy edits (Adult: relationship Husband ↔ Wife; Bank: job student ↔ "
             "retired); parity gap and accuracy; then the adversaries and FlipTest's GANs. "
             "Mean ± std over seeds. Verdict of the fair model on the means against the "
             "targets probe ≤ 0.60, swap ≤ half the unfair model's, accuracy within 2 points "
             "of the unfair model's.\n\n",
             "| | " + " | ".join(DATASET_LABELS.get(d, d) for d in ds) + " |\n",
             "|---|" + "---|" * len(ds) + "\n"]
    m = models.set_index("dataset")
    for col, text in MODEL_LABELS.items():
        cells = [fmt(m.loc[d, col], m.loc[d, f"{col}_std"]) for d in ds]
        lines.append(f"| {text} | " + " | ".join(cells) + " |\n")
    lines.append("| fair model's recipe overrides (real_study.fair_by_dataset) | "
                 + " | ".join(f"`{m.loc[d, 'fair_overrides']}`" for d in ds) + " |\n")
    lines.append("| **fair model vs the targets** | "
                 + " | ".join(_verdict_cell(_row(models, d)) for d in ds) + " |\n")
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
        check = _row(models, d)._asdict() if d in set(models["dataset"]) else {}
        report.files.append(fig4_figure(d, rs.of(d), methods, aurocs,
                                        Path(figures_dir) / f"fig4_{d}.png", check))
    report.lines[-1] = "wrote " + ", ".join(str(f) for f in report.files)
    return report
