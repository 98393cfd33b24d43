"""The real-data study (paper Section 4.3, A.9-A.11): Fig. 4/10, Table 3 and Table 4.

One call of :func:`run_real` handles one split of one dataset (Adult, Bank or SSL) and one
seed, so every model is trained once and every method scores the same individuals:

1. rows: the training split, subsampled to ``max_train_rows`` (seeded) when set; the
   validation split for early stopping and probes; ``n_score`` individuals drawn (seeded)
   from the test split are the ones every method scores, under both targets;
2. models: an *unfair* target (plain MLP of y on x; c is never a column of x), a *fair*
   target (Adel et al. 2019: predicts y while an adversary on its hidden layer is kept from
   reading c), the aux model (Adel: predicts c while an adversary is kept from reading y;
   A.11.2; a plain MLP when an ``MLPSpec`` is passed), FlipTest's two WGANs, and the
   logistic-regression fair metric shared by FTA + lin. aux and Unfair Map; with
   ``RealSettings.blind`` (``profile.real.blind_model``) a second kind of fair model, the
   *proxy-blind* one: the unfair recipe trained with the dataset's declared proxy edits merged
   (``faux.models.proxy_blind``; exactly invariant to the edit, otherwise as unfair as the
   data lets it be), scored, checked and compared like the Adel fair model (``auroc_blind``,
   ``paired_win_blind``, ``fairness_check.blind``, ``fairness_check.blind_verdict``; none for
   a dataset without declared edits, e.g. SSL);
3. scores (Fig. 4/10): every registered method whose needs the study meets (target, aux,
   training rows, GANs: ``fta, fta_lin, unfair_map, fliptest, faux, faux_ng, faux_ig``; not
   LIC-UB, which needs the true dx/dc) plus named ``variants`` (another option set of a
   method taking ``faux.score`` options), per individual,
   for the unfair and the fair target; per method the AUROC of telling the unfair model's
   scores from the fair model's (0.5 = no separation; below 0.5 = the fair model scores
   higher) and the paired win rate (share of individuals scored higher under the unfair
   model);
4. transparency reports (Table 3, A.10) of every method with one (``transparency``): over
   the c = 0 individuals of the test split, FlipTest's ``|mean(x - G01(x))|`` (eq. 39) and
   fAux's ``|mean grad f_aux(x)|`` (eq. 40) and its NG/IG variants, one-hot columns averaged to their original feature; ground
   truth: ``mutual_info_classif`` (Ross 2014) between each column and c on the training
   rows, with ``discrete_features`` set for every non-continuous column (one-hot and other
   0/1 columns), then averaged over one-hot columns like the scores; NDCG (scikit-learn)
   of each report against it, and the mean NDCG of random rankings as a floor;
5. costs (Table 4): parameters and training time of FlipTest (both generators and both
   critics) and of the aux model (the predictor network; its adversary is reported apart).

The fairness check (:func:`faux.studies.fairness_check.fairness_check`, independent of every
compared test) runs on both targets and on the aux in every job, on the test split: a fresh
probe's AUROC for c on the model's last hidden layer (for y on the aux's: A.11.2 keeps the aux
from reading y), the counterfactual proxy swap's mean |Δp| over the dataset's declared edits
(``proxy_edits``), the demographic-parity gap and the accuracy.
:func:`faux.studies.fairness_check.verdict` holds the fair model against the targets
(``RealSettings.targets``: probe AUROC ≤ 0.60, swap ≤ half the unfair model's, accuracy
within 2 points); the verdict goes to ``metrics.fairness_check`` with the three checks, and a
fair model that fails is flagged by the Fig. 4 report, never silently used. The fair model's
recipe can differ per dataset (``RealSettings.fair_by_dataset``: AdelSpec fields overridden
for one dataset; recorded in ``metrics.fairness_check.fair_overrides``). The fair model's
counterfactual pairing (``AdelSpec.pair``) trains on the same declared edits, so its swap
partly measures a training objective; the probe and the accuracy do not. The Adel models
(fair model, Adel aux) get their own epoch cap (``adel_max_epochs``): their α warm-up must fit
under it.

Seeds: the job's seed splits the table (``load_real``) and draws the training subsample and
the scored individuals; each trained part gets its own seed (``seed + SEED_OFFSETS[part]``), so
the three same-sized networks do not share initial weights or mini-batch order.

The job (``Settings.from_config`` reads the config, ``run`` writes ``scores.npz``): the
per-individual scores go to ``scores.npz`` beside ``result.json`` (keys ``<method>__unfair`` /
``<method>__fair`` / ``<method>__blind`` when trained, ``score_idx``, ``y``, ``c``); the
metrics hold their quantiles, AUROCs, the Table 3 reports and the Table 4 costs. A dataset that cannot be loaded (no SSL CSV placed, a
raw file missing, a protected attribute with a single value in a split, an SSL CSV without a
required column) does not stop a sweep: the job logs one line ``<dataset> seed <s>: skipped:
<reason>`` and returns ``{"skipped": <reason>, "skip_kind": "absent" | "error"}``; the
report builders list it (``absent``: the SSL CSV was never placed, a note; ``error``: a
missing cell). Everything else is pure functions of arrays, modules and plain arguments.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from faux.data.real import RealData
from faux.errors import ConfigError, DataError
from faux.methods import registry
from faux.methods.builtin import FlipTestMethod, FTALinMethod, UnfairMapMethod
from faux.methods.options import ScoreOptions
from faux.methods.protocol import Batch, MethodConfig, TrainData
from faux.metrics.ranking import auroc
from faux.models.training import training_role
from faux.studies.fairness_check import TARGETS, edit_columns, proxy_edits, verdict

log_ = logging.getLogger("faux.studies.real")

JOB = "real_cell"
SCORES_FILE = "scores.npz"
#: what the real-data study provides to a fairness test (no dx/dc: LIC-UB cannot run)
PROVIDES = ("target", "aux", "train", "gan")
MODELS = ("unfair", "fair")
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: offsets of each trained part's seed from the job's seed: the unfair target, the fair target
#: and the aux model share an architecture, and the same seed would give them the same initial
#: weights and mini-batch order, which could itself align their gradients
SEED_OFFSETS = {"unfair": 0, "fair": 1000, "aux": 2000, "gan": 3000, "probe": 4000,
                "blind": 5000}
#: the second fair model (``RealSettings.blind``): the unfair recipe blind to the declared edits
BLIND = "blind"


@dataclass(frozen=True)
class RealSettings:
    """Sizes and options of one real-data job (plain values; see ``conf/experiment/real``)."""

    max_train_rows: int | None = None
    n_score: int = 5000
    max_epochs: int = 200
    patience: int | None = 10
    adel_max_epochs: int | None = None   # epoch cap of the Adel models (None: max_epochs)
    gan_steps: int = 20000
    options: dict = field(default_factory=dict)         # faux.score options
    variants: dict = field(default_factory=dict)        # name -> {method: ..., **options}
    report_options: dict = field(default_factory=dict)  # faux_report options
    # extra Table 3 reports: name -> {method: <a report method>, **report options overriding
    # report_options}, e.g. fAux+IG from the mean baseline (docs/notebook/results_real.md, Table 3)
    report_variants: dict = field(default_factory=dict)
    unfair_map: dict = field(default_factory=dict)      # UnfairMap(**...)
    fta_lin: dict = field(default_factory=dict)         # FTALin(**...)
    probe: dict = field(default_factory=lambda: {"width": 32, "depth": 1, "max_epochs": 30,
                                                 "patience": 5})  # fairness_check's MLP probe
    targets: dict = field(default_factory=lambda: dict(TARGETS))
    fair_by_dataset: dict = field(default_factory=dict)  # dataset -> AdelSpec field overrides
    # also train the proxy-blind fair model (the unfair recipe on the declared edits merged;
    # faux.models.proxy_blind) and score, check and compare it like the Adel fair model
    blind: bool = False
    n_random_rankings: int = 1000
    gan_quality_rows: int | None = 2000   # validation rows for FlipTest's KS / MSE metrics
    accelerator: str = "auto"

    def __post_init__(self):
        scorers = [m for m in methods() if registry.get(m).score_options]
        if self.max_train_rows is not None and int(self.max_train_rows) < 10:
            raise ConfigError(f"max_train_rows must be null or >= 10, got {self.max_train_rows}")
        if int(self.n_score) < 2:
            raise ConfigError(f"n_score must be >= 2, got {self.n_score}")
        for name, v in self.variants.items():
            if name in methods() or not isinstance(v, dict) or v.get("method") not in scorers:
                raise ConfigError(f"variant {name!r} must be a new name with "
                                  f"method in {scorers}; got {v!r}")
            ScoreOptions.of(self.options, **{k: w for k, w in v.items() if k != "method"})
        for name, v in self.report_variants.items():
            if (name in report_methods() or not isinstance(v, dict)
                    or v.get("method") not in report_methods()):
                raise ConfigError(f"report variant {name!r} must be a new name with method in "
                                  f"{list(report_methods())}; got {v!r}")
        unknown = set(self.targets) ^ set(TARGETS)
        if unknown:
            raise ConfigError(f"real_study.targets must have exactly the keys {sorted(TARGETS)}; "
                              f"got {sorted(self.targets)}")
        from faux.models.adel import AdelSpec

        fields = set(AdelSpec.__dataclass_fields__)
        for name, over in self.fair_by_dataset.items():
            bad = sorted(set(over or {}) - fields)
            if bad:
                raise ConfigError(f"real_study.fair_by_dataset.{name}: {bad[0]!r} is not a field "
                                  f"of the fair model (AdelSpec: {', '.join(sorted(fields))})")

    def fair_overrides(self, dataset: str) -> dict:
        """The fair model's AdelSpec overrides for one dataset (empty: conf/model/fair)."""
        return dict(self.fair_by_dataset.get(dataset) or {})

    @property
    def method_names(self) -> tuple[str, ...]:
        return (*methods(), *self.variants)


