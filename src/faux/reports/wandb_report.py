"""Log an aggregated table (as a wandb.Table) and its figures to W&B; offline by default."""

from __future__ import annotations

import os
from pathlib import Path


def log_report(name: str, report, directory: str | os.PathLike = "outputs") -> Path:
    """One W&B run of job type ``aggregate`` holding the table and any PNG figures."""
    import wandb

    Path(directory).mkdir(parents=True, exist_ok=True)
    run = wandb.init(project="faux", job_type="aggregate", name=name, dir=str(directory),
                     mode=os.environ.get("WANDB_MODE", "offline"), reinit="finish_previous")
    try:
        payload = {name: wandb.Table(dataframe=report.frame.reset_index(drop=True))}
        for f in report.files:
            if Path(f).suffix == ".png":
                payload[f"{name}/{Path(f).stem}"] = wandb.Image(str(f))
        run.log(payload)
        return Path(run.dir)
    finally:
        wandb.finish()
