"""A sweep's jobs as the launching process knows them: the expanded overrides and the swept
keys (:func:`expand_sweep`, as Hydra's basic sweeper expands them), their number, how many
run at once, and the name of a job's cell (the values of the swept keys)."""

from __future__ import annotations

import os

from omegaconf import DictConfig, OmegaConf


def expand_sweep(cfg: DictConfig) -> tuple[list[list[str]] | None, list[str]]:
    """The jobs' overrides as the basic sweeper expands them, and the swept keys.

    ``(None, [])`` for another sweeper (its number of jobs is not known up front, except
    ``n_trials`` of optimising sweepers, which :func:`job_count` reads).
    """
    sweeper = OmegaConf.select(cfg, "hydra.sweeper._target_", default="") or ""
    if not sweeper.endswith(("BasicSweeper", "CoveringSweeper")):
        return None, []
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        # as Hydra does: the sweeper's params resolved (instantiate resolves them, e.g. a
        # resolver listing the methods), the command line's overrides as typed
        params = OmegaConf.select(cfg, "hydra.sweeper.params", default=None)
        params = OmegaConf.to_container(params, resolve=True) if params is not None else {}
        args = [f"{k}={v}" for k, v in params.items()]
        args += list(OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False))
        overrides = OverridesParser.create().parse_overrides(args)
        jobs = BasicSweeper.split_arguments(overrides, None)[0]
    except Exception:       # e.g. glob() sweeps need Hydra's config loader: count as unknown
        return None, []
    swept = []
    for o in overrides:
        key = o.get_key_element()
        if o.is_sweep_override():
            if key not in swept:
                swept.append(key)
        elif key in swept:          # a later plain value replaces an earlier sweep
            swept.remove(key)
    return jobs, swept


def job_count(cfg: DictConfig) -> int | None:
    jobs, _ = expand_sweep(cfg)
    if jobs is not None:
        return len(jobs)
    n = OmegaConf.select(cfg, "hydra.sweeper.n_trials", default=None)
    return int(n) if isinstance(n, int) else None


def parallelism(cfg: DictConfig) -> int | None:
    """Jobs running at once for the local launchers; None when unknown (Ray, SLURM)."""
    target = OmegaConf.select(cfg, "hydra.launcher._target_", default="") or ""
    if target.endswith("BasicLauncher"):
        return 1
    if "joblib" in target.lower():
        try:
            n = int(OmegaConf.select(cfg, "hydra.launcher.n_jobs", default=-1))
        except (TypeError, ValueError):
            return None
        cpus = os.cpu_count() or 1
        return max(1, n if n > 0 else cpus + 1 + n)
    return None


def cell_name(overrides: list[str], swept: list[str]) -> str:
    """``Synthetic-1/faux`` from the job's overrides: the values of the swept keys."""
    kv = dict(o.split("=", 1) for o in overrides if "=" in o)
    keys = [k.lstrip("+~") for k in swept]
    kv = {k.lstrip("+~"): v for k, v in kv.items()}
    vals = [kv[k] for k in keys if k in kv]
    return "/".join(vals) if vals else " ".join(overrides) or "(no overrides)"