def methods() -> tuple[str, ...]:
    """The registered methods this study runs (those whose needs it meets)."""
    return registry.names(provides=PROVIDES)


def report_methods() -> tuple[str, ...]:
    """The methods with a transparency report (Table 3)."""
    return tuple(m for m in methods() if registry.get(m).transparency)


@dataclass
class RealResult:
    metrics: dict                     # JSON-serialisable
    arrays: dict[str, np.ndarray]     # per-individual scores etc. (npz beside result.json)


# ----------------------------------------------------------------------------- rows


def subsample(n: int, max_rows: int | None, seed: int) -> np.ndarray:
    """Sorted indices of ``min(n, max_rows)`` rows drawn without replacement (all when None)."""
    if max_rows is None or int(max_rows) >= n:
        return np.arange(n)
    rng = np.random.default_rng(int(seed))
    return np.sort(rng.choice(n, size=int(max_rows), replace=False))


def _check_groups(c: np.ndarray, what: str, name: str, fix: str) -> None:
    values = np.unique(c)
    if values.size < 2:
        raise DataError(f"{name}: the protected attribute takes the single value "
                        f"{values.tolist()} in the {what} ({c.size} rows); {fix}")


@dataclass
class Rows:
    x: np.ndarray
    y: np.ndarray
    c: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    c_val: np.ndarray
    x_score: np.ndarray
    y_score: np.ndarray
    c_score: np.ndarray
    score_idx: np.ndarray    # rows of the test split that are scored
    x0: np.ndarray           # test rows with c = 0 (transparency reports)


