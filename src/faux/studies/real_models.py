"""The models of one real-data job (step 2 of :mod:`faux.studies.real`).

An *unfair* target (plain MLP of y on x; c is never a column of x); a *fair* target (Adel et
al. 2019: predicts y while an adversary on its hidden layer is kept from reading c); the aux
model (Adel: predicts c while an adversary is kept from reading y, A.11.2; a plain MLP when
an ``MLPSpec`` is passed). With ``RealSettings.blind`` (``profile.real.blind_model``) a
second kind of fair model, the *proxy-blind* one: the unfair recipe trained with the
dataset's declared proxy edits merged (``faux.models.proxy_blind``; exactly invariant to the
edit, otherwise as unfair as the data lets it be), scored, checked and compared like the
Adel fair model; none for a dataset without declared edits (e.g. SSL).

The fair model's recipe can differ per dataset (``RealSettings.fair_by_dataset``: AdelSpec
fields overridden for one dataset). Its counterfactual pairing (``AdelSpec.pair``) trains on
the dataset's declared edits. The Adel models (fair model, Adel aux) get their own epoch cap
(``adel_max_epochs``): their α warm-up must fit under it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from faux.data.real import RealData
from faux.errors import ConfigError
from faux.models.training import training_role
from faux.studies.fairness_check import edit_columns, proxy_edits
from faux.studies.real_rows import Rows
from faux.studies.real_settings import BLIND, SEED_OFFSETS, RealSettings

log_ = logging.getLogger("faux.studies.real")


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


def is_adel(spec) -> bool:
    from faux.models.adel import AdelSpec

    return isinstance(spec, AdelSpec)

def train_models(data: RealData, rows: Rows, specs: ModelSpecs, settings: RealSettings,
                 seed: int, log: Callable[[str], None] = log_.info) -> dict:
    """Train the unfair target, the fair target and the aux model of a job (each with its own
    seed, ``seed + SEED_OFFSETS[part]``): ``{unfair, fair, aux, blind: (model, info),
    fair_over, timings}``; ``blind`` is None unless ``settings.blind`` and the dataset declares
    proxy edits (:func:`train_blind`). The job's :func:`train_all` and
    ``scripts/research/diagnose_real.py`` share it."""
    from faux.models.adel import train_adel

    if not is_adel(specs.fair):
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
        if is_adel(specs.aux):
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
