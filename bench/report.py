"""What writing report.html costs for a large audit: audits 1,000,000 in-memory rows (a
logistic function of four features, one a proxy of ``sex``; ``sex`` and a four-level
``region`` protected, so the page has two attributes and their intersection; cheap aux
settings), then times ``faux.audit.report.page.write_report`` on the result, and prints the
seconds of each, the report's size and how many people it lists (target: the report in at
most 5 s, whatever the rows).

    OMP_NUM_THREADS=1 python bench/report.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _model(x):
    x = np.asarray(x, dtype=np.float64)
    return 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1] + 0.3 * x[:, 2]
                             + 2.5 * (x[:, 3] - 0.5))))


def main() -> None:
    import faux
    from faux.audit.report.page import write_report

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    n = ap.parse_args().rows
    rng = np.random.default_rng(0)
    sex = rng.integers(0, 2, n)
    region = rng.choice(["north", "south", "east", "west"], n)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "r": (region == "west") + rng.normal(size=n),
                      "w": sex + 0.5 * rng.normal(size=n)})
    t0 = time.perf_counter()
    res = faux.audit(_model, X, pd.DataFrame({"sex": sex, "region": region}), sample=5000,
                     aux_epochs=2, null_permutations=2, null_transports=5, methods=["faux_ng"],
                     progress=False)
    audit_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        t0 = time.perf_counter()
        write_report(res, path)
        report_s = time.perf_counter() - t0
        page = path.read_text(encoding="utf-8")
    people = page.count('<div class="person" style=')
    print(f"audit of {n:,} rows: {audit_s:.1f} s; flagged {res.summary['flagged']['count']:,}")
    print(f"report.html: {report_s:.2f} s, {len(page.encode()):,} bytes, {people} people "
          f"listed")


if __name__ == "__main__":
    main()