def select_rows(data: RealData, settings: RealSettings, seed: int) -> Rows:
    """Training subsample, validation split, scored test individuals, c = 0 test rows."""
    tr = subsample(len(data.y_train), settings.max_train_rows, seed)
    te = subsample(len(data.y_test), settings.n_score, seed + 7919)
    rows = Rows(data.X_train[tr], data.y_train[tr], data.c_train[tr], data.X_val,
                data.y_val, data.c_val, data.X_test[te], data.y_test[te], data.c_test[te], te,
                data.X_test[data.c_test == 0])
    _check_groups(rows.c, "training subsample", data.name,
                  "raise profile.real.max_train_rows or use another seed")
    _check_groups(rows.c_val, "validation split", data.name,
                  "raise real_study.val_frac or use another seed")
    if rows.x0.shape[0] == 0:
        raise DataError(f"{data.name}: no test rows with c = 0 for the transparency reports; "
                        f"use another seed or a larger test_frac")
    return rows


# ----------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelSpecs:
    """Specs of the four trained parts (Hydra nodes of conf/model/{target,fair,aux,gan})."""

    target: object
    fair: object
    aux: object
    gan: object


def default_specs() -> ModelSpecs:
    from faux.models.adel import GUARDS, AdelSpec
    from faux.models.mlp import MLPSpec
    from faux.models.wgan import GANSpec

    # the aux of conf/model/aux/adel.yaml: the guards alone (the fair recipe collapsed it)
    return ModelSpecs(MLPSpec(), AdelSpec(), GUARDS, GANSpec())


def _is_adel(spec) -> bool:
    from faux.models.adel import AdelSpec

    return isinstance(spec, AdelSpec)


def _logits(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.as_tensor(x)).reshape(len(x), -1)[:, 0].double().numpy()


