"""One job of the Section 4.4 sweep (Fig. 5): a (pair, fusion, bias, draw) cell of A.7.5's grid.

The draw picks the widths (8-128) and depths (1-4) of the target and the aux MLP
(``faux.models.mlp.random_architecture``, ranges from ``fig5_grid``) and the column's seed
(data draws and training: ``seed + draw``). The column (data, target, bias-0 reference,
IFS labels) comes from ``faux.experiments.synthetic.prepare_column`` with the draw's target
recipe; the aux is trained once and scored by fAux, fAux+NG and fAux+IG.

Besides ``result.json`` (per-job AP of each method, positive rate, accuracies, timings), the
job writes ``records.npz``: per test individual the three scores, the IFS label and IFS, and
the target's input-gradient norm ``|grad f_tar|`` (``target_grad_norm``: of ``study.output``,
as the IFS; ``target_grad_norm_logit``: of the logit); scalars bias, aux accuracy, target
accuracy, draw, fusion and pair. ``peak_rss_mb`` is the job's own peak resident memory
(the mark is reset at the start of the job, also in a reused joblib worker). ``faux.reports.sweep_figures``
pools the records of every job.

Each dataset's CVAE is built once in total (``grid.ensure_generators`` under a lock), and a
column's target and bias-0 reference are built under a lock keyed by what makes them, so
parallel jobs never train the same artifact twice.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np
import torch

from faux.cache import Cache
from faux.experiments.grid import cache_lock, check_cell, ensure_generators, key_name, parse_pair
from faux.experiments.synthetic import AUX_METHODS, Column, prepare_column, score_method
from faux.metrics.ranking import ap_top_fraction, average_precision
from faux.models.mlp import MLPSpec, random_architecture

RECORDS = "records.npz"


def architectures(draw: int, seed: int, width_range, depth_range) -> dict:
    """The (width, depth) of the target and the aux for a draw (deterministic)."""
    base = 1_000_003 * int(seed) + 2 * int(draw)
    tw, td = random_architecture(base, tuple(width_range), tuple(depth_range))
    aw, ad = random_architecture(base + 1, tuple(width_range), tuple(depth_range))
    return {"target_width": tw, "target_depth": td, "aux_width": aw, "aux_depth": ad}


def _spec(node: dict, width: int, depth: int) -> MLPSpec:
    kw = {k: v for k, v in node.items() if k != "_target_"}
    kw.update(width=int(width), depth=int(depth))
    return MLPSpec(**kw)


def target_grad_norm(target: torch.nn.Module, x: torch.Tensor, output: str) -> np.ndarray:
    """``|grad_x f_tar(x)|_2`` per row (of sigma(logit) when ``output == "prob"``)."""
    from faux.methods.gradients import input_gradients

    g = input_gradients(target, x, output=output)
    return g.reshape(g.shape[0], -1).norm(dim=1).double().numpy()


def reset_peak_rss() -> str:
    """Reset this process's peak-RSS mark (Linux ``clear_refs`` 5), so that a job run in a
    reused worker (joblib) reports its own peak. Returns the scope ``peak_rss_mb`` will
    measure: ``"job"`` after a reset, ``"process"`` where the kernel refuses it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return "job"
    except OSError:
        return "process"


