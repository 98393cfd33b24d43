"""``report.html``: one self-contained page (plots embedded as base64 PNG, no external
files or requests), rendered from the jinja2 template ``templates/report.html.j2`` with
autoescaping (a feature name or group label is text, never markup)."""

from __future__ import annotations

import base64
import io
import math

import numpy as np
from markupsafe import Markup

TEMPLATE = "report.html.j2"


def _png(fig) -> Markup:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return Markup('<img alt="plot" src="data:image/png;base64,{}">').format(
        base64.b64encode(buf.getvalue()).decode())


def _figure(size):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)


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


def _hist_plot(result) -> Markup:
    """The primary score's histogram per protected group (log density), with the threshold."""
    s = result.summary
    primary = s["settings"]["primary"]
    scores = np.asarray(result.plot_scores.get(primary, np.empty(0)))
    groups = np.asarray(result.plot_scores.get("group", np.empty(0)))
    thr = _finite_threshold(s)
    fig, ax = _figure((7, 3.6))
    if scores.size:
        hi = _upper(scores, thr=thr)
        bins = np.linspace(0, hi, 60)
        for g in np.unique(groups):
            v = np.clip(scores[groups == g], 0, hi)
            ax.hist(v, bins=bins, alpha=0.5, density=True, label=f"{s['data']['protected']}={g}")
        _threshold_line(ax, thr)
    return _score_axes(fig, ax, primary)


def _null_plot(result) -> Markup:
    """The primary score's distribution over the rows against its null distribution (the
    sample rows scored with the aux models trained on a permuted protected attribute)."""
    s = result.summary
    primary = s["settings"]["primary"]
    scores = np.asarray(result.plot_scores.get(primary, np.empty(0)), dtype=np.float64)
    null = np.asarray(result.plot_scores.get(f"null:{primary}", np.empty(0)), dtype=np.float64)
    thr = _finite_threshold(s)
    fig, ax = _figure((7, 3.6))
    if scores.size or null.size:
        hi = _upper(scores, null, thr=thr)
        bins = np.linspace(0, hi, 60)
        if scores.size:
            ax.hist(np.clip(scores, 0, hi), bins=bins, density=True, alpha=0.6,
                    color="#4c72b0", label=f"rows ({scores.size:,} plotted)")
        if null.size:
            ax.hist(np.clip(null, 0, hi), bins=bins, density=True, histtype="step", lw=1.5,
                    color="#c44e52", label=f"null: permuted-c aux models ({null.size:,})")
        _threshold_line(ax, thr)
    return _score_axes(fig, ax, primary)


def _ranking_plot(ranking: dict, n: int = 20) -> Markup:
    items = list(ranking.items())[:n][::-1]
    fig, ax = _figure((7, 0.3 * len(items) + 1))
    ax.barh([str(k) for k, _ in items], [v for _, v in items], color="#4c72b0")
    ax.set_xlabel("importance for the protected attribute (|mean aux gradient|)")
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


def _is_undefined(v) -> bool:
    from jinja2 import Undefined

    return isinstance(v, Undefined)


