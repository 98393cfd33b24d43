"""Fig. 4/10, Table 3 and Table 4 from the real-data sweep (jobs ``real_cell``).

``build_fig4``: ``fig4.csv`` (one row per dataset and method: medians of both models'
scores, the AUROC of telling the unfair model's scores from the fair model's, mean ± std
over seeds), ``fig4.md``, ``real_models.{csv,md}`` (accuracy, adversary/probe accuracy,
parity gap of both targets, the aux model and the GANs) and ``figures/fig4_<dataset>.png``.
Scores of different methods live on different scales, so the figure has one panel per
method, each with its own y axis: two boxes, unfair model grey, fair model blue; box =
25-75 %, line = median, whiskers = 5-95 % of the individuals' scores pooled over seeds (from
``scores.npz``; without it, the per-seed quantiles averaged over seeds), no outliers.

``build_table3``: NDCG of each transparency report against the mutual-information ranking,
mean ± std over seeds, the paper's value beside ours, and the mean NDCG of random rankings.

``build_table4``: parameters and training time of FlipTest (both generators and both
critics) and of the fAux aux model (its predictor network; the Adel adversary used while
training it is counted apart), mean ± std over seeds, with FlipTest / fAux ratios.

Jobs that were skipped because the SSL CSV was never placed are a note, not a missing cell;
any other skipped or unfinished job is a missing cell (with its reason or log).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from faux.reports import paper_values as P
from faux.reports.tables import Report, _fmt, _mean_std, _write

JOB = "real_cell"
DATASETS = ("adult", "ssl", "bank")            # the paper's column order (Table 3)
DATASET_LABELS = {"adult": "Adult", "ssl": "Chicago SSL", "bank": "Bank"}
PROTECTED_LABELS = {"adult": "Sex (Binary)", "ssl": "Race (Binary)", "bank": "Age (Binarized)"}
FIG_METHODS = ("fta", "fta_lin", "unfair_map", "fliptest", "faux", "faux_ng", "faux_ig")
REPORT_METHODS = ("fliptest", "faux", "faux_ng", "faux_ig")
UNFAIR_COLOR, FAIR_COLOR = "#9e9e9e", "#4a7fc1"


def _label(method: str) -> str:
    if method in P.METHOD_LABELS:
        return P.METHOD_LABELS[method]
    if method.startswith("faux_ng_"):
        return f"fAux+NG ({method[len('faux_ng_'):]})"
    return method


def _dorder(name: str):
    return (DATASETS.index(name), "") if name in DATASETS else (len(DATASETS), name)


class RealSweep:
    """The real_cell results of a sweep: finished, skipped (absent SSL / errors), missing."""

    def __init__(self, sweep):
        from faux.aggregate import job_log
        from faux.reports.tables import _overrides

        self.ok: list[dict] = []
        self.notes: list[str] = []
        self.missing: list[tuple[str, str]] = []
        seen = set()
        for res in sweep.results:
            if res.get("job") != JOB:
                continue
            m = res["metrics"]
            key = (m["dataset"], int(m["seed"]))
            if key in seen:          # the same job in two sweeps given: keep the first
                continue
            seen.add(key)
            if "skipped" in m:
                cell = f"{m['dataset']} seed {m['seed']}"
                if m.get("skip_kind") == "absent":
                    self.notes.append(f"{cell}: skipped: {m['skipped']}")
                else:
                    self.missing.append((cell, f"skipped: {m['skipped']}"))
                continue
            self.ok.append(res)
        datasets = {d for d, _ in seen}
        seeds = {s for _, s in seen}
        for d in sorted(datasets, key=_dorder):
            for s in sorted(seeds):
                if (d, s) not in seen:
                    self.missing.append((f"{d} seed {s}", "no finished job"))
        for d in sweep.unfinished:
            self.missing.append((f"job {_overrides(d)}", f"unfinished; log: {job_log(d)}"))

    def datasets(self) -> list[str]:
        return sorted({r["metrics"]["dataset"] for r in self.ok}, key=_dorder)

    def of(self, dataset: str) -> list[dict]:
        return sorted((r for r in self.ok if r["metrics"]["dataset"] == dataset),
                      key=lambda r: r["metrics"]["seed"])

    def report(self) -> Report:
        rep = Report(pd.DataFrame())
        rep.missing = list(self.missing)
        rep.lines = [f"note: {n}" for n in self.notes]
        return rep


def _method_names(results: list[dict]) -> list[str]:
    names: list[str] = []
    for r in results:
        for n in r["metrics"].get("method_names", r["metrics"]["methods"]):
            if n not in names:
                names.append(n)
    return [m for m in FIG_METHODS if m in names] + [m for m in names if m not in FIG_METHODS]


def _ms(values) -> tuple[float, float]:
    return _mean_std([v for v in values if v is not None])


# ----------------------------------------------------------------------------- Fig. 4


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
        ax.set_title(f"{_label(method)}\nAUROC {aurocs.get(method, float('nan')):.2f}",
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
        for method in _method_names(res):
            per = [r["metrics"]["methods"][method] for r in res
                   if method in r["metrics"]["methods"]]
            au_m, au_s = _ms([p["auroc"] for p in per])
            win_m, _ = _ms([p["paired_win"] for p in per])
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
            m, s = _ms([r["metrics"]["models"][part].get(key) for r in res])
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
        cells = []
        for d in ds:
            sub = frame[(frame.dataset == d) & (frame.method == method)]
            if sub.empty:
                cells.append("—")
                continue
            r = sub.iloc[0]
            cells.append(f"{_fmt(r.auroc, r.auroc_std)} ({r.median_unfair:.3g} / "
                         f"{r.median_fair:.3g})")
        out.append(f"| {_label(method)} | " + " | ".join(cells) + " |\n")
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
        cells = [_fmt(m.loc[d, col], m.loc[d, f"{col}_std"]) for d in ds]
        lines.append(f"| {text} | " + " | ".join(cells) + " |\n")
    return "".join(lines)


def build_fig4(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    report = rs.report()
    frame = _fig4_frame(rs)
    report.frame = frame
    if frame.empty:
        report.lines.append("fig4: no finished real_cell jobs")
        return report
    models = _models_frame(rs)
    md = _fig4_md(frame, models)
    report.files = _write(frame, md, None, "fig4", Path(results_dir))
    report.files += _write(models, _models_md(models), None, "real_models", Path(results_dir))
    for d in rs.datasets():
        sub = frame[frame.dataset == d]
        methods = list(sub["method"])
        aurocs = dict(zip(sub["method"], sub["auroc"]))
        report.files.append(fig4_figure(d, rs.of(d), methods, aurocs,
                                        Path(figures_dir) / f"fig4_{d}.png"))
    report.lines.append(md)
    report.lines.append("wrote " + ", ".join(str(f) for f in report.files))
    return report


# ----------------------------------------------------------------------------- Table 3


def _table3_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        for method in (*REPORT_METHODS, "random"):
            vals = [r["metrics"]["table3"]["ndcg_random"] if method == "random"
                    else r["metrics"]["table3"]["ndcg"].get(method) for r in res]
            m, s = _ms(vals)
            paper = P.TABLE3.get(d, {}).get(method)
            rows.append({"dataset": d, "method": method, "ndcg_mean": m, "ndcg_std": s,
                         "n_seeds": len([v for v in vals if v is not None]),
                         "n_features": res[0]["metrics"]["table3"]["n_features"],
                         "paper_mean": paper[0] if paper else None,
                         "paper_std": paper[1] if paper else None})
    return pd.DataFrame(rows)


def _table3_md(frame: pd.DataFrame, rs: RealSweep) -> str:
    ds = [d for d in DATASETS if d in set(frame.dataset)] + \
        [d for d in dict.fromkeys(frame.dataset) if d not in DATASETS]
    out = ["Table 3: NDCG of each transparency report against the ranking by mutual "
           "information with c; ours (mean ± std over seeds) / paper.\n\n",
           "| | " + " | ".join(DATASET_LABELS.get(d, d) for d in ds) + " |\n",
           "|---|" + "---|" * len(ds) + "\n",
           "| Protected attribute | " + " | ".join(PROTECTED_LABELS.get(d, "") for d in ds)
           + " |\n"]
    for method in (*REPORT_METHODS, "random"):
        cells = []
        for d in ds:
            sub = frame[(frame.dataset == d) & (frame.method == method)]
            if sub.empty:
                cells.append("—")
                continue
            r = sub.iloc[0]
            ours = _fmt(r.ndcg_mean, r.ndcg_std)
            cells.append(ours if method == "random" else
                         f"{ours} / {_fmt(r.paper_mean, r.paper_std)}")
        label = "random ranking (floor)" if method == "random" else _label(method)
        out.append(f"| {label} | " + " | ".join(cells) + " |\n")
    out.append("\nTop-5 original features (first seed): by mutual information with c, and by "
               "each report.\n\n")
    for d in ds:
        t3 = rs.of(d)[0]["metrics"]["table3"]
        out.append(f"- {DATASET_LABELS.get(d, d)}: MI: {', '.join(t3['top_mi'])}\n")
        for m in REPORT_METHODS:
            if m in t3["top"]:
                out.append(f"  - {_label(m)}: {', '.join(t3['top'][m])}\n")
    return "".join(out)


def build_table3(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    report = rs.report()
    frame = _table3_frame(rs)
    report.frame = frame
    if frame.empty:
        report.lines.append("table3: no finished real_cell jobs")
        return report
    md = _table3_md(frame, rs)
    report.files = _write(frame, md, None, "table3", Path(results_dir))
    report.lines.append(md)
    report.lines.append("wrote " + ", ".join(str(f) for f in report.files))
    return report


# ----------------------------------------------------------------------------- Table 4


def _table4_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        t4 = [r["metrics"]["table4"] for r in rs.of(d)]
        row = {"dataset": d, "n_seeds": len(t4)}
        for key in ("fliptest_params", "faux_params", "faux_params_adv", "fliptest_time_s",
                    "faux_time_s"):
            row[f"{key}_mean"], row[f"{key}_std"] = _ms([t[key] for t in t4])
        row["plain_mlp_time_s_mean"], row["plain_mlp_time_s_std"] = _ms(
            [r["metrics"]["models"]["unfair"]["train_time_s"] for r in rs.of(d)])
        row["params_ratio"] = row["fliptest_params_mean"] / row["faux_params_mean"]
        row["time_ratio"] = row["fliptest_time_s_mean"] / row["faux_time_s_mean"]
        row["gan_steps"] = rs.of(d)[0]["metrics"]["models"]["fliptest"]["gen_steps"]
        paper = P.TABLE4.get(d)
        if paper:
            (fp, fps), (ft, fts) = paper["fliptest"]
            (ap, aps), (at, ats) = paper["faux"]
            row.update(paper_fliptest_params_k=fp, paper_fliptest_params_k_std=fps,
                       paper_fliptest_time_s=ft, paper_fliptest_time_s_std=fts,
                       paper_faux_params_k=ap, paper_faux_params_k_std=aps,
                       paper_faux_time_s=at, paper_faux_time_s_std=ats,
                       paper_params_ratio=fp / ap, paper_time_ratio=ft / at)
        rows.append(row)
    return pd.DataFrame(rows)


def _k(m, s) -> str:
    return "—" if m is None or not np.isfinite(m) else f"{m / 1000:.1f} ± {s / 1000:.1f} K"


def _sec(m, s) -> str:
    return "—" if m is None or not np.isfinite(m) else f"{m:.1f} ± {s:.1f} s"


def _table4_md(frame: pd.DataFrame) -> str:
    out = ["Table 4: resources of FlipTest (two generators + two critics) and fAux (the aux "
           "model; in brackets the Adel adversary used while training it), mean ± std over "
           "seeds; ours / paper.\n\n",
           "| | Resource | FlipTest | fAux | FlipTest / fAux |\n|---|---|---|---|---|\n"]
    order = [d for d in DATASETS if d in set(frame.dataset)] + \
        [d for d in frame.dataset if d not in DATASETS]
    f = frame.set_index("dataset")
    for d in order:
        r = f.loc[d]
        has_paper = "paper_params_ratio" in f.columns and pd.notna(r.get("paper_params_ratio"))

        ft_p = fa_p = ra_p = ft_t = fa_t = ra_t = ""
        if has_paper:
            ft_p = f" / {r.paper_fliptest_params_k:g} ± {r.paper_fliptest_params_k_std:g} K"
            fa_p = f" / {r.paper_faux_params_k:g} ± {r.paper_faux_params_k_std:g} K"
            ra_p = f" / {r.paper_params_ratio:.1f}×"
            ft_t = f" / {r.paper_fliptest_time_s:g} ± {r.paper_fliptest_time_s_std:g} s"
            fa_t = f" / {r.paper_faux_time_s:g} ± {r.paper_faux_time_s_std:g} s"
            ra_t = f" / {r.paper_time_ratio:.1f}×"
        out.append(f"| {DATASET_LABELS.get(d, d)} | # Parameters | "
                   f"{_k(r.fliptest_params_mean, r.fliptest_params_std)}{ft_p} | "
                   f"{_k(r.faux_params_mean, r.faux_params_std)} "
                   f"(+{r.faux_params_adv_mean / 1000:.1f} K){fa_p} | "
                   f"{r.params_ratio:.1f}×{ra_p} |\n")
        out.append(f"| | Training time | {_sec(r.fliptest_time_s_mean, r.fliptest_time_s_std)}"
                   f"{ft_t} | {_sec(r.faux_time_s_mean, r.faux_time_s_std)}{fa_t} | "
                   f"{r.time_ratio:.1f}×{ra_t} |\n")
    steps = ", ".join(f"{DATASET_LABELS.get(d, d)} {int(f.loc[d, 'gan_steps'])}" for d in order)
    out.append(f"\nFlipTest generator steps: {steps} (the reference uses 20,000).\n")
    plain = ", ".join(f"{DATASET_LABELS.get(d, d)} "
                      f"{_sec(f.loc[d, 'plain_mlp_time_s_mean'], f.loc[d, 'plain_mlp_time_s_std'])}"
                      for d in order)
    out.append(f"For reference, the plain MLP of the same size (the unfair target, no adversary, "
               f"early stopping from epoch 1) trained in: {plain}.\n")
    return "".join(out)


def build_table4(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    report = rs.report()
    frame = _table4_frame(rs)
    report.frame = frame
    if frame.empty:
        report.lines.append("table4: no finished real_cell jobs")
        return report
    md = _table4_md(frame)
    report.files = _write(frame, md, None, "table4", Path(results_dir))
    report.lines.append(md)
    report.lines.append("wrote " + ", ".join(str(f) for f in report.files))
    return report


BUILDERS = {"fig4": build_fig4, "table3": build_table3, "table4": build_table4}
