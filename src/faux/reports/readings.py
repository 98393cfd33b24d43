"""The readings table from the ``readings_cell`` jobs: one row per reading with the AP,
normalised AP and AUROC of every cell, the positive rates against the paper's caps, the
claims of the paper's Table 1 it holds, its distance to the paper, every form of LIC-UB,
how far the target is from linear in c, and each CVAE's model score beside Table 2's;
``readings.png`` maps, per claim of Table 1, the AP margin by which each reading (best
first) and the paper hold it in each column.

The selection rule was declared before the search (docs/readings.md, "Fourth pass"): a
reading is *valid* when (a) its positive rate lies in [0.15, cap] on all 8 columns (cap: the
highest rate the paper's lowest AP in that column allows) and (b) AP(FTA + lin. aux) -
AP(FTA) >= 0.1 on at least 6 of the 8 columns; (c), the median cosine of each individual's
target gradient to the mean target gradient per column, is reported, not gated. Among valid
readings the best holds C1 (LIC-UB mean AP >= 0.9 on 8/8), then the most of C2-C5, then the
smallest mean |AP - paper| over the fAux, fAux+NG, fAux+IG and LIC-UB rows; readings equal on
the first three and within :data:`TIE_DISTANCE` of the group's first in distance share a
rank (a tie). Invalid readings rank after every valid one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods import registry
from faux.methods.builtin import (
    FAuxIGMethod,
    FAuxMethod,
    FAuxNGMethod,
    FTALinMethod,
    FTAMethod,
    LicUBMethod,
)
from faux.methods.registry import readings_methods
from faux.metrics.ranking import normalised_ap
from faux.reports import paper_values as P
from faux.reports.base import Report, done, write_tables
from faux.reports.sweep import grid_gaps, results_of, unfinished_cells

NAME = "readings"
JOB = "readings_cell"
FTA, LIN, FAUX, NG, IG, LIC = (m.name for m in (FTAMethod, FTALinMethod, FAuxMethod,
                                                 FAuxNGMethod, FAuxIGMethod, LicUBMethod))
COLUMNS = list(P.TABLE1_COLUMNS)
OUTER = [c for c, v in P.TABLE1_COLUMNS.items() if v[3] == "outer"]
CONCAT = [c for c, v in P.TABLE1_COLUMNS.items() if v[3] == "concat"]
CLAIMS = {
    "C1": "LIC-UB >= 0.9 on 8/8 columns",
    "C2": "fAux+NG above FTA and FTA + lin. aux on 8/8",
    "C3": "fAux+IG above FTA and FTA + lin. aux on 8/8",
    "C4": "fAux+NG >= fAux on the 4 outer-fusion columns",
    "C5": "best fAux variant >= 0.9 on the 4 concat columns",
}
FIT_ROWS = (FAUX, NG, IG, LIC)
C1_AP = 0.9                     # LIC-UB must rank the labels at least this well everywhere
MIN_RATE = 0.15                 # a valid reading has at least this many positives per column
CAPS = P.table1_prevalence_caps()
LIN_GAP = 0.1                   # (b): AP(FTA + lin. aux) - AP(FTA) at least this much ...
LIN_GAP_COLUMNS = 6             # ... on at least this many of the 8 columns
COSINE_PREFERRED = 0.8          # (c): reported; a median cosine at most this is preferred
#: mean |AP - paper| within this of the best of a group equal on validity, C1 and C2-C5: a
#: tie (the same study on two CPU vendors moved a 0.002 lead, docs/readings.md)
TIE_DISTANCE = 0.005


def short_label(method: str) -> str:
    """A method's short label in the compact tables (``short``, else its label)."""
    m = registry.get(method)
    return m.short or m.label


def valid(rates: dict) -> bool:
    """Every column's positive rate in [MIN_RATE, the paper's cap for it]."""
    return all(c in rates and MIN_RATE <= float(rates[c]) <= CAPS[c] for c in COLUMNS)


