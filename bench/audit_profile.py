"""Where `faux audit`'s time and memory go (docs/notebook/audit_speed.md, audit_bench.md), on
bench/audit.py's audits and data, imported from it. From the repository root:

    FAUX_DATA_DIR=/work/shared/data PYTHONPATH=src .venv/bin/python bench/audit_profile.py SUB

tree|default|adult ROWS: cProfile of bench/audit.py's tree_audit (HistGradientBoosting, 20
    features, a black box), default_audit (LogisticRegression, 8 features, a skops file) or
    adult_audit (MLP Pipeline on Adult's raw rows)
exact ROWS {exact,fd}: cProfile of the pass over the rows (stages.score) of exact_vs_fd's
    LogisticRegression (50 features), exact or forced finite differences, score verdict
scorer ROWS: the audit's Scorer alone (fAux+NG, fAux) on that model, exact against finite
    differences, on torch's default threads and on one
phases {tree,default,adult,exact} ROWS: wall time per phase of one of those audits (each
    function of PHASES timed in place, no profiler; exact: exact_vs_fd(ROWS, 50))
families REPS: the default audit's six aux models (its 12,000 rows x 8) trained as stacks of
    1, 3 and 2 members, then as one stack of 6 (as train_primary does)
micro [--rows 30000]: HistGradientBoosting predict_proba on 10 x ROWS rows (rerun with
    OMP_NUM_THREADS=1); 8 forward+backward passes of a 20-64-64-1 MLP, 1 and 2 torch threads
effects-micro ROWS [--features 50]: effects() of 3 random 2x64 aux models (8 steps, a
    logistic target) on ROWS rows, on 2, 1, 2 and 1 torch threads
chunk-eq [ROWS] [--chunk N]: effects() of the TorchScript Target on ROWS (65,536) rows at
    once and in chunks of effect_pass.EFFECT_ROWS (or N) rows: equal bit for bit?
rss ROWS [--trim]: `faux audit` (fAux+NG, the Target, make_data's file) in this process: the
    memory after each batch of scores and stage (--trim: malloc_trim(0) after each batch)
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import functools
import gc
import multiprocessing
import pstats
import sys
import tempfile
import time
import warnings
from pathlib import Path
from resource import RUSAGE_SELF, getrusage

import numpy as np
import pyarrow as pa
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

import faux
from faux.audit import stages
from faux.audit.cli import main as faux_cli
from faux.audit.counterfactual import effect_pass, effects
from faux.audit.loaders.target import from_estimator
from faux.audit.passes import groups, score_pass
from faux.audit.scores import aux, baselines
from faux.audit.scores.calibration import null_targets
from faux.audit.scores.scoring import Scorer
from faux.audit.sources.data_scan import standardisation
from faux.audit.sources.protected import ProtectedInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audit as B  # noqa: E402  (bench/audit.py)

FEATURES = 50
AUDITS = {"tree": B.tree_audit, "default": B.default_audit, "adult": B.adult_audit,
          "exact": lambda rows: B.exact_vs_fd(rows, FEATURES)}
PROFILE_LINES = {"tree": 45, "default": 25, "adult": 60}  # calls listed by cumulative time
PHASES = (  # (module, function, label), patched where the audit looks each one up
    (stages, "scan_rows", "scan"), (stages, "fit", "fit"),
    (aux, "train_aux_family", "  aux training (all stacks)"),
    (stages, "null_scores", "  null scores (primary view)"),
    (groups, "train_views", "  train_views (seeds, other views)"),
    (groups, "_score_rows", "    seed sample scores"),
    (effect_pass, "prepare", "  effect prepare (null effects on sample)"),
    (stages, "sample_scores", "  sample diagnostic scores"), (stages, "score", "full pass"),
    (stages, "settle", "settle"), (baselines, "sample_baselines", "  baselines"))


def _seconds(fn, *args, **kwargs) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def _print_profile(pr: cProfile.Profile, cumulative: int) -> None:
    """The calls by cumulative time, then the 25 with the most time of their own."""
    pstats.Stats(pr).sort_stats("cumulative").print_stats(cumulative).sort_stats(
        "tottime").print_stats(25)


def profile_audit(kind: str, rows: int) -> None:
    pr = cProfile.Profile()
    pr.runcall(AUDITS[kind], rows)
    _print_profile(pr, PROFILE_LINES[kind])


def _logreg(rows: int, d: int = FEATURES):
    """exact_vs_fd's rows, protected column and LogisticRegression (the same draws)."""
    rng = np.random.default_rng(1)
    c = rng.integers(0, 2, rows)
    x = rng.standard_normal((rows, d))
    x[:, 0] += c
    logit = x[:, :5] @ np.array([1.0, 0.5, -0.5, 0.25, 0.0]) + 0.3 * x[:, 5:].sum(1) / d ** 0.5
    y = (logit + rng.logistic(size=rows) > 0).astype(int)
    return x, c, LogisticRegression(max_iter=500).fit(x[:20_000], y[:20_000])


