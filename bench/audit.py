"""Speed and peak memory of `faux audit`, each line with its budget where it has one.

In this process (each case skipped with 0 rows; ``_over_budget``: measured / budget for
times, budget / measured for speeds, so that <= 1 is within budget for both):

    audit_default_wall_s (``--default-rows``, 12,000): one default audit (the effect verdict,
        3 aux seeds, 3 null models) of a LogisticRegression on 8 features saved with skops
        and audited from the file; audit_default_aux_training_s: its aux models' training;
        budget 20 s
    audit_adult_wall_s (``--adult-rows``, 30,000; skipped when Adult is not under
        $FAUX_DATA_DIR): one default audit of an MLP Pipeline on Adult's raw rows (one-hot
        encoder, scaler, MLPClassifier (64, 32): 96 encoded columns, exact scoring); budget
        20 s
    audit_tree_rows_per_s (``--tree-rows``, 30,000): the pass over the rows (the effect verdict
        and the diagnostic scores) of a HistGradientBoostingClassifier on 20 features, a black
        box, with default settings; audit_tree_rows_per_s_whole: rows / the whole audit's wall
        time; budget 5,000 rows/s for the pass. ``--tree-compare``: the same audit again with
        ``fd_scores="all"`` (every row's finite-difference scores), and the ratio of the two
        passes measured in this run
    audit_exact_over_fd (``--exact-rows``, 100,000): one LogisticRegression on ``--features``
        features audited twice, scored exactly (autograd through its torch conversion) and by
        forced finite differences with ``fd_scores="all"``, under ``--exact-verdict`` (default
        score: the pass is the scoring of every row; under the effect verdict both passes also
        make the same counterfactual model calls): the finite-difference pass's time over the
        exact one's; audit_exact_over_fd_total: whole audits; audit_exact_fd_spearman: the
        smallest Spearman correlation of the two modes' scores; budget 10 for the pass

Then (``--rows``, 0: none) a Parquet file of ``--rows`` rows x ``--features`` float32
features plus a binary protected column (generated in chunks, so the generator itself stays
small) audited by ``faux audit`` in a child process (fAux+NG, a TorchScript 2x64 MLP, exact,
the default effect verdict, calibrated thresholds), which prints

    audit_rows_per_s: rows / wall time of the whole audit (scan, aux, null models, scoring,
        report); audit_s_per_million_rows against the score verdict's 24 s per million rows
        before the effect verdict became the default
    audit_scoring_rows_per_s: rows / time of the scoring pass alone
    audit_peak_rss_mb: peak resident memory of the audit process; budget 2,048 MB
    audit_system_cpu_s: its CPU seconds in the kernel; audit_minor_faults_per_batch: its
        minor page faults (fresh pages from the kernel) per 65,536-row batch
    audit_null_models_s (with --null-time): the extra wall time of the calibration, the same
        audit run again with a manual --threshold (no null models) subtracted

With ``--counterfactuals transport,aux`` the ``--rows`` audit runs under each counterfactual
and ``audit_transport_over_aux_wall`` is the ratio of their wall times in this run.

With ``--engine ray --workers 1,2`` the ``--rows`` audit runs with ``--engine ray`` once per
worker count, each starting its own local Ray (the machine's cores), and prints per count

    audit_ray_scoring_rows_per_s: rows / time of the scoring pass (the actors' part)
    audit_ray_rows_per_s: rows / wall time of the whole audit (scan and fit on the driver)
    audit_ray_worker_peak_rss_mb: each actor's own (private, RssAnon) resident memory at its
        peak, read twice a second, the largest of them; budget 2,048 MB. Beside it each
        actor's VmHWM, which also counts the pages of Ray's shared object store it read
    audit_ray_driver_peak_rss_mb: the driver's
    audit_ray_worker_cpu_s_per_batch: the actors' CPU seconds (start included) per batch,
        and the share of it in the kernel; audit_ray_worker_minor_faults_per_batch

then audit_ray_scoring_ratio_<b>_over_<a> (and _wall_), the first two counts' rows/s ratio,
against a budget of 1.7 for 2 workers over 1, and audit_ray_worker_cpu_per_batch_ratio_<b>_
over_<a> (the CPU a batch costs beside other actors over alone); and the load average before
each run.

Usage: .venv/bin/python bench/audit.py [--rows 1000000] [--features 50] [--dir /tmp/...]
       [--exact-rows 100000] [--exact-verdict score] [--null-time] [--default-rows 12000]
       [--adult-rows 30000] [--tree-rows 30000] [--tree-compare] [--engine ray --workers 1,2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from faux.harness.procs import cmdline, descendants


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


def exact_vs_fd(rows: int, d: int, verdict: str = "effect") -> None:
    """The same LogisticRegression audited exactly and by forced finite differences."""
    import warnings

    from scipy.stats import spearmanr
    from sklearn.linear_model import LogisticRegression

    import faux
    from faux.audit.loaders.target import from_estimator

    rng = np.random.default_rng(1)
    c = rng.integers(0, 2, rows)
    x = rng.standard_normal((rows, d))
    x[:, 0] += c  # feature 0 carries c
    logit = x[:, :5] @ np.array([1.0, 0.5, -0.5, 0.25, 0.0]) + 0.3 * x[:, 5:].sum(1) / d ** 0.5
    y = (logit + rng.logistic(size=rows) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(max_iter=500).fit(x[:20_000], y[:20_000])
    runs = {}
    for mode, exact in (("exact", True), ("fd", False)):
        tm = from_estimator(lr, "LogisticRegression", exact=exact)
        assert tm.differentiable == exact, tm.scoring_mode
        t0 = time.perf_counter()
        res = faux.audit(tm, x, c, aux_epochs=5, progress=False, verdict=verdict,
                         fd_scores="all")
        runs[mode] = (res, time.perf_counter() - t0)
        print(f"# {mode}: {tm.scoring_mode}; scoring {res.summary['scoring']['seconds']:.2f} s, "
              f"whole audit {runs[mode][1]:.1f} s", file=sys.stderr)
    (ex, t_ex), (fd, t_fd) = runs["exact"], runs["fd"]
    ratio = fd.summary["scoring"]["seconds"] / max(ex.summary["scoring"]["seconds"], 1e-9)
    rho = min(spearmanr(ex.scores[m], fd.scores[m])[0] for m in ex.summary["settings"]["methods"])
    print(f"audit_exact_rows: {rows}")
    print(f"audit_exact_verdict: {verdict}")
    print(f"audit_exact_scoring_s: {ex.summary['scoring']['seconds']:.2f}")
    print(f"audit_fd_scoring_s: {fd.summary['scoring']['seconds']:.2f}")
    print(f"audit_exact_over_fd: {ratio:.1f}")
    print(f"audit_exact_over_fd_over_budget: {EXACT_OVER_FD_BUDGET / max(ratio, 1e-9):.2f}")
    print(f"audit_exact_over_fd_total: {t_fd / t_ex:.2f}")
    print(f"audit_exact_fd_spearman: {rho:.4f}")


DEFAULT_BUDGET_S = 20.0
ADULT_BUDGET_S = 20.0
TREE_BUDGET_ROWS_PER_S = 5000.0
EXACT_OVER_FD_BUDGET = 10.0
RSS_BUDGET_MB = 2048.0
OLD_S_PER_MILLION = 24.0  # the score verdict's whole audit per million rows, before


@contextlib.contextmanager
def _timed_training():
    """Yields a list that collects the wall time of every aux training call inside the
    block (``train_aux_family``: each view's stacked aux models)."""
    import faux.audit.scores.aux as aux

    spent: list[float] = []
    real = aux.train_aux_family

    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent.append(time.perf_counter() - t0)

    aux.train_aux_family = timed
    try:
        yield spent
    finally:
        aux.train_aux_family = real


def default_audit(rows: int) -> None:
    """One default audit of a LogisticRegression (a skops file) whose decision reads a proxy
    of the protected attribute (8 features), timed whole, the aux training apart."""
    import warnings

    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    import faux

    rng = np.random.default_rng(0)
    c = rng.integers(0, 2, rows)
    zip_ = c + 0.4 * rng.normal(size=rows)
    X = pd.DataFrame({**{f"f{j}": rng.normal(size=rows) for j in range(7)}, "zip": zip_})
    y = (X["f0"] + 1.5 * X["zip"] > 0.7).astype(int)
    import skops.io as sio

    with warnings.catch_warnings(), _timed_training() as spent, \
            tempfile.TemporaryDirectory() as tmp:
        warnings.simplefilter("ignore")
        model = LogisticRegression(max_iter=1000).fit(X.to_numpy(), y)
        path = Path(tmp) / "model.skops"
        sio.dump(model, path)
        t0 = time.perf_counter()
        res = faux.audit(str(path), X, c, seed=0, progress=False, report=False)
        wall = time.perf_counter() - t0
    print(f"# default audit: {res.summary['scoring']['mode']}; "
          f"{res.summary['flagged']['count']:,} of {rows:,} rows flagged; aux trainings of "
          f"{len(spent)} stacks", file=sys.stderr)
    print(f"audit_default_rows: {rows}")
    print(f"audit_default_wall_s: {wall:.1f}")
    print(f"audit_default_aux_training_s: {sum(spent):.1f}")
    print(f"audit_default_wall_over_budget: {wall / DEFAULT_BUDGET_S:.2f}")


def tree_audit(rows: int, d: int = 20, compare: bool = False) -> None:
    """One default audit of a HistGradientBoostingClassifier (a black box: finite
    differences, the effect verdict's counterfactuals by model calls); with ``compare`` the
    same audit with ``fd_scores="all"`` too."""
    import warnings

    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier

    import faux

    rng = np.random.default_rng(2)
    c = rng.integers(0, 2, rows)
    X = pd.DataFrame(rng.normal(size=(rows, d)), columns=[f"f{j}" for j in range(d)])
    X["f0"] += c  # feature 0 carries c
    y = (X["f0"] + X["f1"] - 0.5 * X["f2"] + rng.logistic(size=rows) > 0.5).astype(int)
    model = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(X.to_numpy(), y)
    runs = {}
    for mode in ("sample", "all") if compare else ("sample",):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            res = faux.audit(model, X, c, seed=0, progress=False, report=False, fd_scores=mode)
            runs[mode] = (res, time.perf_counter() - t0)
    res, wall = runs["sample"]
    sc = res.summary["scoring"]
    print(f"# tree ensemble: {sc['mode']}; full pass {sc['seconds']:.1f} s, whole audit "
          f"{wall:.1f} s; scores of {sc['rows_scored']:,} rows ({sc['rows_scored_are']})",
          file=sys.stderr)
    print(f"audit_tree_rows: {rows}")
    print(f"audit_tree_rows_per_s: {sc['rows_per_s']:.0f}")
    print(f"audit_tree_rows_per_s_whole: {rows / wall:.0f}")
    print(f"audit_tree_model_calls_per_scored_row: {sc['model_calls_per_row']}")
    print(f"audit_tree_rows_scored: {sc['rows_scored']}")
    print(f"audit_tree_wall_s: {wall:.1f}")
    print(f"audit_tree_rows_per_s_over_budget: "
          f"{TREE_BUDGET_ROWS_PER_S / max(sc['rows_per_s'], 1e-9):.2f}")
    if compare:
        every, wall_all = runs["all"]
        sa = every.summary["scoring"]
        same = bool((every.scores["flagged"] == res.scores["flagged"]).all())
        print(f"audit_tree_all_rows_per_s: {sa['rows_per_s']:.0f}")
        print(f"audit_tree_all_wall_s: {wall_all:.1f}")
        print(f"audit_tree_pass_speedup_sample_over_all: "
              f"{sc['rows_per_s'] / max(sa['rows_per_s'], 1e-9):.1f}")
        print(f"audit_tree_whole_speedup_sample_over_all: {wall_all / wall:.1f}")
        print(f"audit_tree_same_flags: {same}")


def adult_audit(rows: int) -> None:
    """One default audit of the MLP Pipeline of ``bench/audit_validity.py --adult`` on a
    ``rows``-row sample of Adult (exact scoring after its encoders); skipped when Adult is
    not in the data root."""
    import warnings

    from audit_validity import adult_model

    import faux
    from faux.errors import FauxError

    with _timed_training() as spent:
        try:
            df, X, y, model = adult_model(0, rows)
        except (FauxError, OSError) as err:
            print(f"# adult: skipped ({' '.join(str(err).split())[:120]})", file=sys.stderr)
            return
        c = (df["sex"] == "Male").astype(int).to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            res = faux.audit(model, X, c, seed=0, progress=False, report=False)
            wall = time.perf_counter() - t0
    sc = res.summary["scoring"]
    print(f"# adult: {sc['mode']}; {len(res.summary['data']['features'])} columns; full pass "
          f"{sc['seconds']:.1f} s; {res.summary['flagged']['count']:,} rows flagged",
          file=sys.stderr)
    print(f"audit_adult_rows: {len(X)}")
    print(f"audit_adult_wall_s: {wall:.1f}")
    print(f"audit_adult_aux_training_s: {sum(spent):.1f}")
    print(f"audit_adult_pass_s: {sc['seconds']:.1f}")
    print(f"audit_adult_wall_over_budget: {wall / ADULT_BUDGET_S:.2f}")


def run_child(cmd: list[str]) -> tuple[float, float, os.struct_rusage]:
    """Wall seconds, peak RSS (MB) and resource usage of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, usage.ru_maxrss / 1024, usage


BATCH_ROWS = 65_536  # the audit's default --batch-size, which the --rows audits keep


def _batches(rows: int) -> int:
    return -(-rows // BATCH_ROWS)


def _cpu(pid: int) -> tuple[float, float, int] | None:
    """A process's user and system CPU seconds and minor page faults so far (None once it
    is gone)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(f[11]) / tick, int(f[12]) / tick, int(f[7])


