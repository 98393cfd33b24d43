"""Sweep progress (faux.harness.progress): counts reach N/N for the basic and joblib launchers, every
cell is named, cached jobs count as done at once, and nothing lands in result files."""

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from faux.harness.progress import (
    SweepProgress,
    Tally,
    cell_name,
    expand_sweep,
    headline,
    read_events,
)

ROOT = Path(__file__).resolve().parents[1]
PROGRESS_LINE = re.compile(r"^\[(\d+)/(\d+)\] (\S+) (ok|cached|skipped|failed) ([\d.]+)s")


def _sweep(*args, env_extra=None):
    env = {**os.environ, "FAUX_PROGRESS": "plain", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "faux.run", "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _progress(stderr: str) -> list[tuple[int, int, str, str]]:
    out = []
    for line in stderr.splitlines():
        m = PROGRESS_LINE.match(line)
        if m:
            out.append((int(m[1]), int(m[2]), m[3], m[4]))
    return out


def test_joblib_sweep_then_basic_rerun_counts_every_cell(tmp_path):
    sweep = tmp_path / "sweep"
    r = _sweep("data=backache,wdbc", f"hydra.sweep.dir={sweep}", "hydra/launcher=joblib",
               "hydra.launcher.n_jobs=2")
    assert r.returncode == 0, r.stderr
    lines = _progress(r.stderr)
    assert [k for k, *_ in lines] == [1, 2] and {n for _, n, *_ in lines} == {2}
    assert {cell for *_, cell, _ in lines} == {"backache", "wdbc"}
    assert {status for *_, status in lines} == {"ok"}
    assert "[sweep] 2/2 jobs" in r.stderr and "2 ok" in r.stderr
    assert "rows x" in r.stderr                        # the summary job's headline
    for res in sweep.glob("*/result.json"):            # progress never goes into results
        text = res.read_text()
        assert "[1/2]" not in text and "elapsed" not in text and "cached" not in text
        assert "progress" not in json.loads(text) and json.loads(text)["status"] == "ok"
    assert "[1/2]" not in r.stdout                     # stderr only

    # a rerun with one more cell, basic launcher: the two finished jobs are cached
    r = _sweep("data=backache,wdbc,magic", f"hydra.sweep.dir={sweep}", "hydra/launcher=basic")
    assert r.returncode == 0, r.stderr
    lines = _progress(r.stderr)
    assert [k for k, *_ in lines] == [1, 2, 3] and {n for _, n, *_ in lines} == {3}
    status = {cell: st for *_, cell, st in lines}
    assert status == {"backache": "cached", "wdbc": "cached", "magic": "ok"}
    assert "[sweep] 3/3 jobs" in r.stderr and "2 cached, 1 ok" in r.stderr


def _cfg(sweep: Path, num: int, overrides: list[str]):
    return OmegaConf.create({"hydra": {
        "mode": "RunMode.MULTIRUN",
        "sweep": {"dir": str(sweep)},
        "sweeper": {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
                    "params": {"method": "a,b,c"}},
        "launcher": {"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"},
        "overrides": {"task": overrides},
        "runtime": {"output_dir": str(sweep / str(num))},
        "job": {"num": num}}})


def test_callback_in_process_ok_cached_failed_and_pickles(tmp_path, capsys):
    """The launcher half in this process, the job half in a pickled copy (as joblib does)."""
    sweep = tmp_path / "sweep"
    parent = SweepProgress(mode="plain", poll_s=0.05)
    parent.on_multirun_start(_cfg(sweep, 0, ["profile=tiny"]))
    worker = pickle.loads(pickle.dumps(parent))          # no thread or display travels
    assert worker._parent is None
    ok = SimpleNamespace(status=SimpleNamespace(name="COMPLETED"), _return_value=None)
    result = {"status": "ok", "job": "table1_cell", "config_hash": "x", "config": {},
              "metrics": {"ap_runs": [0.5, 0.7]}, "timings": {"wall_s": 1.0}}
    # job 0 computes (writes its result during the job); job 1 finds its result (cached)
    for num in range(3):                                  # Hydra makes the job folders first
        (sweep / str(num)).mkdir(parents=True)
    (sweep / "1" / "result.json").write_text(json.dumps(result))
    for num, method in ((0, "a"), (1, "b")):
        cfg = _cfg(sweep, num, ["profile=tiny", f"method={method}"])
        worker.on_job_start(cfg)
        if num == 0:
            (sweep / "0" / "result.json").write_text(json.dumps(result))
        worker.on_job_end(cfg, ok)
    # job 2 fails: Hydra's JobReturn keeps the exception in _return_value
    cfg = _cfg(sweep, 2, ["profile=tiny", "method=c"])
    (sweep / "2" / "run.log").write_text("boom\n")
    worker.on_job_start(cfg)
    worker.on_job_end(cfg, SimpleNamespace(status=SimpleNamespace(name="FAILED"),
                                           _return_value=RuntimeError("boom")))
    parent.on_multirun_end(_cfg(sweep, 0, []))
    err = capsys.readouterr().err
    lines = _progress(err)
    assert [(k, n) for k, n, *_ in lines] == [(1, 3), (2, 3), (3, 3)]
    assert {(c, s) for *_, c, s in lines} == {("a", "ok"), ("b", "cached"), ("c", "failed")}
    assert "AP 0.600 ± 0.141" in err
    assert "RuntimeError: boom" in err and str(sweep / "2" / "run.log") in err
    assert "[sweep] 3/3 jobs" in err and "1 cached, 1 failed, 1 ok" in err
    assert len(read_events(sweep / ".progress")) == 3
    # a new sweep into the same folder starts from zero (old events cleared)
    again = SweepProgress(mode="plain", poll_s=0.05)
    again.on_multirun_start(_cfg(sweep, 0, []))
    again.on_multirun_end(_cfg(sweep, 0, []))
    err = capsys.readouterr().err
    assert "[sweep] 0/3 jobs" in err and "not finished (3): a, b, c" in err


def test_eta_from_finished_durations():
    t = Tally(total=10, parallel=2, started=0.0)
    t.events = {0: {"status": "ok", "seconds": 4.0}, 1: {"status": "ok", "seconds": 6.0},
                2: {"status": "cached", "seconds": 0.0}}
    # 7 jobs left x mean 5 s (cached job left out) / 2 at once
    assert t.eta(now=10.0) == pytest.approx(17.5)
    t.parallel = None      # observed concurrency: 10 s of work in 5 s of wall time
    assert t.eta(now=5.0) == pytest.approx(17.5)
    assert Tally(total=3, started=0.0).eta(now=1.0) is None      # nothing computed yet


def test_expand_sweep_params_and_command_line():
    """The sweeper's params crossed with the command line's sweeps, as Hydra expands them."""
    cfg = OmegaConf.create({"hydra": {
        "sweeper": {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
                    "params": {"column": "S1,S2,S3", "method": "a,b"}},
        "overrides": {"task": ["experiment=t", "column=S2,S4", "seed=0,1,2"]}}})
    jobs, swept = expand_sweep(cfg)
    assert swept == ["column", "method", "seed"] and len(jobs) == 2 * 2 * 3
    assert cell_name(jobs[0], swept) == "S2/a/0" and cell_name(jobs[-1], swept) == "S4/b/2"
    cfg.hydra.overrides.task.append("column=S1")        # a plain value ends the column sweep
    jobs, swept = expand_sweep(cfg)
    assert swept == ["method", "seed"] and len(jobs) == 6
    cfg.hydra.sweeper._target_ = "hydra_plugins.optuna.OptunaSweeper"
    assert expand_sweep(cfg) == (None, [])


def test_cell_name_and_headlines():
    assert cell_name(["column=Synthetic-1", "method=faux", "profile=quick"],
                     ["column", "method"]) == "Synthetic-1/faux"
    assert headline({"job": "fig11_cell", "metrics": {"ap": 0.5, "ks": 0.1, "mse": 2.0}}) \
        == "AP 0.500 KS 0.100 MSE 2.000"
    assert headline({"job": "real_cell", "metrics": {"skipped": "ssl.csv absent"}}) \
        .startswith("skipped: ssl.csv")
    assert headline({"job": "new_job", "metrics": {"name": "x", "loss": [1.0, 3.0]}}) \
        == "loss 2"


def test_bad_mode_is_a_config_error():
    from faux.errors import ConfigError

    with pytest.raises(ConfigError, match="FAUX_PROGRESS"):
        SweepProgress(mode="loud")
