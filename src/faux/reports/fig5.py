"""Fig. 5 from the Section 4.4 sweep (jobs ``fig5_cell``): fAux's PR curves pooled by bias,
aux accuracy and target-gradient magnitude.

``build(sweep, results_dir, figures_dir)`` reads each fig5 job's ``records.npz`` (per
test individual: the scores of every method the job ran (faux, faux_ng, faux_ig and any
other registered method reading an aux model), the IFS label, the IFS and
``|grad f_tar|``; per job: bias, aux accuracy), pools the individuals of every job and
computes, for each method and each bin of each panel, the pooled PR curve, its AP, the
positive rate (the random-guess precision) and the mean of the per-job APs (scale-free:
pooled AP compares scores of different jobs with each other, which only a bounded score
such as fAux+NG's |cosine| makes meaningful). Panels:

- ``bias``: one bin per bias level of the sweep;
- ``aux_accuracy``: the jobs split at the quartiles of their aux models' validation accuracy;
- ``target_gradient``: the individuals split at the 25/50/75/95% quantiles of their
  target-gradient norm, so the top bin holds the 5% largest ("extremely large") gradients.

Not plotted, in the csv and md only: ``target_gradient_logit`` (the same on the norm of the
logit's gradient, when the records hold it) and ``target_gradient_job_rank`` (the same
quantiles taken within each job, which removes differences between jobs from the bins).

Pooled AP also ranks individuals of different jobs against each other, so a job's base
rate and score scale enter it; ``ap_job_rank`` (pooled AP of each job's scores replaced by
their within-job rank) and ``ap_job_mean`` leave only the within-job ranking.

Writes ``fig5.csv`` (``panel,bin,ap,positive_rate,n,method,lo,hi,n_jobs,ap_job_mean,
ap_job_rank``),
``fig5.md``, ``fig5.png`` (fAux+NG's curves, ``PLOTTED``, raw scores pooled) and
``fig5_faux_rank.png`` (fAux's curves, within-job ranks pooled: the paper's Fig. 5 plots
fAux, whose raw scores are not comparable across jobs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods import registry
from faux.methods.builtin import FAuxMethod, FAuxNGMethod
from faux.reports.base import Report, done
from faux.reports.sweep import results_of, unfinished_cells

NAME = "fig5"
JOB = "fig5_cell"
PLOTTED = FAuxNGMethod.name
#: per-individual fields of records.npz that are not a method's scores
RECORD_FIELDS = ("label", "ifs", "target_grad_norm", "target_grad_norm_logit", "job")
AUX_QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)
GRAD_QUANTILES = (0.0, 0.25, 0.5, 0.75, 0.95, 1.0)


def _ap(labels: np.ndarray, scores: np.ndarray) -> float:
    from faux.metrics.ranking import average_precision

    if labels.size == 0:
        return float("nan")
    return average_precision(labels, scores)


def quantile_bins(values: np.ndarray, quantiles) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Bin index of each value for bins between the given quantiles (last bin closed), and
    the ``(lo, hi)`` of each non-empty bin; duplicate edges (ties) are merged."""
    v = np.asarray(values, dtype=float)
    edges = np.unique(np.quantile(v, quantiles)) if v.size else np.array([0.0, 0.0])
    if edges.size < 2:
        edges = np.array([edges[0], edges[0]])
    idx = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, edges.size - 2)
    return idx, [(float(edges[i]), float(edges[i + 1])) for i in range(edges.size - 1)]


def _fmt_range(lo: float, hi: float, last: bool, digits: int = 3) -> str:
    return f"[{lo:.{digits}g}, {hi:.{digits}g}{']' if last else ')'}"


