"""W&B offline: a job with logger=wandb leaves its metrics in the offline run directory."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wandb_offline_run_holds_the_metrics(tmp_path):
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    r = subprocess.run([sys.executable, "-m", "faux.run", "data=wdbc", "logger=wandb",
                        f"hydra.run.dir={tmp_path}"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    blob = run_file.read_bytes()
    res = json.loads((tmp_path / "result.json").read_text())
    # the offline run's records hold each metric's name and its value (as JSON text)
    for key in ("n_rows", "n_features", "positive_rate", "wall_s"):
        assert key.encode() in blob
    assert str(res["metrics"]["n_rows"]).encode() in blob


def test_aggregate_logs_the_table_offline(tmp_path, monkeypatch):
    import pandas as pd

    from faux.reports.base import Report
    from faux.reports.wandb_report import log_report

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    frame = pd.DataFrame({"column": ["Synthetic-1"], "method": ["faux_ng"], "ap_mean": [0.5]})
    run_dir = log_report("table1", Report(frame), tmp_path)
    (run_file,) = run_dir.parent.glob("run-*.wandb")
    blob = run_file.read_bytes()
    assert b"table1" in blob and b"table-file" in blob