def peak_rss_mb() -> float:
    """Peak resident memory (MiB) since ``reset_peak_rss`` (else since the process began)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(cfg: dict, out_dir, log) -> dict:
    t_start = time.time()
    rss_scope = reset_peak_rss()
    g = cfg["fig5_grid"]
    check_cell("fig5", {"pair": cfg["pair"], "fusion": cfg["fusion"], "bias": cfg["bias"],
                        "draw": cfg["draw"], "seed": cfg["seed"]})
    xc, xy = parse_pair(cfg["pair"])
    col = Column(xc, xy, float(cfg["bias"]), str(cfg["fusion"]))
    draw, seed = int(cfg["draw"]), int(cfg["seed"])
    col_seed = seed + draw
    p, st = cfg["profile"], cfg["study"]
    sizes = p["fig5"]["synth"]
    arch = architectures(draw, seed, g["width_range"], g["depth_range"])
    target_spec = _spec(cfg["model"]["target"], arch["target_width"], arch["target_depth"])
    aux_spec = _spec(cfg["model"]["aux"], arch["aux_width"], arch["aux_depth"])
    cache = Cache(cfg["paths"]["cache_dir"])
    acc, root = cfg["trainer"]["accelerator"], cfg["paths"]["data_dir"]
    gen_cfgs, gen_opts = st.get("generators"), st.get("generator_options")

    t0 = time.perf_counter()
    built = ensure_generators((xc, xy), gen_cfgs=gen_cfgs, gen_opts=gen_opts, cache=cache,
                              root=root)
    t_gen = time.perf_counter() - t0
    # the target of this cell and the bias-0 reference of (pair, fusion, draw) are shared
    # with the other bias levels of the draw: build them under one lock per reference
    ref_key = {"pair": cfg["pair"], "fusion": col.fusion, "seed": col_seed,
               "spec": target_spec.__dict__, "sizes": dict(sizes), "gen": gen_cfgs,
               "opts": gen_opts}
    with cache_lock(cache.root, key_name("fig5-column", ref_key)):
        pc = prepare_column(col, sizes=sizes, target_spec=target_spec, gen_cfgs=gen_cfgs,
                            gen_opts=gen_opts, seed=col_seed, k=st["threshold_k"],
                            output=st["output"], cache=cache, accelerator=acc, root=root)
    t_prep = time.perf_counter() - t0 - t_gen
    log(f"fig5 {cfg['pair']} {col.fusion} bias {col.bias} draw {draw}: d={pc.test.dim}, "
        f"target {arch['target_width']}x{arch['target_depth']}, aux "
        f"{arch['aux_width']}x{arch['aux_depth']}, positive rate {pc.positive_rate:.3f}")

    options = dict(st["options"])      # IG bounds its own chunks by input floats (faux.methods.ig)
    scores, aps, top30, timings = {}, {}, {}, {}
    aux_acc = None
    for m in AUX_METHODS:
        s, info = score_method(m, pc, col_seed, aux_spec=aux_spec, options=options,
                               cache=cache, accelerator=acc)
        scores[m] = s.numpy()
        aps[m] = average_precision(pc.labels, s)
        top30[m] = ap_top_fraction(pc.ifs_test, s, 0.3)
        timings[m] = info["score_s"]
        aux_acc = info.get("aux_accuracy", aux_acc)
        log(f"  {m}: AP {aps[m]:.3f} (top-30% AP {top30[m]:.3f})")
    gnorm = target_grad_norm(pc.target, pc.test.x, st["output"])
    gnorm_logit = target_grad_norm(pc.target, pc.test.x, "logit")

    labels = pc.labels.numpy().astype(np.int8)
    np.savez_compressed(
        Path(out_dir) / RECORDS,
        **{m: scores[m].astype(np.float32) for m in AUX_METHODS},
        label=labels, ifs=pc.ifs_test.double().numpy().astype(np.float32),
        target_grad_norm=gnorm.astype(np.float32),
        target_grad_norm_logit=gnorm_logit.astype(np.float32),
        bias=np.float32(col.bias), aux_accuracy=np.float32(aux_acc),
        target_accuracy=np.float32(pc.target_info["accuracy"]), draw=np.int32(draw),
        fusion=np.str_(col.fusion), pair=np.str_(cfg["pair"]))
    return {
        "pair": cfg["pair"], "xc": xc, "xy": xy, "fusion": col.fusion, "bias": col.bias,
        "draw": draw, "column_seed": col_seed, "dim": pc.test.dim, **arch,
        "n_test": len(pc.test), "positive_rate": pc.positive_rate, "threshold": pc.threshold,
        "threshold_k": st["threshold_k"], "aux_accuracy": aux_acc,
        "target_accuracy": pc.target_info["accuracy"],
        "target_params": pc.target_info["n_params"],
        "target_grad_norm_mean": float(gnorm.mean()),
        "ap": aps, "ap_top30": top30, "records": RECORDS,
        "score_batch_size": options.get("batch_size"),
        "generators_built": [k for k, v in built.items() if v],
        "timings": {"generators_s": t_gen, "prepare_s": t_prep, "score_s": timings},
        "started": t_start, "finished": time.time(), "peak_rss_mb": peak_rss_mb(),
        "peak_rss_scope": rss_scope,
    }