def check_model(model: torch.nn.Module, rows: Rows, data: RealData, settings: RealSettings,
                seed: int, target: str = "c") -> dict:
    """The fairness check of one model on the test split (``faux.studies.fairness_check``).

    ``target="c"``: a target model of y (the probe reads c); ``"y"``: the aux (a model of c;
    the probe reads y). The MLP probe's ``max_epochs`` is capped by the study's.
    """
    from faux.studies.fairness_check import fairness_check

    opts = dict(settings.probe)
    opts["max_epochs"] = min(int(opts.get("max_epochs", settings.max_epochs)),
                             int(settings.max_epochs))
    opts.setdefault("accelerator", "cpu" if settings.accelerator == "auto"
                    else settings.accelerator)
    extra = {"y_train": rows.y, "y_val": rows.y_val} if target == "y" else {}
    out = fairness_check(model, rows.x, rows.c, rows.x_val, rows.c_val, data.X_test,
                         data.c_test, data.y_test, proxy_edits(data.name),
                         feature_names=data.feature_names, target=target, seed=seed,
                         probe=opts, **extra)
    return {k: (v if not isinstance(v, float) or np.isfinite(v) else None)
            for k, v in out.items()}


def _f(v) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.3f}"


def target_facts(info: dict, check: dict, rows: Rows) -> dict:
    """Accuracy and parity gap (from the check), (Adel adversary), parameters, time."""
    out = {
        "accuracy": check["accuracy"],
        "dp_gap": check["dp_gap"],
        "c_chance": float(max(rows.c_val.mean(), 1 - rows.c_val.mean())),
        "n_params": int(info["n_params"]),
        "train_time_s": float(info["train_time_s"]),
        "epochs": int(info.get("epochs", -1)),
        "best_epoch": int(info.get("best_epoch", -1)),
    }
    if "adv_accuracy" in info:
        out["adv_accuracy"] = float(info["adv_accuracy"])
        out["adv_chance"] = float(info["adv_chance"])
    if info.get("alpha_last") is not None:
        out["alpha_last"] = float(info["alpha_last"])
    if info.get("probe_history"):      # the probe_target control, epoch by epoch
        out["probe_history"] = [{k: float(v) if k != "epoch" else int(v) for k, v in h.items()}
                                for h in info["probe_history"]]
    return out


@dataclass
class Trained:
    unfair: torch.nn.Module
    fair: torch.nn.Module
    aux: torch.nn.Module
    fitted: dict            # method name -> the fitted fairness test
    facts: dict
    timings: dict
    check: dict             # the fairness check: unfair, fair, aux, verdict (, blind)
    blind: torch.nn.Module | None = None    # the proxy-blind fair model, when trained

    @property
    def models(self) -> tuple[str, ...]:
        """The scored targets: unfair, fair (and blind)."""
        return (*MODELS, BLIND) if self.blind is not None else MODELS


def train_models(data: RealData, rows: Rows, specs: ModelSpecs, settings: RealSettings,
                 seed: int, log: Callable[[str], None] = log_.info) -> dict:
    """Train the unfair target, the fair target and the aux model of a job (each with its own
    seed, ``seed + SEED_OFFSETS[part]``): ``{unfair, fair, aux, blind: (model, info),
    fair_over, timings}``; ``blind`` is None unless ``settings.blind`` and the dataset declares
    proxy edits (:func:`train_blind`). The job's :func:`train_all` and
    ``scripts/research/diagnose_real.py`` share it."""
    from faux.models.adel import train_adel

    if not _is_adel(specs.fair):
        raise ConfigError("the fair model must be an Adel model (conf/model/fair/adel.yaml)")
    ep = {"max_epochs": int(settings.max_epochs), "patience": settings.patience,
          "accelerator": settings.accelerator}
    timings: dict[str, float] = {}
    t = time.perf_counter()
    sd = {k: int(seed) + v for k, v in SEED_OFFSETS.items()}
    with training_role("target"):
        unfair, uinfo = specs.target.train(rows.x, rows.y, rows.x_val, rows.y_val,
                                           seed=sd["unfair"], **ep)
    timings["unfair_s"] = time.perf_counter() - t
    t = time.perf_counter()
    fair_over = settings.fair_overrides(data.name)
    # the Adel models' alpha warm-up (44 epochs from 100 at decay 0.9) must fit under their cap
    adel_ep = {"max_epochs": int(settings.adel_max_epochs or settings.max_epochs),
               "patience": settings.patience}
    fair_spec = replace(specs.fair, **{**fair_over, **adel_ep})
    # the fair model's counterfactual pairing uses the dataset's declared proxy edits
    edits = edit_columns(proxy_edits(data.name), data.feature_names) if fair_spec.pair else ()
    if fair_spec.pair and not edits:
        log(f"{data.name}: no declared proxy edits (faux.studies.fairness_check.PROXY_EDITS); "
            f"the fair model's counterfactual pairing is off")
    with training_role("fair"):
        fair, finfo = train_adel(fair_spec, rows.x, rows.y, rows.c, rows.x_val, rows.y_val,
                                 rows.c_val, seed=sd["fair"], pair_edits=edits,
                                 accelerator=settings.accelerator)
    timings["fair_s"] = time.perf_counter() - t
    t = time.perf_counter()
    with training_role("aux"):
        if _is_adel(specs.aux):
            aux, ainfo = train_adel(replace(specs.aux, **adel_ep), rows.x, rows.c, rows.y,
                                    rows.x_val, rows.c_val, rows.y_val, seed=sd["aux"],
                                    accelerator=settings.accelerator)
        else:
            aux, ainfo = specs.aux.train(rows.x, rows.c, rows.x_val, rows.c_val,
                                         seed=sd["aux"], **ep)
    timings["aux_s"] = time.perf_counter() - t
    blind = None
    if settings.blind:
        t = time.perf_counter()
        blind = train_blind(data, rows, specs, settings, seed, log)
        timings["blind_s"] = time.perf_counter() - t
    log(f"{data.name} seed {seed}: unfair acc {uinfo['accuracy']:.3f}, fair acc "
        f"{finfo['accuracy']:.3f} (adversary {finfo['adv_accuracy']:.3f}, chance "
        f"{finfo['adv_chance']:.3f}), aux acc {ainfo['accuracy']:.3f}"
        + ("" if blind is None else f", blind acc {blind[1]['accuracy']:.3f}"))
    return {"unfair": (unfair, uinfo), "fair": (fair, finfo), "aux": (aux, ainfo),
            "blind": blind, "fair_over": fair_over, "timings": timings}


