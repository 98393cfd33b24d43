"""Everything trained for one real-data job: the models, every method fitted once, the
fairness check and the facts of Tables 3-4.

The fairness check (:func:`faux.studies.fairness_check.fairness_check`, independent of every
compared test) runs on both targets and on the aux, on the test split: a fresh probe's AUROC
for c on the model's last hidden layer (for y on the aux's: A.11.2 keeps the aux from reading
y), the counterfactual proxy swap's mean |Δp| over the dataset's declared edits
(``proxy_edits``), the demographic-parity gap and the accuracy.
:func:`faux.studies.fairness_check.verdict` holds each fair model against the targets
(``RealSettings.targets``: probe AUROC ≤ 0.60, swap ≤ half the unfair model's, accuracy
within 2 points); the verdict goes to ``metrics.fairness_check`` (with the fair model's
``fair_overrides``; ``blind`` and ``blind_verdict`` for the proxy-blind model), and a fair
model that fails is flagged by the Fig. 4 report, never silently used. The fair model's
counterfactual pairing trains on the same declared edits, so its swap partly measures a
training objective; the probe and the accuracy do not.

Costs (Table 4): parameters and training time of FlipTest (both generators and both
critics) and of the aux model (the predictor network; its adversary is reported apart).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from faux.data.real import RealData
from faux.methods import registry
from faux.methods.builtin import FlipTestMethod
from faux.methods.protocol import MethodConfig, TrainData
from faux.metrics.ranking import auroc
from faux.models.training import training_role
from faux.studies.fairness_check import proxy_edits, verdict
from faux.studies.real_models import ModelSpecs, is_adel, train_models
from faux.studies.real_rows import Rows, subsample
from faux.studies.real_settings import BLIND, MODELS, SEED_OFFSETS, RealSettings, methods

log_ = logging.getLogger("faux.studies.real")


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


def fit_methods(rows: Rows, specs: ModelSpecs, settings: RealSettings, seed: int, aux, ainfo,
                timings: dict) -> dict:
    """Every method fitted once (FlipTest's GANs on their own seed, the linear fair metric
    of FTA + lin. aux and Unfair Map, ...): name -> the fitted test; each fit's seconds go
    to ``timings``."""
    sd = {k: int(seed) + v for k, v in SEED_OFFSETS.items()}
    gan = asdict(replace(specs.gan, gen_steps=int(settings.gan_steps)))
    params = {**registry.own_blocks(settings.methods, "real_study.methods"),
              **{m.name: gan for m in registry.methods(requires=("gan",))}}
    config = MethodConfig(settings.options, params, settings.accelerator)
    qi = subsample(len(rows.y_val), settings.gan_quality_rows, seed + 17)
    fit_data = TrainData(rows.x, rows.c, rows.x_val[qi], rows.c_val[qi],
                         aux=lambda s: (aux, ainfo))
    fitted = {}
    for name in methods():
        m = registry.get(name)
        t = time.perf_counter()
        fitted[name] = m.build(config).fit(fit_data, sd["gan"] if "gan" in m.needs else seed)
        timings[f"fit_{name}_s"] = time.perf_counter() - t
    return fitted


def check_all(models: dict, rows: Rows, data: RealData, settings: RealSettings, seed: int,
              fair_over: dict) -> dict:
    """The fairness check of the unfair, fair and aux models (and the proxy-blind one when
    ``models["blind"]`` is set) and each fair model's verdict (module doc)."""
    probe_seed = int(seed) + SEED_OFFSETS["probe"]
    with training_role("probe"):          # the fairness check's MLP probes
        check = {"unfair": check_model(models["unfair"], rows, data, settings, probe_seed),
                 "fair": check_model(models["fair"], rows, data, settings, probe_seed),
                 "aux": check_model(models["aux"], rows, data, settings, probe_seed,
                                    target="y")}
    check.update(verdict(check["unfair"], check["fair"], settings.targets))
    check["fair_overrides"] = fair_over
    if models.get(BLIND) is not None:
        check[BLIND] = check_model(models[BLIND], rows, data, settings, probe_seed)
        check["blind_verdict"] = verdict(check["unfair"], check[BLIND], settings.targets)
    return check


