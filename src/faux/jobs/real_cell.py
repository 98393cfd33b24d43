"""One (dataset, seed) of the real-data study: Fig. 4/10, Table 3 and Table 4 in one job.

All models are trained once per job and every method scores the same held-out individuals
(``faux.experiments.real``). The per-individual scores go to ``scores.npz`` beside
``result.json`` (keys ``<method>__unfair`` / ``<method>__fair``, ``score_idx``, ``y``, ``c``);
the metrics hold their quantiles, AUROCs, the Table 3 reports and the Table 4 costs.

A dataset that cannot be loaded (no SSL CSV placed, a raw file missing, a protected attribute
with a single value in a split, an SSL CSV without a required column) does not stop a sweep:
the job logs one line ``<dataset> seed <s>: skipped: <reason>`` and returns
``{"skipped": <reason>, "skip_kind": "absent" | "error"}``; the report builders list it
(``absent``: the SSL CSV was never placed, a note; ``error``: a missing cell).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from faux.errors import ConfigError, DataError
from faux.experiments.real import ModelSpecs, RealSettings, default_specs, run_real

SCORES_FILE = "scores.npz"


def model_specs(cfg: dict) -> ModelSpecs:
    """Specs from ``cfg["model"]`` (``target``, ``fair``, ``aux``, ``gan`` nodes) where given,
    else the defaults (MLP target, Adel fair model, Adel aux, FlipTest GANs)."""
    from hydra.utils import instantiate

    node = cfg.get("model") or {}
    base = default_specs()
    picked = {}
    for key in ("target", "fair", "aux", "gan"):
        sub = node.get(key)
        picked[key] = instantiate(sub) if isinstance(sub, dict) and "_target_" in sub \
            else getattr(base, key)
    return ModelSpecs(**picked)


def settings_from(cfg: dict) -> RealSettings:
    p = cfg["profile"]
    real = p.get("real") or {}
    study = cfg.get("real_study") or {}
    return RealSettings(
        max_train_rows=real.get("max_train_rows"), n_score=int(real.get("n_score", 5000)),
        max_epochs=int(real.get("max_epochs", p["max_epochs"])),
        patience=real.get("patience", p["patience"]),
        gan_steps=int(real.get("gan_steps", p["gan_steps"])),
        options=dict(study.get("options") or {}), variants=dict(study.get("variants") or {}),
        report_options=dict(study.get("report_options") or {}),
        unfair_map=dict(study.get("unfair_map") or {}), fta_lin=dict(study.get("fta_lin") or {}),
        probe=dict(study.get("probe") or {"width": 32, "depth": 1, "max_epochs": 20}),
        n_random_rankings=int(study.get("n_random_rankings", 1000)),
        gan_quality_rows=study.get("gan_quality_rows", 2000),
        accelerator=(cfg.get("trainer") or {}).get("accelerator", "auto"))


def run(cfg: dict, out_dir, log) -> dict:
    from faux.data.real import is_present, load_real

    data_cfg = cfg["data"]
    name, seed = data_cfg["name"], int(cfg["seed"])
    if data_cfg.get("kind") != "real":
        raise ConfigError(f"the real-data study needs a real dataset (adult, bank, ssl); "
                          f"got data={name}")
    settings = settings_from(cfg)
    study = cfg.get("real_study") or {}
    root = cfg["paths"]["data_dir"]
    try:
        data = load_real(name, seed, root=root, val_frac=float(study.get("val_frac", 0.15)),
                         test_frac=float(study.get("test_frac", 0.15)))
        from faux.experiments.real import select_rows

        select_rows(data, settings, seed)   # fails early on a single-valued c in a subsample
    except DataError as exc:
        kind = "absent" if name == "ssl" and not is_present("ssl", root) else "error"
        log(f"{name} seed {seed}: skipped: {exc}")
        return {"dataset": name, "seed": seed, "skipped": str(exc), "skip_kind": kind}
    res = run_real(data, model_specs(cfg), settings, seed=seed, log=log)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (SCORES_FILE + ".part.npz")
    np.savez_compressed(tmp, **res.arrays)
    tmp.replace(out / SCORES_FILE)
    return {**res.metrics, "scores_file": SCORES_FILE}