def train_blind(data: RealData, rows: Rows, specs: ModelSpecs, settings: RealSettings,
                seed: int, log: Callable[[str], None] = log_.info):
    """The proxy-blind fair model: the unfair target's recipe with the dataset's declared
    proxy edits merged (``faux.models.proxy_blind``), seed ``seed + SEED_OFFSETS["blind"]``;
    ``(model, info)``, or None (one log line) when the dataset declares no edit."""
    from faux.models.proxy_blind import train_proxy_blind

    edits = proxy_edits(data.name)
    if not edits:
        log(f"{data.name}: no declared proxy edits (faux.studies.fairness_check.PROXY_EDITS); "
            f"no proxy-blind fair model")
        return None
    net, info = train_proxy_blind(
        specs.target, edit_columns(edits, data.feature_names), rows.x, rows.y, rows.x_val,
        rows.y_val, seed=int(seed) + SEED_OFFSETS[BLIND], max_epochs=int(settings.max_epochs),
        patience=settings.patience, accelerator=settings.accelerator)
    info = {**info, "edits": [list(e) for e in edits]}
    return net, info


def train_all(data: RealData, rows: Rows, specs: ModelSpecs, settings: RealSettings, seed: int,
              log: Callable[[str], None] = log_.info) -> Trained:
    """Train both targets and the aux model (:func:`train_models`), then fit every method
    (FlipTest's GANs, the linear fair metric of FTA + lin. aux and Unfair Map, ...) once."""
    m3 = train_models(data, rows, specs, settings, seed, log)
    (unfair, uinfo), (fair, finfo), (aux, ainfo) = m3["unfair"], m3["fair"], m3["aux"]
    blind, binfo = m3["blind"] or (None, None)
    fair_over, timings = m3["fair_over"], m3["timings"]
    sd = {k: int(seed) + v for k, v in SEED_OFFSETS.items()}
    gan = replace(specs.gan, gen_steps=int(settings.gan_steps))
    config = MethodConfig(settings.options,
                          {FlipTestMethod.name: asdict(gan), FTALinMethod.name: settings.fta_lin,
                           UnfairMapMethod.name: settings.unfair_map}, settings.accelerator)
    qi = subsample(len(rows.y_val), settings.gan_quality_rows, seed + 17)
    fit_data = TrainData(rows.x, rows.c, rows.x_val[qi], rows.c_val[qi],
                         aux=lambda s: (aux, ainfo))
    fitted = {}
    for name in methods():
        m = registry.get(name)
        t = time.perf_counter()
        fitted[name] = m.build(config).fit(fit_data, sd["gan"] if "gan" in m.needs else seed)
        timings[f"fit_{name}_s"] = time.perf_counter() - t
    ft = fitted[FlipTestMethod.name]
    quality = {"ks": ft.info["gan_ks"], "mse": ft.info["gan_mse"],
               "mse_real": ft.info["gan_mse_real"]}
    timings["gan_quality_s"] = ft.info["gan_quality_s"]
    ft = ft.ft
    log(f"{data.name} seed {seed}: FlipTest GANs {ft.info['n_params']} params, "
        f"{ft.info['train_time_s']:.1f} s, KS {quality['ks']:.3f}")
    t = time.perf_counter()
    with training_role("probe"):          # the fairness check's MLP probes
        check = {"unfair": check_model(unfair, rows, data, settings, sd["probe"]),
                 "fair": check_model(fair, rows, data, settings, sd["probe"]),
                 "aux": check_model(aux, rows, data, settings, sd["probe"], target="y")}
    check.update(verdict(check["unfair"], check["fair"], settings.targets))
    check["fair_overrides"] = fair_over
    if blind is not None:
        check[BLIND] = check_model(blind, rows, data, settings, sd["probe"])
        check["blind_verdict"] = verdict(check["unfair"], check[BLIND], settings.targets)
    timings["check_s"] = time.perf_counter() - t
    u, f = check["unfair"], check["fair"]
    log(f"{data.name} seed {seed}: fairness check, unfair / fair: probe AUROC "
        f"{_f(u['probe_auroc'])} / {_f(f['probe_auroc'])}, swap "
        f"{_f(u['proxy_swap_mean_abs_dprob'])} / {_f(f['proxy_swap_mean_abs_dprob'])}, "
        f"accuracy {_f(u['accuracy'])} / {_f(f['accuracy'])}; aux probe of y "
        f"{_f(check['aux']['probe_auroc'])}; fair model "
        + ("passes" if check["pass"] else "FAILS: " + "; ".join(check["fails"])))
    if blind is not None:
        b, bv = check[BLIND], check["blind_verdict"]
        log(f"{data.name} seed {seed}: fairness check, proxy-blind model: probe AUROC "
            f"{_f(b['probe_auroc'])}, swap {_f(b['proxy_swap_mean_abs_dprob'])}, accuracy "
            f"{_f(b['accuracy'])}; " + ("passes" if bv["pass"]
                                        else "FAILS: " + "; ".join(bv["fails"])))
    t = time.perf_counter()
    with torch.no_grad():
        a_logit = _logits(aux, rows.x_val)
    facts = {
        "unfair": target_facts(uinfo, check["unfair"], rows),
        "fair": target_facts(finfo, check["fair"], rows),
        "aux": {"kind": "adel" if _is_adel(specs.aux) else "mlp",
                "accuracy": float(ainfo["accuracy"]),
                "auroc": auroc(rows.c_val, a_logit),
                "c_chance": float(max(rows.c_val.mean(), 1 - rows.c_val.mean())),
                "adv_accuracy": ainfo.get("adv_accuracy"), "adv_chance": ainfo.get("adv_chance"),
                "n_params": int(ainfo["n_params"]),
                "n_params_adv": int(ainfo.get("n_params_adv", 0)),
                "train_time_s": float(ainfo["train_time_s"]),
                "epochs": int(ainfo.get("epochs", -1))},
        FlipTestMethod.name: {
            "n_params": int(ft.info["n_params"]),
            "n_params_generators": int(ft.info["n_params_generators"]),
            "train_time_s": float(ft.info["train_time_s"]), "gen_steps": int(gan.gen_steps),
            "ks": float(quality["ks"]), "mse": float(quality["mse"]),
            "mse_real": float(quality["mse_real"])},
    }
    if blind is not None:
        facts[BLIND] = {**target_facts(binfo, check[BLIND], rows), "edits": binfo["edits"]}
    timings["facts_s"] = time.perf_counter() - t
    return Trained(unfair, fair, aux, fitted, facts, timings, check, blind)


