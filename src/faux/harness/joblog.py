"""A finished job to the configured logger (``logger=csv|wandb``): its config, the labels a
dashboard groups it by, and its numbers. The result is written before the logger runs; a
logger that fails (W&B without network, a full disk under its folder) is one line on stderr
and never loses the result."""

from __future__ import annotations

import sys


def run_labels(plain: dict) -> dict:
    """The keys a dashboard groups a job by: study (task name), column or dataset, method,
    reading and profile (those the job has). A logged job carries them as config
    ``by.<key>`` and as tags ``<key>:<value>``."""
    def name_of(v):
        return v.get("name") if isinstance(v, dict) else v

    labels = {"study": plain.get("task_name"), "job": plain.get("job"),
              "column": plain.get("column") if isinstance(plain.get("column"), str) else None,
              "dataset": name_of(plain.get("data")), "method": plain.get("method"),
              "reading": name_of(plain.get("reading")), "profile": name_of(plain.get("profile")),
              "seed": plain.get("seed")}
    if labels["column"] is not None and plain.get("job") != "summary":
        labels["dataset"] = None          # a synthetic column: the column names the data
    return {k: v for k, v in labels.items() if v is not None and not isinstance(v, dict)}


def _make_logger(cfg):
    if "logger" not in cfg or cfg.logger is None:
        return None
    import hydra

    return hydra.utils.instantiate(cfg.logger)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def scalar_metrics(metrics: dict) -> dict:
    """What a logger gets of a job's metrics: its numbers, and the mean of each list of
    numbers (``ap_runs`` -> ``ap_mean``: one value per job a dashboard can chart)."""
    out = {k: v for k, v in metrics.items() if _number(v)}
    for k, v in metrics.items():
        if isinstance(v, list) and v and all(_number(x) for x in v):
            out.setdefault(k.removesuffix("_runs") + "_mean", sum(v) / len(v))
    return out


def log_to_logger(cfg, plain: dict, chash: str, metrics: dict, wall: float) -> bool:
    """Send the job's config (a DictConfig), labels and scalar metrics to the configured
    logger; a failure is one line on stderr (the result is already written). True when
    logged."""
    logger = None
    try:
        logger = _make_logger(cfg)
        if logger is None:
            return False
        labels = run_labels(plain)
        scalars = scalar_metrics(metrics)
        # labels under ``by.`` (``study``, ``profile``, ``reading`` are config nodes too)
        logger.log_hyperparams({"config_hash": chash, **{f"by.{k}": v for k, v in labels.items()},
                                **_flatten(plain)})
        if type(logger).__name__ == "WandbLogger":
            run = logger.experiment
            run.tags = tuple(dict.fromkeys([*(run.tags or ()),
                                            *(f"{k}:{v}" for k, v in labels.items())]))
        logger.log_metrics({**scalars, "wall_s": wall})
        logger.finalize("success")
        return True
    except Exception as exc:
        detail = str(exc).splitlines()[0][:160] if str(exc) else ""
        print(f"warning: logger {type(logger).__name__ if logger else cfg.logger.get('_target_')}"
              f" failed ({type(exc).__name__}: {detail}); the result is in "
              f"{cfg.paths.output_dir}/result.json", file=sys.stderr)
        return False
    finally:
        if logger is not None and type(logger).__name__ == "WandbLogger":
            try:
                import wandb

                wandb.finish()
            except Exception:
                pass


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
