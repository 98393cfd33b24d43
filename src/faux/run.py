"""Hydra entry point: ``python -m faux.run [overrides]``; one job = one cell of a table.

The config is resolved to plain dicts; the study of ``cfg.job`` (``faux.studies.get``) builds
its settings from them and runs. Around it, ``faux.harness``: the job's identity and
``result.json`` (skipped when finished with the same hash, stale on a rerun), the launch
guard and Ctrl-C, the logger, and how the command ends (``faux.harness.exits``: every error
one line on stderr with its exit code).
"""

from __future__ import annotations

from faux.kernels import pin as _pin_kernels

# one CPU kernel set on every machine, before anything imports torch (faux.kernels); the
# processes the launchers start inherit it
_pin_kernels()

import contextlib
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import hydra
from omegaconf import DictConfig

from faux.errors import FauxError
from faux.harness import exits, identity, joblog, results, validate
from faux.methods import registry
from faux.studies import job

# a method is one of the registered ones, refused in one line before any job starts
validate.CHOICES["method"] = registry.names

log = logging.getLogger("faux.run")

# conf/hydra/launcher/<name>.yaml sets faux's values of a launcher plugin's config and Hydra
# merges it onto the plugin's config of the same name (hydra/launcher=<name>), warning that
# this merge is deprecated (it is what the plugins' docs select; Hydra 1.3 keeps it)
warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/\w+' is validated against "
                        r"ConfigStore schema", category=UserWarning)

job.register_resolvers()


def execute(cfg: DictConfig) -> dict:
    """Run one job for a composed config (what ``main`` does, without Hydra's wrapper).

    The config is checked once, in two halves: the harness's numbers
    (``faux.harness.validate``) before the folder is touched (nothing marked stale), the
    job's own checks (``faux.studies.job.validate``: its column, its method) only when it
    is to compute, before a W&B run opens (a finished job or a memoised result needs no
    torch)."""
    plain = identity.plain_config(cfg)
    validate.check(plain)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = job.data_sha256(plain)
    chash = job.config_hash(plain, data)
    done = results.finished(out_dir, chash)
    wandb_cell = joblog.is_wandb(cfg)
    if done is not None:
        log.info("job already finished (config %s) in %s: skipped", chash, out_dir)
        if wandb_cell:      # the cell's run, unless this sweep folder logged it already
            joblog.log_reused(cfg, plain, chash, done, str(out_dir / results.RESULT))
        return done
    results.mark_stale(out_dir)
    memo = _memo(cfg, plain, chash)
    if memo is None or not memo[0].path("results", memo[1]).exists():
        job.validate(plain)
    cell = None
    if wandb_cell:
        # the cell's W&B run is open while it computes: the curves of what it trains go
        # there (a bad config failed above, with no run)
        cell = joblog.CellRun(cfg, plain, chash)
        cell.open()
    try:
        with cell.curves() if cell is not None else contextlib.nullcontext():
            result, reused = _result(cfg, plain, chash, data, memo)
    except BaseException:
        if cell is not None:
            cell.close(exit_code=1)
        raise
    results.write_json_atomic(out_dir / results.RESULT, result)
    results.remember_config_hash(out_dir, data, chash,
                                 (plain.get("paths") or {}).get("cache_dir"))
    if reused:
        log.info("same job (config %s, same code) already computed: result reused from %s",
                 chash, reused)
    if cell is not None:
        cell.finish(result, reused)
    elif not reused:
        joblog.log_to_logger(cfg, plain, chash, result["metrics"], result["timings"]["wall_s"])
    return result


def _memo(cfg: DictConfig, plain: dict, chash: str):
    """``(cache, key)`` of a memoised job's result (``studies.MEMO_JOBS``), else None."""
    from faux import studies

    if cfg.job not in studies.MEMO_JOBS:
        return None
    from faux.harness.cache import Cache

    return Cache((plain.get("paths") or {}).get("cache_dir")), identity.memo_key(chash)


def _result(cfg: DictConfig, plain: dict, chash: str, data: str | None, memo):
    """The job's result, computed or (a memoised job) from the cache: (result, the cache
    file it came from or None). An identical memoised job (same config hash, same faux code)
    of any sweep folder: its result from the cache, computed once (a parallel twin waits on
    the key's lock); a hit returns before torch or Lightning is imported."""
    if memo is None:
        return _compute(cfg, plain, chash, data), None
    from faux.harness.cache import json_dumps, json_loads

    cache, key = memo
    result = cache.get_or_build("results", key, lambda: _compute(cfg, plain, chash, data),
                                dumps=json_dumps, loads=json_loads)
    reused = str(cache.path("results", key)) if cache.builds == 0 else None
    return {**result, "config": plain, **({"reused_from": reused} if reused else {})}, reused


def _compute(cfg: DictConfig, plain: dict, chash: str, data: str | None) -> dict:
    """Run the job's study (its config checked): the result (status, hash, config, metrics,
    time)."""
    import pytorch_lightning as pl
    import torch

    from faux import studies

    study = studies.get(cfg.job)
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    pl.seed_everything(int(cfg.seed), workers=True, verbose=False)
    t0 = time.perf_counter()
    metrics = study.run(study.Settings.from_config(plain), Path(cfg.paths.output_dir), log.info)
    wall = time.perf_counter() - t0
    return {"status": "ok", "job": cfg.job, "config_hash": chash, "data_sha256": data,
            "config": plain, "metrics": metrics,
            "metrics_sha256": results.metrics_digest(metrics), "timings": {"wall_s": wall}}


def task(cfg: DictConfig) -> None:
    """One job (Hydra's task function): :func:`execute`; a FauxError is one line, exit 2."""
    try:
        execute(cfg)
    except FauxError as exc:
        exits.fail(str(exc))


#: conf/ of this checkout (an absolute path: Hydra finds it whether this file runs as
#: ``__main__`` or as ``faux.run``)
CONF_DIR = Path(__file__).resolve().parents[2] / "conf"

_hydra_main = hydra.main(version_base="1.3", config_path=str(CONF_DIR),
                         config_name="config")(task)


def main() -> None:
    """``python -m faux.run [overrides]``: Hydra's main, every error one line on stderr with
    its exit code (``faux.harness.exits``)."""
    exits.run_main(_hydra_main, sys.argv[1:])


if __name__ == "__main__":
    # run the imported module's main, so that Hydra sees its task function as
    # ``faux.run.task`` wherever the entry point is started from
    from faux.run import main as _main

    _main()
