"""One cell of Table 1: a column (pair, bias, fusion) and a method, over the profile's runs.

The column's target is fixed (cached); each run retrains what the method fits (the aux
model, FlipTest's GANs, Unfair Map's metric) with its own seed, and scores the same test
individuals. AP is against the IFS labels (threshold from the bias-0 reference) and, for
comparability across columns, against the top 30% of individuals by IFS.
"""

from __future__ import annotations

from hydra.utils import instantiate

from faux.cache import Cache
from faux.experiments.synthetic import (
    METHODS,
    Column,
    generator_overrides,
    prepare_column,
    run_seeds,
    score_method,
)
from faux.metrics.ranking import ap_top_fraction, average_precision


def _kwargs(node: dict) -> dict:
    return {k: v for k, v in node.items() if k != "_target_"}


def run(cfg: dict, out_dir, log) -> dict:
    name = cfg["column"]
    columns = cfg["columns"]
    if name not in columns:
        from faux.errors import ConfigError

        raise ConfigError(f"unknown column {name!r}; choose one of {', '.join(columns)}")
    col = Column(**columns[name])
    method = cfg["method"]
    if method not in METHODS:
        from faux.errors import ConfigError

        raise ConfigError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    p = cfg["profile"]
    st = cfg["study"]
    cache = Cache(cfg["paths"]["cache_dir"])
    acc = cfg["trainer"]["accelerator"]
    target_spec = instantiate(cfg["model"]["target"])
    aux_spec = instantiate(cfg["model"]["aux"])
    pc = prepare_column(col, sizes=p["synth"], target_spec=target_spec,
                        gen_cfgs=generator_overrides(cfg, (col.xc, col.xy)), gen_opts=st.get("generator_options"),
                        seed=cfg["seed"], k=st["threshold_k"], output=st["output"], cache=cache,
                        accelerator=acc, root=cfg["paths"]["data_dir"])
    log(f"{name} ({col.xc}/{col.xy}, bias {col.bias}, {col.fusion}): positive rate "
        f"{pc.positive_rate:.3f}, target accuracy {pc.target_info['accuracy']:.3f}")
    aps, top30, facts = [], [], []
    seeds = run_seeds(method, int(cfg["seed"]), int(p["runs"]))
    fitted = [None] * len(seeds)
    if method == "fliptest":          # the cell's GAN seeds train together, as one stack
        from faux.methods.fliptest import FlipTest

        log(f"  training FlipTest's GANs for {len(seeds)} seeds together")
        fitted = FlipTest(**_kwargs(cfg["model"]["gan"]), accelerator=acc).fit_many(
            pc.train.x, pc.train.c, seeds)
    for s, ft in zip(seeds, fitted):
        scores, info = score_method(method, pc, s, aux_spec=aux_spec, options=st["options"],
                                    gan_kwargs=_kwargs(cfg["model"]["gan"]),
                                    unfair_map_kwargs=st.get("unfair_map"), cache=cache,
                                    accelerator=acc, fitted=ft)
        if ft is not None:
            info["gan_train_s"] = ft.info["train_time_s"]
        aps.append(average_precision(pc.labels, scores))
        top30.append(ap_top_fraction(pc.ifs_test, scores, 0.3))
        facts.append(info)
        log(f"  {method} seed {s}: AP {aps[-1]:.3f} (top-30% AP {top30[-1]:.3f})")
    return {
        "column": name, "xc": col.xc, "xy": col.xy, "bias": col.bias, "fusion": col.fusion,
        "method": method, "ap_runs": aps, "ap_top30_runs": top30,
        "positive_rate": pc.positive_rate, "threshold": pc.threshold,
        "threshold_k": st["threshold_k"], "n_test": len(pc.test),
        "target_accuracy": pc.target_info["accuracy"],
        "target_params": pc.target_info["n_params"],
        "aux_accuracy_runs": [f["aux_accuracy"] for f in facts if "aux_accuracy" in f],
        "gan_ks_runs": [f["gan_ks"] for f in facts if "gan_ks" in f],
        "gan_mse_runs": [f["gan_mse"] for f in facts if "gan_mse" in f],
        "score_s_runs": [f["score_s"] for f in facts],
        **{f"prepare_{k}": v for k, v in pc.timings.items()},
    }