# ----------------------------------------------------------------------------- scores


def score_one(method: str, target: torch.nn.Module, tr: Trained, rows: Rows,
              options: dict | None = None) -> np.ndarray:
    """Scores of one fitted method for the scored individuals under ``target`` (float64,
    (n,)); ``options`` override its ``faux.score`` options (a variant)."""
    batch = Batch(torch.as_tensor(rows.x_score), rows.c_score, rows.y_score)
    f = tr.fitted[method]
    s = f.score(target, batch, options) if options else f.score(target, batch)
    return torch.as_tensor(s).detach().reshape(-1).double().numpy()


def summarise_pair(unfair: np.ndarray, fair: np.ndarray, blind: np.ndarray | None = None
                   ) -> dict:
    """Quantiles of both models' scores, separation AUROC and paired win rate; with
    ``blind`` (the proxy-blind model's scores) also its quantiles, ``auroc_blind`` and
    ``paired_win_blind`` (the unfair model against it)."""
    from faux.metrics.ranking import separation_auroc

    out = {}
    pairs = [("unfair", unfair), ("fair", fair)] + ([] if blind is None else [(BLIND, blind)])
    for name, s in pairs:
        q = np.quantile(s, QUANTILES)
        out[name] = {"mean": float(s.mean()), **{f"q{int(round(100 * p)):02d}": float(v)
                                                 for p, v in zip(QUANTILES, q)}}
        out[name]["median"] = out[name]["q50"]
    for suffix, other in (("", fair), ("_blind", blind)):
        if other is not None:
            out[f"auroc{suffix}"] = separation_auroc(unfair, other)
            out[f"paired_win{suffix}"] = float(np.mean(unfair > other)
                                               + 0.5 * np.mean(unfair == other))
    return out