def exact_pass(rows: int, mode: str) -> None:
    x, c, lr = _logreg(rows)
    pr = cProfile.Profile()  # the pass alone, on one torch thread as the audit runs it
    stages.score = stages._one_torch_thread(functools.partial(pr.runcall, stages.score.__wrapped__))
    res = faux.audit(from_estimator(lr, "LogisticRegression", exact=mode == "exact"), x, c,
                     aux_epochs=5, progress=False, verdict="score", fd_scores="all")
    print(res.summary["scoring"])
    _print_profile(pr, 40)


def scorer(rows: int) -> None:
    x, c, lr = _logreg(rows)
    mean, scale = standardisation(x[:20_000])
    net, _ = aux.train_aux((x[:20_000] - mean) / scale, c[:20_000],
                           ProtectedInfo("binary", [0, 1]), epochs=2)
    batch, methods = 65_536, ["faux_ng", "faux"]
    ex, fd = (Scorer(from_estimator(lr, exact=e), net, mean, scale, methods, batch_size=batch)
              for e in (True, False))

    def run(sc) -> None:
        sc.memo.clear()
        for s in range(0, rows, batch):
            sc.score(x[s:s + batch])

    for threads in (torch.get_num_threads(), 1):
        torch.set_num_threads(threads)
        te, tf = _seconds(run, ex), _seconds(run, fd)
        print(f"threads {threads}: exact {te:.3f}s fd {tf:.3f}s ratio {tf / te:.1f}", flush=True)


def phases(kind: str, rows: int) -> None:
    spent: dict[str, float] = {}

    def timer(fn, label: str):
        @functools.wraps(fn)
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0
        return timed

    for mod, name, label in PHASES:
        setattr(mod, name, timer(getattr(mod, name), label))
    print(f"total {_seconds(AUDITS[kind], rows):.1f}")
    for label in (label for *_, label in PHASES if label in spent):
        print(f"{spent[label]:8.2f}  {label}")


def families(reps: int) -> None:
    rng = np.random.default_rng(0)
    c = rng.integers(0, 2, 12_000)
    zip_ = c + 0.4 * rng.normal(size=len(c))
    x = np.column_stack([rng.normal(size=len(c)) for _ in range(7)] + [zip_])
    z = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    info = ProtectedInfo("binary", levels=[0, 1])
    stacks = [[(c, 0)], null_targets(c, 3, 0), [(c, groups.aux_seed(0, i)) for i in (1, 2)]]
    runs: dict[str, list[float]] = {"1+3+2": [], "6": []}
    for _ in range(reps):
        for way, fams in zip(runs, (stacks, [sum(stacks, [])])):
            t0 = time.perf_counter()
            for fam in fams:
                aux.train_aux_family(z, fam, info, kind="mlp", width=64, depth=2, epochs=30)
            runs[way].append(time.perf_counter() - t0)
    for way, v in runs.items():
        print(f"stacks {way}: median {np.median(v):.2f} s  runs {[round(t, 2) for t in v]}")


def _mlp(d: int) -> torch.nn.Module:
    """A random d-64-64-1 ReLU MLP (the aux models' shape), frozen, in eval mode."""
    lin, relu = torch.nn.Linear, torch.nn.ReLU
    net = torch.nn.Sequential(lin(d, 64), relu(), lin(64, 64), relu(), lin(64, 1))
    return net.eval().requires_grad_(False)


def micro(rows: int) -> None:
    rng, d = np.random.default_rng(2), 20
    x = rng.normal(size=(rows, d))
    x[:, 0] += rng.integers(0, 2, rows)
    y = (x[:, 0] + x[:, 1] - 0.5 * x[:, 2] + rng.logistic(size=rows) > 0.5).astype(int)
    m = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(x, y)
    big = np.tile(x, (10, 1))
    for _ in range(2):
        dt = _seconds(m.predict_proba, big)
        print(f"hgb predict {len(big)} rows: {dt:.2f}s -> {len(big) / dt:,.0f} rows/s", flush=True)
    net, z = _mlp(d).requires_grad_(True), torch.randn(10_000, d).requires_grad_(True)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        dt = _seconds(lambda: [torch.autograd.grad(net(z).sum(), z) for _ in range(8)])
        print(f"threads {threads}: 8 fwd+bwd on 10k rows {dt:.3f}s")


def effects_micro(rows: int, features: int) -> None:
    torch.manual_seed(0)
    d, auxes = features, [_mlp(features) for _ in range(3)]
    z, c = torch.randn(rows, d), (torch.rand(rows) > 0.5).float()
    w = np.random.default_rng(0).normal(size=d)
    for threads in (2, 1, 2, 1):
        torch.set_num_threads(threads)
        dt = _seconds(effects.effects, lambda xx: 1 / (1 + np.exp(-(xx @ w))), auxes,
                      [{"gap": 1.0}] * 3, z, c,
                      effects.Space("binary", effects.Layout(d, (), tuple(range(d))),
                                    np.zeros(d), np.ones(d), steps=8))
        print(threads, f"{dt:.2f}s", flush=True)


