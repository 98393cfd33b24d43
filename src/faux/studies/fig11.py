"""One job of Fig. 11 (A.11.4): FlipTest on Synthetic-5 with one transport weight and GAN seed.

The column (australian/credit_g, bias 0.5, outer fusion by default; ``column`` in
conf/experiment/fig11.yaml) is prepared exactly as Table 1 prepares it (same sizes, target
recipe and seed, so its cached target is shared with Table 1's jobs). The job trains
FlipTest's two WGANs with ``model.gan.transport_weight`` = λ and seed ``gan_seed``, scores the
test individuals, and records the AP against the IFS labels with the GANs' quality metrics
on the validation rows (``FlipTest.quality``): mean KS statistic, mean MSE of the linear
regressions fitted on generated data (``mse``) and on real data (``mse_real``). The MSE fits
one regression per feature; ``profile.fig11.quality_rows`` caps the validation rows it uses
(a fixed random subset), since on outer fusion (d ~ 1,000) it costs minutes per job. With
fewer rows per group than features the regressions interpolate the real rows
(``mse_real`` ~ 0); the report states the rows used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from faux.metrics.ranking import TOP30, ap_top_fraction, average_precision
from faux.models.mlp import MLPSpec
from faux.studies.column import Column, ColumnSettings, prepare_shared
from faux.studies.grid import check_cell
from faux.studies.readings import (
    calibration_ifs,
    labels_for,
    reading_of,
    synth_settings,
    target_spec,
)
from faux.studies.resources import peak_rss_mb, reset_peak_rss

JOB = "fig11_cell"


@dataclass(frozen=True)
class Settings:
    column: Column
    seed: int
    gan_seed: int
    gan: dict                    # FlipTest / GANSpec fields (transport_weight = lambda)
    quality_rows: int | None     # validation rows of the KS/MSE metrics (None: all)
    target: MLPSpec
    synth: ColumnSettings
    reading: str = "?"              # the whole reading applies: CVAEs, target, IFS, threshold
    threshold: str = "mean_k_std"

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from faux.studies.config import node_kwargs

        c = cfg["column"]
        rname, r = reading_of(cfg)
        gan = node_kwargs(cfg["model"]["gan"])
        check_cell("fig11", {"column.xc": c["xc"], "column.xy": c["xy"],
                             "column.bias": c["bias"], "column.fusion": c["fusion"],
                             "seed": cfg["seed"], "model.gan.transport_weight":
                             gan["transport_weight"], "gan_seed": cfg["gan_seed"]})
        cap = (cfg["profile"].get("fig11") or {}).get("quality_rows")
        return cls(Column(c["xc"], c["xy"], float(c["bias"]), str(c["fusion"])),
                   int(cfg["seed"]), int(cfg["gan_seed"]), gan,
                   None if cap is None else int(cap), target_spec(cfg, r),
                   synth_settings(cfg, r, (c["xc"], c["xy"])), rname, r["threshold"])


def run(s: Settings, out_dir, log) -> dict:
    from faux.methods.fliptest import FlipTest

    t_start = time.time()
    rss_scope = reset_peak_rss()
    col, gan = s.column, s.gan
    # every job of the sweep shares the column's target and reference: built once
    shared = prepare_shared(col, s.synth, s.target, s.seed)
    pc, t_prep = shared.pc, shared.generators_s + shared.prepare_s

    t1 = time.perf_counter()
    ft = FlipTest(**gan, output=s.synth.options.output,
                  accelerator=s.synth.accelerator)
    ft.fit(pc.train.x, pc.train.c, seed=s.gan_seed)
    scores = ft.score(pc.target, pc.test.x, c=pc.test.c)
    t_gan = time.perf_counter() - t1
    # profile.fig11.quality_rows caps the validation rows of the KS/MSE metrics (null: all)
    xv, cv = pc.val.x, pc.val.c
    if s.quality_rows is not None and s.quality_rows < len(xv):
        idx = torch.randperm(len(xv), generator=torch.Generator().manual_seed(s.seed))
        xv, cv = xv[idx[:s.quality_rows]], cv[idx[:s.quality_rows]]
    t2 = time.perf_counter()
    q = ft.quality(xv, cv)
    t_quality = time.perf_counter() - t2
    labels, threshold = labels_for(pc, s.threshold, s.synth,
                                   calibration_ifs(col, s.synth, s.target, s.seed, s.threshold))
    rate = float(labels.float().mean())
    ap = average_precision(labels, scores)
    log(f"fig11 {col.xc}/{col.xy} bias {col.bias} {col.fusion}: lambda "
        f"{gan['transport_weight']:g} seed {s.gan_seed}: AP {ap:.3f}, KS {q['ks']:.3f}, "
        f"MSE {q['mse']:.3f} (real {q['mse_real']:.3f}), positive rate {rate:.3f}")
    return {
        "xc": col.xc, "xy": col.xy, "bias": col.bias, "fusion": col.fusion, "dim": pc.test.dim,
        "transport_weight": float(gan["transport_weight"]), "gan_seed": s.gan_seed,
        "gen_steps": int(gan["gen_steps"]), "ap": ap,
        "ap_top30": ap_top_fraction(pc.ifs_test, scores, TOP30),
        "positive_rate": rate, "threshold": threshold, "n_test": len(pc.test),
        "reading": s.reading, "threshold_rule": s.threshold,
        "target_accuracy": pc.target_info["accuracy"],
        "ks": q["ks"], "mse": q["mse"], "mse_real": q["mse_real"],
        "quality": {k: float(v) for k, v in q.items()},
        "quality_rows": int(len(xv)),
        "timings": {"prepare_s": t_prep, "gan_s": t_gan, "quality_s": t_quality},
        "started": t_start, "finished": time.time(), "peak_rss_mb": peak_rss_mb(),
        "peak_rss_scope": rss_scope,
    }