def lin_gaps(ap: dict) -> dict[str, float]:
    """Per column, AP(FTA + lin. aux) - AP(FTA) (NaN where either is missing)."""
    def g(m, c):
        v = ap.get(m, {}).get(c)
        return float("nan") if v is None else float(v)
    return {c: g(LIN, c) - g(FTA, c) for c in COLUMNS}


def lin_gap_held(ap: dict) -> int:
    """The columns where FTA + lin. aux beats FTA by at least :data:`LIN_GAP` (criterion b)."""
    return sum(1 for v in lin_gaps(ap).values() if np.isfinite(v) and v >= LIN_GAP)


def valid_reading(rates: dict, ap: dict) -> bool:
    """Criteria (a) and (b): every rate in [MIN_RATE, cap] and the lin. aux gap on at least
    :data:`LIN_GAP_COLUMNS` columns."""
    return valid(rates) and lin_gap_held(ap) >= LIN_GAP_COLUMNS


def ranks(df: pd.DataFrame) -> list[int]:
    """The rank of each row of a frame sorted by the rule: a row equal to the previous group's
    first on validity, C1 and C2-C5 and within :data:`TIE_DISTANCE` of its distance shares
    its rank (competition ranking: 1, 1, 3)."""
    out: list[int] = []
    lead = None
    for i, r in enumerate(df.itertuples(index=False)):
        key = (r.valid, r.c1, r.c2_c5_held)
        if (lead is not None and key == lead[0]
                and abs(r.paper_distance - lead[1]) <= TIE_DISTANCE):
            out.append(out[-1])
        else:
            lead = (key, r.paper_distance)
            out.append(i + 1)
    return out


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
        return max(g(FAUX, c), g(NG, c), g(IG, c))

    def above_fta(m):
        return lambda c: g(m, c) > max(g(FTA, c), g(LIN, c))

    return {
        "C1": count(lambda c: g(LIC, c) >= C1_AP, COLUMNS),
        "C2": count(above_fta(NG), COLUMNS),
        "C3": count(above_fta(IG), COLUMNS),
        "C4": count(lambda c: g(NG, c) >= g(FAUX, c), OUTER),
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
                                         "auroc": {}, "lic": {}, "lin": {},
                                         "settings": m["settings"], "wall_s": 0.0,
                                         "phase_s": {}, "cos": {}})
        for meth, runs in m["ap_runs"].items():
            d["ap"].setdefault(meth, {})[m["column"]] = float(np.nanmean(runs))
        for meth, runs in (m.get("auroc_runs") or {}).items():
            d["auroc"].setdefault(meth, {})[m["column"]] = float(np.nanmean(runs))
        for form, v in (m.get("lic_ub_forms") or {}).items():
            d["lic"].setdefault(form, {})[m["column"]] = float(v["ap"])
        if m.get("linearity"):
            d["lin"][m["column"]] = float(m["linearity"]["gap_ratio_median"])
        d["rate"][m["column"]] = m["positive_rate"]
        if m.get("target_grad_cosine"):
            d["cos"][m["column"]] = float(m["target_grad_cosine"]["median"])
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
        gaps = lin_gaps(d["ap"])
        row = {"reading": name, "valid": valid_reading(d["rate"], d["ap"]),
               "valid_rate": valid(d["rate"]),
               "lin_gap_held": f"{lin_gap_held(d['ap'])}/{len(COLUMNS)}",
               "c1": bool(cl["C1"][0]),
               "claims_held": sum(v[0] for v in cl.values()),
               "c2_c5_held": sum(cl[k][0] for k in ("C2", "C3", "C4", "C5")),
               **{k: f"{v[1]}/{v[2]}" for k, v in cl.items()},
               "paper_distance": paper_distance(d["ap"]),
               "complete": all(c in d["rate"] for c in COLUMNS), "job_s": d["wall_s"]}
        for c in COLUMNS:
            rate = d["rate"].get(c, np.nan)
            row[f"rate {c}"] = rate
            row[f"aux_acc {c}"] = d["aux"].get(c, np.nan)
            row[f"linearity_gap {c}"] = d["lin"].get(c, np.nan)
            row[f"lin_gap {c}"] = gaps[c]
            row[f"grad_cos {c}"] = d["cos"].get(c, np.nan)
            for meth in readings_methods():
                ap = d["ap"].get(meth, {}).get(c, np.nan)
                row[f"{meth} {c}"] = ap
                row[f"nap {meth} {c}"] = normalised_ap(ap, rate)
                row[f"auroc {meth} {c}"] = d["auroc"].get(meth, {}).get(c, np.nan)
            for form, per in d["lic"].items():
                row[f"lic {form} {c}"] = per.get(c, np.nan)
        for ds, v in sorted(d["gen"].items()):
            row[f"model_score {ds}"] = v
        for k, v in d["phase_s"].items():
            row[f"phase_s {k}"] = v
        row.update({f"setting {k}": _setting(v) for k, v in d["settings"].items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_k"] = list(zip(~df["valid"], ~df["c1"], -df["c2_c5_held"], df["paper_distance"],
                        df["reading"]))
    df = df.sort_values("_k").drop(columns="_k").reset_index(drop=True)
    df.insert(0, "rank", ranks(df))
    df.insert(1, "tie", df["rank"].map(df["rank"].value_counts()) > 1)
    return df