def load_fig5(sweep) -> tuple[dict, pd.DataFrame, list[tuple[str, str]]]:
    """Pool the fig5 jobs' records: (arrays over individuals, one row per job, missing)."""
    jobs, parts, missing = [], [], []
    for res in results_of(sweep, JOB, lambda m: (m["pair"], m["fusion"], float(m["bias"]),
                                                 int(m["draw"]), int(m["column_seed"]))):
        m = res["metrics"]
        path = Path(res["_dir"]) / m.get("records", "records.npz")
        try:
            with np.load(path) as z:
                rec = {k: z[k] for k in (*m["ap"], "label", "ifs", "target_grad_norm")}
                if "target_grad_norm_logit" in z.files:
                    rec["target_grad_norm_logit"] = z["target_grad_norm_logit"]
        except (OSError, KeyError, ValueError) as exc:
            missing.append((f"{m['pair']} {m['fusion']} bias {m['bias']} draw {m['draw']}",
                            f"records unreadable ({type(exc).__name__}): {path}"))
            continue
        j = len(jobs)
        n = rec["label"].shape[0]
        rec["job"] = np.full(n, j, dtype=np.int32)
        parts.append(rec)
        jobs.append({"job": j, "pair": m["pair"], "fusion": m["fusion"], "bias": float(m["bias"]),
                     "draw": int(m["draw"]), "dim": m.get("dim"), "n": n,
                     "aux_accuracy": float(m["aux_accuracy"]),
                     "target_accuracy": m.get("target_accuracy"),
                     "positive_rate": m["positive_rate"],
                     **{f"ap_{k}": v for k, v in m["ap"].items()},
                     "wall_s": res.get("timings", {}).get("wall_s"),
                     "started": m.get("started"), "finished": m.get("finished"),
                     "peak_rss_mb": m.get("peak_rss_mb"), "dir": res["_dir"]})
    if not parts:
        return {}, pd.DataFrame(jobs), missing
    keys = [k for k in parts[0] if all(k in p for p in parts)]     # optional keys: all or none
    pooled = {k: np.concatenate([p[k] for p in parts]) for k in keys}
    return pooled, pd.DataFrame(jobs), missing


def fig5_groups(pooled: dict, jobs: pd.DataFrame) -> list[dict]:
    """The (panel, bin) groups of Fig. 5: a boolean mask over the pooled individuals each."""
    job = pooled["job"]
    groups = [{"panel": "all", "bin": "all", "mask": np.ones(job.size, bool),
               "lo": float("nan"), "hi": float("nan")}]
    bias_of_row = jobs["bias"].to_numpy()[job]
    for b in sorted(jobs["bias"].unique()):
        groups.append({"panel": "bias", "bin": f"{b:g}", "mask": bias_of_row == b, "lo": b,
                       "hi": b})
    acc_idx, acc_bins = quantile_bins(jobs["aux_accuracy"].to_numpy(), AUX_QUANTILES)
    row_acc = acc_idx[job]
    for i, (lo, hi) in enumerate(acc_bins):
        groups.append({"panel": "aux_accuracy", "bin": _fmt_range(lo, hi, i == len(acc_bins) - 1),
                       "mask": row_acc == i, "lo": lo, "hi": hi})
    for panel, key in (("target_gradient", "target_grad_norm"),
                       ("target_gradient_logit", "target_grad_norm_logit")):
        if key not in pooled:
            continue
        g_idx, g_bins = quantile_bins(pooled[key], GRAD_QUANTILES)
        for i, (lo, hi) in enumerate(g_bins):
            groups.append({"panel": panel, "bin": _fmt_range(lo, hi, i == len(g_bins) - 1),
                           "mask": g_idx == i, "lo": lo, "hi": hi})
    # the same quantiles taken within each job: the top bin is every job's 5% largest
    # gradients, so differences between jobs (bias, pair, fusion) do not enter the bins
    rank = within_job_rank(pooled["target_grad_norm"], job)
    edges = np.asarray(GRAD_QUANTILES, dtype=float)
    r_idx = np.clip(np.searchsorted(edges, rank, side="right") - 1, 0, edges.size - 2)
    for i in range(edges.size - 1):
        groups.append({"panel": "target_gradient_job_rank",
                       "bin": "q" + _fmt_range(edges[i], edges[i + 1], i == edges.size - 2),
                       "mask": r_idx == i, "lo": float(edges[i]), "hi": float(edges[i + 1])})
    return [g for g in groups if g["mask"].any()]


