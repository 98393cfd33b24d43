"""One synthetic column (a pair, a bias, a fusion): data, target, ground truth, and scores.

Shared by Table 1, Fig. 5 and Fig. 11 (and ``scripts/research/diagnose_column.py``). Everything a
column needs that many jobs share (the two CVAEs, the target model, the bias-0 reference
target) comes from the cache; what a job varies (the aux model, the GAN, Unfair Map's
metric, by seed) is fitted in the job through the method registry (:func:`score_method`).

Seeds: data draws use fixed offsets of the column seed (train +1, val +2, test +3; the bias-0
reference +11, +12, +13), so every job of a column sees the same individuals.

Shared builds: :func:`prepare_shared` builds each dataset's CVAE once in total
(:func:`ensure_generators`, one lock per dataset) and a column's target and bias-0 reference
under one lock per (pair, fusion, seed, recipe), so parallel jobs never train the same
artifact twice (the locks: ``faux.harness.cache.Cache.lock``, files ``<cache>/locks/<name>.lock``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from faux.errors import ConfigError
from faux.harness.cache import Cache, code_version, torch_dumps, torch_loads
from faux.methods import registry
from faux.methods.options import ScoreOptions
from faux.methods.protocol import Batch, MethodConfig, TrainData
from faux.models.mlp import MLP, MLPSpec
from faux.models.training import resolve_device, training_role
from faux.studies import synth_defaults
from faux.studies.resources import Phases
from faux.synth.abduction import COUNTERFACTUALS, abduced_counterfactual
from faux.synth.dataset_generator import GENERATOR_VERSION
from faux.synth.generator_settings import generator_config
from faux.synth.ground_truth import ifs, ifs_labels, ifs_threshold, positive_rate
from faux.synth.sampler import SyntheticGenerator, SyntheticSet

log = logging.getLogger("faux.studies")


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
    ifs_reference: torch.Tensor | None = None   # IFS of the bias-0 reference on its test rows
    generator: SyntheticGenerator | None = None
    x_of_c: Callable | None = None      # c -> x of the test rows when not the generator's own


#: facts of a training run that are not a function of the entry's key: kept beside the
#: entry (``Cache.write_meta``), never in it, so two builds of a key store the same bytes
TIMING_KEYS = ("train_time_s", "train_time_total_s")


def _mlp_dumps(pair) -> bytes:
    net, info = pair
    arch = {"d_in": net.d_in, "width": net.width, "depth": net.depth, "d_out": net.d_out}
    info = {k: v for k, v in info.items() if k not in TIMING_KEYS}
    return torch_dumps({"arch": arch, "state": net.state_dict(), "info": info})


def _timings(info: dict) -> dict:
    return {k: float(info[k]) for k in TIMING_KEYS if k in info}


def _with_timings(cache: Cache, kind: str, key: dict, pair):
    """A loaded (net, info) with the build's training time from the entry's sidecar."""
    net, info = pair
    return net, {**info, **cache.read_meta(kind, key)}


def _mlp_loads(blob: bytes):
    d = torch_loads(blob)
    net = MLP(**d["arch"], projection=d["state"].get("projection"))
    net.load_state_dict(d["state"])
    return net.eval(), d["info"]


def _sets_dumps(sets) -> bytes:
    return torch_dumps([{f.name: getattr(s, f.name) for f in fields(s)} for s in sets])


def _sets_loads(blob: bytes) -> list[SyntheticSet]:
    out = []
    for d in torch_loads(blob):
        d["joint"] = np.asarray(d["joint"])
        out.append(SyntheticSet(**d))
    return out


def generator_overrides(study: dict | None, profile: dict | None, names) -> dict:
    """Per-dataset CVAE overrides: the study's (``synthetic.generators``, per name), under the
    profile's (``profile.generators``, every name)."""
    study, prof = study or {}, profile or {}
    return {n: {**(study.get(n) or {}), **prof} for n in names if study.get(n) or prof}


