"""A job to the configured logger (``logger=csv|wandb``): its config, the labels a dashboard
groups it by, and its numbers. The result is written before the numbers are logged; a
logger that fails (W&B without network, a full disk under its folder) is one line on stderr
and never loses the result.

``logger=csv`` (:func:`log_to_logger`): a computed job's numbers, once it is done.
``logger=wandb`` (:class:`CellRun`): one run per cell of a sweep, named
``<study>/<column-or-dataset>/<method>/s<seed>`` with a stable id (the cell's folder), opened
before the job computes so that the Lightning curves of the models it trains land in it
(``<role>/s<seed>/<metric>``: target, reference, aux, fair, gan, cvae); a cell whose result
was already there (a rerun into the same sweep folder) or came from the result cache gets its
run too, tagged ``reused``, without curves. A cell records its run in ``wandb_run.json``;
a later invocation of the same sweep leaves a cell whose record matches (same run id, config
hash, mode and project) alone, so each cell has exactly one run however often the sweep runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path


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
        _warn(cfg, logger, exc)
        return False
    finally:
        if logger is not None and type(logger).__name__ == "WandbLogger":
            try:
                import wandb

                wandb.finish()
            except Exception:
                pass


#: config keys a cell's run name holds already (the other overrides of a cell follow it)
NAMED = ("column", "data", "method", "seed", "experiment", "profile", "paths", "hydra",
         "logger", "launcher", "trainer")


def is_wandb(cfg) -> bool:
    """Whether the job's logger is W&B (conf/logger/wandb.yaml or a WandbLogger target)."""
    node = cfg.get("logger") if "logger" in cfg else None
    return node is not None and "wandb" in str(node.get("_target_", "")).lower()


def cell_overrides() -> dict:
    """The running job's task overrides that its run name does not hold already (:data:`NAMED`)
    as ``{last key part: value}``; empty outside Hydra."""
    try:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return {}
        task = list(HydraConfig.get().overrides.task)
    except Exception:
        return {}
    from faux.harness.identity import job_key

    out = {}
    for o in job_key(task):
        key, _, value = o.partition("=")
        key = key.lstrip("+~")
        if key.split(".")[0] not in NAMED:
            out[key.rsplit(".", 1)[-1]] = value
    return out


def _warn(cfg, logger, exc: Exception) -> None:
    detail = str(exc).splitlines()[0][:160] if str(exc) else ""
    print(f"warning: logger {type(logger).__name__ if logger else cfg.logger.get('_target_')}"
          f" failed ({type(exc).__name__}: {detail}); the result is in "
          f"{cfg.paths.output_dir}/result.json", file=sys.stderr)


class CellRun:
    """The W&B run of one cell (``logger=wandb``); see the module's notes. Every method
    catches the logger's failures (one warning line, then nothing more is logged)."""

    def __init__(self, cfg, plain: dict, chash: str):
        from faux.harness.wandb_cells import cell_run_id, cell_run_name

        self.cfg, self.plain, self.chash = cfg, plain, chash
        self.out_dir = Path(cfg.paths.output_dir)
        self.labels = run_labels(plain)
        self.id = cell_run_id(self.out_dir)
        self.name = cell_run_name(self.labels, cell_overrides())
        self.project = cfg.logger.get("project") or os.environ.get("WANDB_PROJECT")
        self.logger = None
        self.broken = False

    def mode(self) -> str:
        """``offline`` unless the logger's config or ``WANDB_MODE`` say otherwise."""
        return str(self.cfg.logger.get("mode") or os.environ.get("WANDB_MODE") or "offline")

    def record_path(self) -> Path:
        from faux.harness.wandb_cells import RUN_RECORD

        return self.out_dir / RUN_RECORD

    def logged(self) -> bool:
        """Whether the cell's record names this very run with this config's numbers."""
        try:
            rec = json.loads(self.record_path().read_text())
        except (OSError, ValueError):
            return False
        return (rec.get("id"), rec.get("config_hash"), rec.get("mode"), rec.get("project")) == \
            (self.id, self.chash, self.mode(), self.project)

    def open(self, reused: bool = False) -> bool:
        """Start the cell's run (resuming it online; offline, an earlier folder of this run
        is superseded); True when it is open."""
        import hydra

        from faux.harness.wandb_cells import supersede_offline

        tags = [*(f"{k}:{v}" for k, v in self.labels.items()), *(["reused"] if reused else [])]
        try:
            self.logger = hydra.utils.instantiate(self.cfg.logger, id=self.id, name=self.name,
                                                  tags=tags, resume="allow", _convert_="all")
            run = self.logger.experiment
            if self.mode() == "offline":
                files = Path(run.dir)
                supersede_offline(files.parent.parent, self.id, keep=files.parent)
            return True
        except Exception as exc:
            self._fail(exc)
            return False

    @contextlib.contextmanager
    def curves(self):
        """Inside the block, the Lightning trainers of ``faux.models.training.fit`` log
        their curves to this run."""
        from faux.harness.curves import curves_to
        from faux.harness.wandb_cells import curve_factory

        if self.logger is None or self.broken:
            yield
            return
        with curves_to(curve_factory(self.logger.experiment)):
            yield

    def finish(self, result: dict, reused_from: str | None = None) -> bool:
        """Log the cell's config, labels and numbers (tag ``reused`` and ``reused_from`` for
        a result computed earlier), close the run and write the cell's record."""
        if self.logger is None or self.broken:
            return False
        try:
            run = self.logger.experiment
            if reused_from and "reused" not in (run.tags or ()):
                run.tags = (*(run.tags or ()), "reused")
            self.logger.log_hyperparams({"config_hash": self.chash,
                                         **{f"by.{k}": v for k, v in self.labels.items()},
                                         **_flatten(self.plain)})
            self.logger.log_metrics({**scalar_metrics(result.get("metrics") or {}),
                                     "wall_s": (result.get("timings") or {}).get("wall_s")})
            run.summary["reused_from"] = reused_from or ""
            record = {"id": run.id, "name": run.name, "project": run.project,
                      "mode": self.mode(), "config_hash": self.chash,
                      "tags": list(run.tags or ()), "reused": bool(reused_from),
                      "path": "/".join(str(p) for p in run.path) if isinstance(run.path, list)
                      else str(run.path), "url": run.url,
                      "offline_dir": str(Path(run.dir).parent) if self.mode() == "offline"
                      else None}
            self.logger.finalize("success")
            self.close()
            from faux.harness.results import write_json_atomic

            write_json_atomic(self.record_path(), record)
            return True
        except Exception as exc:
            self._fail(exc)
            return False

    def close(self, exit_code: int = 0) -> None:
        """``wandb.finish`` (joblib workers and the basic launcher reuse processes)."""
        if self.logger is None:
            return
        self.logger = None
        try:
            import wandb

            wandb.finish(exit_code=exit_code)
        except Exception:
            pass

    def _fail(self, exc: Exception) -> None:
        if not self.broken:
            _warn(self.cfg, self.logger, exc)
        self.broken = True
        self.close(exit_code=1)


def log_reused(cfg, plain: dict, chash: str, result: dict, reused_from: str) -> bool:
    """A finished cell's run (``logger=wandb``), tagged ``reused``, unless its record shows
    the cell is logged already; True when a run was written."""
    cell = CellRun(cfg, plain, chash)
    if cell.logged():
        return False
    return cell.open(reused=True) and cell.finish(result, reused_from)


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
