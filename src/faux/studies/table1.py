"""Table 1: one cell = a column (pair, bias, fusion) and a method, over the profile's runs.

The column's target is fixed (cached); each run refits what the method fits (the aux
model, FlipTest's GANs, Unfair Map's metric) with its own seed, and scores the same test
individuals. AP is against the IFS labels (threshold from the bias-0 reference) and, for
comparability across columns, against the top 30% of individuals by IFS. Any registered
method (``faux.methods.registry``) runs here.
"""

from __future__ import annotations

from dataclasses import dataclass

from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.protocol import MethodConfig
from faux.metrics.ranking import ap_top_fraction, average_precision
from faux.models.mlp import MLPSpec
from faux.studies.column import Column, ColumnSettings, prepare_shared, score_method, train_data

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

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from hydra.utils import instantiate

        from faux.studies.config import column_settings, method_config

        name, columns = cfg["column"], cfg["columns"]
        if name not in columns:
            raise ConfigError(f"unknown column {name!r}; choose one of {', '.join(columns)}")
        registry.check_names([cfg["method"]], "method")
        st = cfg["study"]
        return cls(name, Column(**columns[name]), cfg["method"], int(cfg["seed"]),
                   int(cfg["profile"]["runs"]), instantiate(cfg["model"]["target"]),
                   instantiate(cfg["model"]["aux"]),
                   method_config(cfg, st["options"], {"unfair_map": st.get("unfair_map")}),
                   column_settings(cfg))


def run(s: Settings, out_dir, log) -> dict:
    col, method = s.column, registry.get(s.method)
    shared = prepare_shared(col, s.synth, s.target, s.seed)
    pc = shared.pc
    log(f"{s.name} ({col.xc}/{col.xy}, bias {col.bias}, {col.fusion}): positive rate "
        f"{pc.positive_rate:.3f}, target accuracy {pc.target_info['accuracy']:.3f}")
    seeds = method.run_seeds(s.seed, s.runs)
    cache, acc = s.synth.cache(), s.synth.accelerator
    # the cell's seeds are fitted together (FlipTest trains its GANs as one stack)
    fitted = method.build(s.methods).fit_many(train_data(pc, s.aux, cache, acc), seeds)
    aps, top30, facts = [], [], []
    for seed, f in zip(seeds, fitted):
        scores, info = score_method(s.method, pc, seed, aux_spec=s.aux, cache=cache,
                                    accelerator=acc, fitted=f)
        aps.append(average_precision(pc.labels, scores))
        top30.append(ap_top_fraction(pc.ifs_test, scores, 0.3))
        facts.append(info)
        log(f"  {s.method} seed {seed}: AP {aps[-1]:.3f} (top-30% AP {top30[-1]:.3f})")
    return {
        "column": s.name, "xc": col.xc, "xy": col.xy, "bias": col.bias, "fusion": col.fusion,
        "method": s.method, "ap_runs": aps, "ap_top30_runs": top30,
        "positive_rate": pc.positive_rate, "threshold": pc.threshold,
        "threshold_k": s.synth.threshold_k, "n_test": len(pc.test),
        "target_accuracy": pc.target_info["accuracy"],
        "target_params": pc.target_info["n_params"],
        "aux_accuracy_runs": [f["aux_accuracy"] for f in facts if "aux_accuracy" in f],
        "gan_ks_runs": [f["gan_ks"] for f in facts if "gan_ks" in f],
        "gan_mse_runs": [f["gan_mse"] for f in facts if "gan_mse" in f],
        "score_s_runs": [f["score_s"] for f in facts],
        **{f"prepare_{k}": v for k, v in pc.timings.items()},
    }