#: how a study trains the retrainings of a cell's aux model (``synthetic.aux_trainer``)
AUX_TRAINERS = ("single", "stacked")
#: whether a cell's aux runs share model.aux's width and depth or draw theirs per run seed
AUX_ARCHS = ("fixed", "varied")


@dataclass(frozen=True)
class ColumnSettings:
    """How every synthetic study builds a column (plain values from the config)."""

    sizes: dict                  # n_train, n_val, n_test
    gen_study: dict              # synthetic.generators: per-dataset CVAE overrides
    gen_profile: dict            # profile.generators: overrides of every dataset's CVAE
    gen_opts: dict               # decoding, tau, dxdc_at
    threshold_k: float
    output: str                  # IFS and target gradients on "prob" or "logit"
    options: ScoreOptions        # the gradient tests' options
    cache_dir: str
    data_dir: str
    accelerator: str = "auto"
    # a cell's aux retrainings: one by one, or as one stack (default: conf/synthetic's)
    aux_trainer: str = field(default_factory=synth_defaults.aux_trainer)
    # the fraction labelled positive by the top_fraction rule (default: the schema's)
    top_fraction: float = field(default_factory=synth_defaults.fraction)
    lic_ub: dict = field(default_factory=dict)   # LIC-UB's parameters (at, output)
    counterfactual: str = "shared"   # faux.synth.abduction.COUNTERFACTUALS (checked where used)
    reference: str = "own"           # REFERENCES: the bias-0 IFS of the threshold rules
    # the aux's width and depth: model.aux's in every run, or drawn per run seed
    # (faux.studies.readings.aux_spec_for)
    aux_arch: str = "fixed"

    def __post_init__(self):
        if self.aux_trainer not in AUX_TRAINERS:
            raise ConfigError(f"synthetic.aux_trainer must be one of {AUX_TRAINERS}, got "
                              f"{self.aux_trainer!r}")
        _check_choice("aux_arch", self.aux_arch, AUX_ARCHS)

    def gen_cfgs(self, names: Iterable[str]) -> dict:
        return generator_overrides(self.gen_study, self.gen_profile, names)

    def cache(self) -> Cache:
        return Cache(self.cache_dir)


def _check_choice(what: str, value: str, choices: tuple) -> None:
    if value not in choices:
        raise ConfigError(f"{what} must be one of {', '.join(choices)}, got {value!r}")


#: whose bias-0 IFS sets the threshold rules' scale: ``own`` = one target of the column's
#: recipe trained on bias-0 data; ``pooled`` = that IFS pooled over :data:`POOL_SIZE` targets
#: of random width and depth in :data:`POOL_WIDTHS` x :data:`POOL_DEPTHS` (A.7.5: "randomly
#: sampled widths (8-128 units) and depths (1-4 layers)")
REFERENCES = ("own", "pooled")
POOL_SIZE = 5
POOL_WIDTHS = (8, 128)
POOL_DEPTHS = (1, 4)


def pool_specs(spec: MLPSpec, seed: int, n: int = POOL_SIZE) -> list[MLPSpec]:
    """The pooled reference's target recipes: ``spec`` with ``n`` widths and depths drawn
    uniformly (inclusive ranges) from a generator seeded by ``seed``."""
    rng = np.random.default_rng([int(seed), 7])
    return [dataclasses.replace(spec, width=int(rng.integers(POOL_WIDTHS[0], POOL_WIDTHS[1] + 1)),
                                depth=int(rng.integers(POOL_DEPTHS[0], POOL_DEPTHS[1] + 1)))
            for _ in range(int(n))]


