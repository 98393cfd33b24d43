"""The pictures of ``report.html`` (``faux.audit.report.page``), drawn with matplotlib and embedded
as base64 PNG: the flags against the band expected by chance, the flagged rate by group and
intersection cell, how often each feature moved, each row's prediction as is against as the
other group; and the diagnostics' score histograms and feature ranking. Each draws
summary.json's numbers or the plot sample of the scores (``AuditResult.plot_scores``)."""

from __future__ import annotations

import base64
import io
import math

import numpy as np
from markupsafe import Markup

POINTS = 20_000  # points drawn per scatter of the effects
GROUP_COLOURS = 8  # groups drawn in a colour of their own; the others together
COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974")


def _png(fig, alt: str = "plot") -> Markup:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return Markup('<img alt="{}" src="data:image/png;base64,{}">').format(
        alt, base64.b64encode(buf.getvalue()).decode())


def _figure(size, rows: int = 1, **kw):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(rows, 1, figsize=size, squeeze=False, **kw)


def _finite_threshold(s) -> float | None:
    thr = s["settings"]["threshold"]
    return float(thr) if thr is not None and np.isfinite(thr) else None


def _upper(*arrays, thr=None) -> float:
    vals = [float(np.quantile(a, 0.999)) for a in arrays if a.size]
    return max([*vals, (thr or 0) * 1.2, 1e-12])


def _threshold_line(ax, thr: float | None) -> None:
    """The threshold (when finite) on a log-density histogram, and its legend."""
    if thr is not None:
        ax.axvline(thr, color="k", ls="--", lw=1, label="threshold")
    ax.set_yscale("log")
    ax.legend(fontsize=8)


def _score_axes(fig, ax, primary: str) -> Markup:
    """Label a score histogram's axes and embed the figure."""
    ax.set_xlabel(f"{primary} score (clipped at the 99.9% quantile)")
    ax.set_ylabel("density (log)")
    return _png(fig)


def hist_plot(result) -> Markup:
    """The primary score's histogram per protected group (log density), with the threshold."""
    s = result.summary
    primary = s["settings"]["primary"]
    scores = np.asarray(result.plot_scores.get(primary, np.empty(0)), dtype=np.float64)
    groups = np.asarray(result.plot_scores.get("group", np.empty(0)))
    ok = np.isfinite(scores)
    scores, groups = scores[ok], groups[ok] if groups.size == ok.size else groups
    thr = _finite_threshold(s)
    fig, axes = _figure((7, 3.4))
    ax = axes[0, 0]
    if scores.size:
        hi = _upper(scores, thr=thr)
        bins = np.linspace(0, hi, 60)
        for g in np.unique(groups)[:GROUP_COLOURS]:
            v = np.clip(scores[groups == g], 0, hi)
            ax.hist(v, bins=bins, alpha=0.5, density=True, label=f"{s['data']['protected']}={g}")
        _threshold_line(ax, thr)
    return _score_axes(fig, ax, primary)


def null_plot(result) -> Markup:
    """The primary score's distribution over the rows against its null distribution (the
    sample rows scored with the aux models trained on a permuted protected attribute)."""
    s = result.summary
    primary = s["settings"]["primary"]
    scores = np.asarray(result.plot_scores.get(primary, np.empty(0)), dtype=np.float64)
    scores = scores[np.isfinite(scores)]
    null = np.asarray(result.plot_scores.get(f"null:{primary}", np.empty(0)), dtype=np.float64)
    thr = _finite_threshold(s)
    fig, axes = _figure((7, 3.4))
    ax = axes[0, 0]
    if scores.size or null.size:
        hi = _upper(scores, null, thr=thr)
        bins = np.linspace(0, hi, 60)
        if scores.size:
            ax.hist(np.clip(scores, 0, hi), bins=bins, density=True, alpha=0.6,
                    color=COLOURS[0], label=f"rows ({scores.size:,} plotted)")
        if null.size:
            ax.hist(np.clip(null, 0, hi), bins=bins, density=True, histtype="step", lw=1.5,
                    color=COLOURS[3], label=f"null: permuted-c aux models ({null.size:,})")
        _threshold_line(ax, thr)
    return _score_axes(fig, ax, primary)


