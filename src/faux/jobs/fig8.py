"""Figure 8: IFS histograms of plain MLP targets at bias 0, 0.5, 1 (both fusions)."""

from __future__ import annotations

from pathlib import Path

from faux.experiments.synthetic import generator_overrides
from faux.synth.fig8 import run_fig8


def run(cfg: dict, out_dir, log) -> dict:
    f = cfg["fig8"]
    p = cfg["profile"]
    pair = (f["xc"], f["xy"])
    opts = cfg["study"]["generator_options"]
    df = run_fig8(Path(cfg["paths"]["figures_dir"]), Path(cfg["paths"]["results_dir"]),
                  pair=pair, n_train=p["synth"]["n_train"], n_test=p["synth"]["n_test"],
                  biases=f["biases"], fusions=f["fusions"], width=f["width"], depth=f["depth"],
                  epochs=f["epochs"], seed=cfg["seed"], k=cfg["study"]["threshold_k"],
                  generator_cfgs=generator_overrides(cfg, pair),
                  cache_dir=cfg["paths"]["cache_dir"], decoding=opts["decoding"], tau=opts["tau"])
    for r in df.itertuples():
        log(f"{r.fusion:6s} bias {r.bias:.2f}: IFS mean {r.ifs_mean:.4f} median {r.ifs_median:.4f} "
            f"p95 {r.ifs_p95:.4f} positive rate {r.positive_rate:.3f}")
    return {"rows": df.to_dict(orient="records")}
