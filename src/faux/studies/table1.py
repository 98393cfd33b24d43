"""Table 1: one cell = a column (pair, bias, fusion) and a method, over the profile's runs.

The column's target is fixed (cached); each run refits what the method fits (the aux
model, FlipTest's GANs, Unfair Map's metric) with its own seed, and scores the same test
individuals. AP is against the IFS labels (threshold from the bias-0 reference) and, for
comparability across columns, against the top 30% of individuals by IFS. Any registered
method (``faux.methods.registry``) runs here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from faux.errors import ConfigError
from faux.harness.machine import machine
from faux.methods import registry
from faux.methods.protocol import MethodConfig, TrainData
from faux.metrics.ranking import TOP30, ap_top_fraction, auroc, average_precision
from faux.models.mlp import MLPSpec
from faux.studies.column import Column, ColumnSettings, prepare_shared, score_method
from faux.studies.readings import (
    aux_provider,
    calibration_ifs,
    labels_for,
    reading_of,
    synth_settings,
    target_spec,
)
from faux.studies.resources import Phases, peak_rss_mb, reset_peak_rss

JOB = "table1_cell"


@dataclass(frozen=True)
class Settings:
    name: str                # the column's name (Synthetic-1 ...)
    column: Column
    method: str
    seed: int
    runs: int
    target: MLPSpec
    aux: MLPSpec
    methods: MethodConfig
    synth: ColumnSettings
    reading: str = "?"       # the reading of the benchmark (conf/reading/<name>.yaml)
    threshold: str = "mean_k_std"
    aux_kind: str = "mlp"

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from hydra.utils import instantiate

        from faux.studies.config import method_config, synthetic_params

        name, columns = cfg["column"], cfg["columns"]
        if name not in columns:
            raise ConfigError(f"unknown column {name!r}; choose one of {', '.join(columns)}")
        registry.check_names([cfg["method"]], "method")
        col = Column(**columns[name])
        rname, r = reading_of(cfg)
        synth = synth_settings(cfg, r, (col.xc, col.xy))
        params = synthetic_params(r["target_output"], synth.lic_ub, cfg["synthetic"])
        return cls(name, col, cfg["method"], int(cfg["seed"]),
                   int(cfg["profile"]["runs"]), target_spec(cfg, r),
                   instantiate(cfg["model"]["aux"]), method_config(cfg, synth.options, params),
                   synth, rname, r["threshold"], r["aux"])


def run(s: Settings, out_dir, log) -> dict:
    col, method = s.column, registry.get(s.method)
    t_start = time.time()
    rss_scope = reset_peak_rss()
    phase = Phases()
    shared = prepare_shared(col, s.synth, s.target, s.seed)
    pc = shared.pc
    phase.add("generators", shared.generators_s)
    for name, sec in pc.timings.items():
        phase.add(name, sec)
    labels, threshold = labels_for(pc, s.threshold, s.synth,
                                   calibration_ifs(col, s.synth, s.target, s.seed, s.threshold))
    rate = float(labels.float().mean())
    log(f"{s.name} ({col.xc}/{col.xy}, bias {col.bias}, {col.fusion}; reading {s.reading}): "
        f"positive rate {rate:.3f}, target accuracy {pc.target_info['accuracy']:.3f}")
    seeds = method.run_seeds(s.seed, s.runs)
    cache, acc = s.synth.cache(), s.synth.accelerator
    aux_of, aux_s = aux_provider(pc, s.aux_kind, s.aux, s.synth, seeds), {}

    def timed_aux(seed):
        t0 = time.perf_counter()
        out = aux_of(seed)
        aux_s[int(seed)] = aux_s.get(int(seed), 0.0) + time.perf_counter() - t0
        return out

    data = TrainData(pc.train.x, pc.train.c, pc.val.x, pc.val.c, timed_aux)
    # the cell's seeds are fitted together (FlipTest trains its GANs as one stack)
    t0 = time.perf_counter()
    fitted = method.build(s.methods).fit_many(data, seeds)
    fit_s = time.perf_counter() - t0
    aux_total = sum(aux_s.values())
    phase.add("aux", aux_total)
    # what fitting cost besides the aux models: FlipTest's GANs, Unfair Map's metric...
    phase.add("gan" if "gan" in method.needs else "fit", max(fit_s - aux_total, 0.0))
    aps, aurocs, top30, facts, rows = [], [], [], [], []
    for seed, f in zip(seeds, fitted):
        with phase("score"):
            scores, info = score_method(s.method, pc, seed, aux_spec=s.aux, cache=cache,
                                        accelerator=acc, fitted=f)
        with phase("metrics"):
            aps.append(average_precision(labels, scores))
            aurocs.append(auroc(labels, scores))
            top30.append(ap_top_fraction(pc.ifs_test, scores, TOP30))
        rows.append(scores)
        facts.append(info)
        log(f"  {s.method} seed {seed}: AP {aps[-1]:.3f} (top-30% AP {top30[-1]:.3f})")
    scores_file = save_scores(out_dir, labels, rows, seeds)
    return {
        "column": s.name, "xc": col.xc, "xy": col.xy, "bias": col.bias, "fusion": col.fusion,
        "method": s.method, "ap_runs": aps, "auroc_runs": aurocs, "ap_top30_runs": top30,
        "positive_rate": rate, "threshold": threshold, "reading": s.reading,
        "threshold_rule": s.threshold, "threshold_k": s.synth.threshold_k,
        "n_test": len(pc.test),
        "target_accuracy": pc.target_info["accuracy"],
        "target_params": pc.target_info["n_params"],
        "aux_accuracy_runs": [f["aux_accuracy"] for f in facts if "aux_accuracy" in f],
        "gan_ks_runs": [f["gan_ks"] for f in facts if "gan_ks" in f],
        "gan_mse_runs": [f["gan_mse"] for f in facts if "gan_mse" in f],
        "score_s_runs": [f["score_s"] for f in facts],
        "phase_s": phase.seconds,
        "aux_s_runs": [aux_s.get(int(sd), 0.0) for sd in seeds] if aux_s else [],
        "peak_rss_mb": peak_rss_mb(), "peak_rss_scope": rss_scope,
        "run_seeds": [int(x) for x in seeds], "scores_file": scores_file,
        # where it was written: a memoised rerun of the job (faux.run) copies this result,
        # not the file, into its own folder, and finds the scores there
        "scores_path": str((Path(out_dir) / scores_file).resolve()) if scores_file else None,
        "machine": machine(),
        # the sweep's wall clock (first start to last finish) in make docs
        "started": t_start, "finished": time.time(),
    }


#: the per-row scores of a job, beside its result.json (the bootstrap of Table 1's claims)
SCORES = "scores.npz"


def save_scores(out_dir, labels, runs, seeds) -> str | None:
    """``scores.npz`` in ``out_dir``: the test rows' labels (int8), each run's scores (float32,
    runs x rows) and the run seeds, written atomically; the file's name (None without a
    folder). About 4 bytes per row and run: 24 KB for the quick profile's 3 x 2,000."""
    import io

    import numpy as np

    from faux.harness.files import write_atomic

    def host(a):
        return np.asarray(a.detach().cpu() if hasattr(a, "detach") else a).reshape(-1)

    if out_dir is None:
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, labels=host(labels).astype(np.int8),
             scores=np.stack([host(r).astype(np.float32) for r in runs]),
             seeds=np.asarray(seeds, dtype=np.int64))
    write_atomic(out / SCORES, buf.getvalue(), prefix=f".{SCORES}.", suffix=".part")
    return SCORES