def generator_key(gen: SyntheticGenerator, gen_cfgs: dict | None) -> dict:
    """What a column's samples depend on: both generators' keys (data checksums, code version,
    configs, seed, CPU kernels) and the decoding. Not where LIC-UB's derivative is taken
    (``dxdc_at``): it changes no sample, so targets and aux models are shared across it."""
    key = dict(gen.key)
    key.pop("dxdc_at", None)
    return {"version": GENERATOR_VERSION, "xc": gen.xc, "xy": gen.xy,
            "cfg_c": generator_config(gen.xc, (gen_cfgs or {}).get(gen.xc)),
            "cfg_y": generator_config(gen.xy, (gen_cfgs or {}).get(gen.xy)), **key}


#: the code a cached target/aux depends on (a changed line makes new keys)
MLP_CODE = code_version("faux.models.mlp", "faux.models.training")


#: what a stacked-trained MLP depends on besides MLP_CODE (the stack and its epoch loop)
STACK_CODE = code_version("faux.models.stacked", "faux.models.stack_training")


def _mlp_key(key: dict, spec: MLPSpec, seed: int, accelerator: str,
             projection: torch.Tensor | None) -> tuple[dict, dict]:
    """The cache key of one trained MLP, and the ``projection`` keyword to train it with."""
    # where it trains (CPU / GPU) and, on CPU, the thread count change the order floats are
    # summed in: both are part of the key
    key = {**key, "spec": spec.__dict__, "train_seed": int(seed), "code": MLP_CODE,
           "device": resolve_device(accelerator).type, "threads": torch.get_num_threads(),
           "stored": "no-timings"}
    extra = {}
    if projection is not None:
        p = torch.as_tensor(projection, dtype=torch.float32).contiguous()
        key["projection"] = hashlib.sha256(p.numpy().tobytes()).hexdigest()[:16]
        extra["projection"] = p
    return key, extra


def cached_mlp(cache: Cache, kind: str, key: dict, spec: MLPSpec, x, t, x_val, t_val, seed: int,
               accelerator: str = "auto", projection: torch.Tensor | None = None,
               role: str | None = None):
    """An MLP classifier trained once per key and then loaded from the cache (with a fixed
    input ``projection``, e.g. the disentangled aux's x W~, part of the key). ``role`` (default
    ``kind``) names its training curves when the job logs them."""
    key, extra = _mlp_key(key, spec, seed, accelerator, projection)

    def build():
        with training_role(role or kind):
            net, info = spec.train(x, t, x_val, t_val, seed=seed, accelerator=accelerator,
                                   **extra)
        cache.write_meta(kind, key, _timings(info))
        return net, info
    pair = cache.get_or_build(kind, key, build, dumps=_mlp_dumps, loads=_mlp_loads)
    return _with_timings(cache, kind, key, pair)


def cached_mlp_stacked(cache: Cache, kind: str, key: dict, spec: MLPSpec, x, t, x_val, t_val,
                       seed: int, seeds: Iterable[int], accelerator: str = "auto",
                       projection: torch.Tensor | None = None):
    """:func:`cached_mlp` for seed ``seed`` of a cell whose retrainings are ``seeds``: on a
    miss every seed of ``seeds`` not yet cached trains in one stack
    (:func:`faux.models.stacked.train_mlps_stacked`, each member as it would train alone, to
    float32 rounding, at the studies' shapes) and is cached under its own key. The keys say ``trainer: stacked``, so
    these entries never mix with separately trained ones. One lock per cell: parallel jobs of
    a cell (fAux, fAux+NG, fAux+IG) train its stack once."""
    from faux.models.stacked import train_mlps_stacked

    seeds = sorted({int(s) for s in seeds} | {int(seed)})
    base = {**key, "trainer": "stacked", "stack_code": STACK_CODE}
    keys = {s: _mlp_key(base, spec, s, accelerator, projection) for s in seeds}
    k, extra = keys[int(seed)]
    if not cache.path(kind, k).exists():
        with cache.lock(key_name(f"{kind}-stack", {"keys": [keys[s][0] for s in seeds]})):
            todo = [s for s in seeds if not cache.path(kind, keys[s][0]).exists()]
            if todo:
                log.info("training %d %s models as one stack (seeds %s)", len(todo), kind, todo)
                with training_role(kind):
                    built = train_mlps_stacked(spec, x, t, x_val, t_val, seeds=todo,
                                               accelerator=accelerator, **extra)
                for s, pair in zip(todo, built):
                    cache.write_meta(kind, keys[s][0], _timings(pair[1]))
                    cache.get_or_build(kind, keys[s][0], lambda pair=pair: pair,
                                       dumps=_mlp_dumps, loads=_mlp_loads)
    def one():
        with training_role(kind):
            pair = train_mlps_stacked(spec, x, t, x_val, t_val, seeds=[int(seed)],
                                      accelerator=accelerator, **extra)[0]
        cache.write_meta(kind, k, _timings(pair[1]))
        return pair
    # a load (a stack of one if the entry went missing)
    pair = cache.get_or_build(kind, k, one, dumps=_mlp_dumps, loads=_mlp_loads)
    return _with_timings(cache, kind, k, pair)


