"""Table 1's claims C1-C5 decided with bootstrap intervals: ``table1_intervals.json``.

Aggregation (``faux.reports.table1``) reads, per job, the recorded AP of each run and, when
the job stored them, its test rows' labels and per-run scores (``scores.npz``,
``faux.studies.table1.save_scores``). Per column, :func:`faux.metrics.intervals.cell_draws`
draws :data:`~faux.metrics.intervals.B` replicates of every method's mean AP, resampling the
rows (the same rows for every method: paired) and the runs (the same draws for methods with
the same run seeds); each claim's statistic per column (:data:`CLAIM_STATS`) is taken on
each replicate, and its percentile interval decides the column: *holds*, *fails* or
*undecided* (:func:`faux.metrics.intervals.decide`). ``make docs`` reads the file
(``scripts/docslib/claims.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faux.metrics import intervals as I
from faux.reports.readings import C1_AP, CLAIMS, COLUMNS, CONCAT, FAUX, FTA, IG, LIC, LIN, NG, OUTER

NAME = "table1_intervals.json"


@dataclass(frozen=True)
class ClaimStat:
    """A claim per column: ``stat(ap) > bound`` (``strict``) or ``>= bound``, on ``columns``.
    ``kind``: ``value`` (the one method's AP), ``best`` (the best AP of the methods) or
    ``margin`` (the first method's AP minus the best of the others)."""

    text: str                 # the statistic, in words
    columns: tuple[str, ...]
    methods: tuple[str, ...]
    kind: str
    bound: float
    strict: bool

    def stat(self, ap: dict):
        a = [np.asarray(ap[m], dtype=np.float64) for m in self.methods]
        if self.kind == "value":
            return a[0]
        if self.kind == "best":
            return np.max(np.stack(a), axis=0)
        return a[0] - np.max(np.stack(a[1:]), axis=0)


CLAIM_STATS = {
    "C1": ClaimStat("AP(LIC-UB)", tuple(COLUMNS), (LIC,), "value", C1_AP, False),
    "C2": ClaimStat("AP(fAux+NG) − max(AP(FTA), AP(FTA + lin. aux))", tuple(COLUMNS),
                    (NG, FTA, LIN), "margin", 0.0, True),
    "C3": ClaimStat("AP(fAux+IG) − max(AP(FTA), AP(FTA + lin. aux))", tuple(COLUMNS),
                    (IG, FTA, LIN), "margin", 0.0, True),
    "C4": ClaimStat("AP(fAux+NG) − AP(fAux)", tuple(OUTER), (NG, FAUX), "margin", 0.0, False),
    "C5": ClaimStat("max(AP(fAux), AP(fAux+NG), AP(fAux+IG))", tuple(CONCAT),
                    (FAUX, NG, IG), "best", C1_AP, False),
}
assert set(CLAIM_STATS) == set(CLAIMS)


def job_scores(res: dict) -> dict | None:
    """``{"labels", "scores", "seeds"}`` from the job's ``scores.npz``: in its folder, else
    where the job that computed the result wrote it (``scores_path``: a memoised rerun's
    folder holds only result.json); None when neither exists (a job of an earlier version,
    or a deleted sweep)."""
    m = res.get("metrics") or {}
    paths = [Path(res["_dir"]) / m["scores_file"]] if m.get("scores_file") and res.get("_dir") \
        else []
    paths += [Path(m["scores_path"])] if m.get("scores_path") else []
    path = next((p for p in paths if p.is_file()), None)
    if path is None:
        return None
    with np.load(path) as z:
        return {"labels": z["labels"].astype(np.int64), "scores": z["scores"],
                "seeds": z["seeds"].tolist()}


def column_cells(results: list[dict]) -> dict:
    """``{column: (labels or None, {method: cell})}`` for :func:`faux.metrics.intervals.cell_draws`;
    a column's rows are resampled only when every job stored the same labels."""
    by_col: dict = {}
    for res in results:
        m = res["metrics"]
        stored = job_scores(res)
        cell = {"ap_runs": list(m["ap_runs"]), "seeds": m.get("run_seeds"),
                "scores": None if stored is None else stored["scores"],
                "labels": None if stored is None else stored["labels"]}
        if stored is not None:
            cell["seeds"] = stored["seeds"]
        by_col.setdefault(m["column"], {})[m["method"]] = cell
    out = {}
    for col, cells in by_col.items():
        labs = [c.pop("labels") for c in cells.values()]
        same = all(x is not None for x in labs) and all(np.array_equal(labs[0], x) for x in labs)
        if not same:
            for c in cells.values():
                c["scores"] = None
        out[col] = (labs[0] if same else None, cells)
    return out


def build(results: list[dict], b: int = I.B, seed: int = I.SEED) -> dict:
    """Every cell's AP interval and every claim's interval and state, per column."""
    cells_out, claims_out, resampled = {}, {k: {} for k in CLAIM_STATS}, {}
    for col, (labels, cells) in column_cells(results).items():
        draws, what = I.cell_draws(labels, cells, b=b, seed=seed)
        resampled[col] = what
        points = {m: float(np.mean(c["ap_runs"])) for m, c in cells.items()}
        cells_out[col] = {m: {"ap": points[m], "interval": list(I.percentile_interval(draws[m])),
                              "n_runs": len(cells[m]["ap_runs"])} for m in cells}
        for k, cs in CLAIM_STATS.items():
            if col not in cs.columns:
                continue
            if not all(m in draws for m in cs.methods):
                claims_out[k][col] = {"point": None, "interval": None,
                                      "state": I.UNDECIDED, "missing": True}
                continue
            lo, hi = I.percentile_interval(cs.stat(draws))
            claims_out[k][col] = {"point": float(cs.stat(points)), "interval": [lo, hi],
                                  "state": I.decide(lo, hi, cs.bound, cs.strict)}
    for k, cs in CLAIM_STATS.items():              # columns not run: never decided
        for col in cs.columns:
            claims_out[k].setdefault(col, {"point": None, "interval": None,
                                           "state": I.UNDECIDED, "missing": True})
        claims_out[k] = {col: claims_out[k][col] for col in cs.columns}
    return {"bootstrap": {"B": int(b), "seed": int(seed), "level": I.LEVEL,
                          "resampled": resampled},
            "claims": {k: {"statistic": cs.text, "bound": cs.bound, "strict": cs.strict,
                           "columns": claims_out[k]} for k, cs in CLAIM_STATS.items()},
            "cells": cells_out, "machines": machines(results)}


def machines(results: list[dict]) -> list[dict]:
    """The distinct machines the jobs recorded (``metrics.machine``), with their job count."""
    seen: dict = {}
    for res in results:
        m = (res.get("metrics") or {}).get("machine")
        if m:
            # thread pools are listed in the order the job's imports loaded them
            pools = sorted(m.get("pools") or [], key=lambda p: json.dumps(p, sort_keys=True))
            m = {**m, "pools": pools} if "pools" in m else m
            key = json.dumps(m, sort_keys=True)
            seen.setdefault(key, {**m, "n_jobs": 0})["n_jobs"] += 1
    return [seen[k] for k in sorted(seen)]


def write(data: dict, results_dir: Path) -> Path:
    """``table1_intervals.json`` in ``results_dir``, keys sorted: the same results give the
    same bytes whatever order their jobs finished in."""
    from faux.harness.files import write_text_atomic

    return write_text_atomic(Path(results_dir) / NAME,
                             json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True)
                             + "\n")


def claim_states(data: dict) -> dict:
    """``{claim: {column: state}}`` decided afresh from the stored intervals (the rule of
    :func:`faux.metrics.intervals.decide`; a missing cell is undecided)."""
    out = {}
    for k, c in data["claims"].items():
        out[k] = {col: (I.decide(*v["interval"], c["bound"], c["strict"])
                        if v.get("interval") else I.UNDECIDED)
                  for col, v in c["columns"].items()}
    return out
