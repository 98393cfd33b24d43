"""Hydra entry point: ``python -m faux.run [overrides]``; one job = one cell of a table.

The config is resolved to plain dicts; the study of ``cfg.job`` (``faux.studies.get``) builds
its settings from them and runs. Around it, ``faux.harness``: the job's identity and
``result.json`` (skipped when finished with the same hash, stale on a rerun), the launch
guard and Ctrl-C, the logger. Ctrl-C is one line on stderr with the resume hint, exit 130;
``RAY_USAGE_STATS_ENABLED`` is set to 0 unless set (the Ray launcher attaches from here).
"""

from __future__ import annotations

from faux.kernels import pin as _pin_kernels

# one CPU kernel set on every machine, before anything imports torch (faux.kernels); the
# processes the launchers start inherit it
_pin_kernels()

import contextlib
import logging
import os
import re
import sys
import time
import warnings
from pathlib import Path

import hydra
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig

from faux.errors import FauxError
from faux.harness import disk, guard, identity, joblog, results
from faux.studies import job

log = logging.getLogger("faux.run")

# conf/hydra/launcher/<name>.yaml sets faux's values of a launcher plugin's config and Hydra
# merges it onto the plugin's config of the same name (hydra/launcher=<name>), warning that
# this merge is deprecated (it is what the plugins' docs select; Hydra 1.3 keeps it)
warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/\w+' is validated against "
                        r"ConfigStore schema", category=UserWarning)

job.register_resolvers()


def execute(cfg: DictConfig) -> dict:
    """Run one job for a composed config (what ``main`` does, without Hydra's wrapper)."""
    from faux.harness import validate

    plain = identity.plain_config(cfg)
    validate.check(plain)       # before the folder is touched (nothing marked stale)
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
    cell = None
    if wandb_cell:
        # the cell's W&B run is open while it computes: the curves of what it trains go
        # there (a bad config fails first, with no run)
        job.validate(plain)
        cell = joblog.CellRun(cfg, plain, chash)
        cell.open()
    try:
        with cell.curves() if cell is not None else contextlib.nullcontext():
            result, reused = _result(cfg, plain, chash, data)
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


def _result(cfg: DictConfig, plain: dict, chash: str, data: str | None):
    """The job's result, computed or (a memoised job) from the cache: (result, the cache
    file it came from or None)."""
    from faux import studies

    if cfg.job not in studies.MEMO_JOBS:
        job.validate(plain)
        return _compute(cfg, plain, chash, data), None
    # an identical job (same config hash, same faux code) of any sweep folder: its result
    # from the cache, computed once (a parallel twin waits on the key's lock); a hit
    # returns before torch or Lightning is imported, a bad config fails before it
    # touches the cache (no result can exist for it)
    from faux.harness.cache import Cache, json_dumps, json_loads

    cache = Cache((plain.get("paths") or {}).get("cache_dir"))
    key = identity.memo_key(chash)
    if not cache.path("results", key).exists():
        job.validate(plain)
    result = cache.get_or_build("results", key, lambda: _compute(cfg, plain, chash, data),
                                dumps=json_dumps, loads=json_loads)
    reused = str(cache.path("results", key)) if cache.builds == 0 else None
    return {**result, "config": plain, **({"reused_from": reused} if reused else {})}, reused