def ranking_plot(ranking: dict, name, n: int = 20) -> Markup:
    items = list(ranking.items())[:n][::-1]
    fig, axes = _figure((7, 0.28 * len(items) + 1))
    ax = axes[0, 0]
    ax.barh([name(str(k)) for k, _ in items], [v for _, v in items], color=COLOURS[0])
    ax.set_xlabel("how strongly the aux model reads the protected attribute from it "
                  "(|mean aux gradient|)")
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


def expected_plot(s, verdicts: dict) -> Markup:
    """Per attribute: the flags expected for a model that ignores it (the 95 % interval as
    a band, the mean as a tick) beside the rows flagged (a dot)."""
    effects = s["effects"]
    fig, axes = _figure((7.5, 0.75 * len(effects) + 1.1))
    ax = axes[0, 0]
    names = list(effects)
    top = 1.0
    for i, name in enumerate(names):
        e = effects[name]
        ef = e["expected_false_flags"]
        y = len(names) - 1 - i
        lo, hi = (ef.get("interval") or [None, None])
        if lo is not None and hi is not None:
            ax.barh(y, hi - lo, left=lo, height=0.45, color="#d9d9d9",
                    label="95 % expected by chance" if i == 0 else None)
            top = max(top, hi)
        ax.plot([ef["count"]] * 2, [y - 0.25, y + 0.25], color="#555555", lw=2,
                label="expected (mean)" if i == 0 else None)
        colour = COLOURS[3] if verdicts.get(name) else COLOURS[0]
        ax.plot(e["flagged"], y, "o", ms=9, color=colour,
                label="flagged" if i == 0 else None)
        ax.annotate(f"{e['flagged']:,} flagged", (e["flagged"], y), xytext=(6, 6),
                    textcoords="offset points", fontsize=8)
        top = max(top, e["flagged"], ef["count"])
    ax.set_yticks(range(len(names)), names[::-1])
    ax.set_xlim(0, top * 1.15)
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.set_xlabel("rows (of all the audited rows)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=3,
              frameon=False)
    return _png(fig, "rows flagged per attribute against the band expected by chance")


def rates_plot(panels: list) -> Markup:
    """One panel per view: each group's flagged rate with its Wilson interval."""
    heights = [0.3 * len(p["rows"]) + 0.9 for p in panels]
    fig, axes = _figure((7.5, sum(heights) + 0.3), rows=len(panels),
                        gridspec_kw={"height_ratios": heights})
    for ax, p in zip(axes[:, 0], panels, strict=True):
        rows = p["rows"][::-1]
        y = np.arange(len(rows))
        rate = np.array([r["rate"] for r in rows], dtype=np.float64)
        ci = np.array([r["rate_ci"] or [np.nan, np.nan] for r in rows], dtype=np.float64)
        err = np.vstack([rate - ci[:, 0], ci[:, 1] - rate])
        ax.errorbar(rate * 100, y, xerr=np.nan_to_num(err) * 100, fmt="o", color=COLOURS[0],
                    ecolor="#888888", capsize=3)
        ax.set_yticks(y, [f"{r['group']} ({r['rows']:,})" for r in rows], fontsize=8)
        ax.set_title(p["title"], fontsize=9, loc="left")
        ax.set_xlim(left=0)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("flagged rate (%), 95 % Wilson interval; rows in brackets")
    fig.tight_layout()
    return _png(fig, "flagged rate by group and intersection cell, with intervals")