def fmt(v) -> str:
    """A value for a cell: 4 significant digits, ``[lo, hi]`` for an interval, ``-`` for
    a missing or non-finite one."""
    if v is None or _is_undefined(v):
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | np.integer):
        return f"{int(v):,}"
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}" if math.isfinite(v) else "-"
    if isinstance(v, list | tuple):
        if len(v) == 2 and all(isinstance(x, int | float | np.number) or x is None for x in v):
            return f"[{fmt(v[0])}, {fmt(v[1])}]"
        return ", ".join(fmt(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


def pct(v) -> str:
    """A rate (or an interval of rates) as a percentage."""
    if isinstance(v, list | tuple) and len(v) == 2:
        return f"[{pct(v[0])}, {pct(v[1])}]"
    if v is None or _is_undefined(v) or not isinstance(v, int | float | np.number) \
            or not math.isfinite(v):
        return "-"
    return f"{float(v):.3%}"


def environment():
    """The jinja2 environment of the report (autoescape on, the ``fmt`` and ``pct`` filters)."""
    from jinja2 import Environment, PackageLoader

    env = Environment(loader=PackageLoader("faux.audit", "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    env.filters["pct"] = pct
    return env


def _settings_rows(s) -> list[tuple[str, str]]:
    sc, m, cal = s["scoring"], s["model"], s["calibration"]
    mode = (sc["mode"] if m["differentiable"] else
            f"black box: central finite differences, step {sc['fd_step_std']} standard "
            f"deviations, {sc['model_calls_per_row']} model calls per row")
    if sc.get("rows_scored_are") == "sample":
        mode += f" scored, of the {sc['rows_scored']:,} sample rows (--fd-scores sample)"
    rows = [("model", m["source"])]
    if m.get("file"):
        loader = m.get("loader") or "?"
        if loader == "pickle":
            loader += " (ran code from the file; trusted with --trust-pickle)"
        rows += [("model file", m["file"]), ("model sha256", m.get("sha256") or "?"),
                 ("loaded by", loader)]
        if m.get("class"):
            rows.append(("model class", m["class"]))
    thr = s["settings"]["threshold"]
    if m.get("task"):
        rows.append(("task", f"{m['task']} ({m.get('task_from') or '?'}); output: "
                     f"{m.get('output') or '?'}"))
    if m.get("reads_columns"):
        rows.append(("columns", f"read {m['reads_columns']}"))
    return rows + [
        ("scoring", mode), ("rows", f"{s['data']['rows']:,}"),
        ("features", f"{len(s['data']['features'])}"),
        ("protected", f"{s['data']['protected']} ({s['protected']['kind']})"),
        ("methods", ", ".join(s["settings"]["methods"])),
        ("verdict", (s.get("verdict") or {}).get("text")
         or f"{s['settings']['primary']} > {fmt(thr)} ({cal['rule']})"),
        ("threshold", f"{s['settings']['primary']} > {fmt(thr)} ({cal['rule']})"
         + ("; diagnostic" if s.get("effects") else "")),
        ("aux sample", f"{s['settings']['sample']:,} rows (80% fit, 20% held out)"),
        ("flagged", f"{s['flagged']['count']:,} ({s['flagged']['rate']:.3%})"),
        ("speed", f"{sc['rows_per_s']:,.0f} rows/s")]


def _level(v) -> str:
    """An interval's level as a percentage (0.95 or 95 -> 95%)."""
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        return ""
    return f"{v:.0%}" if v <= 1 else f"{v:g}%"


def _group_views(groups: dict) -> list:
    """The views of ``summary["groups"]``, the primary view first."""
    views = groups.get("views") or {}
    first = groups.get("primary_view")
    return sorted(views.items(), key=lambda kv: kv[0] != first)


def render(result) -> str:
    """The report page of an ``AuditResult`` as a string."""
    s = result.summary
    cal = s["calibration"]
    names: list[str] = []
    for qs in (cal.get("null_quantiles") or {}).values():
        names += [q for q in qs if q not in names]
    groups = s.get("groups")
    flagged_rows = [{"row_id": r.row_id, "score": r.score, "group": r.group,
                     "top_features": list(r.top_features)}
                    for r in result.top_flagged.itertuples()]
    return environment().get_template(TEMPLATE).render(
        s=s, gate_set=not all(s["settings"].get(k) is None for k in (
            "fail_above", "max_flagged_rate", "max_excess_flags")),
        settings_rows=_settings_rows(s), null_quantile_names=names,
        has_null=f"null:{s['settings']['primary']}" in result.plot_scores,
        groups=groups, group_views=_group_views(groups) if groups else [],
        level=_level((groups or {}).get("interval", {}).get("level")),
        flagged_rows=flagged_rows, b=s.get("baselines"),
        regression=(s.get("model") or {}).get("task") == "regression",
        plots={"null": _null_plot(result), "groups": _hist_plot(result),
               "ranking": _ranking_plot(result.feature_ranking)})


def write_report(result, path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(result))