RAY_RATIO_BUDGET = 1.7  # rows/s of 2 workers over 1, on 2 cores


def _memory_mb(pid: int) -> dict | None:
    """A process's memory (MB): ``VmHWM``, its peak resident memory so far, which counts
    the pages of Ray's shared object store it has read, and ``RssAnon``, its own (private)
    resident memory now; None once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    out = {}
    for line in lines:
        key = line.split(":")[0]
        if key in ("VmHWM", "RssAnon"):
            out[key] = int(line.split()[1]) / 1024
    return out or None


def run_child_watched(cmd: list[str], marker: bytes) -> tuple[float, float, dict, dict]:
    """Wall seconds and peak RSS (MB) of one child process, and for each of its descendants
    whose command line holds ``marker`` (Ray's actors) the peaks of its ``_memory_mb`` and
    its ``_cpu``, read twice a second (the last reading)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peaks: dict[int, dict] = {}
    cpu: dict[int, tuple] = {}
    driver = 0.0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        driver = max(driver, (_memory_mb(proc.pid) or {}).get("VmHWM", 0.0))
        for kid in descendants(proc.pid):
            if marker not in cmdline(kid):
                continue
            used = _cpu(kid)
            if used is not None:
                cpu[kid] = used
            mb = _memory_mb(kid)
            if mb is not None:
                seen = peaks.setdefault(kid, {})
                for k, v in mb.items():
                    seen[k] = max(seen.get(k, 0.0), v)
        time.sleep(0.5)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), cmd)
    return wall, driver, peaks, cpu