def make_generator(col: Column, gen_cfgs: dict | None, gen_opts: dict | None, cache: Cache,
                   seed: int = 0, root=None) -> SyntheticGenerator:
    o = dict(gen_opts or {})
    cfgs = {k: v for k, v in (gen_cfgs or {}).items() if k in (col.xc, col.xy)}
    return SyntheticGenerator(col.xc, col.xy, cfgs, cache_dir=cache.root, seed=seed, root=root, **o)


def prepare_column(col: Column, *, sizes: dict, target_spec: MLPSpec, gen_cfgs: dict | None = None,
                   gen_opts: dict | None = None, seed: int = 0, k: float | None = None,
                   output: str = "prob", cache: Cache | None = None,
                   accelerator: str = "auto", root=None, counterfactual: str = "shared",
                   reference: str = "own") -> PreparedColumn:
    """Sample the column's data, train (or load) its target and bias-0 reference, label IFS.

    ``counterfactual="abduction"`` replaces the test rows' counterfactuals (the column's and
    the reference's) by :func:`faux.synth.abduction.abduced_counterfactual`;
    ``reference="pooled"`` pools the bias-0 IFS over :func:`pool_specs`' targets. ``k``: the
    threshold rule's (default ``synthetic.threshold_k`` of conf/synthetic/default.yaml)."""
    _check_choice("counterfactual", counterfactual, COUNTERFACTUALS)
    _check_choice("reference", reference, REFERENCES)
    cache = cache or Cache()
    phase = Phases()
    with phase("generators"):
        gen = make_generator(col, gen_cfgs, gen_opts, cache, root=root)
    n_tr, n_va, n_te = int(sizes["n_train"]), int(sizes["n_val"]), int(sizes["n_test"])
    base = int(seed) * 1000

    gkey = generator_key(gen, gen_cfgs)

    def draw(bias, off):
        # decoding 2 x 7,000 rows through both CVAEs (and the jvp of dx/dc) costs seconds per
        # job: every job of a column loads the sets sampled once (same tensors, bit for bit)
        key = {**gkey, "dxdc_at": gen.dxdc_at, "fusion": col.fusion, "bias": float(bias),
               "sizes": [n_tr, n_va, n_te], "seeds": [base + off + i for i in (1, 2, 3)]}
        with phase("sampling"):
            return cache.get_or_build(
                "column_sets", key,
                lambda: [gen.sample(n, bias, col.fusion, seed=base + off + i)
                         for i, n in ((1, n_tr), (2, n_va), (3, n_te))],
                dumps=_sets_dumps, loads=_sets_loads)

    train, val, test = draw(col.bias, 0)
    key = {"gen": gkey, "fusion": col.fusion, "sizes": [n_tr, n_va], "data_seed": base}
    with phase("target"):
        target, tinfo = cached_mlp(cache, "target", {**key, "bias": float(col.bias)},
                                   target_spec, train.x, train.y, val.x, val.y, seed, accelerator)
    # the same target recipe on bias-0 data of the same pair and fusion sets the threshold
    tr0, va0, te0 = draw(0.0, 10)
    specs = [target_spec] if reference == "own" else pool_specs(target_spec, seed)
    with phase("reference"):
        refs = [cached_mlp(cache, "target", {**key, "bias": 0.0, "data_seed": base + 10},
                           sp, tr0.x, tr0.y, va0.x, va0.y, seed, accelerator,
                           role="reference")[0]
                for sp in specs]
    x_of_c = None
    if counterfactual == "abduction":
        with phase("abduction"):
            cf, cf_tilde, x_of_c = abduced_counterfactual(gen, n_te, col.bias, col.fusion,
                                                          base + 3)
            test = dataclasses.replace(test, x_cf=cf, x_tilde_cf=cf_tilde)
            cf0, cf0_tilde, _ = abduced_counterfactual(gen, n_te, 0.0, col.fusion, base + 13)
            te0 = dataclasses.replace(te0, x_cf=cf0, x_tilde_cf=cf0_tilde)
    with phase("ifs_labels"):
        v_ref = torch.cat([ifs(r, te0.x, te0.x_cf, output=output) for r in refs])
        thr = ifs_threshold(v_ref, k=synth_defaults.threshold_k() if k is None else k)
        v = ifs(target, test.x, test.x_cf, output=output)
        labels = ifs_labels(v, thr)
    return PreparedColumn(col, train, val, test, target, tinfo, v, thr, labels,
                          positive_rate(labels), {**key, "bias": float(col.bias)},
                          phase.seconds, v_ref, gen, x_of_c)


