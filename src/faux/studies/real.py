"""The real-data study (paper Section 4.3, A.9-A.11): Fig. 4/10, Table 3 and Table 4.

One call of :func:`run_real` handles one split of one dataset (Adult, Bank or SSL) and one
seed, so every model is trained once and every method scores the same individuals:

1. rows (:mod:`faux.studies.real_rows`): the training subsample, the validation split, the
   scored test individuals;
2. models (:mod:`faux.studies.real_models`): an unfair target, an Adel fair target (and,
   with ``RealSettings.blind``, a proxy-blind one), the aux model; then every method fitted
   once, the fairness check of every model and the facts (:mod:`faux.studies.real_trained`);
3. scores (Fig. 4/10) and 4. transparency reports (Table 3): :mod:`faux.studies.real_scores`;
5. costs (Table 4): parameters and training time of FlipTest and of the aux model.

Settings and seeds: :mod:`faux.studies.real_settings`. This module is the job:
``Settings.from_config`` reads the config and ``run`` writes the per-individual scores to
``scores.npz`` beside ``result.json`` (keys ``<method>__unfair`` / ``<method>__fair`` /
``<method>__blind`` when trained, ``score_idx``, ``y``, ``c``); the metrics hold their
quantiles, AUROCs, the Table 3 reports and the Table 4 costs. A dataset that cannot be
loaded (no SSL CSV placed, a raw file missing, a protected attribute with a single value in a
split, an SSL CSV without a required column) does not stop a sweep: the job logs one line
``<dataset> seed <s>: skipped: <reason>`` and returns ``{"skipped": <reason>, "skip_kind":
"absent" | "error"}``; the report builders list it (``absent``: the SSL CSV was never placed,
a note; ``error``: a missing cell). Everything else is pure functions of arrays, modules and
plain arguments.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faux.data.real import RealData
from faux.errors import ConfigError, DataError
from faux.methods.builtin import FlipTestMethod
from faux.studies.fairness_check import TARGETS
from faux.studies.real_models import ModelSpecs, default_specs, train_blind, train_models
from faux.studies.real_rows import Rows, select_rows, subsample
from faux.studies.real_scores import (
    discrete_mask,
    score_all,
    score_one,
    summarise_pair,
    transparency,
)
from faux.studies.real_settings import (
    BLIND,
    MODELS,
    PROVIDES,
    QUANTILES,
    SEED_OFFSETS,
    RealSettings,
    methods,
    report_methods,
)
from faux.studies.real_trained import Trained, check_model, target_facts, train_all

__all__ = ["BLIND", "JOB", "MODELS", "PROVIDES", "QUANTILES", "SCORES_FILE", "SEED_OFFSETS",
           "ModelSpecs", "RealResult", "RealSettings", "Rows", "Settings", "Trained",
           "check_model", "default_specs", "discrete_mask", "methods", "report_methods", "run",
           "run_real", "score_all", "score_one", "select_rows", "subsample", "summarise_pair",
           "target_facts", "train_all", "train_blind", "train_models", "transparency"]

log_ = logging.getLogger("faux.studies.real")

JOB = "real_cell"
SCORES_FILE = "scores.npz"


@dataclass
class RealResult:
    metrics: dict                     # JSON-serialisable
    arrays: dict[str, np.ndarray]     # per-individual scores etc. (npz beside result.json)


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

        from faux.studies.config import accelerator, own_blocks

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
            report_variants=dict(st.get("report_variants") or {}),
            methods=own_blocks(st, "real_study"), probe=dict(st["probe"]),
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