def score_all(tr: Trained, rows: Rows, settings: RealSettings) -> tuple[dict, dict]:
    """Per method: summaries (metrics) and the raw scores (arrays ``<method>__<model>``)."""
    summaries, arrays = {}, {}
    jobs = [(m, m, {}) for m in methods()]
    jobs += [(name, v["method"], {k: w for k, w in v.items() if k != "method"})
             for name, v in settings.variants.items()]
    for name, method, opts in jobs:
        t = time.perf_counter()
        s = {model: score_one(method, getattr(tr, model), tr, rows, opts)
             for model in tr.models}
        elapsed = time.perf_counter() - t
        for model in tr.models:
            if not np.isfinite(s[model]).all():
                raise ConfigError(f"{name}: non-finite scores for the {model} model")
            arrays[f"{name}__{model}"] = s[model].astype(np.float32)
        summaries[name] = {**summarise_pair(s["unfair"], s["fair"], s.get(BLIND)),
                           "score_s": elapsed}
    return summaries, arrays


# ----------------------------------------------------------------------------- Table 3


def discrete_mask(data: RealData) -> np.ndarray:
    """True for every column that is not a standardised continuous feature."""
    cont = set(data.continuous)
    return np.array([n not in cont for n in data.feature_names], dtype=bool)


def transparency(tr: Trained, rows: Rows, data: RealData, settings: RealSettings,
                 seed: int) -> dict:
    """Feature reports (A.10), the MI ground truth, NDCGs and top features."""
    from faux.methods.transparency import aggregate_groups
    from faux.metrics.fairness import mutual_information
    from faux.metrics.ranking import ndcg_by_name, random_ndcg

    t = time.perf_counter()
    mi_cols = mutual_information(rows.x, rows.c, discrete_mask(data), seed)
    mi = aggregate_groups(mi_cols, data.feature_groups)
    t_mi = time.perf_counter() - t
    x0 = torch.as_tensor(rows.x0)
    reports = {}
    t = time.perf_counter()
    for m in report_methods():
        r = tr.fitted[m].report(x0, **settings.report_options)
        reports[m] = aggregate_groups(r, data.feature_groups)
    for name, v in settings.report_variants.items():
        opts = {**settings.report_options, **{k: a for k, a in v.items() if k != "method"}}
        reports[name] = aggregate_groups(tr.fitted[v["method"]].report(x0, **opts),
                                         data.feature_groups)
    t_rep = time.perf_counter() - t
    ndcg = {m: ndcg_by_name(r, mi) for m, r in reports.items()}

    def top(d, k=5):
        return [n for n, _ in sorted(d.items(), key=lambda kv: -kv[1])[:k]]

    return {"mi": mi, "reports": reports, "ndcg": ndcg,
            "ndcg_random": random_ndcg(mi, settings.n_random_rankings, seed),
            "top_mi": top(mi), "top": {m: top(r) for m, r in reports.items()},
            "n_x0": int(len(x0)), "n_features": len(mi), "mi_s": t_mi, "reports_s": t_rep}


# ----------------------------------------------------------------------------- the job body


