"""``report.html``: one self-contained page (plots embedded as base64 PNG, no external files)."""

from __future__ import annotations

import base64
import html
import io

import numpy as np

HOW_TO_READ = """
<p><b>What a score means.</b> An aux model was trained to predict the protected attribute
from the features. fAux (eq. 9 of Castiglione et al., 2022) measures, for each individual,
how much the model's probability changes when the features move in the direction that
changes the aux model's belief about the protected attribute (per unit of the aux's logit,
the smallest such move). A score of 0.05 means: moving this individual along that direction
until the aux's logit changes by 1 changes the model's probability by about 0.05 (by about
0.2 for a change from 12% to 88% in the aux's belief). fAux+NG is the |cosine| between the
model's gradient and the aux's gradient: 1 means the model responds to exactly the features
that carry the protected attribute, 0 that it ignores them.</p>
<p><b>Flagged individuals</b> score above the threshold with the first method. Unless one was
set by hand, the threshold is calibrated: aux models trained on a randomly permuted protected
attribute give each score's distribution by chance, and a row is flagged above its (1 - alpha)
quantile (or by Benjamini-Hochberg), as the summary's threshold rule states. Each one's
top features are the terms of eq. 9 (the model's gradient times the aux direction, per
feature, in standard deviations of the feature): the features through which the protected
attribute reaches this individual's prediction.</p>
<p><b>Feature ranking</b> is the transparency report (paper A.10, Table 3): how strongly each
feature carries the protected attribute according to the aux model (|mean aux gradient| over
the sample, one-hot groups averaged). Features at the top are proxies of the protected
attribute; a model that relies on them treats similar individuals differently.</p>
<p><b>Check the aux quality first.</b> If the aux model cannot predict the protected attribute
on held-out rows (AUROC near 0.5, R&sup2; near 0) the scores are not meaningful. A model
that is fair at the group level can still be unfair to individuals, and a low score is no
proof of fairness: it is measured only along what the aux model learnt.</p>
"""


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return ('<img alt="plot" src="data:image/png;base64,'
            + base64.b64encode(buf.getvalue()).decode() + '">')


def _hist_plot(result) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.summary
    primary = s["settings"]["primary"]
    scores = result.plot_scores.get(primary, np.empty(0))
    groups = result.plot_scores.get("group", np.empty(0))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    thr = s["settings"]["threshold"]
    thr = thr if thr is not None and np.isfinite(thr) else None
    if scores.size:
        hi = max(float(np.quantile(scores, 0.999)), (thr or 0) * 1.2, 1e-12)
        bins = np.linspace(0, hi, 60)
        for g in np.unique(groups):
            v = np.clip(scores[groups == g], 0, hi)
            ax.hist(v, bins=bins, alpha=0.5, density=True, label=f"{s['data']['protected']}={g}")
        if thr is not None:
            ax.axvline(thr, color="k", ls="--", lw=1, label="threshold")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax.set_xlabel(f"{primary} score (clipped at the 99.9% quantile)")
    ax.set_ylabel("density (log)")
    return _png(fig)


def _ranking_plot(ranking: dict, n: int = 20) -> str:
    import matplotlib.pyplot as plt

    items = list(ranking.items())[:n][::-1]
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(items) + 1))
    ax.barh([k for k, _ in items], [v for _, v in items], color="#4c72b0")
    ax.set_xlabel("importance for the protected attribute (|mean aux gradient|)")
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


def _table(rows, header) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def write_report(result, path) -> None:
    s = result.summary
    q = s["aux_quality"]
    e = html.escape
    gate = s["gate"]
    gate_html = ("<p class=ok>Gate passed.</p>" if gate["passed"] else
                 "<p class=bad>Gate FAILED (exit code 1): " + e("; ".join(gate["reasons"]))
                 + "</p>")
    if s["settings"]["fail_above"] is None and s["settings"]["max_flagged_rate"] is None:
        gate_html = "<p>No gate set (pass --fail-above / --max-flagged-rate to use one).</p>"
    warn = f"<p class=bad>Warning: {e(q['warning'])}</p>" if q.get("warning") else ""
    qrows = [(k, _fmt(v)) for k, v in q.items() if k != "warning"]
    grows = [(e(g), v["rows"], v["flagged"], f"{v['rate']:.3%}")
             for g, v in s["flagged"]["by_group"].items()]
    frows = [(r.row_id, f"{r.score:.4g}", e(str(r.group)),
              ", ".join(f"{e(f)} ({c:+.3g})" for f, c in r.top_features))
             for r in result.top_flagged.itertuples()]
    cal = s["calibration"]
    null_rows = []
    if cal["null_quantiles"]:
        null_rows = [(f"null quantiles of {e(m)}",
                      ", ".join(f"{k}: {v:.4g}" for k, v in qs.items()))
                     for m, qs in cal["null_quantiles"].items()]
        null_rows.append(("expected false flags", f"{cal['expected_false_flags']:.1f}"))
    sc = s["scoring"]
    mode = (f"autograd through the model ({sc['mode']})" if s["model"]["differentiable"] else
            f"black box: central finite differences, step {sc['fd_step_std']} standard "
            f"deviations, {sc['model_calls_per_row']} model calls per row")
    m = s["model"]
    file_rows = []
    if m.get("file"):
        loader = m.get("loader") or "?"
        if loader == "pickle":
            loader += " (ran code from the file; trusted with --trust-pickle)"
        file_rows = [("model file", e(m["file"])), ("model sha256", e(m.get("sha256") or "?")),
                     ("loaded by", e(loader))]
        if m.get("class"):
            file_rows.append(("model class", e(m["class"])))
    settings_rows = [("model", e(s["model"]["source"])), *file_rows, ("scoring", e(mode)),
                     ("rows", f"{s['data']['rows']:,}"),
                     ("features", len(s["data"]["features"])),
                     ("protected", f"{e(s['data']['protected'])} ({s['protected']['kind']})"),
                     ("methods", e(", ".join(s["settings"]["methods"]))),
                     ("threshold", f"{s['settings']['primary']} &gt; "
                                   f"{s['settings']['threshold']:.4g} ({e(cal['rule'])})"),
                     ("threshold rule", e(cal["text"])),
                     *null_rows,
                     ("aux sample", f"{s['settings']['sample']:,} rows (80% fit, 20% held out)"),
                     ("flagged", f"{s['flagged']['count']:,} ({s['flagged']['rate']:.3%})"),
                     ("speed", f"{sc['rows_per_s']:,.0f} rows/s")]
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>faux audit: {e(s['name'])}</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto;line-height:1.4}}
table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;
font-size:90%;text-align:left}}.bad{{color:#b00;font-weight:bold}}.ok{{color:#070}}
img{{max-width:100%}}</style></head><body>
<h1>Individual-fairness audit: {e(s['name'])}</h1>
{gate_html}{warn}
<h2>Summary</h2>{_table(settings_rows, ("", ""))}
<h2>Score distribution by protected group</h2>{_hist_plot(result)}
{_table(grows, ("group", "rows", "flagged", "rate"))}
<h2>Flagged individuals (top {len(frows)} by score)</h2>
<p>Top contributing features: the per-feature terms of eq. 9 (signed).</p>
{_table(frows, ("row id", "score", "group", "top contributing features")) if frows else
 "<p>No individual scores above the threshold.</p>"}
<h2>Global feature ranking</h2>{_ranking_plot(result.feature_ranking)}
<h2>Aux model quality (held out)</h2>{_table(qrows, ("", ""))}
<h2>How to read this report</h2>{HOW_TO_READ}
</body></html>"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
