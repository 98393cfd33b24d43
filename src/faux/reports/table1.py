"""Table 1 from the ``table1_cell`` jobs: csv (machine), md (ours beside the paper's), tex.

Rows: every method of the sweep in the registry's order (``faux.methods.registry``), a
method the paper does not have included (its paper cell empty).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faux.methods import registry
from faux.metrics.ranking import normalised_ap
from faux.reports import paper_values as P
from faux.reports import table1_intervals as T1I
from faux.reports.base import Report, done, fmt, mean_std, write_tables
from faux.reports.sweep import grid_gaps, results_of, unfinished_cells

NAME = "table1"
JOB = "table1_cell"
#: the highest positive rate each paper column can have had (its lowest AP; paper_values)
CAPS = P.table1_prevalence_caps()


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rows = []
    seen = set()
    jobs = results_of(sweep, JOB, lambda m: (m["column"], m["method"]))
    for res in jobs:
        m = res["metrics"]
        seen.add((m["column"], m["method"]))
        ap_mean, ap_std = mean_std(m["ap_runs"])
        nap_mean, nap_std = mean_std([normalised_ap(a, m["positive_rate"]) for a in m["ap_runs"]])
        t30_mean, t30_std = mean_std(m["ap_top30_runs"])
        col_idx = list(P.TABLE1_COLUMNS).index(m["column"]) if m["column"] in P.TABLE1_COLUMNS else None
        paper = P.TABLE1.get(m["method"], [None] * 8)[col_idx] if col_idx is not None else None
        rows.append({
            "column": m["column"], "xc": m["xc"], "xy": m["xy"], "bias": m["bias"],
            "fusion": m["fusion"], "method": m["method"], "ap_mean": ap_mean, "ap_std": ap_std,
            "n_runs": len(m["ap_runs"]), "positive_rate": m["positive_rate"],
            "nap_mean": nap_mean, "nap_std": nap_std,
            "auroc_mean": mean_std(m.get("auroc_runs") or [])[0],
            "prevalence_cap": CAPS.get(m["column"]),
            "over_cap": (bool(m["positive_rate"] > CAPS[m["column"]])
                         if m["column"] in CAPS else None),
            "threshold": m.get("threshold"), "ap_top30_mean": t30_mean, "ap_top30_std": t30_std,
            "aux_accuracy": mean_std(m.get("aux_accuracy_runs") or [])[0],
            "reading": m.get("reading"),
            "paper_ap_mean": paper[0] if paper else None,
            "paper_ap_std": paper[1] if paper else None,
            "job_wall_s": (res.get("timings") or {}).get("wall_s"),
            "peak_rss_mb": m.get("peak_rss_mb"),
            **{f"phase_{k}_s": v for k, v in (m.get("phase_s") or {}).items()},
        })
    frame = pd.DataFrame(rows)
    report = Report(frame)
    # cells of the grid the sweep covers (its columns x its methods) that have no result,
    # and job folders that never finished (crashed or interrupted), with their logs
    report.missing += grid_gaps(seen, sorted({c for c, _ in seen}), sorted({m for _, m in seen}))
    report.missing += unfinished_cells(sweep)
    if frame.empty:
        report.lines.append("table1: no finished table1 cells")
        return report
    rank = {v: i for i, v in enumerate([*sorted(set(frame["column"]), key=_order),
                                        *_methods(frame)])}
    frame.sort_values(["column", "method"], key=lambda s: s.map(rank), inplace=True)
    iv = T1I.build(jobs)
    md, tex = _table1_md(frame, iv) + _job_time_md(frame), _table1_tex(frame)
    # the csv holds results only (reruns match); times and memory go to the md
    frame = frame.drop(columns=[c for c in frame.columns if c in _RESOURCE_COLUMNS
                                or (c.startswith("phase_") and c.endswith("_s"))])
    report.frame = frame
    report.files = write_tables(frame, md, tex, "table1", results_dir)
    report.files.append(T1I.write(iv, results_dir))
    return done(report, md)


_RESOURCE_COLUMNS = ("job_wall_s", "peak_rss_mb")
#: the phases of a table1 job, in the order they run (faux.studies.table1.run)
PHASES = ("generators", "sampling", "target", "reference", "ifs_labels", "aux", "gan", "fit",
          "score", "metrics")


def _job_time_md(frame: pd.DataFrame) -> str:
    """Job time (each job's ``timings.wall_s``): in all, per method, and the longest job; then
    where it went, per method and phase (each job's ``phase_s``), and the peak memory."""
    t = frame["job_wall_s"].astype(float)
    if not t.notna().any():
        return ""
    longest = frame.loc[t.idxmax()]
    per = frame.assign(t=t).groupby("method", sort=False)["t"].sum() / 60
    per = per.reindex(sorted(per.index, key=_order))
    out = (f"\nJob time: {t.sum() / 60:.1f} min over {int(t.notna().sum())} jobs (cached "
           f"artifacts are built by the first job that needs them); longest "
           f"{longest['column']}/{longest['method']} {t.max() / 60:.1f} min. Per method (min): "
           + ", ".join(f"{m} {v:.1f}" for m, v in per.items()) + ".\n")
    return out + _phase_md(frame)


def _phase_md(frame: pd.DataFrame) -> str:
    """Seconds per method and phase, summed over the columns (a cached artifact costs its
    build in the job that made it and a load elsewhere)."""
    cols = [f"phase_{p}_s" for p in PHASES if f"phase_{p}_s" in frame.columns]
    if not cols:
        return ""
    sums = frame.groupby("method", sort=False)[cols].sum(min_count=1)
    sums = sums.reindex(sorted(sums.index, key=_order))
    names = [c[len("phase_"):-len("_s")] for c in cols]
    lines = ["", "Where the job time went (seconds, summed over columns; `phase_s` in each "
             "result.json):", "", "| method | " + " | ".join(names) + " | total |",
             "|---|" + "---:|" * (len(names) + 1)]
    for meth, row in sums.iterrows():
        vals = [row[c] for c in cols]
        lines.append(f"| {registry.label(meth)} | "
                     + " | ".join("" if pd.isna(v) else f"{v:.1f}" for v in vals)
                     + f" | {sum(v for v in vals if not pd.isna(v)):.1f} |")
    tot = [sums[c].sum() for c in cols]
    lines.append("| **all** | " + " | ".join(f"{v:.1f}" for v in tot) + f" | {sum(tot):.1f} |")
    if "peak_rss_mb" in frame.columns and frame["peak_rss_mb"].notna().any():
        i = frame["peak_rss_mb"].astype(float).idxmax()
        lines.append(f"\nPeak memory: {frame.loc[i, 'peak_rss_mb']:.0f} MiB "
                     f"({frame.loc[i, 'column']}/{frame.loc[i, 'method']}).")
    return "\n".join(lines) + "\n"


def _order(v) -> tuple[int, str]:
    """Sort key of a column (the paper's order, custom columns after) or a method."""
    cols = list(P.TABLE1_COLUMNS)
    if v in cols:
        return (cols.index(v), "")
    return registry.order(v) if v in registry.names() else (len(cols), v)


def _methods(frame: pd.DataFrame) -> list[str]:
    """Every method of the frame, in the registry's order (unregistered names last)."""
    return sorted(set(frame["method"]), key=registry.order)


def _method_rows(frame: pd.DataFrame, cols: list[str], cell) -> list[str]:
    """One markdown row per method: ``cell(row, column)`` per column present, "—" elsewhere."""
    out = []
    for meth in _methods(frame):
        sub = frame[frame["method"] == meth].set_index("column")
        if sub.empty:
            continue
        cells = [cell(sub.loc[c], c) if c in sub.index else "—" for c in cols]
        out.append(f"| {registry.label(meth)} | " + " | ".join(cells) + " |\n")
    return out


def _nap_cell(r, c) -> str:
    """Our nAP / the paper's AP normalised at the column's cap (a lower bound of its nAP)."""
    pap = ("" if pd.isna(r.paper_ap_mean) or c not in CAPS
           else f" / {normalised_ap(r.paper_ap_mean, CAPS[c]):+.2f}")
    return f"{r.nap_mean:+.2f}{pap}"


def _table1_md(frame: pd.DataFrame, iv: dict) -> str:
    cols = [c for c in P.TABLE1_COLUMNS if c in set(frame["column"])]
    head = "| method | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n"
    out = ["Table 1: average precision, ours (mean ± std over runs) / paper.\n", head]
    out += _method_rows(frame, cols, lambda r, c: f"{fmt(r.ap_mean, r.ap_std)} / "
                                                  f"{fmt(r.paper_ap_mean, r.paper_ap_std)}")
    out.append(_claims_md(frame, iv))
    out.append("\nNormalised AP, (AP − π)/(1 − π) at the column's positive rate π: 0 is a random "
               "ranking, 1 a perfect one (ours / the paper's at the highest π its lowest AP "
               "allows, a lower bound of the paper's nAP):\n\n")
    out.append(head)
    out += _method_rows(frame, cols, _nap_cell)
    out.append("\n| column | positive rate | paper's cap | IFS threshold |\n|---|---|---|---|\n")
    first = frame.drop_duplicates("column").set_index("column")
    for c in cols:
        r = first.loc[c]
        cap = CAPS.get(c)
        mark = "" if cap is None or r.positive_rate <= cap else " **over the cap**"
        out.append(f"| {c} | {r.positive_rate:.3f}{mark} | "
                   f"{'' if cap is None else f'≤ {cap:.2f}'} | {r.threshold:.4g} |\n")
    out.append("\nThe cap: the lowest AP the paper reports in a column bounds its positive rate "
               "(the worst ranking at rate π has AP 1 − ((1 − π)/π)·ln(1/(1 − π)); "
               "`faux.metrics.ranking.prevalence_cap`).\n")
    out.append("\nAP with the top 30% of individuals by IFS as positives (comparable across columns):\n\n")
    out.append(head)
    out += _method_rows(frame, cols, lambda r, c: fmt(r.ap_top30_mean, r.ap_top30_std))
    return "".join(out)


def _claims_md(frame: pd.DataFrame, iv: dict) -> str:
    """The reading the cells ran under and the paper's claims C1-C5 (docs/readings.md), each
    column decided by the bootstrap interval of the claim's statistic
    (``faux.reports.table1_intervals``; docs/numbers.md)."""
    from faux.harness.machine import label
    from faux.metrics.intervals import summary
    from faux.reports.readings import CLAIMS

    readings = sorted({str(v) for v in frame.get("reading", pd.Series(dtype=str)).dropna()})
    boot = iv["bootstrap"]
    what = sorted({w for v in boot["resampled"].values() for w in v})
    out = [f"\nReading: {', '.join(readings) or '?'} (conf/reading/; docs/readings.md).\n\n",
           f"Claims, per column: *holds* when the {boot['level']:.0%} bootstrap interval of the "
           f"statistic clears the bound on the claim's side, *fails* when it clears it on the "
           f"other side, *undecided* otherwise (B = {boot['B']}, seed {boot['seed']}, "
           f"resampling {' and '.join(what) or 'nothing'}; {T1I.NAME}):\n\n"]
    states = T1I.claim_states(iv)
    for k, c in iv["claims"].items():
        cells = "; ".join(_interval_cell(col, v, states[k][col])
                          for col, v in c["columns"].items())
        rel = ">" if c["strict"] else "≥"
        out.append(f"- {k} {summary(states[k].values())}: {CLAIMS[k]} "
                   f"({c['statistic']} {rel} {c['bound']:g}: {cells})\n")
    for m in iv.get("machines") or []:
        out.append(f"\nMachine: {label(m)} ({m['n_jobs']} jobs).\n")
    return "".join(out)


def _interval_cell(col: str, v: dict, state: str) -> str:
    short = col.replace("Synthetic-", "S")
    if not v.get("interval"):
        return f"{short} no result"
    lo, hi = v["interval"]
    return f"{short} [{lo:+.3f}, {hi:+.3f}] {state}"


def _table1_tex(frame: pd.DataFrame) -> str:
    cols = [c for c in P.TABLE1_COLUMNS if c in set(frame["column"])]
    lines = [r"\begin{tabular}{l" + "c" * len(cols) + "}", r"\toprule",
             "Method & " + " & ".join(cols) + r" \\", r"\midrule"]
    for meth in _methods(frame):
        sub = frame[frame["method"] == meth].set_index("column")
        if sub.empty:
            continue
        cells = [(f"{sub.loc[c].ap_mean:.3f} $\\pm$ {sub.loc[c].ap_std:.3f}" if c in sub.index else "--")
                 for c in cols]
        lines.append(registry.label(meth) + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)