def within_job_rank(values: np.ndarray, job: np.ndarray) -> np.ndarray:
    """Each value's quantile rank in [0, 1) among the values of its own job."""
    out = np.empty(values.size, dtype=float)
    for j in np.unique(job):
        sel = np.flatnonzero(job == j)
        order = np.argsort(values[sel], kind="stable")
        r = np.empty(sel.size)
        r[order] = np.arange(sel.size) / sel.size
        out[sel] = r
    return out


def _job_mean_ap(pooled, mask, method) -> tuple[float, int]:
    job = pooled["job"][mask]
    lab, sc = pooled["label"][mask], pooled[method][mask]
    aps = []
    for j in np.unique(job):
        sel = job == j
        if lab[sel].min() != lab[sel].max():
            aps.append(_ap(lab[sel], sc[sel]))
    return (float(np.mean(aps)) if aps else float("nan")), int(np.unique(job).size)


def methods_of(pooled: dict) -> list[str]:
    """The methods whose scores every pooled job holds, in the registry's order."""
    return sorted((k for k in pooled if k not in RECORD_FIELDS), key=registry.order)


def fig5_frame(pooled: dict, groups: list[dict]) -> pd.DataFrame:
    rows = []
    names = methods_of(pooled)
    for method in (PLOTTED, *[m for m in names if m != PLOTTED]):
        # each job's scores replaced by their rank within the job: pooled, these rank
        # individuals against their own job only (no between-job scale or base-rate effects)
        ranked = within_job_rank(pooled[method], pooled["job"])
        for g in groups:
            lab, sc = pooled["label"][g["mask"]], pooled[method][g["mask"]]
            jm, nj = _job_mean_ap(pooled, g["mask"], method)
            rows.append({"panel": g["panel"], "bin": g["bin"], "ap": _ap(lab, sc),
                         "positive_rate": float(lab.mean()), "n": int(lab.size),
                         "method": method, "lo": g["lo"], "hi": g["hi"], "n_jobs": nj,
                         "ap_job_mean": jm, "ap_job_rank": _ap(lab, ranked[g["mask"]])})
    return pd.DataFrame(rows)


def fig5_trends(frame: pd.DataFrame, pooled: dict, jobs: pd.DataFrame,
                method: str = PLOTTED, col: str = "ap") -> dict:
    """The checks of Section 4.4's claims on ``method``'s pooled AP (``col="ap"``) or on
    the pooled AP of within-job ranks (``col="ap_job_rank"``). ``lift`` = AP - positive
    rate (AP above random guessing)."""
    from scipy.stats import spearmanr

    out: dict = {"method": method, "score": "within-job rank" if col == "ap_job_rank" else "raw"}
    scores = (within_job_rank(pooled[method], pooled["job"]) if col == "ap_job_rank"
              else pooled[method])
    bias_of_row = jobs["bias"].to_numpy()[pooled["job"]]
    hi, lo = bias_of_row >= 0.75, bias_of_row <= 0.25
    for name, mask in (("bias_ge_0.75", hi), ("bias_le_0.25", lo)):
        lab = pooled["label"][mask]
        out[f"ap_{name}"] = _ap(lab, scores[mask]) if lab.size else float("nan")
        out[f"pos_{name}"] = float(lab.mean()) if lab.size else float("nan")
    f = frame[frame["method"] == method]
    for panel in ("bias", "aux_accuracy", "target_gradient", "target_gradient_logit",
                  "target_gradient_job_rank"):
        sub = f[f["panel"] == panel]
        aps = sub[col].to_numpy(float)
        lifts = aps - sub["positive_rate"].to_numpy(float)
        if len(aps) < 2:
            continue
        out[f"spearman_{panel}"] = float(spearmanr(np.arange(len(aps)), aps).statistic)
        out[f"spearman_lift_{panel}"] = float(spearmanr(np.arange(len(lifts)), lifts).statistic)
        if panel.startswith("target_gradient"):
            tag = panel.replace("target_gradient", "grad")
            out[f"lift_{tag}_top_bin"] = float(lifts[-1])
            out[f"lift_{tag}_other_bins_min"] = float(np.nanmin(lifts[:-1]))
            out[f"lift_{tag}_other_bins_max"] = float(np.nanmax(lifts[:-1]))
    return out


