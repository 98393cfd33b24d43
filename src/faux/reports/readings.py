"""The readings table (issue 13) from the ``readings_cell`` jobs: one row per reading with
the AP of every cell, the positive rates, the claims of the paper's Table 1 it holds, its
distance to the paper, and each CVAE's model score beside Table 2's; ``readings.png`` plots
AP per method per column, one panel per reading (best first), the paper's values marked.

The claims and the selection rule were declared before the search (issue 13): the best
reading holds the most of C1-C5, ties broken by the smallest mean |AP - paper| over the
fAux, fAux+NG, fAux+IG and LIC-UB rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods.registry import READINGS_METHODS as METHODS
from faux.reports import paper_values as P
from faux.reports.base import Report, done, write_tables
from faux.reports.sweep import grid_gaps, results_of, unfinished_cells

NAME = "readings"
JOB = "readings_cell"
SHORT = {"fta": "FTA", "fta_lin": "FTA+lin", "faux": "fAux", "faux_ng": "NG", "faux_ig": "IG",
         "lic_ub": "LIC-UB"}
COLUMNS = list(P.TABLE1_COLUMNS)
OUTER = [c for c, v in P.TABLE1_COLUMNS.items() if v[3] == "outer"]
CONCAT = [c for c, v in P.TABLE1_COLUMNS.items() if v[3] == "concat"]
CLAIMS = {
    "C1": "LIC-UB >= 0.95 on 8/8 columns",
    "C2": "fAux+NG above FTA and FTA + lin. aux on 8/8",
    "C3": "fAux+IG above FTA and FTA + lin. aux on 8/8",
    "C4": "fAux+NG >= fAux on the 4 outer-fusion columns",
    "C5": "best fAux variant >= 0.9 on the 4 concat columns",
}
FIT_ROWS = ("faux", "faux_ng", "faux_ig", "lic_ub")


def paper(method: str, column: str) -> float:
    return P.TABLE1[method][COLUMNS.index(column)][0]


def claims(ap: dict) -> dict:
    """``{claim: (held, columns holding it, columns checked)}`` from ``ap[method][column]``
    (mean AP over runs); a missing cell never holds."""
    def g(m, c):
        v = ap.get(m, {}).get(c)
        return float("nan") if v is None else float(v)

    def count(pred, cols):
        ok = sum(1 for c in cols if bool(pred(c)))
        return ok == len(cols), ok, len(cols)

    def best(c):
        return max(g("faux", c), g("faux_ng", c), g("faux_ig", c))

    def above_fta(m):
        return lambda c: g(m, c) > max(g("fta", c), g("fta_lin", c))

    return {
        "C1": count(lambda c: g("lic_ub", c) >= 0.95, COLUMNS),
        "C2": count(above_fta("faux_ng"), COLUMNS),
        "C3": count(above_fta("faux_ig"), COLUMNS),
        "C4": count(lambda c: g("faux_ng", c) >= g("faux", c), OUTER),
        "C5": count(lambda c: best(c) >= 0.9, CONCAT),
    }


def paper_distance(ap: dict) -> float:
    """Mean |AP - paper| over the fAux, fAux+NG, fAux+IG and LIC-UB rows (missing: 1)."""
    d = []
    for m in FIT_ROWS:
        for c in COLUMNS:
            v = ap.get(m, {}).get(c)
            d.append(1.0 if v is None or not np.isfinite(v) else abs(float(v) - paper(m, c)))
    return float(np.mean(d))


def frame_of(results: list[dict]) -> pd.DataFrame:
    """One row per reading, best first by the selection rule."""
    by: dict = {}
    for res in results:
        m = res["metrics"]
        d = by.setdefault(m["reading"], {"ap": {}, "rate": {}, "aux": {}, "gen": {},
                                         "settings": m["settings"], "wall_s": 0.0,
                                         "phase_s": {}})
        for meth, runs in m["ap_runs"].items():
            d["ap"].setdefault(meth, {})[m["column"]] = float(np.nanmean(runs))
        d["rate"][m["column"]] = m["positive_rate"]
        if m.get("aux_accuracy_runs"):
            d["aux"][m["column"]] = float(np.mean(m["aux_accuracy_runs"]))
        for g in (m.get("generator_scores") or {}).values():
            d["gen"][g["dataset"]] = g["model_score"]
        d["wall_s"] += float((res.get("timings") or {}).get("wall_s") or 0.0)
        for k, v in (m.get("phase_s") or {}).items():
            d["phase_s"][k] = d["phase_s"].get(k, 0.0) + float(v)
    rows = []
    for name, d in by.items():
        cl = claims(d["ap"])
        row = {"reading": name, "claims_held": sum(v[0] for v in cl.values()),
               **{k: f"{v[1]}/{v[2]}" for k, v in cl.items()},
               "paper_distance": paper_distance(d["ap"]),
               "complete": all(c in d["rate"] for c in COLUMNS), "job_s": d["wall_s"]}
        for c in COLUMNS:
            row[f"rate {c}"] = d["rate"].get(c, np.nan)
            row[f"aux_acc {c}"] = d["aux"].get(c, np.nan)
            for meth in METHODS:
                row[f"{meth} {c}"] = d["ap"].get(meth, {}).get(c, np.nan)
        for ds, v in sorted(d["gen"].items()):
            row[f"model_score {ds}"] = v
        for k, v in d["phase_s"].items():
            row[f"phase_s {k}"] = v
        row.update({f"setting {k}": v for k, v in d["settings"].items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_k"] = list(zip(-df["claims_held"], df["paper_distance"], df["reading"]))
    return df.sort_values("_k").drop(columns="_k").reset_index(drop=True)


def markdown(df: pd.DataFrame) -> str:
    axes = [c for c in df.columns if c.startswith("setting ")]
    lines = ["# Readings of the synthetic benchmark (issue 13)", "",
             "Claims: " + "; ".join(f"**{k}** {v}" for k, v in CLAIMS.items()) + ".",
             "Selection rule (declared before the search): most claims held, ties broken by "
             "the smallest mean |AP − paper| over the fAux, fAux+NG, fAux+IG and LIC-UB rows.",
             "", "| rank | reading | claims held | " + " | ".join(CLAIMS)
             + " | mean abs(AP − paper) | job time (s) |",
             "|---|---|---|" + "---|" * len(CLAIMS) + "---|---|"]
    for i, r in df.iterrows():
        tag = "" if r["complete"] else " (incomplete)"
        lines.append(f"| {i + 1} | {r['reading']}{tag} | {r['claims_held']} | "
                     + " | ".join(str(r[k]) for k in CLAIMS)
                     + f" | {r['paper_distance']:.3f} | {r['job_s']:.0f} |")
    lines += ["", "Each reading's choices:", "",
              "| reading | " + " | ".join(a.replace("setting ", "") for a in axes) + " |",
              "|---|" + "---|" * len(axes)]
    for _, r in df.iterrows():
        lines.append(f"| {r['reading']} | " + " | ".join(str(r[a]) for a in axes) + " |")
    from faux.synth.sampler import PAPER_MODEL_SCORE

    gen_cols = [c for c in df.columns if c.startswith("model_score ")]
    if gen_cols:
        lines += ["", "CVAE model score (A.7.3: classifier trained on generated (x, label), "
                  "accuracy on the real encoded data) beside Table 2's:", "",
                  "| reading | " + " | ".join(
                      f"{c[12:]} (paper {PAPER_MODEL_SCORE.get(c[12:], float('nan')):.3f})"
                      for c in gen_cols) + " |",
                  "|---|" + "---|" * len(gen_cols)]
        for _, r in df.iterrows():
            lines.append(f"| {r['reading']} | "
                         + " | ".join(f"{r[c]:.3f}" for c in gen_cols) + " |")
    lines += ["", "AP per method and column (the paper's first):", "",
              "| reading | row | " + " | ".join(c.replace("Synthetic-", "S") for c in COLUMNS)
              + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for m in METHODS:
        lines.append(f"| paper | {SHORT[m]} | "
                     + " | ".join(f"{paper(m, c):.3f}" for c in COLUMNS) + " |")
    for _, r in df.iterrows():
        lines.append(f"| {r['reading']} | positive rate | "
                     + " | ".join(f"{r[f'rate {c}']:.2f}" for c in COLUMNS) + " |")
        lines.append(f"| {r['reading']} | aux accuracy | "
                     + " | ".join(f"{r[f'aux_acc {c}']:.2f}" for c in COLUMNS) + " |")
        for m in METHODS:
            lines.append(f"| {r['reading']} | {SHORT[m]} | "
                         + " | ".join(f"{r[f'{m} {c}']:.3f}" for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def figure(df: pd.DataFrame, path: Path, max_panels: int = 12) -> Path:
    """AP per method per column, one panel per reading (best first), paper's values as dashes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = df.head(max_panels)
    cols = max(1, min(4, len(d)))
    rows = int(np.ceil(len(d) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False,
                             sharey=True)
    x = np.arange(len(COLUMNS))
    colors = dict(zip(METHODS, plt.cm.tab10.colors))
    for ax, (_, r) in zip(axes.flat, d.iterrows()):
        for m in METHODS:
            ax.plot(x, [r[f"{m} {c}"] for c in COLUMNS], "o-", ms=3, lw=1, color=colors[m],
                    label=SHORT[m])
            ax.plot(x, [paper(m, c) for c in COLUMNS], "_", ms=9, mew=2, color=colors[m],
                    alpha=0.6)
        ax.plot(x, [r[f"rate {c}"] for c in COLUMNS], "k:", lw=1, label="positive rate")
        ax.set_title(f"{r['reading']}: {r['claims_held']}/5 claims, "
                     f"dist {r['paper_distance']:.3f}", fontsize=8)
        ax.set_xticks(x, [f"S{i + 1}" for i in x], fontsize=7)
        ax.set_ylim(0, 1.02)
    for ax in axes.flat[len(d):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6, loc="lower left")
    fig.suptitle("Readings: AP per method (lines) against the paper's Table 1 (dashes)",
                 fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    results = list(results_of(sweep, JOB, lambda m: (m["reading"], m["column"])))
    df = frame_of(results)
    report = Report(df)
    seen = {(r["metrics"]["reading"], r["metrics"]["column"]) for r in results}
    report.missing += grid_gaps(seen, sorted({r for r, _ in seen}), COLUMNS)
    report.missing += unfinished_cells(sweep)
    if df.empty:
        report.lines.append("readings: no finished readings_cell jobs")
        return report
    md = markdown(df)
    report.files = write_tables(df, md, None, NAME, results_dir)
    report.files.append(figure(df, Path(figures_dir) / f"{NAME}.png"))
    best = df.iloc[0]
    report.lines.append(f"selected reading (most claims, then closest to the paper): "
                        f"{best['reading']} ({best['claims_held']}/5 claims, distance "
                        f"{best['paper_distance']:.3f})")
    return done(report, md)
