"""``python -m faux.worlds.run [--quick] [--out DIR]``: every world x model x counterfactual,
and every world x differentiable model x Table 1 method.

For each world (``faux.worlds.catalog``): the models are trained on its rows
(``faux.worlds.models``), the reference counterfactuals fitted on its rows and c
(``faux.worlds.counterfactuals``), ``faux audit`` run at its defaults and with the aux counterfactual on each model
(not on ``with_c``, which reads c itself), and each estimate scored against the exact
counterfactual (``faux.worlds.evaluate``). Writes ``DIR/worlds.csv`` (one row per world, model
and counterfactual) and ``DIR/worlds.md`` (medians over worlds), and prints a line per job
and the medians table. With ``--methods-ap`` (the default) it also scores every registered
method of Table 1 on each differentiable model (``faux.worlds.methods``): one line per world
and model, ``DIR/worlds_methods.csv`` (one row per world, model and method) and a section of
``worlds.md``; ``--fliptest`` adds FlipTest (two GANs per world: minutes each in the default
profile).

Seeds are fixed (worlds, models, the audit's ``seed=0``), so a rerun writes the same files.
Each finished job is appended to ``DIR/worlds.<profile>.jobs.jsonl`` (the methods' to
``DIR/worlds_methods.<profile>.jobs.jsonl``); a rerun with the same
settings and the same faux source skips the jobs found there (``--fresh`` ignores them). Runs on one CPU thread
(``OMP_NUM_THREADS=1`` unless set, torch one thread) with the harness's pinned kernels
(``faux.kernels``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
import warnings
from pathlib import Path

COUNTERFACTUALS = ("audit", "audit_aux", "transport", "transport_sinks_last", "mean_shift",
                   "quantile_map", "oracle")
#: the audits run end to end: at its defaults, and with the aux counterfactual
AUDITS = {"audit": {}, "audit_aux": {"counterfactual": "aux"}}
OUT = Path("outputs/results")


def parse(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m faux.worlds.run", description=(
        "Score estimated counterfactuals (today's faux audit, mean shift, quantile map, the "
        "oracle) against the exact ones of validation worlds; writes worlds.csv and worlds.md."))
    ap.add_argument("--quick", action="store_true",
                    help="the quick profile: smaller worlds and 6 causal-profiler SCMs")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    ap.add_argument("--fresh", action="store_true", help="ignore finished jobs of an earlier run")
    ap.add_argument("--worlds", nargs="+", metavar="PATTERN",
                    help="only the worlds matching these shell patterns (e.g. 'profiler_*')")
    ap.add_argument("--models", nargs="+", metavar="NAME", help="only these models")
    ap.add_argument("--counterfactuals", nargs="+", metavar="NAME", choices=COUNTERFACTUALS,
                    help="only these counterfactuals")
    ap.add_argument("--rows", type=int, help="rows of every world (default: the profile's)")
    ap.add_argument("--profiler-count", type=int, help="causal-profiler worlds (default: the "
                    "profile's)")
    ap.add_argument("--audit-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="a faux.audit keyword (JSON value, else text); default: its defaults")
    ap.add_argument("--methods-ap", action=argparse.BooleanOptionalAction, default=True,
                    help="also score Table 1's methods on the differentiable models "
                    "(worlds_methods.csv; default: on)")
    ap.add_argument("--methods", nargs="+", metavar="NAME",
                    help="only these of Table 1's methods (default: every registered one a "
                    "world can feed)")
    ap.add_argument("--fliptest", action="store_true",
                    help="add FlipTest to the methods (two GANs per world)")
    ap.add_argument("--skip-counterfactuals", action="store_true",
                    help="run only Table 1's methods (worlds.csv is not written)")
    return ap.parse_args(argv)


def limit_threads() -> None:
    """One CPU thread and the harness's pinned kernels, before torch does any work."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from faux.kernels import pin

    pin()
    import torch

    torch.set_num_threads(1)


def audit_kwargs(pairs) -> dict:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--audit-arg needs KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