def chunk_eq(rows: int, chunk: int | None) -> None:
    chunk, d = chunk or effect_pass.EFFECT_ROWS, FEATURES
    torch.manual_seed(0)
    torch.set_num_threads(1)
    auxes, rng = [_mlp(d) for _ in range(3)], np.random.default_rng(0)
    x = rng.standard_normal((rows, d))
    c = rng.random(rows) > 0.5
    x[:, 0] += c
    mean, scale = x.mean(0), x.std(0)
    z = torch.as_tensor((x - mean) / scale, dtype=torch.float32)
    ci, tgt = torch.as_tensor(c, dtype=torch.float32), torch.jit.script(B.Target(d))
    gaps = [effects.group_gaps(a, z, c.astype(int), "binary") for a in auxes]
    lo, hi = effects.support_box(z.numpy())

    def run(s: int, e: int) -> dict:
        return effects.effects(
            lambda xx: torch.sigmoid(tgt(torch.from_numpy(xx).float())).detach().double().numpy(),
            auxes, gaps, z[s:e], ci[s:e],
            effects.Space("binary", effects.Layout(d, (), tuple(range(d))), mean, scale,
                          steps=8, lo=lo, hi=hi), x=x[s:e])

    full, parts = run(0, rows), [run(s, s + chunk) for s in range(0, rows, chunk)]
    print(f"{rows} rows, chunks of {chunk}")
    for k in ("p", "p_cf", "z_cf", "off_support"):
        a, b = full[k], np.concatenate([p[k] for p in parts], axis=1 if k == "p_cf" else 0)
        print(k, np.array_equal(a, b), np.abs(a.astype(float) - b.astype(float)).max())


def rss(rows: int, trim: bool) -> int:
    seen, write = [0], score_pass._Writer.write

    def memory() -> str:
        with open("/proc/self/status") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
        return f"rss {kb // 1024} MB peak {getrusage(RUSAGE_SELF).ru_maxrss // 1024} MB"

    def traced_write(self, frame):
        seen[0] += len(frame)
        print(f"rows {seen[0]:>9,} {memory()} arrow {pa.total_allocated_bytes() // 2**20} MB "
              f"objs {len(gc.get_objects())}", flush=True)
        if trim:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        return write(self, frame)

    def traced(stage, *stage_results):
        out = stage(*stage_results)
        print(f"after {stage.__name__}: {memory()}", flush=True)
        return out

    score_pass._Writer.write = traced_write
    for name in ("scan_rows", "fit", "score", "settle"):
        setattr(stages, name, functools.partial(traced, getattr(stages, name)))
    with tempfile.TemporaryDirectory() as tmp:
        data, model = Path(tmp) / "data.parquet", Path(tmp) / "model.pt"
        with multiprocessing.get_context("fork").Pool(1) as child:  # its memory is not ours
            child.apply(B.make_data, (data, rows, FEATURES))
        torch.jit.save(torch.jit.script(B.Target(FEATURES)), model)
        return faux_cli(["audit", "--model", str(model), "--data", str(data), "--protected", "c",
                         "--out", str(Path(tmp) / "out"), "--methods", "faux_ng",
                         "--aux-epochs", "5", "--no-progress", "--force"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="sub", required=True)
    rows, opt_rows = ("rows", dict(type=int)), ("rows", dict(type=int, nargs="?", default=65_536))
    for name, fn, *args in (
            *((k, profile_audit, rows) for k in PROFILE_LINES),
            ("exact", exact_pass, rows, ("mode", dict(choices=["exact", "fd"]))),
            ("scorer", scorer, rows), ("families", families, ("reps", dict(type=int))),
            ("phases", phases, ("kind", dict(choices=list(AUDITS))), rows),
            ("micro", micro, ("--rows", dict(type=int, default=30_000))),
            ("effects-micro", effects_micro, rows, ("--features", dict(type=int, default=50))),
            ("chunk-eq", chunk_eq, opt_rows, ("--chunk", dict(type=int, default=None))),
            ("rss", rss, rows, ("--trim", dict(action="store_true")))):
        p = sub.add_parser(name)
        p.set_defaults(fn=fn, **({"kind": name} if fn is profile_audit else {}))
        for flag, kw in args:
            p.add_argument(flag, **kw)
    a = vars(ap.parse_args())
    warnings.simplefilter("ignore")  # sklearn's and torch's notices: the timings are the output
    fn, _ = a.pop("fn"), a.pop("sub")
    if any(a.get(k) is not None and a[k] < 1 for k in ("rows", "reps", "chunk", "features")):
        ap.error("ROWS, REPS, --chunk and --features must be at least 1")
    return fn(**a) or 0


if __name__ == "__main__":
    sys.exit(main())