def _log_check(check: dict, name: str, seed: int, log: Callable[[str], None]) -> None:
    u, f = check["unfair"], check["fair"]
    log(f"{name} seed {seed}: fairness check, unfair / fair: probe AUROC "
        f"{_f(u['probe_auroc'])} / {_f(f['probe_auroc'])}, swap "
        f"{_f(u['proxy_swap_mean_abs_dprob'])} / {_f(f['proxy_swap_mean_abs_dprob'])}, "
        f"accuracy {_f(u['accuracy'])} / {_f(f['accuracy'])}; aux probe of y "
        f"{_f(check['aux']['probe_auroc'])}; fair model "
        + ("passes" if check["pass"] else "FAILS: " + "; ".join(check["fails"])))
    if BLIND in check:
        b, bv = check[BLIND], check["blind_verdict"]
        log(f"{name} seed {seed}: fairness check, proxy-blind model: probe AUROC "
            f"{_f(b['probe_auroc'])}, swap {_f(b['proxy_swap_mean_abs_dprob'])}, accuracy "
            f"{_f(b['accuracy'])}; " + ("passes" if bv["pass"]
                                        else "FAILS: " + "; ".join(bv["fails"])))


def aux_facts(aux: torch.nn.Module, ainfo: dict, spec, rows: Rows) -> dict:
    """The aux model's accuracy, validation AUROC of c, adversary, parameters and time."""
    with torch.no_grad():
        a_logit = _logits(aux, rows.x_val)
    return {"kind": "adel" if is_adel(spec) else "mlp",
            "accuracy": float(ainfo["accuracy"]),
            "auroc": auroc(rows.c_val, a_logit),
            "c_chance": float(max(rows.c_val.mean(), 1 - rows.c_val.mean())),
            "adv_accuracy": ainfo.get("adv_accuracy"), "adv_chance": ainfo.get("adv_chance"),
            "n_params": int(ainfo["n_params"]),
            "n_params_adv": int(ainfo.get("n_params_adv", 0)),
            "train_time_s": float(ainfo["train_time_s"]),
            "epochs": int(ainfo.get("epochs", -1))}


def fliptest_facts(fitted: dict, settings: RealSettings) -> dict:
    """FlipTest's parameters, training time, generator steps and its GANs' quality."""
    fitted_ft = fitted[FlipTestMethod.name]
    gans, info = fitted_ft.info, fitted_ft.ft.info
    return {"n_params": int(info["n_params"]),
            "n_params_generators": int(info["n_params_generators"]),
            "train_time_s": float(info["train_time_s"]),
            "gen_steps": int(settings.gan_steps),
            "ks": float(gans["gan_ks"]), "mse": float(gans["gan_mse"]),
            "mse_real": float(gans["gan_mse_real"])}


def train_all(data: RealData, rows: Rows, specs: ModelSpecs, settings: RealSettings, seed: int,
              log: Callable[[str], None] = log_.info) -> Trained:
    """Train both targets and the aux model (:func:`train_models`), then fit every method
    once (:func:`fit_methods`), check the models (:func:`check_all`) and gather the facts."""
    m3 = train_models(data, rows, specs, settings, seed, log)
    (unfair, uinfo), (fair, finfo), (aux, ainfo) = m3["unfair"], m3["fair"], m3["aux"]
    blind, binfo = m3["blind"] or (None, None)
    fair_over, timings = m3["fair_over"], m3["timings"]
    fitted = fit_methods(rows, specs, settings, seed, aux, ainfo, timings)
    ft = fitted[FlipTestMethod.name]
    timings["gan_quality_s"] = ft.info["gan_quality_s"]
    log(f"{data.name} seed {seed}: FlipTest GANs {ft.ft.info['n_params']} params, "
        f"{ft.ft.info['train_time_s']:.1f} s, KS {ft.info['gan_ks']:.3f}")
    t = time.perf_counter()
    check = check_all({"unfair": unfair, "fair": fair, "aux": aux, BLIND: blind}, rows, data,
                      settings, seed, fair_over)
    timings["check_s"] = time.perf_counter() - t
    _log_check(check, data.name, seed, log)
    t = time.perf_counter()
    facts = {"unfair": target_facts(uinfo, check["unfair"], rows),
             "fair": target_facts(finfo, check["fair"], rows),
             "aux": aux_facts(aux, ainfo, specs.aux, rows),
             FlipTestMethod.name: fliptest_facts(fitted, settings)}
    if blind is not None:
        facts[BLIND] = {**target_facts(binfo, check[BLIND], rows), "edits": binfo["edits"]}
    timings["facts_s"] = time.perf_counter() - t
    return Trained(unfair, fair, aux, fitted, facts, timings, check, blind)
