"""Aggregate a multirun folder into tables and figures.

``python -m faux.aggregate <multirun dir> --table table1`` reads the ``result.json`` files of
the jobs, each checked against its job's ``.hydra/config.yaml`` (``faux.reports.sweep``), then
writes ``outputs/results/<table>.{csv,md,tex}`` and ``<table>.provenance.json`` (profile,
sweeps, overrides: ``faux.harness.provenance``), and prints the summary: our values beside the
paper's, the claims line where the study has one, the files written, and every failed,
rejected or missing cell of the sweep's grid with its log. A malformed result is one line,
never a traceback. The table is still written when cells are missing; the exit code is then 1.
This module only parses arguments: sweeps are read by ``faux.reports.sweep``, the builders
are listed in ``faux.reports.BUILDERS``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faux.errors import FauxError
from faux.reports import BUILDERS, builder
from faux.reports.sweep import read_sweeps, unfinished_cells


def claims_line(name: str, frame) -> list[str] | None:
    """The claims a study states, as ``C1 holds (8/8): <claim>``; None where it has none.
    Table 1: C1-C5 of ``faux.reports.readings`` from the table's mean AP per cell."""
    if name != "table1" or not {"method", "column", "ap_mean"} <= set(getattr(frame, "columns", [])):
        return None
    try:
        from faux.reports.readings import CLAIMS, claims
    except ImportError:
        return None
    ap: dict = {}
    for r in frame.itertuples(index=False):
        ap.setdefault(r.method, {})[r.column] = r.ap_mean
    out = []
    for k, (held, ok, n) in claims(ap).items():
        out.append(f"{k} {'holds' if held else 'does not hold'} ({ok}/{n}): {CLAIMS.get(k, '')}")
    return out


def all_missing(report, sweep) -> list[tuple[str, str]]:
    """The report's missing cells, plus every rejected or unfinished job folder and every
    grid cell that never started (each once)."""
    out = list(report.missing)
    have = {c for c, _ in out}
    for cell, where in unfinished_cells(sweep) + sweep.never_started:
        if cell not in have:
            out.append((cell, where))
            have.add(cell)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m faux.aggregate",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Turn a finished (or partly finished) sweep into a table or figure: reads "
                    "every job's result.json under the sweep folder(s), checks each against "
                    "its job's own config, and writes the table beside the paper's values.",
        epilog="example:\n  python -m faux.aggregate outputs/table1/multiruns/quick --table table1\n"
               "  (the make targets run this after their sweep: make table1, make fig5, ...)\n\n"
               "exit codes: 0 every cell of the grid present; 1 the table was written but "
               "cells are missing or failed\n(each named with its log); 2 bad arguments or "
               "no readable sweep.")
    ap.add_argument("sweep_dir", type=Path, nargs="+",
                    help="multirun folder(s), e.g. outputs/<study>/multiruns/<profile>")
    ap.add_argument("--table", required=True, choices=sorted(BUILDERS),
                    help="which table or figure to build from the sweep")
    ap.add_argument("--results-dir", type=Path, default=Path("outputs/results"),
                    help="where the .csv/.md/.tex tables go (default: outputs/results)")
    ap.add_argument("--figures-dir", type=Path, default=Path("outputs/figures"),
                    help="where the .png figures go (default: outputs/figures)")
    ap.add_argument("--wandb", action="store_true",
                    help="also log the table/figure to W&B (offline unless WANDB_MODE says otherwise)")
    args = ap.parse_args(argv)
    try:
        sweep = read_sweeps(args.sweep_dir)
        report = builder(args.table)(sweep, args.results_dir, args.figures_dir)
    except FauxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report.missing = all_missing(report, sweep)
    from faux.harness import provenance
    from faux.harness.console import REPORT_LAYOUT, render_report

    report.files.append(provenance.write(args.results_dir, args.table, args.sweep_dir,
                                         sweep.results))
    for note in sweep.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in report.lines:   # the builder's notes (for table1/table3 the summary is the table)
        if line.startswith("wrote ") or (args.table in REPORT_LAYOUT and "\n" in line.strip()):
            continue
        print(line)
    claims = claims_line(args.table, report.frame)
    try:
        sys.stdout.write(render_report(args.table, report, claims=claims))
    except Exception as exc:   # the tables are written; the summary is a view of them
        print(f"warning: summary not rendered ({type(exc).__name__}: {exc}); "
              f"wrote {', '.join(map(str, report.files))}", file=sys.stderr)
    if args.wandb:
        from faux.reports.wandb_report import log_report

        try:
            log_report(args.table, report, directory=args.results_dir.parent, claims=claims,
                       sweep_dirs=args.sweep_dir)
        except Exception as exc:  # the tables are written; W&B is a copy
            print(f"warning: W&B summary run failed ({type(exc).__name__}: "
                  f"{str(exc).splitlines()[0][:160] if str(exc) else ''})", file=sys.stderr)
    if report.missing:
        print(f"{len(report.missing)} cell(s) missing or rejected:", file=sys.stderr)
        for cell, where in report.missing:
            print(f"  {cell}: {where}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
