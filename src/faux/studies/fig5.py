"""One job of the Section 4.4 sweep (Fig. 5): a (pair, fusion, bias, draw) cell of A.7.5's grid.

The draw picks the widths (8-128) and depths (1-4) of the target and the aux MLP
(``faux.models.mlp.random_architecture``, ranges from ``fig5_grid``) and the column's seed
(data draws and training: ``seed + draw``). The column (data, target, bias-0 reference,
IFS labels) comes from ``faux.studies.column.prepare_shared`` with the draw's target
recipe; the aux is trained once and scored by every registered method that reads an aux
model (``faux.methods.registry.names(requires={"aux"})``: fAux, fAux+NG, fAux+IG).

Besides ``result.json`` (per-job AP of each method, positive rate, accuracies, timings), the
job writes ``records.npz``: per test individual each method's scores, the IFS label and IFS, and
the target's input-gradient norm ``|grad f_tar|`` (``target_grad_norm``: of ``synthetic.output``,
as the IFS; ``target_grad_norm_logit``: of the logit); scalars bias, aux accuracy, target
accuracy, draw, fusion and pair. ``peak_rss_mb`` is the job's own peak resident memory
(the mark is reset at the start of the job, also in a reused joblib worker). ``faux.reports.fig5``
pools the records of every job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from faux.methods import registry
from faux.methods.protocol import MethodConfig
from faux.metrics.ranking import TOP30, ap_top_fraction, average_precision
from faux.models.mlp import MLPSpec, random_architecture
from faux.studies.column import Column, ColumnSettings, prepare_shared, score_method
from faux.studies.grid import check_cell, parse_pair
from faux.studies.readings import calibration_ifs, labels_for, reading_of, synth_settings
from faux.studies.resources import peak_rss_mb, reset_peak_rss

JOB = "fig5_cell"
RECORDS = "records.npz"
#: what this study provides to a fairness test: a target and an aux model
PROVIDES = ("target", "aux")


def methods() -> tuple[str, ...]:
    """The registered methods that read an aux model (the subject of Section 4.4)."""
    return registry.names(provides=PROVIDES, requires=("aux",))


def architectures(draw: int, seed: int, width_range, depth_range) -> dict:
    """The (width, depth) of the target and the aux for a draw (deterministic)."""
    base = 1_000_003 * int(seed) + 2 * int(draw)
    tw, td = random_architecture(base, tuple(width_range), tuple(depth_range))
    aw, ad = random_architecture(base + 1, tuple(width_range), tuple(depth_range))
    return {"target_width": tw, "target_depth": td, "aux_width": aw, "aux_depth": ad}


def _spec(node: dict, width: int, depth: int) -> MLPSpec:
    from faux.studies.config import node_kwargs

    return MLPSpec(**{**node_kwargs(node), "width": int(width), "depth": int(depth)})


@dataclass(frozen=True)
class Settings:
    pair: str
    column: Column
    draw: int
    seed: int
    arch: dict                  # target/aux widths and depths of the draw
    target: MLPSpec
    aux: MLPSpec
    methods: MethodConfig
    synth: ColumnSettings
    reading: str = "?"        # the reading's CVAEs, IFS and threshold; the draw's architectures
    threshold: str = "mean_k_std"

    @property
    def column_seed(self) -> int:
        return self.seed + self.draw

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from faux.studies.config import method_config

        check_cell("fig5", {"pair": cfg["pair"], "fusion": cfg["fusion"], "bias": cfg["bias"],
                            "draw": cfg["draw"], "seed": cfg["seed"]})
        xc, xy = parse_pair(cfg["pair"])
        draw, seed = int(cfg["draw"]), int(cfg["seed"])
        g = cfg["fig5_grid"]
        arch = architectures(draw, seed, g["width_range"], g["depth_range"])
        model = cfg["model"]
        rname, r = reading_of(cfg)
        synth = synth_settings(cfg, r, (xc, xy), sizes=cfg["profile"]["fig5"]["synth"])
        return cls(cfg["pair"], Column(xc, xy, float(cfg["bias"]), str(cfg["fusion"])), draw,
                   seed, arch, _spec(model["target"], arch["target_width"], arch["target_depth"]),
                   _spec(model["aux"], arch["aux_width"], arch["aux_depth"]),
                   method_config(cfg, synth.options), synth, rname, r["threshold"])


def target_grad_norm(target: torch.nn.Module, x: torch.Tensor, output: str) -> np.ndarray:
    """``|grad_x f_tar(x)|_2`` per row (of sigma(logit) when ``output == "prob"``)."""
    from faux.methods.autograd import input_gradients

    g = input_gradients(target, x, output=output)
    return g.reshape(g.shape[0], -1).norm(dim=1).double().numpy()


def run(s: Settings, out_dir, log) -> dict:
    t_start = time.time()
    rss_scope = reset_peak_rss()
    col, arch = s.column, s.arch
    shared = prepare_shared(col, s.synth, s.target, s.column_seed)
    pc = shared.pc
    label_t, threshold = labels_for(
        pc, s.threshold, s.synth,
        calibration_ifs(col, s.synth, s.target, s.column_seed, s.threshold, s.synth.sizes))
    rate = float(label_t.float().mean())
    log(f"fig5 {s.pair} {col.fusion} bias {col.bias} draw {s.draw}: d={pc.test.dim}, "
        f"target {arch['target_width']}x{arch['target_depth']}, aux "
        f"{arch['aux_width']}x{arch['aux_depth']}, positive rate {rate:.3f}")

    names = methods()
    scores, aps, top30, timings = {}, {}, {}, {}
    aux_acc = None
    for m in names:
        sc, info = score_method(m, pc, s.column_seed, aux_spec=s.aux, config=s.methods,
                                cache=s.synth.cache(), accelerator=s.synth.accelerator)
        scores[m] = sc.numpy()
        aps[m] = average_precision(label_t, sc)
        top30[m] = ap_top_fraction(pc.ifs_test, sc, TOP30)
        timings[m] = info["score_s"]
        aux_acc = info.get("aux_accuracy", aux_acc)
        log(f"  {m}: AP {aps[m]:.3f} (top-30% AP {top30[m]:.3f})")
    gnorm = target_grad_norm(pc.target, pc.test.x, s.synth.output)
    gnorm_logit = target_grad_norm(pc.target, pc.test.x, "logit")

    labels = label_t.numpy().astype(np.int8)
    np.savez_compressed(
        Path(out_dir) / RECORDS,
        **{m: scores[m].astype(np.float32) for m in names},
        label=labels, ifs=pc.ifs_test.double().numpy().astype(np.float32),
        target_grad_norm=gnorm.astype(np.float32),
        target_grad_norm_logit=gnorm_logit.astype(np.float32),
        bias=np.float32(col.bias), aux_accuracy=np.float32(aux_acc),
        target_accuracy=np.float32(pc.target_info["accuracy"]), draw=np.int32(s.draw),
        fusion=np.str_(col.fusion), pair=np.str_(s.pair))
    return {
        "pair": s.pair, "xc": col.xc, "xy": col.xy, "fusion": col.fusion, "bias": col.bias,
        "draw": s.draw, "column_seed": s.column_seed, "dim": pc.test.dim, **arch,
        "n_test": len(pc.test), "positive_rate": rate, "threshold": threshold,
        "reading": s.reading, "threshold_rule": s.threshold,
        "threshold_k": s.synth.threshold_k, "aux_accuracy": aux_acc,
        "target_accuracy": pc.target_info["accuracy"],
        "target_params": pc.target_info["n_params"],
        "target_grad_norm_mean": float(gnorm.mean()),
        "ap": aps, "ap_top30": top30, "records": RECORDS,
        "score_batch_size": s.methods.options.batch_size,
        "generators_built": [k for k, v in shared.built.items() if v],
        "timings": {"generators_s": shared.generators_s, "prepare_s": shared.prepare_s,
                    "score_s": timings},
        "started": t_start, "finished": time.time(), "peak_rss_mb": peak_rss_mb(),
        "peak_rss_scope": rss_scope,
    }
