"""Aggregate a multirun folder into tables and figures.

``python -m faux.aggregate <multirun dir> --table table1`` reads only the ``result.json``
files of the jobs (and notes jobs that left a folder but no finished result: crashed or
interrupted), then writes ``outputs/results/<table>.{csv,md,tex}``. A missing cell is
reported with the path of its job's log, the table is still written, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from faux.errors import FauxError


@dataclass
class Sweep:
    results: list[dict] = field(default_factory=list)
    unfinished: list[Path] = field(default_factory=list)   # job folders without a good result


def read_sweep(root: Path) -> Sweep:
    """All finished job results under ``root`` (recursively), and the unfinished job folders."""
    root = Path(root)
    if not root.is_dir():
        raise FauxError(f"{root} is not a folder; pass a multirun folder "
                        f"(outputs/<task>/multiruns/<stamp>)")
    sweep = Sweep()
    job_dirs = {p.parent for p in root.rglob(".hydra")} | {p.parent for p in root.rglob("result.json")}
    for d in sorted(job_dirs):
        res_path = d / "result.json"
        try:
            res = json.loads(res_path.read_text())
        except (OSError, ValueError):
            sweep.unfinished.append(d)
            continue
        if res.get("status") == "ok" and "config_hash" in res:
            res["_dir"] = str(d)
            sweep.results.append(res)
        else:
            sweep.unfinished.append(d)
    if not sweep.results and not sweep.unfinished:
        raise FauxError(f"no faux jobs under {root} (no result.json or .hydra folders); "
                        f"pass the folder a `python -m faux.run -m ...` sweep wrote")
    return sweep


def job_log(job_dir: Path) -> Path:
    logs = sorted(Path(job_dir).glob("*.log"))
    return logs[0] if logs else Path(job_dir)


def main(argv=None) -> int:
    from faux.reports import tables

    ap = argparse.ArgumentParser(prog="python -m faux.aggregate", description=__doc__)
    ap.add_argument("sweep_dir", type=Path, nargs="+", help="multirun folder(s)")
    builders = tables.all_builders()
    ap.add_argument("--table", required=True, choices=sorted(builders))
    ap.add_argument("--results-dir", type=Path, default=Path("outputs/results"))
    ap.add_argument("--figures-dir", type=Path, default=Path("outputs/figures"))
    ap.add_argument("--wandb", action="store_true", help="also log the table/figure to W&B")
    args = ap.parse_args(argv)
    try:
        sweep = Sweep()
        for d in args.sweep_dir:
            s = read_sweep(d)
            sweep.results += s.results
            sweep.unfinished += s.unfinished
        report = builders[args.table](sweep, args.results_dir, args.figures_dir)
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