def run_real(data: RealData, specs: ModelSpecs | None = None,
             settings: RealSettings | None = None, *, seed: int = 0,
             log: Callable[[str], None] = log_.info) -> RealResult:
    """Everything of one (dataset, seed): train, score, report (see the module docstring)."""
    specs = specs or default_specs()
    settings = settings or RealSettings()
    t0 = time.perf_counter()
    rows = select_rows(data, settings, seed)
    tr = train_all(data, rows, specs, settings, seed, log)
    t = time.perf_counter()
    summaries, arrays = score_all(tr, rows, settings)
    t_scores = time.perf_counter() - t
    for name in settings.method_names:
        s = summaries[name]
        log(f"{data.name} seed {seed}: {name:16s} median unfair {s['unfair']['median']:.4g} "
            f"fair {s['fair']['median']:.4g} AUROC {s['auroc']:.3f}"
            + (f"; blind {s[BLIND]['median']:.4g} AUROC {s['auroc_blind']:.3f}"
               if BLIND in s else ""))
    t = time.perf_counter()
    t3 = transparency(tr, rows, data, settings, seed)
    t_t3 = time.perf_counter() - t
    log(f"{data.name} seed {seed}: NDCG " + ", ".join(f"{m} {v:.3f}"
                                                      for m, v in t3["ndcg"].items())
        + f" (random {t3['ndcg_random']:.3f})")
    arrays.update(score_idx=data.test_idx[rows.score_idx].astype(np.int64),
                  y=rows.y_score.astype(np.int8), c=rows.c_score.astype(np.int8))
    f = tr.facts
    metrics = {
        "dataset": data.name, "seed": int(seed), "protected": data.protected,
        "n_train": int(len(rows.y)), "n_val": int(len(rows.y_val)),
        "n_score": int(len(rows.y_score)), "n_columns": int(data.n_features),
        "c_rate_train": float(rows.c.mean()), "y_rate_train": float(rows.y.mean()),
        "models": f, "fairness_check": tr.check, "methods": summaries,
        "method_names": list(settings.method_names), "scored_models": list(tr.models),
        "table3": t3,
        "table4": {"fliptest_params": f[FlipTestMethod.name]["n_params"],
                   "fliptest_time_s": f[FlipTestMethod.name]["train_time_s"],
                   "faux_params": f["aux"]["n_params"],
                   "faux_params_adv": f["aux"]["n_params_adv"],
                   "faux_time_s": f["aux"]["train_time_s"]},
        "timings": {**tr.timings, "scores_s": t_scores, "table3_s": t_t3,
                    "total_s": time.perf_counter() - t0},
    }
    return RealResult(metrics, arrays)


# ----------------------------------------------------------------------------- the job


@dataclass(frozen=True)
class Settings:
    """One job of the real-data sweep: a dataset, a seed, the four model specs, the study."""

    data: object                 # faux.data.spec.DatasetSpec
    seed: int
    data_dir: str
    val_frac: float
    test_frac: float
    specs: ModelSpecs
    study: RealSettings

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from hydra.utils import instantiate

        from faux.studies.config import accelerator

        data = instantiate(cfg["data"])
        if data.kind != "real":
            raise ConfigError(f"the real-data study needs a real dataset (adult, bank, ssl); "
                              f"got data={data.name}")
        p, st = cfg["profile"], cfg["real_study"]
        real = p["real"]
        study = RealSettings(
            max_train_rows=real["max_train_rows"], n_score=int(real["n_score"]),
            max_epochs=int(real.get("max_epochs", p["max_epochs"])),
            patience=real.get("patience", p["patience"]),
            adel_max_epochs=real.get("adel_max_epochs"),
            gan_steps=int(real.get("gan_steps", p["gan_steps"])),
            options=dict(st["options"]), variants=dict(st["variants"] or {}),
            report_options=dict(st["report_options"]),
            report_variants=dict(st.get("report_variants") or {}), unfair_map=dict(st[UnfairMapMethod.name] or {}),
            fta_lin=dict(st[FTALinMethod.name] or {}), probe=dict(st["probe"]),
            targets=dict(st.get("targets") or TARGETS),
            fair_by_dataset={k: dict(v or {}) for k, v in
                             (st.get("fair_by_dataset") or {}).items()},
            blind=bool(real.get("blind_model", False)),
            n_random_rankings=int(st["n_random_rankings"]),
            gan_quality_rows=st["gan_quality_rows"], accelerator=accelerator(cfg))
        model = cfg["model"]
        specs = ModelSpecs(*(instantiate(model[k]) for k in ("target", "fair", "aux", "gan")))
        return cls(data, int(cfg["seed"]), cfg["paths"]["data_dir"], float(st["val_frac"]),
                   float(st["test_frac"]), specs, study)


def run(s: Settings, out_dir, log) -> dict:
    from faux.data.real import is_present, load_real

    name, seed = s.data.name, s.seed
    try:
        data = load_real(name, seed, root=s.data_dir, val_frac=s.val_frac,
                         test_frac=s.test_frac)
        select_rows(data, s.study, seed)   # fails early on a single-valued c in a subsample
    except DataError as exc:
        kind = "absent" if name == "ssl" and not is_present("ssl", s.data_dir) else "error"
        log(f"{name} seed {seed}: skipped: {exc}")
        return {"dataset": name, "seed": seed, "skipped": str(exc), "skip_kind": kind}
    res = run_real(data, s.specs, s.study, seed=seed, log=log)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (SCORES_FILE + ".part.npz")
    np.savez_compressed(tmp, **res.arrays)
    tmp.replace(out / SCORES_FILE)
    return {**res.metrics, "scores_file": SCORES_FILE}