def train_aux(pc: PreparedColumn, spec: MLPSpec, seed: int, cache: Cache | None = None,
              accelerator: str = "auto"):
    """The aux MLP predicting c for run ``seed`` (cached: faux, faux_ng and faux_ig share it)."""
    cache = cache or Cache()
    return cached_mlp(cache, "aux", pc.key, spec, pc.train.x, pc.train.c, pc.val.x, pc.val.c, seed,
                      accelerator)


def train_data(pc: PreparedColumn, aux_spec: MLPSpec | None, cache: Cache | None = None,
               accelerator: str = "auto") -> TrainData:
    """What a fairness test may fit on in a synthetic column: its training rows, its
    validation rows (GAN quality) and the cached aux MLP of a run seed."""
    def aux(seed: int):
        if aux_spec is None:
            raise ConfigError("this method needs an aux model; pass aux_spec")
        return train_aux(pc, aux_spec, seed, cache, accelerator)

    return TrainData(pc.train.x, pc.train.c, pc.val.x, pc.val.c, aux)


def test_x_of_c(pc: PreparedColumn):
    """The map ``c -> x`` of the column's test rows (their latents and noise fixed; the same
    draw as ``pc.test``; the abduced latents' map under that reading), or None without the
    generator."""
    if pc.x_of_c is not None:
        return pc.x_of_c
    if pc.generator is None:
        return None
    seed = int(pc.key.get("data_seed", 0)) + 3          # the test set's seed in prepare_column
    return pc.generator.fused_of_c(len(pc.test), pc.column.bias, pc.column.fusion, seed)


def test_batch(pc: PreparedColumn) -> Batch:
    return Batch(pc.test.x, pc.test.c, pc.test.y, pc.test.dx_dc, test_x_of_c(pc))