def _pr_curve(labels, scores):
    from sklearn.metrics import precision_recall_curve

    p, r, _ = precision_recall_curve(labels.astype(int), scores)
    return r, p


def plot_fig5(pooled: dict, groups: list[dict], frame: pd.DataFrame, path: Path,
              method: str = PLOTTED, rank: bool = False) -> Path:
    """Panels (a)-(c): ``method``'s pooled PR curve per bin, with its random-guess line;
    ``rank=True`` pools each job's within-job score ranks instead of the raw scores."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {"bias": "(a) by data bias", "aux_accuracy": "(b) by aux-model accuracy",
              "target_gradient": r"(c) by target-gradient norm $|\nabla f_{tar}|$"}
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.8))
    f = frame[frame["method"] == method].set_index(["panel", "bin"])
    ap_col = "ap_job_rank" if rank else "ap"
    scores = within_job_rank(pooled[method], pooled["job"]) if rank else pooled[method]
    for ax, panel in zip(axes, titles):
        gs = [g for g in groups if g["panel"] == panel]
        colors = plt.cm.viridis(np.linspace(0.0, 0.9, max(1, len(gs))))
        for g, col in zip(gs, colors):
            lab, sc = pooled["label"][g["mask"]], scores[g["mask"]]
            row = f.loc[(panel, g["bin"])]
            if lab.min() == lab.max():
                continue
            r, p = _pr_curve(lab, sc)
            ax.plot(r, p, color=col, lw=1.6,
                    label=f"{'bias ' if panel == 'bias' else ''}{g['bin']}: AP {row[ap_col]:.3f} "
                          f"(rate {row['positive_rate']:.2f})")
            ax.axhline(row["positive_rate"], color=col, ls="--", lw=0.9)
        ax.set_title(titles[panel])
        ax.set_xlabel("recall")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=8.5, loc="upper right", title="dashed: random guess",
                  title_fontsize=8.5)
    axes[0].set_ylabel("precision")
    what = "within-job score ranks" if rank else "scores"
    fig.suptitle(f"Fig. 5: {registry.label(method)} PR curves, {what} pooled over the Section 4.4 "
                 f"sweep ({int(pooled['job'].max()) + 1} jobs, {pooled['label'].size} "
                 "individuals)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _sweep_facts(jobs: pd.DataFrame) -> dict:
    out = {"n_jobs": int(len(jobs))}
    if len(jobs) and jobs["wall_s"].notna().any():
        out["wall_s_sum"] = float(jobs["wall_s"].sum())
        out["wall_s_median"] = float(jobs["wall_s"].median())
        out["wall_s_max"] = float(jobs["wall_s"].max())
    if len(jobs) and jobs["started"].notna().all() and jobs["finished"].notna().all():
        span = float(jobs["finished"].max() - jobs["started"].min())
        out["span_s"] = span
        out["jobs_per_minute"] = 60.0 * len(jobs) / span if span > 0 else float("nan")
    if len(jobs) and jobs["peak_rss_mb"].notna().any():
        i = jobs["peak_rss_mb"].idxmax()
        out["peak_rss_mb_max"] = float(jobs.loc[i, "peak_rss_mb"])
        out["peak_rss_job"] = f"{jobs.loc[i, 'pair']} {jobs.loc[i, 'fusion']} (d={jobs.loc[i, 'dim']})"
    return out


def _fig5_md(frame: pd.DataFrame, trends: list[dict], facts: dict) -> str:
    methods = sorted(set(frame["method"]), key=registry.order)
    labels = {m: registry.label(m) for m in {*methods, PLOTTED}}
    out = [f"Fig. 5 (Section 4.4): pooled AP per bin; the plotted method is "
           f"{labels[PLOTTED]} (`{PLOTTED}`). `rate` is the positive rate (random-guess AP); "
           "`job-mean` the mean of the per-job APs in the bin; `rank AP` the pooled AP of "
           "within-job score ranks (no between-job effects).\n\n",
           "| panel | bin | n | jobs | rate | " + " | ".join(f"AP {labels[m]}" for m in methods)
           + f" | job-mean AP {labels[PLOTTED]} | " + " | ".join(
               f"rank AP {labels[m]}" for m in methods) + " |\n",
           "|---|---|---|---|---|" + "---|" * (2 * len(methods) + 1) + "\n"]
    base = frame[frame["method"] == PLOTTED]

    def cells(r, col):
        out = []
        for m in methods:
            v = frame[(frame["method"] == m) & (frame["panel"] == r["panel"])
                      & (frame["bin"] == r["bin"])][col]
            out.append(f"{float(v.iloc[0]):.3f}" if len(v) else "—")
        return " | ".join(out)

    for _, r in base.iterrows():
        out.append(f"| {r['panel']} | {r['bin']} | {r['n']} | {r['n_jobs']} | "
                   f"{r['positive_rate']:.3f} | {cells(r, 'ap')} | {r['ap_job_mean']:.3f} | "
                   f"{cells(r, 'ap_job_rank')} |\n")
    for t in trends:
        out.append(f"\nTrend checks, {registry.label(t['method'])} ({t['score']} scores pooled; "
                   "lift = AP - positive rate):\n\n")
        for k, v in t.items():
            if k not in ("method", "score"):
                out.append(f"- {k}: {v:.3f}\n" if isinstance(v, float) else f"- {k}: {v}\n")
    out.append("\nSweep:\n\n")
    for k, v in facts.items():
        out.append(f"- {k}: {v:.3f}\n" if isinstance(v, float) else f"- {k}: {v}\n")
    return "".join(out)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    """The Fig. 5 report of the fig5 jobs in ``sweep``."""
    pooled, jobs, missing = load_fig5(sweep)
    report = Report(pd.DataFrame())
    report.missing.extend(missing)
    report.missing += unfinished_cells(sweep)
    if not pooled:
        report.lines.append("fig5: no finished fig5 jobs with records")
        return report
    groups = fig5_groups(pooled, jobs)
    frame = fig5_frame(pooled, groups)
    trends = [fig5_trends(frame, pooled, jobs, PLOTTED, "ap"),
              fig5_trends(frame, pooled, jobs, FAuxMethod.name, "ap_job_rank")]
    facts = _sweep_facts(jobs)
    report.frame = frame
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    csv, md = results_dir / "fig5.csv", results_dir / "fig5.md"
    frame.to_csv(csv, index=False, float_format="%.4f")
    jobs.drop(columns=["dir"]).to_csv(results_dir / "fig5_jobs.csv", index=False,
                                      float_format="%.4f")
    text = _fig5_md(frame, trends, facts)
    md.write_text(text)
    png = plot_fig5(pooled, groups, frame, Path(figures_dir) / "fig5.png")
    png_rank = plot_fig5(pooled, groups, frame, Path(figures_dir) / "fig5_faux_rank.png",
                         method=FAuxMethod.name, rank=True)
    report.files = [csv, md, results_dir / "fig5_jobs.csv", png, png_rank]
    return done(report, text)