def _compute(cfg: DictConfig, plain: dict, chash: str, data: str | None) -> dict:
    """Run the job's study (its config validated): the result (status, hash, config, metrics,
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
            "config": plain, "metrics": metrics, "timings": {"wall_s": wall}}


def task(cfg: DictConfig) -> None:
    """One job (Hydra's task function): :func:`execute`; a FauxError is one line, exit 2."""
    try:
        execute(cfg)
    except FauxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


#: conf/ of this checkout (an absolute path: Hydra finds it whether this file runs as
#: ``__main__`` or as ``faux.run``)
CONF_DIR = Path(__file__).resolve().parents[2] / "conf"

_hydra_main = hydra.main(version_base="1.3", config_path=str(CONF_DIR),
                         config_name="config")(task)


_OLD_LAUNCHER = re.compile(r"^[+~]*launcher=")


def old_launcher_override(args: list[str]) -> str | None:
    """One line for an override of the removed ``launcher`` group (the launchers are Hydra's
    own group now: ``hydra/launcher=<name>``), else None."""
    for a in args:
        if _OLD_LAUNCHER.match(a):
            name = a.split("=", 1)[1]
            return (f"error: {a}: the launcher group is Hydra's own now; "
                    f"use hydra/launcher={name}")
    return None


def main() -> None:
    """``python -m faux.run [overrides]``: Hydra's main, with Ctrl-C as one line and the
    resume hint on stderr (exit 130, no traceback), and Ray's usage statistics off unless
    ``RAY_USAGE_STATS_ENABLED`` is set (the Ray launcher attaches from this process). An
    override of the removed ``launcher`` group is one line, exit 2. A full disk
    (``faux.harness.disk``) is the sweep's summary and one line naming the path and the free
    space, exit 1."""
    old = old_launcher_override(sys.argv[1:])
    if old:
        print(old, file=sys.stderr)
        sys.exit(2)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    guard.install_interrupt_handler()
    # Hydra raises instead of printing its report, so that a composition error is one line
    # here; any other error gets Hydra's report as before (unless the user set the variable)
    report = "HYDRA_FULL_ERROR" not in os.environ
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    try:
        _hydra_main()
    except (guard.Interrupted, KeyboardInterrupt):
        print(guard.interrupt_message(), file=sys.stderr, flush=True)
        sys.exit(130)
    except disk.SweepStopped as stop:
        disk_full(stop.line)
    except ConfigCompositionException as exc:
        if not report:
            raise
        print(f"error: {composition_error(exc)}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        if disk.is_full(exc):       # e.g. Hydra writing a job's .hydra/ on a full disk
            disk_full(disk.message(exc))
        if not report:
            raise
        del os.environ["HYDRA_FULL_ERROR"]
        hydra_report(exc)


def disk_full(line: str) -> None:
    """A full disk: the sweep's summary (every job counted), then one line, exit 1."""
    from faux.harness import progress

    progress.close_all()
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(1)


def hydra_report(exc: Exception) -> None:
    """Hydra's own report of an error (its traceback from Hydra's ``run_and_report`` on, the
    frames Hydra trims; exit 1)."""
    from hydra._internal.utils import run_and_report

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_name != "run_and_report":
        tb = tb.tb_next

    def again() -> None:
        raise exc.with_traceback(tb or exc.__traceback__)

    run_and_report(again)


_OVERRIDE = re.compile(r"(?:Error merging override|Could not override '[^']*'.*?use \+?)"
                       r"\s*([^\s]+=[^\s]*)", re.S)


def composition_error(exc: ConfigCompositionException) -> str:
    """One line for a config that fails to compose (a wrong type or an unknown key against
    the schema, ``faux.harness.schema``; an unknown group option): the override and what it
    breaks (``faux.harness.validate``'s words where the key has a rule)."""
    from faux.harness import validate

    text = str(exc).strip()
    first = text.splitlines()[0]
    cause = str(exc.__cause__).strip().splitlines()[0] if exc.__cause__ else ""
    found = _OVERRIDE.search(text)
    if found:
        key, value = found.group(1).lstrip("+~").split("=", 1)
        rule = validate.rule_for(key)
        if rule is not None and "not in" not in cause:
            return f"{key}={value}: {rule.expected()}"
        hint = f"; to add it: +{key}={value}" if "is not in struct" in cause else ""
        return f"{key}={value}: {cause or first}{hint}"
    if "Available options" in text:
        options = re.findall(r"^\t(\S+)$", text.split("Available options", 1)[1], re.M)
        return f"{first}; choose one of {', '.join(options)}"
    return f"{first} {cause}" if cause and cause != first else first


if __name__ == "__main__":
    # run the imported module's main, so that Hydra sees its task function as
    # ``faux.run.task`` wherever the entry point is started from
    from faux.run import main as _main

    _main()
