"""The ``real_cell`` results of a sweep, shared by Fig. 4/10, Table 3 and Table 4.

Jobs that were skipped because the SSL CSV was never placed are a note, not a missing cell;
any other skipped or unfinished job is a missing cell (with its reason or log).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faux.methods import registry
from faux.reports.base import Report, done, mean_std, write_tables
from faux.reports.sweep import unfinished_cells

JOB = "real_cell"
DATASETS = ("adult", "ssl", "bank")            # the paper's column order (Table 3)
DATASET_LABELS = {"adult": "Adult", "ssl": "Chicago SSL", "bank": "Bank"}
PROTECTED_LABELS = {"adult": "Sex (Binary)", "ssl": "Race (Binary)", "bank": "Age (Binarized)"}


def dorder(name: str):
    return (DATASETS.index(name), "") if name in DATASETS else (len(DATASETS), name)


class RealSweep:
    """The real_cell results of a sweep: finished, skipped (absent SSL / errors), missing."""

    def __init__(self, sweep):
        self.ok: list[dict] = []
        self.notes: list[str] = []
        self.missing: list[tuple[str, str]] = []
        seen = set()
        for res in sweep.results:
            if res.get("job") != JOB:
                continue
            m = res["metrics"]
            key = (m["dataset"], int(m["seed"]))
            if key in seen:          # the same job in two sweeps given: keep the first
                continue
            seen.add(key)
            if "skipped" in m:
                cell = f"{m['dataset']} seed {m['seed']}"
                if m.get("skip_kind") == "absent":
                    self.notes.append(f"{cell}: skipped: {m['skipped']}")
                else:
                    self.missing.append((cell, f"skipped: {m['skipped']}"))
                continue
            self.ok.append(res)
        datasets = {d for d, _ in seen}
        seeds = {s for _, s in seen}
        for d in sorted(datasets, key=dorder):
            for s in sorted(seeds):
                if (d, s) not in seen:
                    self.missing.append((f"{d} seed {s}", "no finished job"))
        self.missing += unfinished_cells(sweep)

    def datasets(self) -> list[str]:
        return sorted({r["metrics"]["dataset"] for r in self.ok}, key=dorder)

    def of(self, dataset: str) -> list[dict]:
        return sorted((r for r in self.ok if r["metrics"]["dataset"] == dataset),
                      key=lambda r: r["metrics"]["seed"])

    def report(self) -> Report:
        rep = Report(pd.DataFrame())
        rep.missing = list(self.missing)
        rep.lines = [f"note: {n}" for n in self.notes]
        return rep


def method_names(results: list[dict]) -> list[str]:
    names: list[str] = []
    for r in results:
        for n in r["metrics"].get("method_names", r["metrics"]["methods"]):
            if n not in names:
                names.append(n)
    return sorted(names, key=registry.order)


def dataset_cells(frame: pd.DataFrame, datasets, method: str, cell) -> list[str]:
    """One markdown cell per dataset: ``cell(row)`` of the method's row, "—" where none."""
    out = []
    for d in datasets:
        sub = frame[(frame.dataset == d) & (frame.method == method)]
        out.append("—" if sub.empty else cell(sub.iloc[0]))
    return out


def ms(values) -> tuple[float, float]:
    return mean_std([v for v in values if v is not None])


def finish(rs: RealSweep, name: str, frame: pd.DataFrame, md_of, results_dir) -> Report:
    """The report of one real-data artifact: its frame written as ``<name>.{csv,md}``."""
    report = rs.report()
    report.frame = frame
    if frame.empty:
        report.lines.append(f"{name}: no finished {JOB} jobs")
        return report
    md = md_of(frame)
    report.files = write_tables(frame, md, None, name, Path(results_dir))
    return done(report, md)
