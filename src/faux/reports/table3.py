"""Table 3 from the real-data sweep (jobs ``real_cell``): NDCG of each transparency report
against the mutual-information ranking, mean ± std over seeds, the paper's value beside
ours, and the mean NDCG of random rankings. Reports: every method the jobs reported
(``metrics.table3.ndcg``), in the registry's order.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faux.methods import registry
from faux.reports import paper_values as P
from faux.reports.base import Report, fmt
from faux.reports.real_sweep import (
    DATASET_LABELS,
    DATASETS,
    PROTECTED_LABELS,
    RealSweep,
    dataset_cells,
    finish,
    ms,
)

NAME = "table3"


def report_methods(rs: RealSweep) -> list[str]:
    """The methods with a transparency report in any job, in the registry's order."""
    names = {m for r in rs.ok for m in r["metrics"]["table3"]["ndcg"]}
    return sorted(names, key=registry.order)


def _table3_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        for method in (*report_methods(rs), "random"):
            vals = [r["metrics"]["table3"]["ndcg_random"] if method == "random"
                    else r["metrics"]["table3"]["ndcg"].get(method) for r in res]
            m, s = ms(vals)
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
    for method in (*report_methods(rs), "random"):
        def cell(r, method=method):
            ours = fmt(r.ndcg_mean, r.ndcg_std)
            return ours if method == "random" else f"{ours} / {fmt(r.paper_mean, r.paper_std)}"

        cells = dataset_cells(frame, ds, method, cell)
        label = "random ranking (floor)" if method == "random" else registry.label(method)
        out.append(f"| {label} | " + " | ".join(cells) + " |\n")
    out.append("\nTop-5 original features (first seed): by mutual information with c, and by "
               "each report.\n\n")
    for d in ds:
        t3 = rs.of(d)[0]["metrics"]["table3"]
        out.append(f"- {DATASET_LABELS.get(d, d)}: MI: {', '.join(t3['top_mi'])}\n")
        for m in report_methods(rs):
            if m in t3["top"]:
                out.append(f"  - {registry.label(m)}: {', '.join(t3['top'][m])}\n")
    return "".join(out)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    return finish(rs, NAME, _table3_frame(rs), lambda f: _table3_md(f, rs), results_dir)