def moved_plot(s, name) -> Markup:
    """Per attribute: the share of its flagged rows whose counterfactual changed each
    feature (a categorical feature once, whatever its encoding)."""
    effects = {a: e for a, e in s["effects"].items() if e.get("moved_counts")}
    n_bars = [min(len(e["moved_counts"]), 15) for e in effects.values()]
    if not effects:
        return Markup("")
    heights = [0.26 * k + 0.9 for k in n_bars]
    fig, axes = _figure((7.5, sum(heights) + 0.3), rows=len(effects),
                        gridspec_kw={"height_ratios": heights})
    for ax, (a, e) in zip(axes[:, 0], effects.items(), strict=True):
        items = list(e["moved_counts"].items())[:15][::-1]
        k = max(int(e["flagged"]), 1)
        ax.barh([name(f) for f, _ in items], [100 * v / k for _, v in items],
                color=COLOURS[1])
        ax.set_xlim(0, 100)
        ax.set_title(f"{a}: of its {e['flagged']:,} flagged rows, the share whose "
                     "counterfactual changed each feature", fontsize=9, loc="left")
        ax.tick_params(axis="y", labelsize=8)
    axes[-1, 0].set_xlabel("% of the attribute's flagged rows")
    fig.tight_layout()
    return _png(fig, "how often each feature moved in the flagged rows' counterfactuals")


def effects_plot(result, regression: bool) -> Markup | None:
    """Per attribute: each plotted row's output as it is against its output as the other
    group (the counterfactual), coloured by group, with the decision threshold (a
    classifier) or the materiality band (a regressor)."""
    s, ps = result.summary, result.plot_scores
    names = [a for a in s["effects"] if f"effect.p_cf:{a}" in ps]
    if not names or "effect.p" not in ps:
        return None
    st = s["settings"]
    thr, mat = st.get("decision_threshold"), st.get("materiality")
    fig, axes = _figure((7.5, 4.2 * len(names)), rows=len(names))
    p_all = np.asarray(ps["effect.p"], dtype=np.float64)
    step = max(1, int(math.ceil(len(p_all) / POINTS)))
    for ax, a in zip(axes[:, 0], names, strict=True):
        p = p_all[::step]
        q = np.asarray(ps[f"effect.p_cf:{a}"], dtype=np.float64)[::step]
        g = np.asarray(ps[f"effect.group:{a}"]).astype(str)[::step]
        levels, counts = np.unique(g, return_counts=True)
        order = levels[np.argsort(-counts, kind="stable")]
        for i, lev in enumerate(order[:GROUP_COLOURS]):
            m = g == lev
            ax.scatter(p[m], q[m], s=3, alpha=0.35, color=COLOURS[i], rasterized=True,
                       label=f"{lev} ({int(m.sum()):,})")
        rest = ~np.isin(g, order[:GROUP_COLOURS])
        if rest.any():
            ax.scatter(p[rest], q[rest], s=3, alpha=0.35, color=COLOURS[-1],
                       label=f"other groups ({int(rest.sum()):,})")
        lo = float(np.nanmin([p.min(initial=0), q.min(initial=0)]))
        hi = float(np.nanmax([p.max(initial=1), q.max(initial=1)]))
        ax.plot([lo, hi], [lo, hi], color="#999999", lw=0.8)
        if regression and mat is not None:
            for sign in (-1, 1):
                ax.plot([lo, hi], [lo + sign * mat, hi + sign * mat], color="k", ls="--",
                        lw=0.8)
            what = "predicted value"
        else:
            if mat is None and thr is not None:
                ax.axvline(thr, color="k", ls="--", lw=0.8)
                ax.axhline(thr, color="k", ls="--", lw=0.8)
                ax.fill_between([lo, thr], thr, hi, color="#c44e52", alpha=0.06, lw=0)
                ax.fill_between([thr, hi], lo, thr, color="#c44e52", alpha=0.06, lw=0)
            elif mat is not None:
                for sign in (-1, 1):
                    ax.plot([lo, hi], [lo + sign * mat, hi + sign * mat], color="k",
                            ls="--", lw=0.8)
            what = "predicted probability"
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(f"{what} as the person is")
        ax.set_ylabel(f"{what} as the other {a} group")
        ax.set_title(f"{a}: {len(p):,} rows plotted", fontsize=9, loc="left")
        ax.legend(fontsize=7, markerscale=3, loc="upper left", title=a, title_fontsize=7)
    fig.tight_layout()
    return _png(fig, "each row's prediction as is against as the other group, by group")