class JobCache:
    """Finished jobs, one JSON line each, after a first line holding the run's settings; a
    file written under other settings is set aside (renamed ``.old``)."""

    def __init__(self, path: Path, settings: dict, fresh: bool, last: str = "counterfactual"):
        self.path, self.rows, self.last = path, {}, last
        head = {"settings": settings}
        if path.exists() and not fresh:
            lines = path.read_text().splitlines()
            if lines and json.loads(lines[0]) == head:
                for line in lines[1:]:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:  # a line cut by an interruption
                        continue
                    self.rows[self.key(row)] = row
                return
            print(f"{path}: written under other settings; set aside as {path.name}.old",
                  flush=True)
            path.replace(path.with_name(path.name + ".old"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(head) + "\n")

    def key(self, row: dict) -> tuple[str, str, str]:
        return row["world"], row["model"], row[self.last]

    def add(self, row: dict) -> None:
        self.rows[self.key(row)] = row
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def plan(catalog: dict, models, cfs) -> list[tuple[str, str, str]]:
    """The jobs (world, model, counterfactual) in order; the audit skips the models that
    read c (``models.READS_C``)."""
    from faux.worlds.models import READS_C

    return [(w, m, cf) for w in catalog for m in models for cf in cfs
            if not (cf in AUDITS and m in READS_C)]


def _fmt(v) -> str:
    return "–" if v != v else f"{v:.3f}"


def run_world(name: str, source: str, build, jobs, cache: JobCache, audit_kw: dict,
              done: list[int], total: int) -> None:
    """The jobs of one world not in the cache: build it, train its models, score each."""
    from faux.audit.notices import FauxAuditWarning
    from faux.worlds.counterfactuals import make_transport
    from faux.worlds.evaluate import run_audit, score_audit, score_transport, truth
    from faux.worlds.models import MODELS, train_models

    todo = [j for j in jobs if j[0] == name and j not in cache.rows]
    if not todo:
        return
    world = build()
    needed = {m for _, m, _ in todo}
    models = train_models(world, names=[m for m in MODELS if m in needed])
    transports, truths = {}, {}
    for _, m, cf in todo:
        t0, caught = time.perf_counter(), []
        model = models[m]
        tr = truths.setdefault(m, truth(model, world))
        if cf in AUDITS:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = run_audit(model, world, **{**AUDITS[cf], **audit_kw})
                scores = score_audit(res, model, world, tr)
        else:
            if cf not in transports:
                transports[cf] = make_transport(cf, world).fit(world.X, world.c)
            X_hat = transports[cf].transport(world.X, world.c, 1 - world.c)
            scores = score_transport(model, world, X_hat, tr)
        row = {"world": name, "source": source, "model": m, "fair": model.fair,
               "counterfactual": cf, **scores, "seconds": round(time.perf_counter() - t0, 2),
               "warnings": sorted({str(w.message).split(";")[0][:160] for w in caught
                                   if issubclass(w.category, FauxAuditWarning)})}
        cache.add(row)
        done[0] += 1
        warned = f", {len(row['warnings'])} audit warnings" if row["warnings"] else ""
        print(f"[{done[0]}/{total}] {name} {m} {cf}: precision {_fmt(scores['precision'])} "
              f"recall {_fmt(scores['recall'])} spearman {_fmt(scores['spearman'])} flagged "
              f"{scores['n_flagged']} true flips {scores['n_true_flips']} false flags "
              f"{scores['false_flags']} ({row['seconds']:.1f} s{warned})", flush=True)


def plan_methods(catalog: dict, models, names) -> list[tuple[str, str, str]]:
    """The methods' jobs (world, model, method) in order, on the differentiable models."""
    from faux.worlds.methods import TARGETS

    return [(w, m, n) for w in catalog for m in models if m in TARGETS for n in names]


def run_methods_world(name: str, source: str, build, jobs, cache: JobCache, profile: str,
                      gan_steps: int, done: list[int], total: int) -> None:
    """The methods' jobs of one world not in the cache: build it, train its models and its
    aux, score each model with each method."""
    from faux.worlds.methods import AUX_EPOCHS, score_world
    from faux.worlds.models import MODELS, train_models

    todo = [j for j in jobs if j[0] == name and j not in cache.rows]
    if not todo:
        return
    world = build()
    needed = {m for _, m, _ in todo}
    names = list(dict.fromkeys(n for _, _, n in todo))
    models = train_models(world, names=[m for m in MODELS if m in needed])
    t0 = time.perf_counter()
    rows = score_world(world, models, names, AUX_EPOCHS[profile], gan_steps)
    for m in models:
        mine = [r for r in rows if r["model"] == m]
        for row in mine:
            cache.add({**row, "source": source})
        done[0] += len(mine)
        aps = ", ".join(f"{r['method']} {_fmt(r['ap'])}" for r in mine)
        print(f"[{done[0]}/{total}] {name} {m}: AP {aps} (positive rate "
              f"{mine[0]['positive_rate']:.3f}, aux accuracy {mine[0]['aux_accuracy']:.3f})",
              flush=True)
    print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    limit_threads()
    from faux.worlds import catalog as cat
    from faux.worlds import report
    from faux.worlds.models import MODELS

    profile = cat.PROFILES["quick" if args.quick else "default"].with_rows(
        args.rows, args.profiler_count)
    worlds = cat.builders(profile)
    if args.worlds:
        worlds = {k: v for k, v in worlds.items()
                  if any(fnmatch.fnmatch(k, p) for p in args.worlds)}
    unknown = sorted(set(args.models or ()) - set(MODELS))
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    models = [m for m in MODELS if not args.models or m in args.models]
    cfs = [cf for cf in COUNTERFACTUALS if not args.counterfactuals or cf in args.counterfactuals]
    audit_kw = audit_kwargs(args.audit_arg)
    names = method_list(args)
    if args.skip_counterfactuals and not args.methods_ap:
        raise SystemExit("--skip-counterfactuals with --no-methods-ap leaves nothing to run; "
                         "drop one of them")
    from faux.harness.cache import package_version

    args.out.mkdir(parents=True, exist_ok=True)
    df = mdf = None
    if not args.skip_counterfactuals:
        # a job recorded under other settings or other code is done again
        settings = {**vars(profile), "audit": audit_kw, "code": package_version()}
        cache = JobCache(args.out / f"worlds.{profile.name}.jobs.jsonl", settings, args.fresh)
        jobs = plan(worlds, models, cfs)
        done = [sum(j in cache.rows for j in jobs)]
        print(f"faux.worlds: {len(worlds)} worlds, {len(jobs)} jobs ({done[0]} done before); "
              f"{profile.text()}", flush=True)
        for name, (source, build) in worlds.items():
            run_world(name, source, build, jobs, cache, audit_kw, done, len(jobs))
        df = report.frame([cache.rows[j] for j in jobs], list(worlds), models, cfs)
        df.to_csv(args.out / "worlds.csv", index=False, float_format="%.6g")
        print(report.medians_table(df, models, cfs))
    if args.methods_ap:
        from faux.worlds.methods import GAN_STEPS

        gan_steps = GAN_STEPS[profile.name]
        settings = {**vars(profile), "methods": names, "code": package_version(),
                    **({"gan_steps": gan_steps} if args.fliptest else {})}
        cache = JobCache(args.out / f"worlds_methods.{profile.name}.jobs.jsonl", settings,
                         args.fresh, last="method")
        jobs = plan_methods(worlds, models, names)
        done = [sum(j in cache.rows for j in jobs)]
        print(f"faux.worlds, Table 1's methods: {len(worlds)} worlds, {len(jobs)} jobs "
              f"({done[0]} done before)", flush=True)
        for name, (source, build) in worlds.items():
            run_methods_world(name, source, build, jobs, cache, profile.name, gan_steps, done,
                              len(jobs))
        mdf = report.frame([cache.rows[j] for j in jobs], list(worlds), models, names,
                           columns=report.METHOD_COLUMNS, last="method")
        mdf.to_csv(args.out / "worlds_methods.csv", index=False, float_format="%.6g")
        print(report.methods_table(mdf, models, names))
    command = " ".join(["python -m faux.worlds.run", *argv])
    md = report.markdown(df, models, cfs, command=command, profile=profile.name,
                         worlds_text=profile.text(), methods_df=mdf, methods=names)
    (args.out / "worlds.md").write_text(md)
    written = [f for f, d in (("worlds.csv", df), ("worlds_methods.csv", mdf)) if d is not None]
    print(f"wrote {', '.join(str(args.out / f) for f in [*written, 'worlds.md'])}", flush=True)
    return 0


def method_list(args) -> list[str]:
    """The methods of the run: ``--methods`` (checked) or every one a world can feed."""
    from faux.worlds.methods import method_names

    known = method_names(fliptest=args.fliptest)
    unknown = sorted(set(args.methods or ()) - set(known))
    if unknown:
        raise SystemExit(f"unknown or unfed method(s) {', '.join(unknown)}; known: "
                         f"{', '.join(known)} (fliptest needs --fliptest)")
    return [n for n in known if not args.methods or n in args.methods]


if __name__ == "__main__":
    sys.exit(main())