def _row(label: str, vals, f="{:.3f}") -> str:
    return f"| {label} | " + " | ".join("" if pd.isna(v) else f.format(v) for v in vals) + " |"


def _ranking_md(df: pd.DataFrame) -> list[str]:
    """The title, the claims, the selection rule and the ranking table."""
    lines = ["# Readings of the synthetic benchmark", "",
             "Claims: " + "; ".join(f"**{k}** {v}" for k, v in CLAIMS.items()) + ".",
             f"Selection rule (declared before the search, docs/readings.md, \"Fourth pass\"): "
             f"a reading is *valid* when (a) its positive rate lies in [{MIN_RATE}, cap] on all "
             f"8 columns and (b) AP(FTA + lin. aux) − AP(FTA) ≥ {LIN_GAP} on at least "
             f"{LIN_GAP_COLUMNS}/8; (c) the median cosine of each individual's target gradient "
             f"to the mean one is reported per column (≤ {COSINE_PREFERRED} preferred), not "
             "gated. Among valid readings, C1 (on mean AP over runs) first, then the count of "
             "C2–C5 held, then the smallest mean |AP − paper| over the fAux, fAux+NG, fAux+IG "
             f"and LIC-UB rows; readings equal on the first three and within {TIE_DISTANCE} in "
             "distance share a rank (tie).", "",
             "| rank | reading | valid | rates in range | lin. aux gap ≥ 0.1 | C1 | C2–C5 held | "
             + " | ".join(CLAIMS) + " | mean abs(AP − paper) | job time (s) |",
             "|---|---|---|---|---|---|---|" + "---|" * len(CLAIMS) + "---|---|"]
    for _, r in df.iterrows():
        tag = "" if r["complete"] else " (incomplete)"
        rank = f"{r['rank']} (tie)" if r["tie"] else str(r["rank"])
        lines.append(f"| {rank} | {r['reading']}{tag} | {'yes' if r['valid'] else 'no'} | "
                     f"{'yes' if r['valid_rate'] else 'no'} | {r['lin_gap_held']} | "
                     f"{'yes' if r['c1'] else 'no'} | {r['c2_c5_held']} | "
                     + " | ".join(str(r[k]) for k in CLAIMS)
                     + f" | {r['paper_distance']:.3f} | {r['job_s']:.0f} |")
    return lines


