"""Figure 8: the bias parameter provokes discrimination (paper A.7.1, A.7.6).

For each fusion and bias a plain MLP target is trained on synthetic data of one pair; the
ground-truth IFS ``|f(x) - f(x')|`` (probabilities) is measured on fresh test data; the
histograms at each bias are drawn per fusion, and a CSV summarises them. The IFS threshold
(``mean + k*std`` of the bias-0 target's IFS, same fusion) gives the positive rate.

``make fig8`` (``python -m faux.run experiment=fig8``) runs it through Hydra; ``python -m
faux.studies.fig8 --quick`` runs it without (``--check``: ground-truth diagnostics).
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from faux.errors import ConfigError
from faux.harness.cache import Cache, code_version, torch_dumps, torch_loads
from faux.methods.lic_ub import lic_ub
from faux.studies import synth_defaults
from faux.synth.ground_truth import ifs, ifs_labels, ifs_threshold, positive_rate
from faux.synth.reference import MLP, train_mlp
from faux.synth.sampler import SyntheticGenerator

log = logging.getLogger("faux.studies.fig8")

JOB = "fig8"

#: the code a cached Fig. 8 target depends on (a hash of the sources, not bumped by hand)
FIG8_CODE = code_version("faux.studies.fig8", "faux.synth.reference", "faux.models.mlp",
                         "faux.models.training")
CSV_COLUMNS = ["pair", "fusion", "bias", "ifs_mean", "ifs_median", "ifs_p95", "positive_rate",
               "n"]

#: quick profile (minutes on 2 cores from a cold cache); generators use their default configs
QUICK = {"n_train": 5000, "n_test": 2000, "width": 64, "depth": 2, "epochs": 15,
         "generator_cfgs": {}}
#: a larger run (the lead's paper profile decides the real sizes)
FULL = {"n_train": 20000, "n_test": 5000, "width": 64, "depth": 2, "epochs": 40,
        "generator_cfgs": {}}


def _target(gen: SyntheticGenerator, cache: Cache, *, fusion: str, bias: float, n_train: int,
            width: int, depth: int, epochs: int, seed: int, train_seed: int):
    """The MLP target of one (fusion, bias) cell, trained once and cached."""
    # gen.key: both CVAEs' data checksums, code version, configs, seed, CPU kernels, decoding
    key = {"what": "fig8_target", "code": FIG8_CODE, "gen": gen.key,
           "threads": torch.get_num_threads(), "fusion": fusion, "bias": float(bias),
           "n_train": int(n_train), "width": int(width), "depth": int(depth),
           "epochs": int(epochs), "data_seed": int(seed), "train_seed": int(train_seed)}

    def build():
        data = gen.sample(n_train, bias, fusion, seed=seed)
        net = train_mlp(data.x, data.y, width=width, depth=depth, epochs=epochs,
                        seed=train_seed, batch_size=128)
        return {"state_dict": net.state_dict(), "d_in": data.dim}

    obj = cache.get_or_build("fig8_target", key, build, dumps=torch_dumps, loads=torch_loads)
    net = MLP(obj["d_in"], width, depth)
    net.load_state_dict(obj["state_dict"])
    return net.eval()


@dataclass(frozen=True)
class Settings:
    pair: tuple[str, str]
    biases: tuple
    fusions: tuple
    width: int
    depth: int
    epochs: int
    n_train: int
    n_test: int
    seed: int
    k: float
    generator_cfgs: dict
    decoding: str
    tau: float
    cache_dir: str
    figures_dir: str
    results_dir: str

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from faux.studies.readings import reading_of, synth_settings

        f, p, paths = cfg["fig8"], cfg["profile"], cfg["paths"]
        pair = (f["xc"], f["xy"])
        # the reading's CVAEs (latent size, KL weight) and decoding; Fig. 8 keeps its own
        # threshold rule (mean + k std of the bias-0 IFS) and the IFS on probabilities
        cs = synth_settings(cfg, reading_of(cfg)[1], pair)
        return cls(pair, tuple(f["biases"]), tuple(f["fusions"]), int(f["width"]),
                   int(f["depth"]), int(f["epochs"]), int(p["synth"]["n_train"]),
                   int(p["synth"]["n_test"]), int(cfg["seed"]),
                   float(cfg["synthetic"]["threshold_k"]),
                   cs.gen_cfgs(pair), cs.gen_opts["decoding"], float(cs.gen_opts["tau"]),
                   paths["cache_dir"], paths["figures_dir"], paths["results_dir"])


def run(s: Settings, out_dir, log) -> dict:
    df = run_fig8(Path(s.figures_dir), Path(s.results_dir), pair=s.pair, n_train=s.n_train,
                  n_test=s.n_test, biases=s.biases, fusions=s.fusions, width=s.width,
                  depth=s.depth, epochs=s.epochs, seed=s.seed, k=s.k,
                  generator_cfgs=s.generator_cfgs, cache_dir=s.cache_dir, decoding=s.decoding,
                  tau=s.tau)
    for r in df.itertuples():
        log(f"{r.fusion:6s} bias {r.bias:.2f}: IFS mean {r.ifs_mean:.4f} median {r.ifs_median:.4f} "
            f"p95 {r.ifs_p95:.4f} positive rate {r.positive_rate:.3f}")
    return {"rows": df.to_dict(orient="records")}


def run_fig8(out_dir: Path, results_dir: Path, *, pair: tuple[str, str] = ("magic", "backache"),
             n_train: int = 5000, n_test: int = 2000, biases=(0.0, 0.5, 1.0),
             fusions=("outer", "concat"), width: int = 64, depth: int = 2, epochs: int = 15,
             seed: int = 0, generator_cfgs: dict | None = None, k: float | None = None,
             cache_dir=None, decoding: str = "gumbel", tau: float = 0.3,
             plot: bool = True) -> pd.DataFrame:
    """Train a target per (fusion, bias), write ``fig8.csv`` and ``fig8.png``; return the table."""
    k = synth_defaults.threshold_k() if k is None else float(k)
    biases = [float(b) for b in biases]
    if not biases or any(not 0.0 <= b <= 1.0 for b in biases):
        raise ConfigError(f"fig8 biases must be a non-empty list in [0, 1], got {biases}")
    if len(pair) != 2:
        raise ConfigError(f"pair must be (xc, xy), got {pair!r}")
    gen = SyntheticGenerator(pair[0], pair[1], generator_cfgs=generator_cfgs,
                             cache_dir=cache_dir, seed=seed, decoding=decoding, tau=tau)
    cache = gen.cache
    need = sorted(set(biases) | {0.0})
    rows, hists = [], {}
    for fi, fusion in enumerate(fusions):
        values = {}
        for bi, bias in enumerate(need):
            cell_seed = 1000 * (seed + 1) + 100 * fi + bi
            net = _target(gen, cache, fusion=fusion, bias=bias, n_train=n_train, width=width,
                          depth=depth, epochs=epochs, seed=cell_seed, train_seed=seed)
            test = gen.sample(n_test, bias, fusion, seed=cell_seed + 50)
            values[bias] = ifs(net, test.x, test.x_cf, output="prob")
        thr = ifs_threshold(values[0.0], k=k)
        for bias in biases:
            v = values[bias]
            rows.append({"pair": f"{pair[0]}/{pair[1]}", "fusion": fusion, "bias": bias,
                         "ifs_mean": float(v.mean()), "ifs_median": float(v.median()),
                         "ifs_p95": float(torch.quantile(v.double(), 0.95)),
                         "positive_rate": positive_rate(ifs_labels(v, thr)), "n": int(v.numel()),
                         "threshold": thr})
            hists[(fusion, bias)] = v.numpy()
    df = pd.DataFrame(rows)
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    df[CSV_COLUMNS + ["threshold"]].to_csv(results_dir / "fig8.csv", index=False)
    if plot:
        _plot(hists, list(fusions), biases, df, Path(out_dir) / "fig8.png", pair)
    return df


def _plot(hists, fusions, biases, df, path: Path, pair) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(len(fusions), len(biases), figsize=(3.2 * len(biases),
                             2.6 * len(fusions)), squeeze=False, sharex=True)
    top = max(float(np.max(v)) for v in hists.values()) or 1.0
    bins = np.linspace(0.0, max(top, 1e-3), 41)
    for i, fusion in enumerate(fusions):
        for j, bias in enumerate(biases):
            ax = axes[i][j]
            ax.hist(hists[(fusion, bias)], bins=bins, color="tab:gray")
            row = df[(df.fusion == fusion) & (df.bias == bias)].iloc[0]
            ax.axvline(row.threshold, color="tab:red", lw=1, ls="--",
                       label="label threshold: above it an individual is labelled unfair")
            ax.set_yscale("log")
            if j == 0:
                ax.set_ylabel("individuals (log scale)", fontsize=8)
            ax.set_title(f"{fusion}, bias = {bias:g}\nmean IFS {row.ifs_mean:.3f}, "
                         f"pos. rate {row.positive_rate:.2f}", fontsize=8)
            if i == len(fusions) - 1:
                ax.set_xlabel("IFS = |f(x) - f(x')|", fontsize=8)
    fig.suptitle(f"Figure 8: xc/xy = {pair[0]}/{pair[1]}, IFS of the test individuals per "
                 "fusion and bias", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_pipeline_check(*, pair=("magic", "backache"), n_train: int = 5000, n_test: int = 2000,
                       biases=(0.5, 1.0), fusions=("outer", "concat"), width: int = 64,
                       depth: int = 2, epochs: int = 15, seed: int = 0, generator_cfgs=None,
                       k: float | None = None, cache_dir=None, decoding: str = "gumbel",
                       tau: float = 0.3) -> pd.DataFrame:
    """Diagnostics of the ground truth per (fusion, bias), for the Figure 8 targets (same cache
    keys, so a warm cache trains only the aux models):

    * ``positive_rate``: IFS labels (threshold from bias 0, same fusion);
    * ``ap_mid`` / ``ap_obs``: AP of LIC-UB ``|∇f · dx/dc|`` against those labels with dx/dc at
      c = 0.5 / at the observed c (``*_top30``: against the top 30% of IFS instead);
    * ``aux_acc``: test accuracy of a plain MLP predicting c from x (how readable c is);
      ``target_acc``: the target's test accuracy for y.
    """
    from sklearn.metrics import average_precision_score

    k = synth_defaults.threshold_k() if k is None else float(k)

    gen = SyntheticGenerator(pair[0], pair[1], generator_cfgs=generator_cfgs,
                             cache_dir=cache_dir, seed=seed, decoding=decoding, tau=tau)
    need = sorted(set(float(b) for b in biases) | {0.0})
    rows = []
    for fi, fusion in enumerate(fusions):
        thr = None
        for bi, bias in enumerate(need):
            cell_seed = 1000 * (seed + 1) + 100 * fi + bi
            net = _target(gen, gen.cache, fusion=fusion, bias=bias, n_train=n_train, width=width,
                          depth=depth, epochs=epochs, seed=cell_seed, train_seed=seed)
            test = gen.sample(n_test, bias, fusion, seed=cell_seed + 50, dxdc_at="mid")
            v = ifs(net, test.x, test.x_cf)
            if bias == 0.0:
                thr = ifs_threshold(v, k=k)
                continue
            obs = gen.sample(n_test, bias, fusion, seed=cell_seed + 50, dxdc_at="observed")
            lab = ifs_labels(v, thr).numpy()
            top = (v >= torch.quantile(v, 0.7)).long().numpy()
            s_mid = lic_ub(net, test.x, test.dx_dc).numpy()
            s_obs = lic_ub(net, obs.x, obs.dx_dc).numpy()
            train = gen.sample(n_train, bias, fusion, seed=cell_seed)
            aux = train_mlp(train.x, train.c, width=width, depth=depth, epochs=epochs, seed=seed,
                            batch_size=128)
            with torch.no_grad():
                aux_acc = float(((aux(test.x) > 0).long() == test.c).float().mean())
                tgt_acc = float(((net(test.x) > 0).long() == test.y).float().mean())

            def ap(y, sc):
                return float(average_precision_score(y, sc)) if y.any() else float("nan")

            rows.append({"pair": f"{pair[0]}/{pair[1]}", "fusion": fusion, "bias": bias,
                         "ifs_mean": float(v.mean()), "positive_rate": float(lab.mean()),
                         "ap_mid": ap(lab, s_mid), "ap_obs": ap(lab, s_obs),
                         "ap_mid_top30": ap(top, s_mid), "ap_obs_top30": ap(top, s_obs),
                         "aux_acc": aux_acc, "target_acc": tgt_acc})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Figure 8: IFS histograms at bias 0, 0.5, 1")
    ap.add_argument("--quick", action="store_true", help="small sizes (minutes on 2 cores)")
    ap.add_argument("--xc", default="magic")
    ap.add_argument("--xy", default="backache")
    ap.add_argument("--figures", default="outputs/figures")
    ap.add_argument("--results", default="outputs/results")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true",
                    help="instead: ground-truth diagnostics (dx/dc at mid vs observed, aux "
                         "accuracy, positive rate) at bias 0.5 and 1")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="generator overrides for both datasets, e.g. beta=0.05")
    ap.add_argument("--decoding", default="gumbel", choices=("gumbel", "softmax"))
    ap.add_argument("--n-train", dest="n_train", type=int, default=None)
    ap.add_argument("--n-test", dest="n_test", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None, help="target training epochs")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    for name in ("pytorch_lightning", "lightning", "lightning.pytorch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    kw = dict(QUICK if args.quick else FULL)
    for name in ("n_train", "n_test", "epochs"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    cfgs = {k: v for k, v in kw.pop("generator_cfgs").items() if k in (args.xc, args.xy)}
    t0 = time.perf_counter()
    if args.set:
        import json

        over = {kv.partition("=")[0]: json.loads(kv.partition("=")[2]) for kv in args.set}
        cfgs = {name: {**cfgs.get(name, {}), **over} for name in (args.xc, args.xy)}
    if args.check:
        out = run_pipeline_check(pair=(args.xc, args.xy), generator_cfgs=cfgs, seed=args.seed,
                                 decoding=args.decoding, **kw)
        print(out.to_string(index=False))
        print(f"check done in {time.perf_counter() - t0:.1f} s")
        return
    df = run_fig8(Path(args.figures), Path(args.results), pair=(args.xc, args.xy),
                  generator_cfgs=cfgs, seed=args.seed, decoding=args.decoding, **kw)
    print(df[CSV_COLUMNS].to_string(index=False))
    print(f"fig8 done in {time.perf_counter() - t0:.1f} s -> {args.figures}/fig8.png, "
          f"{args.results}/fig8.csv")


if __name__ == "__main__":
    main()
