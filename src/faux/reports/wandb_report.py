"""W&B without surprises: offline by default, and nothing sent that nobody asked for.

:data:`PRIVATE_ENV` lists what wandb 0.31 would otherwise do on its own: report errors and
usage telemetry to W&B's endpoint (``WANDB_ERROR_REPORTING``; with it off the wandb-core
service also runs ``--no-observability``), sample system metrics (``x_disable_stats``) and
collect host / git / package metadata (``x_disable_meta``, ``x_disable_machine_info``,
``WANDB_DISABLE_GIT``, ``WANDB_DISABLE_CODE``). :func:`private_wandb_env` sets each as a
default only, so a user who exports one of them (e.g. ``WANDB_ERROR_REPORTING=true``) turns
it back on. Both entry points call it before wandb starts: :func:`wandb_logger` (the
``logger=wandb`` job logger, conf/logger/wandb.yaml) and :func:`log_report` (aggregate).

The per-cell runs of a sweep (their names, ids, curves and records) are
:mod:`faux.harness.wandb_cells`; :func:`log_report`'s summary run lists them
(:func:`cell_runs`).
"""

from __future__ import annotations

import json
import os
from collections.abc import MutableMapping
from pathlib import Path

from faux.harness.wandb_cells import RUN_RECORD, stable_hash, supersede_offline

#: environment defaults (wandb 0.31 names; ``WANDB_X_<NAME>`` maps to the ``x_<name>`` setting)
PRIVATE_ENV = {
    "WANDB_MODE": "offline",
    "WANDB_ERROR_REPORTING": "false",
    "WANDB_X_DISABLE_STATS": "true",
    "WANDB_X_DISABLE_META": "true",
    "WANDB_X_DISABLE_MACHINE_INFO": "true",
    "WANDB_DISABLE_GIT": "true",
    "WANDB_DISABLE_CODE": "true",
}


#: seconds an online job logger waits for the W&B server (``WANDB_INIT_TIMEOUT`` overrides)
INIT_TIMEOUT_S = 15


def private_wandb_env(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set :data:`PRIVATE_ENV`'s values where the user has not set them; return those set."""
    environ = os.environ if environ is None else environ
    added = {k: v for k, v in PRIVATE_ENV.items() if k not in environ}
    environ.update(added)
    return added


def wandb_logger(**kwargs):
    """A Lightning ``WandbLogger`` (offline unless ``mode``/``WANDB_MODE`` say otherwise),
    created after :func:`private_wandb_env`."""
    from pytorch_lightning.loggers import WandbLogger

    private_wandb_env()
    # online without a reachable server: give up after this many seconds, not wandb's 90
    # (the job's result.json is already written; faux.harness.joblog reports the failure in one line)
    os.environ.setdefault("WANDB_INIT_TIMEOUT", str(INIT_TIMEOUT_S))
    if kwargs.get("mode") is None:
        kwargs["mode"] = os.environ["WANDB_MODE"]
    return WandbLogger(**kwargs)


def cell_runs(sweep_dirs) -> list[dict]:
    """The run records (:data:`RUN_RECORD`) of the cells under ``sweep_dirs``, by name."""
    out = []
    for d in sweep_dirs or []:
        for p in sorted(Path(d).rglob(RUN_RECORD)):
            try:
                out.append({**json.loads(p.read_text()), "cell_dir": str(p.parent)})
            except (OSError, ValueError):
                continue
    return sorted(out, key=lambda r: (str(r.get("name")), str(r.get("id"))))


def log_report(name: str, report, directory: str | os.PathLike = "outputs",
               claims=None, sweep_dirs=None) -> Path:
    """One W&B run of job type ``aggregate`` (group = the study, tag ``study:<name>``)
    holding the table, any PNG figures, the claims lines (``claims``, a list of str) and,
    with ``sweep_dirs``, the table ``<name>/cell_runs`` of the per-cell runs (name, id, run
    path, url, offline folder, reused) with their ids in the config (``cell_run_ids``). Its
    id is stable per table and sweep folders (a rerun replaces it, as a cell's does)."""
    private_wandb_env()
    import wandb

    Path(directory).mkdir(parents=True, exist_ok=True)
    cells = cell_runs(sweep_dirs)
    mode = os.environ["WANDB_MODE"]
    run_id = "summary-" + stable_hash(name, *sorted(str(Path(d).resolve()) for d in sweep_dirs or []))
    run = wandb.init(project="faux", job_type="aggregate", name=name, dir=str(directory),
                     group=name, tags=[f"study:{name}", "summary"], id=run_id, resume="allow",
                     config={"study": name, "claims": list(claims or []),
                             "cell_run_ids": [c.get("id") for c in cells]},
                     mode=mode, reinit="finish_previous")
    if mode == "offline":
        supersede_offline(Path(run.dir).parent.parent, run_id, keep=Path(run.dir).parent)
    try:
        payload = {name: wandb.Table(dataframe=report.frame.reset_index(drop=True))}
        if cells:
            cols = ["name", "id", "path", "url", "offline_dir", "reused", "config_hash"]
            payload[f"{name}/cell_runs"] = wandb.Table(
                columns=cols, data=[[str(c.get(k) or "") for k in cols] for c in cells])
        if claims:
            payload[f"{name}/claims"] = wandb.Table(columns=["claim"],
                                                    data=[[str(c)] for c in claims])
        for f in report.files:
            if Path(f).suffix == ".png":
                payload[f"{name}/{Path(f).stem}"] = wandb.Image(str(f))
        run.log(payload)
        return Path(run.dir)
    finally:
        wandb.finish()