def _criteria_md(df: pd.DataFrame, short: list[str]) -> list[str]:
    """Criteria (b) and (c) per column, then the positive rates against the paper's caps."""
    lines = ["", "Criteria (b) and (c) per column: AP(FTA + lin. aux) − AP(FTA) (the paper's: "
             "0.10–0.38), and the median over test rows of cos(∇f_tar(x), mean ∇f_tar) on the "
             "gradient tests' output (1: every individual's gradient points one way; "
             f"≤ {COSINE_PREFERRED} preferred):", "",
             "| reading | row | " + " | ".join(short) + " |", "|---|---|" + "---|" * len(COLUMNS),
             _row("paper | lin. aux gap", [paper(LIN, c) - paper(FTA, c) for c in COLUMNS],
                  "{:+.3f}")]
    for _, r in df.iterrows():
        lines.append(_row(f"{r['reading']} | lin. aux gap",
                          [r[f"lin_gap {c}"] for c in COLUMNS], "{:+.3f}"))
        lines.append(_row(f"{r['reading']} | median gradient cosine",
                          [r[f"grad_cos {c}"] for c in COLUMNS], "{:.2f}"))
    lines += ["", "Positive rate per column against the paper's cap (the highest rate its lowest "
              "AP in the column allows; `faux.metrics.ranking.prevalence_cap`):", "",
              "| reading | " + " | ".join(short) + " |", "|---|" + "---|" * len(COLUMNS),
              _row("paper's cap", [CAPS[c] for c in COLUMNS], "≤ {:.2f}")]
    for _, r in df.iterrows():
        lines.append(f"| {r['reading']} | " + " | ".join(
            f"{r[f'rate {c}']:.2f}" + ("" if MIN_RATE <= r[f"rate {c}"] <= CAPS[c] else " ✗")
            for c in COLUMNS) + " |")
    return lines


def _setting(v):
    """A reading's setting as a table cell: a per-dataset mapping (``generators``) as
    ``dataset key value ...; ...``, anything else as is."""
    if isinstance(v, dict):
        return "; ".join(f"{d} " + " ".join(f"{k} {x}" for k, x in g.items())
                         for d, g in v.items())
    return v


def _choices_md(df: pd.DataFrame) -> list[str]:
    """Each reading's settings, then its CVAEs' model scores beside Table 2's (if any)."""
    axes = [c for c in df.columns if c.startswith("setting ")]
    lines = ["", "Each reading's choices:", "",
             "| reading | " + " | ".join(a.replace("setting ", "") for a in axes) + " |",
             "|---|" + "---|" * len(axes)]
    for _, r in df.iterrows():
        lines.append(f"| {r['reading']} | " + " | ".join(str(r[a]) for a in axes) + " |")
    from faux.synth.generator_settings import PAPER_MODEL_SCORE

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
    return lines


def paper_rows() -> tuple[str, ...]:
    """The study's tests that are rows of the paper's Table 1 (fAux path is not: no paper row)."""
    return tuple(m for m in readings_methods() if m in P.TABLE1)