def score_method(method: str, pc: PreparedColumn, run_seed: int, *, aux_spec: MLPSpec | None,
                 config: MethodConfig | None = None, cache: Cache | None = None,
                 accelerator: str = "auto", fitted=None) -> tuple[torch.Tensor, dict]:
    """Scores of ``method`` (any registered fairness test) for the column's test individuals,
    and run facts (aux accuracy, GAN quality...).

    ``fitted``: the test already fitted for this run (a cell's FlipTest seeds train
    together); otherwise it is fitted here."""
    m = registry.get(method)
    t0 = time.perf_counter()
    if fitted is None:
        fitted = m.build(config).fit(train_data(pc, aux_spec, cache, accelerator), run_seed)
    s = fitted.score(pc.target, test_batch(pc))
    info = {**fitted.info, "score_s": time.perf_counter() - t0}
    return torch.as_tensor(s).reshape(-1).detach().double(), info


def ensure_generators(datasets: Iterable[str], *, gen_cfgs: dict | None, gen_opts: dict | None,
                      cache, root=None) -> dict[str, bool]:
    """Build (or load) each dataset's CVAE under its lock, through :func:`make_generator` (so
    the cache key is the one ``prepare_column`` uses). A dataset whose lock another job holds
    is left for later (that job is building it), so two jobs build two different CVAEs at
    once rather than one job waiting. Returns ``{dataset: built_here}``."""
    def build(name):
        before = _n_entries(cache.root)
        make_generator(Column(name, name, 0.0, "concat"), gen_cfgs, gen_opts, cache, root=root)
        return _n_entries(cache.root) > before

    built: dict[str, bool] = {}
    pending = list(dict.fromkeys(datasets))
    while pending:
        for name in list(pending):                 # first every dataset nobody is building
            with cache.lock(f"generator-{name}", blocking=False) as held:
                if held:
                    built[name] = build(name)
                    pending.remove(name)
        if pending:                                # then wait for the ones being built
            name = pending.pop(0)
            with cache.lock(f"generator-{name}"):
                built[name] = build(name)
    return {name: built[name] for name in dict.fromkeys(datasets)}


def key_name(prefix: str, key: dict) -> str:
    """A short lock name for a key dict (``prefix-<hash>``)."""
    blob = json.dumps(key, sort_keys=True, default=str).encode()
    return f"{prefix}-{hashlib.sha256(blob).hexdigest()[:16]}"


def _n_entries(root) -> int:
    return len(list((Path(root) / "generator").glob("*.bin")))


@dataclass
class Shared:
    """A prepared column and what its shared builds cost."""

    pc: PreparedColumn
    built: dict          # {dataset: CVAE built by this job}
    generators_s: float
    prepare_s: float


def prepare_shared(col: Column, cs: ColumnSettings, target_spec: MLPSpec, seed: int,
                   sizes: dict | None = None) -> Shared:
    """The column of a job, its shared artifacts built once across parallel jobs: each
    dataset's CVAE under its own lock, then the target and the bias-0 reference (shared by
    every bias level and method of the (pair, fusion, seed, recipe)) under one lock."""
    cache = cs.cache()
    sizes = dict(sizes or cs.sizes)
    gen_cfgs = cs.gen_cfgs((col.xc, col.xy))
    t0 = time.perf_counter()
    built = ensure_generators((col.xc, col.xy), gen_cfgs=gen_cfgs, gen_opts=cs.gen_opts,
                              cache=cache, root=cs.data_dir)
    t_gen = time.perf_counter() - t0
    ref_key = {"xc": col.xc, "xy": col.xy, "fusion": col.fusion, "seed": int(seed),
               "spec": target_spec.__dict__, "sizes": sizes, "gen": gen_cfgs,
               "opts": cs.gen_opts, "reference": cs.reference}
    with cache.lock(key_name("column", ref_key)):
        pc = prepare_column(col, sizes=sizes, target_spec=target_spec, gen_cfgs=gen_cfgs,
                            gen_opts=cs.gen_opts, seed=seed, k=cs.threshold_k,
                            output=cs.output, cache=cache, accelerator=cs.accelerator,
                            root=cs.data_dir, counterfactual=cs.counterfactual,
                            reference=cs.reference)
    return Shared(pc, built, t_gen, time.perf_counter() - t0 - t_gen)