def ray_scaling(cmd: list[str], out: Path, rows: int, workers: list[int]) -> None:
    """The ``--rows`` audit on Ray once per worker count; rows/s, the ratio of the first two
    counts and each run's peak memory per actor."""
    speed, per_batch = {}, {}
    for w in workers:
        load = os.getloadavg()
        wall, driver_mb, peaks, cpu = run_child_watched(
            [*cmd, "--engine", "ray", "--workers", str(w)], b"MapBatches(BatchScorer)")
        s = json.loads((out / "summary.json").read_text())
        speed[w] = (s["scoring"]["rows_per_s"], rows / wall)
        print(f"audit_ray_workers: {w}")
        print(f"audit_ray_load_average_before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"audit_ray_scoring_rows_per_s: {speed[w][0]:.0f}")
        print(f"audit_ray_scoring_s: {s['scoring']['seconds']:.1f}")
        print(f"audit_ray_rows_per_s: {speed[w][1]:.0f}")
        print(f"audit_ray_wall_s: {wall:.1f}")
        own = [p.get("RssAnon", float("nan")) for p in peaks.values()]
        hwm = [p.get("VmHWM", float("nan")) for p in peaks.values()]
        worst = max(own, default=float("nan"))
        print(f"audit_ray_worker_peak_rss_mb: {worst:.0f} (each actor's own memory, the "
              f"largest: {', '.join(f'{v:.0f}' for v in sorted(own))})")
        print(f"audit_ray_worker_peak_rss_with_object_store_pages_mb: "
              f"{', '.join(f'{v:.0f}' for v in sorted(hwm))}")
        print(f"audit_ray_worker_peak_rss_over_budget: {worst / RSS_BUDGET_MB:.2f}")
        print(f"audit_ray_driver_peak_rss_mb: {driver_mb:.0f}")
        user, system = sum(c[0] for c in cpu.values()), sum(c[1] for c in cpu.values())
        per_batch[w] = (user + system) / _batches(rows)
        print(f"audit_ray_worker_cpu_s_per_batch: {per_batch[w]:.3f} (the actors' CPU "
              f"seconds, start included, over the {_batches(rows)} batches; system "
              f"{system / max(user + system, 1e-9):.0%})")
        print(f"audit_ray_worker_minor_faults_per_batch: "
              f"{sum(c[2] for c in cpu.values()) / _batches(rows):.0f}")
    if len(workers) >= 2:
        a, b = sorted(workers[:2])
        ratio = speed[b][0] / max(speed[a][0], 1e-9)
        print(f"audit_ray_scoring_ratio_{b}_over_{a}: {ratio:.2f}")
        print(f"audit_ray_wall_ratio_{b}_over_{a}: {speed[b][1] / max(speed[a][1], 1e-9):.2f}")
        print(f"audit_ray_worker_cpu_per_batch_ratio_{b}_over_{a}: "
              f"{per_batch[b] / max(per_batch[a], 1e-9):.2f}")
        if (a, b) == (1, 2):
            print(f"audit_ray_scoring_ratio_over_budget: {RAY_RATIO_BUDGET / max(ratio, 1e-9):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--exact-rows", type=int, default=100_000,
                    help="rows of the exact vs finite-difference comparison (0: skip it)")
    ap.add_argument("--null-time", action="store_true",
                    help="also run the audit with a manual threshold to time the null models")
    ap.add_argument("--exact-verdict", default="score", choices=["effect", "score"],
                    help="verdict of the exact vs finite-difference audits (default score: "
                         "the pass is the scoring; the effect verdict's counterfactual calls "
                         "are the same in both modes)")
    ap.add_argument("--default-rows", type=int, default=12_000,
                    help="rows of the timed default audit (0: skip it)")
    ap.add_argument("--tree-rows", type=int, default=30_000,
                    help="rows of the tree-ensemble audit (0: skip it)")
    ap.add_argument("--tree-compare", action="store_true",
                    help="also audit the tree ensemble with fd_scores='all' (every row's "
                         "finite-difference scores) and print the ratio")
    ap.add_argument("--adult-rows", type=int, default=30_000,
                    help="rows of the Adult MLP Pipeline audit (0: skip it)")
    ap.add_argument("--engine", default="local", choices=["local", "ray"],
                    help="where the --rows audit scores its rows (ray: once per --workers)")
    ap.add_argument("--workers", default="1,2",
                    help="with --engine ray: the worker counts, comma-separated")
    ap.add_argument("--counterfactuals", default="transport",
                    help="the --rows audit under each of these counterfactuals (comma-"
                         "separated: transport,aux prints each one's lines and the ratio of "
                         "their wall times, measured in this run)")
    args = ap.parse_args()
    if args.default_rows:
        default_audit(args.default_rows)
    if args.adult_rows:
        adult_audit(args.adult_rows)
    if args.tree_rows:
        tree_audit(args.tree_rows, compare=args.tree_compare)
    if args.exact_rows:
        exact_vs_fd(args.exact_rows, args.features, args.exact_verdict)
    if not args.rows:
        return
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
        if args.engine == "ray":
            cmd = [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(model),
                   "--data", str(data), "--protected", "c", "--out", str(out), "--methods",
                   "faux_ng", "--aux-epochs", "5", "--no-progress"]
            ray_scaling(cmd, out, args.rows, [int(w) for w in args.workers.split(",")])
            return
        walls = {}
        for cf in args.counterfactuals.split(","):
            cmd = [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(model),
                   "--data", str(data), "--protected", "c", "--out", str(out), "--methods",
                   "faux_ng", "--aux-epochs", "5", "--no-progress", "--counterfactual", cf]
            wall, peak_mb, usage = run_child(cmd)
            walls[cf] = wall
            s = json.loads((out / "summary.json").read_text())
            print(f"audit_counterfactual: {cf}")
            print(f"audit_rows: {args.rows}")
            print(f"audit_rows_per_s: {args.rows / wall:.0f}")
            print(f"audit_scoring_rows_per_s: {s['scoring']['rows_per_s']:.0f}")
            print(f"audit_scoring_s: {s['scoring']['seconds']:.1f}")
            print(f"audit_wall_s: {wall:.1f}")
            per_million = wall / (args.rows / 1e6)
            print(f"audit_s_per_million_rows: {per_million:.1f}")
            print(f"audit_s_per_million_rows_over_old: {per_million / OLD_S_PER_MILLION:.2f}")
            print(f"audit_peak_rss_mb: {peak_mb:.0f}")
            print(f"audit_peak_rss_over_budget: {peak_mb / RSS_BUDGET_MB:.2f}")
            print(f"audit_system_cpu_s: {usage.ru_stime:.1f} (of {usage.ru_utime + usage.ru_stime:.1f} "
                  "CPU seconds)")
            print(f"audit_minor_faults_per_batch: {usage.ru_minflt / _batches(args.rows):.0f}")
        if "transport" in walls and "aux" in walls:
            print(f"audit_transport_over_aux_wall: {walls['transport'] / walls['aux']:.2f}")
        if args.null_time:
            manual = [*cmd, "--threshold", "0.5"]
            wall_m, peak_m, _ = run_child(manual)
            print(f"audit_manual_threshold_wall_s: {wall_m:.1f}")
            print(f"audit_manual_threshold_peak_rss_mb: {peak_m:.0f}")
            print(f"audit_null_models_s: {wall - wall_m:.1f}")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
