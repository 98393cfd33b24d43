"""The readings study: which reading of the paper's synthetic benchmark
reproduces its Table 1. One job = one named reading (``conf/reading/<name>.yaml``, or
``conf/reading/axes/<name>.yaml`` selected as ``reading=axes/<name>``) on one
Table 1 column, scoring every test that needs no GAN (FTA, FTA + lin. aux, fAux, fAux+NG,
fAux+IG, LIC-UB) over the profile's runs.

A reading is one value per ambiguous choice (:data:`AXES`: paper A.7, A.7.6, eqs. 9-10).
The choices that change the data or the target (decoder, KL weight, latent size, target
recipe) make their own cached CVAEs and targets; the others (threshold rule, which IFS,
aux kind, scorer options, where LIC-UB's derivative is taken) only change how the same
cached models are scored, so a sweep over many readings trains each artifact once. The
default reading (``gumbel``) shares every artifact with Table 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.builtin import FAuxMethod
from faux.methods.lic_ub import secant_gap
from faux.methods.options import ScoreOptions
from faux.methods.protocol import MethodConfig, TrainData
from faux.metrics.ranking import auroc, average_precision, top_fraction_labels
from faux.models.mlp import MLPSpec
from faux.studies.column import (
    Column,
    ColumnSettings,
    PreparedColumn,
    cached_mlp,
    cached_mlp_stacked,
    prepare_shared,
    test_batch,
)
from faux.studies.reading_check import AXES, check_reading
from faux.studies.resources import Phases

JOB = "readings_cell"

TARGET_ARCH = {"2x64": (64, 2), "3x128": (128, 3)}
#: the aux MLP's widths and depths a run draws from under ``aux_arch: varied`` (A.11.2
#: "varying the depth and width across different experimental runs"; sizes not given)
AUX_WIDTHS = (32, 64, 128)
AUX_DEPTHS = (1, 2, 3)


def aux_spec_for(spec: MLPSpec, seed: int, arch: str = "fixed") -> MLPSpec:
    """The aux recipe of run ``seed``: ``spec`` itself under ``fixed`` (the same object, so the
    same cache keys); under ``varied`` its width and depth drawn uniformly from
    :data:`AUX_WIDTHS` x :data:`AUX_DEPTHS` by a generator seeded by the run seed."""
    import dataclasses

    import numpy as np

    if arch == "fixed":
        return spec
    if arch != "varied":
        raise ConfigError(f"aux_arch must be one of fixed, varied, got {arch!r}")
    rng = np.random.default_rng([int(seed), 23])
    return dataclasses.replace(spec, width=int(AUX_WIDTHS[rng.integers(len(AUX_WIDTHS))]),
                               depth=int(AUX_DEPTHS[rng.integers(len(AUX_DEPTHS))]))


def target_gradient_cosine(target, x: torch.Tensor, output: str) -> float:
    """The median over the rows of ``x`` of cos(grad f_tar(x_i), mean_j grad f_tar(x_j)) on
    ``output``: 1 when every row's gradient points one way (a linear target), lower the more
    the direction changes across individuals (what gradient alignment can rank). Rows with a
    zero gradient are left out; NaN when none is left."""
    from faux.methods.autograd import input_gradients

    g = input_gradients(target, x, output=output, name="target").double().reshape(len(x), -1)
    m = g.mean(dim=0)
    den = g.norm(dim=1) * m.norm()
    ok = den > 0
    if not bool(ok.any()):
        return float("nan")
    return float(torch.median((g[ok] @ m) / den[ok]))


def generator_settings(r: dict, names) -> tuple[dict, dict]:
    """``(per-dataset CVAE overrides, decoding options)`` of a reading: its ``beta`` and
    ``latent_dim`` for every dataset of ``names``, then its ``generators`` entry for the
    dataset (A.7.3's per-dataset tuning) over them."""
    over = {}
    if r["beta"] != AXES["beta"][0]:
        over["beta"] = float(r["beta"])
    if r["latent_dim"] != "table2":
        over["latent_dim"] = int(r["latent_dim"])
    per = {n: {**over, **_typed((r.get("generators") or {}).get(n, {}))} for n in names}
    tau = float(r["tau"]) if r["decoding"] == "gumbel" else AXES["tau"][0]
    # the c-side CVAE's c_path, named only when not the default (the default's keys unchanged)
    c_path = {} if r["c_path"] == AXES["c_path"][0] else {"c_path": r["c_path"]}
    return ({n: o for n, o in per.items() if o},
            {"decoding": r["decoding"], "tau": tau,
             # the sampler stores dx/dc at the observed c for that reading, else at c = 1/2
             "dxdc_at": "observed" if r["lic_ub_at"] == "observed" else "mid", **c_path})


def _typed(over: dict) -> dict:
    """A reading's per-dataset CVAE settings with the generator config's types."""
    return {k: int(v) if k == "latent_dim" else float(v) for k, v in over.items()}


def reading_of(cfg: dict) -> tuple[str, dict]:
    """``(name, axis values)`` of the config's reading (``conf/reading/<name>.yaml``),
    checked against :data:`AXES`."""
    rd = dict(cfg.get("reading") or {})
    name = str(rd.get("name", "?"))
    return name, check_reading(rd, f"reading {name}")


def synth_settings(cfg: dict, r: dict, names, sizes: dict | None = None) -> ColumnSettings:
    """How a synthetic study builds a column under reading ``r`` (datasets ``names``): the
    study's settings with the reading's CVAE overrides, decoding, IFS output and scorer
    options (``sizes``: the study's own row counts, as ``column_settings``). The one place a
    reading is applied; ``synthetic.options`` overrides the scorer options it sets. The
    threshold rules' k is ``synthetic.threshold_k`` and their share of positives the
    reading's ``fraction``, both as composed (conf/synthetic/, the schema's default)."""
    from faux.studies.config import column_settings

    gen_cfgs, gen_opts = generator_settings(r, names)
    st = cfg["synthetic"]
    own = st.get("generators") or {}
    study = {n: {**(own.get(n) or {}), **gen_cfgs.get(n, {})} for n in set(own) | set(gen_cfgs)}
    options = ScoreOptions.of({"output": r["target_output"], "aux_output": r["aux_output"],
                               "ng": r["ng"], "ig_baseline": r["ig_baseline"],
                               **(st.get("options") or {})})
    return column_settings(cfg, sizes=sizes, gen_study=study, gen_opts=gen_opts,
                           threshold_k=float(st["threshold_k"]),
                           output=r["ifs_output"], options=options,
                           top_fraction=float(r["fraction"]), lic_ub=lic_ub_params(r),
                           counterfactual=r["counterfactual"], reference=r["reference"],
                           aux_arch=r["aux_arch"])


def lic_ub_params(r: dict) -> dict:
    """LIC-UB's options under reading ``r`` (``faux.methods.options.LicUBOptions``)."""
    return {"at": r["lic_ub_at"],
            "output": r["ifs_output"] if r["lic_ub_output"] == "ifs" else r["target_output"]}


def target_spec(cfg: dict, r: dict) -> MLPSpec:
    """The target recipe of ``model.target`` with the reading's width and depth."""
    import dataclasses

    from hydra.utils import instantiate

    width, depth = TARGET_ARCH[r["target"]]
    return dataclasses.replace(instantiate(cfg["model"]["target"]), width=width, depth=depth)


@dataclass(frozen=True)
class Settings:
    reading_name: str
    reading: dict
    name: str                # the column's name
    column: Column
    seed: int
    runs: int
    aux: MLPSpec
    target: MLPSpec
    synth: ColumnSettings
    lic_ub_forms: bool                # every form of LIC-UB (a diagnostic no claim or rank reads)
    generator_scores: bool            # each CVAE's A.7.3 model score (cached; off in tests)

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from hydra.utils import instantiate

        rname, r = reading_of(cfg)
        name, columns = cfg["column"], cfg["columns"]
        if name not in columns:
            raise ConfigError(f"unknown column {name!r}; choose one of {', '.join(columns)}")
        col = Column(**columns[name])
        return cls(rname, r, name, col, int(cfg["seed"]), int(cfg["profile"]["runs"]),
                   instantiate(cfg["model"]["aux"]), target_spec(cfg, r),
                   synth_settings(cfg, r, (col.xc, col.xy)), bool(cfg["lic_ub_forms"]),
                   bool(cfg["generator_scores"]))


def labels_for(pc: PreparedColumn, rule: str, cs: ColumnSettings,
               calibration_ifs: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
    """Test labels under a threshold rule, and the threshold (NaN for the top fraction,
    ``cs.top_fraction`` of the individuals by IFS). ``mean_k_std`` and ``k_std`` take
    ``k = cs.threshold_k``. ``calibrated`` needs ``calibration_ifs``: the IFS of the pair's
    bias-0.5 column (:func:`calibration_ifs`); its threshold is that column's
    (1 - fraction) quantile, i.e. ``k * std`` of the bias-0 IFS with k chosen so the
    bias-0.5 column lands at the fraction."""
    fraction = cs.top_fraction
    if rule == "mean_k_std":                 # what prepare_column labelled (k = cs.threshold_k)
        return pc.labels, pc.threshold
    if rule == "top_fraction":
        return torch.as_tensor(top_fraction_labels(pc.ifs_test, fraction)), float("nan")
    if rule == "calibrated":
        if calibration_ifs is None:
            raise ConfigError("threshold=calibrated needs the IFS of the pair's bias-0.5 column")
        thr = float(torch.quantile(torch.as_tensor(calibration_ifs).double(), 1.0 - fraction))
        return (pc.ifs_test > thr).long(), thr
    r = pc.ifs_reference.double()
    thr = float(cs.threshold_k * r.std())
    return (pc.ifs_test > thr).long(), thr


#: the bias level whose column sets the ``calibrated`` threshold of its pair and fusion
CALIBRATION_BIAS = 0.5


def calibration_ifs(col: Column, cs: ColumnSettings, target_spec: MLPSpec, seed: int,
                    rule: str, sizes: dict | None = None) -> torch.Tensor | None:
    """The IFS of the test rows of ``col``'s pair and fusion at bias 0.5 (its own when
    ``col`` is that column), for the ``calibrated`` rule; None for the other rules."""
    if rule != "calibrated":
        return None
    sib = Column(col.xc, col.xy, CALIBRATION_BIAS, col.fusion)
    return prepare_shared(sib, cs, target_spec, seed, sizes).pc.ifs_test


def aux_provider(pc: PreparedColumn, kind: str, spec: MLPSpec, s: ColumnSettings,
                 seeds: Iterable[int] = ()):
    """``seed -> (aux, info)``: the plain aux MLP on x (Table 1's, same cache entries) or the
    disentangled one on the c-side block x W~ (A.7.6, eqs. 34/37), of recipe
    :func:`aux_spec_for` (``s.aux_arch``: ``spec`` in every run, or a width and depth drawn per
    run seed). With ``s.aux_trainer == "stacked"`` the cell's retrainings ``seeds`` of one
    recipe train as one stack on the first miss (under ``fixed``: all of them)."""
    cache, tr, va = s.cache(), pc.train, pc.val
    projection = None if kind == "mlp" else tr.w_tilde
    seeds = [int(x) for x in seeds]
    arch = getattr(s, "aux_arch", "fixed")

    def aux(seed: int):
        sp = aux_spec_for(spec, seed, arch)
        if s.aux_trainer == "stacked":
            same = [x for x in seeds if aux_spec_for(spec, x, arch) == sp]
            return cached_mlp_stacked(cache, "aux", pc.key, sp, tr.x, tr.c, va.x, va.c, seed,
                                      same, s.accelerator, projection=projection)
        return cached_mlp(cache, "aux", pc.key, sp, tr.x, tr.c, va.x, va.c, seed,
                          s.accelerator, projection=projection)
    return aux


def generator_model_scores(pc: PreparedColumn, s: ColumnSettings) -> dict:
    """Each CVAE's model score (A.7.3: a classifier trained on sampled (x, label) pairs,
    accuracy on the real encoded data), cached per dataset, generator and decoding."""
    from faux.synth.generator_settings import PAPER_MODEL_SCORE
    from faux.synth.sampler import generator_scores

    cache, out = s.cache(), {}
    opts = s.gen_opts
    for role, g in (("xc", pc.generator.gen_c), ("xy", pc.generator.gen_y)):
        key = {"gen": g.key, "decoding": opts["decoding"], "tau": opts["tau"]}
        sc = cache.get_or_build(
            "generator_score", key,
            lambda g=g: generator_scores(g, decoding=opts["decoding"], tau=opts["tau"],
                                         root=s.data_dir),
            dumps=lambda d: json.dumps(d).encode(), loads=lambda b: json.loads(b.decode()))
        out[role] = {"dataset": g.name, "model_score": sc["model_score_acc"],
                     "paper_model_score": PAPER_MODEL_SCORE.get(g.name),
                     "mlp_synth_auc": sc["mlp_synth_auc"], "mlp_real_auc": sc["mlp_real_auc"]}
    return out


def method_config(cs: ColumnSettings, r: dict) -> MethodConfig:
    """The study's tests' settings under reading ``r``: the scorer options and LIC-UB's of
    :func:`synth_settings`, FTA + lin. aux on the reading's target output."""
    from faux.studies.config import synthetic_params

    return MethodConfig(cs.options, synthetic_params(r["target_output"], cs.lic_ub),
                        cs.accelerator)


def run(s: Settings, out_dir, log) -> dict:
    col, r = s.column, s.reading
    t_start = time.time()
    phase = Phases()
    with phase("prepare"):
        pc = prepare_shared(col, s.synth, s.target, s.seed).pc
    labels, thr = labels_for(pc, r["threshold"], s.synth,
                             calibration_ifs(col, s.synth, s.target, s.seed, r["threshold"]))
    rate = float(labels.float().mean())
    log(f"{s.reading_name} / {s.name} ({col.xc}/{col.xy}, bias {col.bias}, {col.fusion}): "
        f"positive rate {rate:.3f}")
    config = method_config(s.synth, r)
    aux_seeds = FAuxMethod.run_seeds(s.seed, s.runs)    # the aux's retrainings
    data = TrainData(pc.train.x, pc.train.c, pc.val.x, pc.val.c,
                     aux_provider(pc, r["aux"], s.aux, s.synth, aux_seeds))
    batch = test_batch(pc)
    ap_runs, auroc_runs, aux_acc = {}, {}, []
    for name in registry.readings_methods():
        m = registry.get(name)
        aps = []
        for seed in m.run_seeds(s.seed, s.runs):
            with phase("fit"):
                fitted = m.build(config).fit(data, seed)
            with phase("score"):
                sc = fitted.score(pc.target, batch)
            aps.append(average_precision(labels, sc))
            auroc_runs.setdefault(name, []).append(auroc(labels, sc))
            if name == FAuxMethod.name:
                aux_acc.append(fitted.info["aux_accuracy"])
        ap_runs[name] = aps
        log(f"  {name}: AP {sum(aps) / len(aps):.3f}")
    lic_forms = {}
    if s.lic_ub_forms:
        with phase("lic_ub_forms"):
            lic_forms = lic_ub_forms(pc, batch, labels, r)
        log("  LIC-UB forms: " + ", ".join(f"{k} {v['ap']:.3f}" for k, v in lic_forms.items()))
    with phase("linearity"):
        linearity = secant_gap(pc.target, batch.x_of_c, len(pc.test), output=r["ifs_output"])
    with phase("gradient_cosine"):
        cosine = target_gradient_cosine(pc.target, pc.test.x, r["target_output"])
    log(f"  median cos(grad f_tar(x), mean grad f_tar) ({r['target_output']}): {cosine:.3f}")
    with phase("generator_scores"):
        gscores = generator_model_scores(pc, s.synth) if s.generator_scores else {}
    return {
        "reading": s.reading_name, "settings": r, "column": s.name, "xc": col.xc,
        "xy": col.xy, "bias": col.bias, "fusion": col.fusion, "ap_runs": ap_runs,
        "auroc_runs": auroc_runs, "lic_ub_forms": lic_forms, "linearity": linearity,
        "positive_rate": rate, "threshold": thr, "n_test": len(pc.test),
        "target_accuracy": pc.target_info["accuracy"], "aux_accuracy_runs": aux_acc,
        "generator_scores": gscores, "phase_s": phase.seconds,
        "target_grad_cosine": {"output": r["target_output"], "median": cosine},
        "aux_arch_runs": [[a.width, a.depth] for a in
                          (aux_spec_for(s.aux, x, r["aux_arch"]) for x in aux_seeds)],
        # the sweep's wall clock (first start to last finish) in make docs
        "started": t_start, "finished": time.time(),
    }


def lic_ub_forms(pc: PreparedColumn, batch, labels: torch.Tensor, r: dict) -> dict:
    """Every form of LIC-UB on the column's test rows, on the target's and the IFS's output:
    ``{"<at>/<output>": {"ap": .., "auroc": ..}}`` (``at`` in ``mixed`` and
    ``faux.methods.lic_ub.LIC_AT``)."""
    from faux.methods.lic_ub import LIC_AT, lic_ub, lic_ub_composite

    out = {}
    for output in dict.fromkeys((r["ifs_output"], r["target_output"])):
        for at in ("mixed", *LIC_AT):
            if at == "mixed":
                if pc.test.dxdc_at != "mid":
                    continue
                sc = lic_ub(pc.target, batch.x, batch.dx_dc, output=output)
            else:
                sc = lic_ub_composite(pc.target, batch.x_of_c, batch.c, at=at, output=output)
            out[f"{at}/{output}"] = {"ap": average_precision(labels, sc),
                                     "auroc": auroc(labels, sc)}
    return out
