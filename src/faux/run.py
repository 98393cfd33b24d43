"""Hydra entry point: ``python -m faux.run [overrides]``; one job = one cell of a table.

Hydra stays here: the config is resolved to plain dicts, the study of ``cfg.job``
(``faux.studies.get``) builds its settings from them (``Settings.from_config``) and runs
(``run(settings, out_dir: Path, log) -> dict`` of metrics).
Each job writes ``result.json`` (config, config hash, metrics, timings) into its folder.
A job whose folder already holds a finished ``result.json`` with the same config hash is
skipped, so rerunning an interrupted sweep into the same folder completes only what is
missing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from faux.errors import FauxError

log = logging.getLogger("faux.run")


def register_resolvers() -> None:
    """``${faux_methods:}``: the registered method names, comma-separated (Table 1's sweep
    list in conf/experiment/table1.yaml reads the registry through it)."""
    if not OmegaConf.has_resolver("faux_methods"):
        def methods() -> str:
            from faux.methods import registry

            return ",".join(registry.names())

        OmegaConf.register_new_resolver("faux_methods", methods)


register_resolvers()

#: config keys that do not change what a job computes (left out of the config hash)
_VOLATILE = ("paths", "hydra", "logger", "launcher", "trainer.accelerator")

#: profile sections read by one job only; other jobs leave them out of their hash, so adding
#: or changing a study's section does not make every other study's sweep rerun
_STUDY_SECTIONS = {"real": "real_cell", "fig5": "fig5_cell", "fig11": "fig11_cell"}


def plain_config(cfg: DictConfig) -> dict:
    """The resolved config as plain containers, without Hydra's own node."""
    return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def config_hash(cfg: dict) -> str:
    """A stable hash of what the job computes: the config less paths, logging, launcher and
    the profile sections of other studies."""
    c = json.loads(json.dumps(cfg, default=str))
    for key in _VOLATILE:
        node, *rest = key.split(".")
        if rest and isinstance(c.get(node), dict):
            c[node].pop(rest[0], None)
        elif not rest:
            c.pop(node, None)
    profile = c.get("profile")
    if isinstance(profile, dict):
        for section, owner in _STUDY_SECTIONS.items():
            if c.get("job") != owner:
                profile.pop(section, None)
    blob = json.dumps(c, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def finished(out_dir: Path, chash: str) -> dict | None:
    """The stored result of a finished job with this config hash, else None."""
    path = out_dir / "result.json"
    try:
        res = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = res.get("config_hash") == chash and res.get("status") == "ok"
    # a job that skipped (e.g. a dataset the user has not placed yet) is retried on rerun
    skipped = isinstance(res.get("metrics"), dict) and res["metrics"].get("skipped")
    return res if ok and not skipped else None


def write_json_atomic(path: Path, obj: dict) -> None:
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(obj, indent=2, default=float))
    tmp.replace(path)


def _make_logger(cfg: DictConfig):
    if "logger" not in cfg or cfg.logger is None:
        return None
    return hydra.utils.instantiate(cfg.logger)


def execute(cfg: DictConfig) -> dict:
    """Run one job for a composed config (what ``main`` does, without Hydra's wrapper)."""
    import pytorch_lightning as pl
    import torch

    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plain = plain_config(cfg)
    chash = config_hash(plain)
    done = finished(out_dir, chash)
    if done is not None:
        log.info("job already finished (config %s) in %s: skipped", chash, out_dir)
        return done
    torch.set_num_threads(max(1, int(__import__("os").environ.get("OMP_NUM_THREADS", "1"))))
    pl.seed_everything(int(cfg.seed), workers=True, verbose=False)
    from faux import studies

    study = studies.get(cfg.job)
    t0 = time.perf_counter()
    metrics = study.run(study.Settings.from_config(plain), out_dir, log.info)
    wall = time.perf_counter() - t0
    result = {"status": "ok", "job": cfg.job, "config_hash": chash, "config": plain,
              "metrics": metrics, "timings": {"wall_s": wall}}
    logger = _make_logger(cfg)
    if logger is not None:
        scalars = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
        logger.log_hyperparams({"config_hash": chash, **_flatten(plain)})
        logger.log_metrics({**scalars, "wall_s": wall})
        logger.finalize("success")
        if type(logger).__name__ == "WandbLogger":
            import wandb

            wandb.finish()
    write_json_atomic(out_dir / "result.json", result)
    return result


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
        else:
            out[key] = str(v)
    return out


@hydra.main(version_base="1.3", config_path="../../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        execute(cfg)
    except FauxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
