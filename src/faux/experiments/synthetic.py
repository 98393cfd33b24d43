"""One synthetic column (a pair, a bias, a fusion): data, target, ground truth, and scores.

Shared by Table 1, Fig. 5 and Fig. 11. Everything a column needs that many jobs share (the
two CVAEs, the target model, the bias-0 reference target) comes from the cache; what a job
varies (the aux model, the GAN, Unfair Map's metric, by seed) is trained in the job.

Seeds: data draws use fixed offsets of the column seed (train +1, val +2, test +3; the bias-0
reference +11, +12, +13), so every job of a column sees the same individuals.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from faux.cache import Cache, torch_dumps, torch_loads
from faux.errors import ConfigError
from faux.models.mlp import MLP, MLPSpec
from faux.synth.ground_truth import ifs, ifs_labels, ifs_threshold, positive_rate
from faux.synth.sampler import GENERATOR_VERSION, SyntheticGenerator, SyntheticSet, generator_config

log = logging.getLogger("faux.experiments")

METHODS = ("fta", "fta_lin", "unfair_map", "fliptest", "faux", "faux_ng", "faux_ig", "lic_ub")
AUX_METHODS = ("faux", "faux_ng", "faux_ig")


@dataclass(frozen=True)
class Column:
    xc: str
    xy: str
    bias: float
    fusion: str

    def __post_init__(self):
        if not 0.0 <= float(self.bias) <= 1.0:
            raise ConfigError(f"bias must be in [0, 1], got {self.bias}")


@dataclass
class PreparedColumn:
    column: Column
    train: SyntheticSet
    val: SyntheticSet
    test: SyntheticSet
    target: MLP
    target_info: dict
    ifs_test: torch.Tensor
    threshold: float
    labels: torch.Tensor
    positive_rate: float
    key: dict = field(default_factory=dict)     # what made the column's data and target
    timings: dict = field(default_factory=dict)


def _mlp_dumps(pair) -> bytes:
    net, info = pair
    arch = {"d_in": net.d_in, "width": net.width, "depth": net.depth, "d_out": net.d_out}
    return torch_dumps({"arch": arch, "state": net.state_dict(), "info": info})


def _mlp_loads(blob: bytes):
    d = torch_loads(blob)
    net = MLP(**d["arch"])
    net.load_state_dict(d["state"])
    return net.eval(), d["info"]


def generator_overrides(cfg: dict, names) -> dict:
    """Per-dataset CVAE overrides: the study's (per name), under the profile's (all names)."""
    study = (cfg.get("study") or {}).get("generators") or {}
    prof = (cfg.get("profile") or {}).get("generators") or {}
    return {n: {**(study.get(n) or {}), **prof} for n in names if study.get(n) or prof}


def generator_key(gen: SyntheticGenerator, gen_cfgs: dict | None) -> dict:
    cfgs = gen_cfgs or {}
    return {"version": GENERATOR_VERSION, "xc": gen.xc, "xy": gen.xy,
            "cfg_c": generator_config(gen.xc, cfgs.get(gen.xc)),
            "cfg_y": generator_config(gen.xy, cfgs.get(gen.xy)),
            "decoding": gen.decoding, "tau": gen.tau, "dxdc_at": gen.dxdc_at, "seed": gen.seed}


def cached_mlp(cache: Cache, kind: str, key: dict, spec: MLPSpec, x, t, x_val, t_val, seed: int,
               accelerator: str = "auto"):
    """An MLP classifier trained once per key and then loaded from the cache."""
    key = {**key, "spec": spec.__dict__, "train_seed": int(seed)}
    return cache.get_or_build(
        kind, key, lambda: spec.train(x, t, x_val, t_val, seed=seed, accelerator=accelerator),
        dumps=_mlp_dumps, loads=_mlp_loads)


def make_generator(col: Column, gen_cfgs: dict | None, gen_opts: dict | None, cache: Cache,
                   seed: int = 0, root=None) -> SyntheticGenerator:
    o = dict(gen_opts or {})
    cfgs = {k: v for k, v in (gen_cfgs or {}).items() if k in (col.xc, col.xy)}
    return SyntheticGenerator(col.xc, col.xy, cfgs, cache_dir=cache.root, seed=seed, root=root, **o)


def prepare_column(col: Column, *, sizes: dict, target_spec: MLPSpec, gen_cfgs: dict | None = None,
                   gen_opts: dict | None = None, seed: int = 0, k: float = 3.0,
                   output: str = "prob", cache: Cache | None = None,
                   accelerator: str = "auto", root=None) -> PreparedColumn:
    """Sample the column's data, train (or load) its target and bias-0 reference, label IFS."""
    cache = cache or Cache()
    t0 = time.perf_counter()
    gen = make_generator(col, gen_cfgs, gen_opts, cache, root=root)
    t_gen = time.perf_counter() - t0
    n_tr, n_va, n_te = int(sizes["n_train"]), int(sizes["n_val"]), int(sizes["n_test"])
    base = int(seed) * 1000

    def draw(bias, off):
        return (gen.sample(n_tr, bias, col.fusion, seed=base + off + 1),
                gen.sample(n_va, bias, col.fusion, seed=base + off + 2),
                gen.sample(n_te, bias, col.fusion, seed=base + off + 3))

    train, val, test = draw(col.bias, 0)
    gkey = generator_key(gen, gen_cfgs)
    key = {"gen": gkey, "fusion": col.fusion, "sizes": [n_tr, n_va], "data_seed": base}
    t1 = time.perf_counter()
    target, tinfo = cached_mlp(cache, "target", {**key, "bias": float(col.bias)}, target_spec,
                               train.x, train.y, val.x, val.y, seed, accelerator)
    # the same target recipe on bias-0 data of the same pair and fusion sets the threshold
    tr0, va0, te0 = draw(0.0, 10)
    ref, _ = cached_mlp(cache, "target", {**key, "bias": 0.0, "data_seed": base + 10},
                        target_spec, tr0.x, tr0.y, va0.x, va0.y, seed, accelerator)
    t_targets = time.perf_counter() - t1
    thr = ifs_threshold(ifs(ref, te0.x, te0.x_cf, output=output), k=k)
    v = ifs(target, test.x, test.x_cf, output=output)
    labels = ifs_labels(v, thr)
    return PreparedColumn(col, train, val, test, target, tinfo, v, thr, labels,
                          positive_rate(labels), {**key, "bias": float(col.bias)},
                          {"generators_s": t_gen, "targets_s": t_targets})


