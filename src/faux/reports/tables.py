"""Tables from job results: csv (machine), md (ours beside the paper's), tex."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from faux.reports import paper_values as P


@dataclass
class Report:
    frame: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def _mean_std(values) -> tuple[float, float]:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def _write(frame: pd.DataFrame, md: str, tex: str | None, name: str, results_dir: Path) -> list[Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    files = [results_dir / f"{name}.csv", results_dir / f"{name}.md"]
    frame.to_csv(files[0], index=False, float_format="%.4f")
    files[1].write_text(md)
    if tex is not None:
        files.append(results_dir / f"{name}.tex")
        files[2].write_text(tex)
    return files


def _fmt(m: float, s: float | None) -> str:
    if m is None or not np.isfinite(m):
        return "—"
    return f"{m:.3f}" if s is None or not np.isfinite(s) else f"{m:.3f} ± {s:.3f}"


def build_table1(sweep, results_dir: Path, figures_dir: Path) -> Report:
    from faux.aggregate import job_log

    rows = []
    seen = set()
    for res in sweep.results:
        if res.get("job") != "table1_cell":
            continue
        m = res["metrics"]
        key = (m["column"], m["method"])
        if key in seen:       # the same cell twice (two sweeps given): keep the first
            continue
        seen.add(key)
        ap_mean, ap_std = _mean_std(m["ap_runs"])
        t30_mean, t30_std = _mean_std(m["ap_top30_runs"])
        col_idx = list(P.TABLE1_COLUMNS).index(m["column"]) if m["column"] in P.TABLE1_COLUMNS else None
        paper = P.TABLE1.get(m["method"], [None] * 8)[col_idx] if col_idx is not None else None
        rows.append({
            "column": m["column"], "xc": m["xc"], "xy": m["xy"], "bias": m["bias"],
            "fusion": m["fusion"], "method": m["method"], "ap_mean": ap_mean, "ap_std": ap_std,
            "n_runs": len(m["ap_runs"]), "positive_rate": m["positive_rate"],
            "threshold": m.get("threshold"), "ap_top30_mean": t30_mean, "ap_top30_std": t30_std,
            "aux_accuracy": _mean_std(m.get("aux_accuracy_runs") or [])[0],
            "paper_ap_mean": paper[0] if paper else None,
            "paper_ap_std": paper[1] if paper else None,
            "job_wall_s": (res.get("timings") or {}).get("wall_s"),
        })
    frame = pd.DataFrame(rows)
    report = Report(frame)
    # cells of the grid the sweep covers (its columns x its methods) that have no result,
    # and job folders that never finished (crashed or interrupted), with their logs
    cols_seen = {c for c, _ in seen}
    meths_seen = {m for _, m in seen}
    for col in cols_seen:
        for meth in meths_seen:
            if (col, meth) not in seen:
                report.missing.append((f"{col}/{meth}", "no finished job"))
    for d in sweep.unfinished:
        report.missing.append((f"job {_overrides(d)}", f"unfinished; log: {job_log(d)}"))
    if frame.empty:
        report.lines.append("table1: no finished table1 cells")
        return report
    frame.sort_values(["column", "method"], key=lambda s: s.map(_order), inplace=True)
    md, tex = _table1_md(frame) + _job_time_md(frame), _table1_tex(frame)
    frame = frame.drop(columns=["job_wall_s"])     # the csv holds results only: reruns match
    report.frame = frame
    report.files = _write(frame, md, tex, "table1", results_dir)
    report.lines.append(md)
    report.lines.append("wrote " + ", ".join(str(f) for f in report.files))
    return report


def _job_time_md(frame: pd.DataFrame) -> str:
    """Job time (each job's ``timings.wall_s``): in all, per method, and the longest job."""
    t = frame["job_wall_s"].astype(float)
    if not t.notna().any():
        return ""
    longest = frame.loc[t.idxmax()]
    per = frame.assign(t=t).groupby("method", sort=False)["t"].sum() / 60
    per = per.reindex(sorted(per.index, key=_order))
    return (f"\nJob time: {t.sum() / 60:.1f} min over {int(t.notna().sum())} jobs (cached "
            f"artifacts are built by the first job that needs them); longest "
            f"{longest['column']}/{longest['method']} {t.max() / 60:.1f} min. Per method (min): "
            + ", ".join(f"{m} {v:.1f}" for m, v in per.items()) + ".\n")


def _overrides(job_dir) -> str:
    try:
        import yaml

        return " ".join(yaml.safe_load((Path(job_dir) / ".hydra" / "overrides.yaml").read_text()))
    except Exception:
        return Path(job_dir).name


def _order(v):
    if v in P.TABLE1_COLUMNS:
        return list(P.TABLE1_COLUMNS).index(v)
    if v in P.METHODS:
        return P.METHODS.index(v)
    return v


def _table1_md(frame: pd.DataFrame) -> str:
    cols = [c for c in P.TABLE1_COLUMNS if c in set(frame["column"])]
    head = "| method | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols) + "\n"
    out = ["Table 1: average precision, ours (mean ± std over runs) / paper.\n", head]
    for meth in P.METHODS:
        sub = frame[frame["method"] == meth].set_index("column")
        if sub.empty:
            continue
        cells = []
        for c in cols:
            if c not in sub.index:
                cells.append("—")
                continue
            r = sub.loc[c]
            cells.append(f"{_fmt(r.ap_mean, r.ap_std)} / {_fmt(r.paper_ap_mean, r.paper_ap_std)}")
        out.append(f"| {P.METHOD_LABELS[meth]} | " + " | ".join(cells) + " |\n")
    out.append("\n| column | positive rate | IFS threshold |\n|---|---|---|\n")
    first = frame.drop_duplicates("column").set_index("column")
    for c in cols:
        out.append(f"| {c} | {first.loc[c].positive_rate:.3f} | {first.loc[c].threshold:.4g} |\n")
    out.append("\nAP with the top 30% of individuals by IFS as positives (comparable across columns):\n\n")
    out.append(head)
    for meth in P.METHODS:
        sub = frame[frame["method"] == meth].set_index("column")
        if sub.empty:
            continue
        cells = [_fmt(sub.loc[c].ap_top30_mean, sub.loc[c].ap_top30_std) if c in sub.index else "—"
                 for c in cols]
        out.append(f"| {P.METHOD_LABELS[meth]} | " + " | ".join(cells) + " |\n")
    return "".join(out)


def _table1_tex(frame: pd.DataFrame) -> str:
    cols = [c for c in P.TABLE1_COLUMNS if c in set(frame["column"])]
    lines = [r"\begin{tabular}{l" + "c" * len(cols) + "}", r"\toprule",
             "Method & " + " & ".join(cols) + r" \\", r"\midrule"]
    for meth in P.METHODS:
        sub = frame[frame["method"] == meth].set_index("column")
        if sub.empty:
            continue
        cells = [(f"{sub.loc[c].ap_mean:.3f} $\\pm$ {sub.loc[c].ap_std:.3f}" if c in sub.index else "--")
                 for c in cols]
        lines.append(P.METHOD_LABELS[meth] + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


BUILDERS = {"table1": build_table1}


def all_builders() -> dict:
    """Every table/figure builder by name (imported here: their modules import this one)."""
    from faux.reports.real_tables import build_fig4, build_table3, build_table4
    from faux.reports.sweep_figures import BUILDERS as sweep

    return {"fig4": build_fig4, "table3": build_table3, "table4": build_table4, **sweep,
            **BUILDERS}
