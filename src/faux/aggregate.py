"""Aggregate a multirun folder into tables and figures.

``python -m faux.aggregate <multirun dir> --table table1`` reads only the ``result.json``
files of the jobs (and notes jobs that left a folder but no finished result: crashed or
interrupted), then writes ``outputs/results/<table>.{csv,md,tex}``. A missing cell is
reported with the path of its job's log, the table is still written, and the exit code is 1.
This module only parses arguments: sweeps are read by ``faux.reports.sweep``, the builders
are listed in ``faux.reports.BUILDERS``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faux.errors import FauxError
from faux.reports import BUILDERS, builders
from faux.reports.sweep import read_sweeps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m faux.aggregate", description=__doc__)
    ap.add_argument("sweep_dir", type=Path, nargs="+", help="multirun folder(s)")
    ap.add_argument("--table", required=True, choices=sorted(BUILDERS))
    ap.add_argument("--results-dir", type=Path, default=Path("outputs/results"))
    ap.add_argument("--figures-dir", type=Path, default=Path("outputs/figures"))
    ap.add_argument("--wandb", action="store_true", help="also log the table/figure to W&B")
    args = ap.parse_args(argv)
    try:
        report = builders()[args.table](read_sweeps(args.sweep_dir), args.results_dir,
                                        args.figures_dir)
    except FauxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in report.lines:
        print(line)
    if args.wandb:
        from faux.reports.wandb_report import log_report

        log_report(args.table, report)
    if report.missing:
        print(f"{len(report.missing)} cell(s) missing:", file=sys.stderr)
        for cell, where in report.missing:
            print(f"  {cell}: {where}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
