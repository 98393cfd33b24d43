"""Throughput and peak memory of `faux audit` (fAux+NG, autograd, TorchScript MLP).

Writes a Parquet file of ``--rows`` rows x ``--features`` float32 features plus a binary
protected column (generated in chunks, so the generator itself stays small), then runs
``faux audit`` on it in a child process and prints:

    audit_rows_per_s: rows / wall time of the whole audit (scan, aux, scoring, report)
    audit_scoring_rows_per_s: rows / time of the scoring pass alone
    audit_peak_rss_mb: peak resident memory of the audit process

Usage: .venv/bin/python bench/audit.py [--rows 1000000] [--features 50] [--dir /tmp/...]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


class Target(torch.nn.Module):
    """A fixed random 2x64 MLP whose logit also reads feature 0 (a proxy of c)."""

    def __init__(self, d: int):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = torch.nn.Parameter(torch.randn(d, 64, generator=g) / d ** 0.5)
        self.w2 = torch.nn.Parameter(torch.randn(64, 64, generator=g) / 8)
        self.w3 = torch.nn.Parameter(torch.randn(64, generator=g) / 8)

    def forward(self, x):
        h = torch.relu(torch.relu(x @ self.w1) @ self.w2)
        return h @ self.w3 + 2.0 * x[:, 0]


def make_data(path: Path, rows: int, d: int, block: int = 1 << 20) -> None:
    """One random block of ``block`` rows, written again and again up to ``rows`` rows (the
    audit scores every row all the same; generating 10 M fresh rows would dominate the run)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    m = min(block, rows)
    c = rng.integers(0, 2, m)
    x = rng.standard_normal((m, d), dtype=np.float32)
    x[:, 0] += c  # feature 0 carries c
    cols = {f"f{j}": x[:, j] for j in range(d)}
    cols["c"] = c.astype(np.int8)
    table = pa.table(cols)
    with pq.ParquetWriter(path, table.schema) as writer:
        for s in range(0, rows, m):
            writer.write_table(table.slice(0, min(m, rows - s)), row_group_size=1 << 18)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="faux-bench-audit-"))
    work.mkdir(parents=True, exist_ok=True)
    data, model, out = work / f"data_{args.rows}.parquet", work / "model.pt", work / "out"
    try:
        if not data.exists():
            t0 = time.perf_counter()
            make_data(data, args.rows, args.features)
            print(f"# generated {args.rows:,} rows in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
        torch.jit.save(torch.jit.script(Target(args.features)), model)
        cmd = [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(model), "--data",
               str(data), "--protected", "c", "--out", str(out), "--methods", "faux_ng",
               "--aux-epochs", "5", "--no-progress"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        s = json.loads((out / "summary.json").read_text())
        print(f"audit_rows: {args.rows}")
        print(f"audit_rows_per_s: {args.rows / wall:.0f}")
        print(f"audit_scoring_rows_per_s: {s['scoring']['rows_per_s']:.0f}")
        print(f"audit_wall_s: {wall:.1f}")
        print(f"audit_peak_rss_mb: {peak_mb:.0f}")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