def _nap_md(df: pd.DataFrame, short: list[str]) -> list[str]:
    """Normalised AP per method and column, the paper's first."""
    lines = ["", "Normalised AP, (AP − π)/(1 − π) (0 = chance, 1 = perfect), per method and "
             "column; the paper's row is its AP normalised at its cap (a lower bound):", "",
             "| reading | row | " + " | ".join(short) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for m in paper_rows():
        lines.append(f"| paper | {short_label(m)} | " + " | ".join(
            f"{normalised_ap(paper(m, c), CAPS[c]):+.2f}" for c in COLUMNS) + " |")
    for _, r in df.iterrows():
        for m in readings_methods():
            lines.append(f"| {r['reading']} | {short_label(m)} | " + " | ".join(
                "" if pd.isna(r[f"nap {m} {c}"]) else f"{r[f'nap {m} {c}']:+.2f}"
                for c in COLUMNS) + " |")
    return lines


def _lic_forms_md(df: pd.DataFrame, short: list[str]) -> list[str]:
    """Every form of LIC-UB (when the jobs computed them: ``lic_ub_forms``) and the target's
    nonlinearity in c (none when no job had either)."""
    lic_cols = sorted({c.split(" ")[1] for c in df.columns if c.startswith("lic ")})
    lin_cols = [f"linearity_gap {c}" for c in COLUMNS]
    if not lic_cols and not (set(lin_cols) <= set(df.columns) and df[lin_cols].notna().any().any()):
        return []
    gap = ("the median of |g(1) − g(0) − g′(.5)| / |g(1) − g(0)| for g(c) = f_tar(x(c)) on "
           "the IFS's output (0: g quadratic, where mid is exact)")
    head = (f"Every form of LIC-UB (AP against the reading's labels; `at/output`: mixed = "
            f"target gradient at the observed x times dx/dc at c = .5; mid, fd, observed = one "
            f"point of c → f_tar(x(c)); path = its mean over [0, 1], the label in the limit, a "
            f"check), and {gap}:" if lic_cols else
            f"The target's nonlinearity along the c-path, {gap} (the forms of LIC-UB: "
            f"`make readings-axes`):")
    lines = ["", head, "", "| reading | form | " + " | ".join(short) + " |",
             "|---|---|" + "---|" * len(COLUMNS)]
    for _, r in df.iterrows():
        for form in lic_cols:
            if f"lic {form} {COLUMNS[0]}" in r and r[[f"lic {form} {c}" for c in COLUMNS]].notna().any():
                lines.append(f"| {r['reading']} | {form} | " + " | ".join(
                    "" if pd.isna(r[f"lic {form} {c}"]) else f"{r[f'lic {form} {c}']:.3f}"
                    for c in COLUMNS) + " |")
        lines.append(f"| {r['reading']} | nonlinearity | " + " | ".join(
            "" if pd.isna(r.get(f"linearity_gap {c}")) else f"{r[f'linearity_gap {c}']:.2f}"
            for c in COLUMNS) + " |")
    return lines


def _ap_md(df: pd.DataFrame, short: list[str]) -> list[str]:
    """AP per method and column, with each reading's positive rate and aux accuracy."""
    lines = ["", "AP per method and column (the paper's first):", "",
             "| reading | row | " + " | ".join(short) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for m in paper_rows():
        lines.append(f"| paper | {short_label(m)} | "
                     + " | ".join(f"{paper(m, c):.3f}" for c in COLUMNS) + " |")
    for _, r in df.iterrows():
        lines.append(f"| {r['reading']} | positive rate | "
                     + " | ".join(f"{r[f'rate {c}']:.2f}" for c in COLUMNS) + " |")
        lines.append(f"| {r['reading']} | aux accuracy | "
                     + " | ".join(f"{r[f'aux_acc {c}']:.2f}" for c in COLUMNS) + " |")
        for m in readings_methods():
            lines.append(f"| {r['reading']} | {short_label(m)} | "
                         + " | ".join(f"{r[f'{m} {c}']:.3f}" for c in COLUMNS) + " |")
    return lines


def markdown(df: pd.DataFrame) -> str:
    """``readings.md``: the ranking, the validity criteria, the choices, then the normalised
    AP, the forms of LIC-UB and the AP of every reading, per column."""
    short = [c.replace("Synthetic-", "S") for c in COLUMNS]
    lines = (_ranking_md(df) + _criteria_md(df, short) + _choices_md(df) + _nap_md(df, short)
             + _lic_forms_md(df, short) + _ap_md(df, short))
    return "\n".join(lines) + "\n"


def claim_margins(ap) -> dict[str, dict[str, float]]:
    """Per claim, per column it checks: the AP margin by which the claim holds there (> 0
    holds, < 0 does not; a tie holds for C1, C4 and C5, not for C2 and C3, as in
    :func:`claims`).

    ``ap(method, column)`` gives a mean AP (ours or the paper's); C1 and C5: AP - 0.9; C2 and
    C3: AP - max(FTA, FTA + lin. aux); C4: fAux+NG - fAux.
    """
    def best(c):
        return max(ap(FAUX, c), ap(NG, c), ap(IG, c))

    def fta(c):
        return max(ap(FTA, c), ap(LIN, c))

    return {
        "C1": {c: ap(LIC, c) - C1_AP for c in COLUMNS},
        "C2": {c: ap(NG, c) - fta(c) for c in COLUMNS},
        "C3": {c: ap(IG, c) - fta(c) for c in COLUMNS},
        "C4": {c: ap(NG, c) - ap(FAUX, c) for c in OUTER},
        "C5": {c: best(c) - C1_AP for c in CONCAT},
    }


def figure(df: pd.DataFrame, path: Path, max_rows: int = 16) -> Path:
    """One heat-map panel per claim of Table 1 (C1-C5): rows are the readings (best first
    by the selection rule, at most ``max_rows``), the paper's Table 1 on top as its own,
    labelled row; a cell is the AP margin by which the claim holds in that column (blue and
    a dot: holds, red: does not), and the panel's title counts the readings holding it in
    every column it checks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    d = df.head(max_rows)
    ours = [claim_margins(lambda m, c, r=r: float(r[f"{m} {c}"])) for _, r in d.iterrows()]
    theirs = claim_margins(paper)
    labels = ["paper (Table 1)"] + [
        f"{r['reading']}{'' if r['valid'] else ' (invalid)'}" for _, r in d.iterrows()]
    held = {k: sum(all(v > 0 or (v == 0 and k not in ("C2", "C3")) for v in o[k].values())
                   for o in ours) for k in CLAIMS}
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-0.5, vmax=0.5)
    titles = {"C1": "C1: LIC-UB\n≥ 0.9", "C2": "C2: fAux+NG >\nFTA, FTA + lin. aux",
              "C3": "C3: fAux+IG >\nFTA, FTA + lin. aux", "C4": "C4: fAux+NG\n≥ fAux",
              "C5": "C5: best fAux\nvariant ≥ 0.9"}
    widths = [len(theirs[k]) for k in CLAIMS]
    fig, axes = plt.subplots(1, len(CLAIMS), figsize=(10, 2.4 + 0.3 * len(labels)), dpi=100,
                             sharey=True, width_ratios=widths, layout="constrained")
    image = None
    for ax, k in zip(axes, CLAIMS):
        cols = list(theirs[k])
        grid_vals = np.array([[theirs[k][c] for c in cols]]
                             + [[o[k][c] for c in cols] for o in ours])
        image = ax.imshow(grid_vals, cmap="RdBu", norm=norm, aspect="auto")
        ax.axhline(0.5, color="black", lw=2)
        rows, cells = np.nonzero((grid_vals > 0) | ((grid_vals == 0) & (k not in ("C2", "C3"))))
        ax.scatter(cells, rows, s=7, color="black", marker="o")
        ax.set_xticks(range(len(cols)), [f"S{COLUMNS.index(c) + 1}" for c in cols], fontsize=9)
        ax.set_title(f"{titles[k]}\nheld: {held[k]}/{len(ours)}", fontsize=9)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=9)
    axes[0].get_yticklabels()[0].set_fontweight("bold")
    cbar = fig.colorbar(image, ax=axes, location="bottom", shrink=0.6, aspect=40)
    cbar.set_label("AP margin by which the claim holds in that column (blue > 0, dot: holds; "
                   "red < 0: fails)\nC1, C5: AP − 0.9; C2, C3: AP − max(FTA, FTA + lin. aux); C4: "
                   "fAux+NG − fAux; S1-S8: Synthetic-1 to -8", fontsize=9)
    cbar.ax.tick_params(labelsize=8)
    fig.suptitle("Readings of the synthetic benchmark (rows, best first by the selection rule) "
                 "against the paper's Table 1 (top row):\nwhere each claim holds, by mean AP "
                 "over runs", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def selected_line(df: pd.DataFrame) -> str:
    """The report's verdict: the first-ranked reading, or every reading tied at rank 1."""
    best = df.iloc[0]
    first = list(df.loc[df["rank"] == 1, "reading"])
    who = (best["reading"] if len(first) == 1
           else f"tie between {', '.join(first)} (listed by distance)")
    return (f"selected reading (valid, C1, most of C2-C5, then closest to the paper): {who} "
            f"({'valid' if best['valid'] else 'INVALID'}, lin. aux gap "
            f"{best['lin_gap_held']}, C1 {'held' if best['c1'] else 'not held'}, "
            f"{best['c2_c5_held']}/4 of C2-C5, distance {best['paper_distance']:.3f})")


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
    report.lines.append(selected_line(df))
    return done(report, md)
