"""Fig. 11 from the FlipTest sweep (jobs ``fig11_cell``): ``build`` writes one row per job
(λ, GAN seed, AP, KS, MSE) to ``fig11.csv``, the Pearson and Spearman correlations of AP with
KS and with MSE to ``fig11.md`` (with a table of each beside the paper's finding:
:func:`claim_rows`), and ``fig11.png`` (AP against KS and against MSE, coloured
by λ).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from faux.reports.base import Report, done
from faux.reports.sweep import results_of, unfinished_cells

NAME = "fig11"
JOB = "fig11_cell"
#: |Pearson r| at or above which AP "correlates" with a GAN metric (the paper gives no number)
CORRELATES = 0.3
#: the paper's finding per GAN metric (A.11.4, Fig. 11): the expected sign of AP's correlation
#: with it (-1: a better, i.e. smaller, value goes with a higher AP; 0: no relation)
PAPER_CLAIMS = {
    "ks": (-1, "a smaller KS statistic goes with a higher AP"),
    "mse": (0, "MSE does not correlate with AP (\"at odds\" with it)"),
}


def claim_rows(corr: dict) -> list[tuple[str, str, str, bool]]:
    """Per GAN metric: (metric, the paper's claim, our Pearson / Spearman, whether ours agrees:
    the sign the paper expects at ``|r| >= CORRELATES``, or ``|r| < CORRELATES`` for none)."""
    rows = []
    for q, (sign, text) in PAPER_CLAIMS.items():
        r, rho = corr[f"pearson_ap_{q}"], corr[f"spearman_ap_{q}"]
        agrees = abs(r) < CORRELATES if sign == 0 else sign * r >= CORRELATES
        rows.append((q.upper(), text, f"{r:+.2f} / {rho:+.2f}", bool(agrees)))
    return rows


def fig11_frame(sweep) -> pd.DataFrame:
    rows = []
    key = ("xc", "xy", "bias", "fusion", "transport_weight", "gan_seed", "gen_steps")
    for res in results_of(sweep, JOB, lambda m: tuple(m[k] for k in key)):
        m = res["metrics"]
        rows.append({"xc": m["xc"], "xy": m["xy"], "bias": m["bias"], "fusion": m["fusion"],
                     "transport_weight": m["transport_weight"], "gan_seed": m["gan_seed"],
                     "gen_steps": m["gen_steps"], "quality_rows": m.get("quality_rows"),
                     "ap": m["ap"], "ap_top30": m["ap_top30"],
                     "ks": m["ks"], "mse": m["mse"], "mse_real": m["mse_real"],
                     "positive_rate": m["positive_rate"], "dim": m["dim"],
                     "wall_s": res.get("timings", {}).get("wall_s"),
                     "started": m.get("started"), "finished": m.get("finished"),
                     "peak_rss_mb": m.get("peak_rss_mb")})
    frame = pd.DataFrame(rows)
    if len(frame):
        frame.sort_values(["transport_weight", "gan_seed"], inplace=True, ignore_index=True)
    return frame


def fig11_correlations(frame: pd.DataFrame) -> dict:
    """Pearson and Spearman correlations of AP with KS and with MSE over the jobs; the same
    for the AP against the top 30% by IFS (``ap_top30``: more positives, less noise)."""
    from scipy.stats import pearsonr, spearmanr

    out: dict = {"n_points": int(len(frame))}
    for ap in ("ap", "ap_top30"):
        for q in ("ks", "mse"):
            x, y = frame[q].to_numpy(float), frame[ap].to_numpy(float)
            ok = np.isfinite(x) & np.isfinite(y)
            tag = f"{ap}_{q}"
            if ok.sum() >= 3 and np.ptp(x[ok]) > 0 and np.ptp(y[ok]) > 0:
                out[f"pearson_{tag}"] = float(pearsonr(x[ok], y[ok]).statistic)
                out[f"spearman_{tag}"] = float(spearmanr(x[ok], y[ok]).statistic)
            else:
                out[f"pearson_{tag}"] = out[f"spearman_{tag}"] = float("nan")
    return out


def plot_fig11(frame: pd.DataFrame, corr: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lam = frame["transport_weight"].to_numpy(float)
    pos = lam[lam > 0]
    floor = pos.min() / 10 if pos.size else 1e-7
    c = np.log10(np.where(lam > 0, lam, floor))
    # top row: AP against the IFS labels; bottom row: AP with the top 30% by IFS as the
    # positives (defined whatever the threshold's positive rate)
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.6), sharey="row", squeeze=False,
                             gridspec_kw={"hspace": 0.35})
    rows = (("ap", "FlipTest AP (IFS labels)", frame["positive_rate"].iloc[0]),
            ("ap_top30", "FlipTest AP (top 30% by IFS)", 0.3))
    for i, (ap, ylabel, chance) in enumerate(rows):
        for ax, q, name in ((axes[i, 0], "ks", "mean KS statistic"),
                            (axes[i, 1], "mse", "mean MSE")):
            sc = ax.scatter(frame[q], frame[ap], c=c, cmap="plasma", s=36, edgecolors="k",
                            linewidths=0.4)
            ax.axhline(chance, color="grey", ls="--", lw=0.9, label="random guess")
            v = frame[q].to_numpy(float)
            v = v[np.isfinite(v) & (v > 0)]
            if v.size and v.max() / v.min() > 100:      # MSE can span decades: log axis
                ax.set_xscale("log")
            ax.set_xlabel(name + " (lower: better GAN)")
            ax.set_title(f"{ap} vs {q.upper()}: Pearson {corr[f'pearson_{ap}_{q}']:.2f}, "
                         f"Spearman {corr[f'spearman_{ap}_{q}']:.2f}", fontsize=9)
            ax.legend(fontsize=8)
        axes[i, 0].set_ylabel(ylabel)
    cb = fig.colorbar(sc, ax=axes, shrink=0.85)
    cb.set_label(r"$\log_{10}\lambda$" + (f" (λ=0 at {np.log10(floor):.0f})" if (lam == 0).any()
                                          else ""))
    r = frame.iloc[0]
    fig.suptitle(f"Fig. 11: FlipTest on {r['xc']}/{r['xy']} bias {r['bias']:g} {r['fusion']} "
                 f"(d={r['dim']}), {len(frame)} GANs, {int(r['gen_steps'])} generator steps",
                 fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def _fig11_md(frame: pd.DataFrame, corr: dict, facts: dict) -> str:
    out = ["Fig. 11 (A.11.4): FlipTest's AP against its GANs' quality, per transport weight "
           "(mean ± std over GAN seeds; AP top-30%: the top 30% by IFS as positives).\n\n",
           "| λ | runs | AP | AP top-30% | KS | MSE | MSE (real) |\n"
           "|---|---|---|---|---|---|---|\n"]
    def ms(g, col):
        v = g[col].to_numpy(float)
        return f"{v.mean():.3f} ± {v.std(ddof=1):.3f}" if v.size > 1 else f"{v.mean():.3f}"

    for lam, g in frame.groupby("transport_weight"):
        out.append(f"| {lam:g} | {len(g)} | {ms(g, 'ap')} | {ms(g, 'ap_top30')} | {ms(g, 'ks')} | "
                   f"{ms(g, 'mse')} | {ms(g, 'mse_real')} |\n")
    out.append(f"\nPositive rate {frame['positive_rate'].iloc[0]:.3f}. Our correlations of "
               f"AP with each GAN metric over {corr['n_points']} GANs beside the paper's "
               f"finding (agrees: the paper's sign at |Pearson| ≥ {CORRELATES}, or "
               f"|Pearson| < {CORRELATES} where it finds no relation):\n\n"
               "| GAN metric | paper (A.11.4) | ours: Pearson / Spearman | agrees |\n"
               "|---|---|---|---|\n")
    for q, text, ours, agrees in claim_rows(corr):
        out.append(f"| {q} | {text} | {ours} | {'yes' if agrees else '**no**'} |\n")
    out.append("\nAll correlations:\n\n")
    for k, v in corr.items():
        if k != "n_points":
            out.append(f"- {k}: {v:.3f}\n")
    out.append("\nSweep:\n\n")
    for k, v in facts.items():
        out.append(f"- {k}: {v:.3f}\n" if isinstance(v, float) else f"- {k}: {v}\n")
    return "".join(out)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    """The Fig. 11 report of the fig11 jobs in ``sweep``."""
    frame = fig11_frame(sweep)
    report = Report(frame)
    report.missing += unfinished_cells(sweep)
    if frame.empty:
        report.lines.append("fig11: no finished fig11 jobs")
        return report
    corr = fig11_correlations(frame)
    facts = {"n_jobs": int(len(frame))}
    if frame["started"].notna().all():
        span = float(frame["finished"].max() - frame["started"].min())
        facts.update(span_s=span, wall_s_sum=float(frame["wall_s"].sum()),
                     jobs_per_minute=60.0 * len(frame) / span if span > 0 else math.nan)
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    csv, md = results_dir / "fig11.csv", results_dir / "fig11.md"
    frame.drop(columns=["started", "finished"]).to_csv(csv, index=False, float_format="%.6g")
    text = _fig11_md(frame, corr, facts)
    md.write_text(text)
    png = plot_fig11(frame, corr, Path(figures_dir) / "fig11.png")
    report.frame = frame
    report.files = [csv, md, png]
    return done(report, text)