def train_aux(pc: PreparedColumn, spec: MLPSpec, seed: int, cache: Cache | None = None,
              accelerator: str = "auto"):
    """The aux MLP predicting c for run ``seed`` (cached: faux, faux_ng and faux_ig share it)."""
    cache = cache or Cache()
    return cached_mlp(cache, "aux", pc.key, spec, pc.train.x, pc.train.c, pc.val.x, pc.val.c, seed,
                      accelerator)


def score_method(method: str, pc: PreparedColumn, run_seed: int, *, aux_spec: MLPSpec,
                 options: dict | None = None, gan_kwargs: dict | None = None,
                 unfair_map_kwargs: dict | None = None, cache: Cache | None = None,
                 accelerator: str = "auto", fitted=None) -> tuple[torch.Tensor, dict]:
    """Scores of ``method`` for the column's test individuals, and run facts (aux accuracy...).

    ``fitted``: FlipTest already trained for this run (``FlipTest.fit_many`` trains a cell's
    seeds together); otherwise it is trained here."""
    from faux.methods.gradients import score
    from faux.methods.lic_ub import lic_ub

    o = dict(options or {})
    x = pc.test.x
    info: dict = {}
    t0 = time.perf_counter()
    if method == "fta":
        s = score("fta", pc.target, None, x, output=o.get("output", "prob"))
    elif method in AUX_METHODS:
        aux, ainfo = train_aux(pc, aux_spec, run_seed, cache, accelerator)
        info.update(aux_accuracy=ainfo["accuracy"], aux_params=ainfo["n_params"])
        s = score(method, pc.target, aux, x, **o)
    elif method == "lic_ub":
        s = lic_ub(pc.target, x, pc.test.dx_dc, output=o.get("output", "prob"))
    elif method == "fta_lin":
        from faux.methods.fta_lin import FTALin

        s = FTALin().fit(pc.train.x, pc.train.c, seed=run_seed).score(pc.target, x)
    elif method == "unfair_map":
        from faux.methods.unfair_map import UnfairMap

        um = UnfairMap(**(unfair_map_kwargs or {})).fit(pc.train.x, pc.train.c, seed=run_seed)
        s = um.score(pc.target, x, pc.test.y)
    elif method == "fliptest":
        from faux.methods.fliptest import FlipTest

        ft = fitted if fitted is not None else FlipTest(**(gan_kwargs or {})).fit(
            pc.train.x, pc.train.c, seed=run_seed)
        s = ft.score(pc.target, x, c=pc.test.c)
        q = ft.quality(pc.val.x, pc.val.c)
        info.update(gan_ks=q["ks"], gan_mse=q["mse"])
    else:
        raise ConfigError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    info["score_s"] = time.perf_counter() - t0
    return torch.as_tensor(s).reshape(-1).detach().double(), info


def run_seeds(method: str, base_seed: int, n_runs: int) -> list[int]:
    """Seeds of a cell's runs: Unfair Map's metric over 10, 20, ... (A.11.3); others 0, 1, ..."""
    if method in ("fta", "lic_ub"):
        return [base_seed]          # deterministic given the target: one run
    if method == "unfair_map":
        return [10 * (i + 1) for i in range(n_runs)]
    return [base_seed + i for i in range(n_runs)]


def summarise(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(np.nanmean(v)), float(np.nanstd(v, ddof=1)) if v.size > 1 else 0.0
