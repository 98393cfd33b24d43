"""The Hydra entry point: one run, a multirun, and skipping a finished job on rerun."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "faux.run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_single_run_writes_result_and_a_crashed_rerun_leaves_no_current_result(tmp_path):
    """One run (the default folder under paths.log_dir), then the same job rerun into that
    folder over a corrupt dataset file: a one-line error, exit 2, and the old result kept
    only as stale."""
    r = _run("data=magic", f"paths.log_dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    (res_path,) = tmp_path.glob("run/runs/*/result.json")
    res = json.loads(res_path.read_text())
    assert res["status"] == "ok" and len(res["config_hash"]) == 16
    assert res["metrics"]["n_rows"] == 19020 and res["metrics"]["n_features"] == 10
    assert res["timings"]["wall_s"] > 0
    assert (res_path.parent / "csv" / "metrics.csv").exists()

    out = res_path.parent
    bad = tmp_path / "bad" / "pmlb" / "magic"
    bad.mkdir(parents=True)
    (bad / "magic.tsv.gz").write_bytes(b"not gzip at all")
    r = _run("data=magic", f"hydra.run.dir={out}", f"paths.data_dir={tmp_path / 'bad'}")
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "magic" in last     # the bad file: one line
    assert not (out / "result.json").exists()               # the old result is not current
    stale = json.loads((out / "result.stale.json").read_text())
    assert stale["metrics"]["dataset"] == "magic"


def test_multirun_rerun_skips_finished_jobs_and_other_overrides_overwrite_no_cell(tmp_path):
    sweep = tmp_path / "sweep"
    args = ("-m", "data=backache,wdbc", f"hydra.sweep.dir={sweep}")
    r = _run(*args)
    assert r.returncode == 0, r.stderr
    results = sorted(sweep.glob("*/result.json"))
    assert len(results) == 2
    first = {json.loads(p.read_text())["metrics"]["dataset"]: p for p in results}
    assert set(first) == {"backache", "wdbc"}
    before = [p.stat().st_mtime_ns for p in results]
    r = _run(*args)
    assert r.returncode == 0, r.stderr
    assert "skipped" in r.stdout + r.stderr
    assert [p.stat().st_mtime_ns for p in results] == before

    # the finding: `make table1 ARGS=method=faux_ng` reran job 0 (fta) as faux_ng in
    # the same folder; here the second sweep's job 0 is wdbc, the first sweep's was backache
    stamp = {k: p.stat().st_mtime_ns for k, p in first.items()}
    r = _run("-m", "data=wdbc", f"hydra.sweep.dir={sweep}")
    assert r.returncode == 0, r.stderr
    after = {json.loads(p.read_text())["metrics"]["dataset"]: p for p in sweep.glob("*/result.json")}
    assert after == first                                   # same folders, nothing overwritten
    assert {k: p.stat().st_mtime_ns for k, p in after.items()} == stamp   # wdbc: skipped
    assert "skipped" in r.stdout + r.stderr


def test_config_hash_ignores_other_studies_profile_sections():
    from faux.studies.job import config_hash

    base = {"job": "table1_cell", "seed": 0, "paths": {"a": 1},
            "profile": {"runs": 3, "fig5": {"draws": 2}, "real": {"seeds": 2}}}
    other = json.loads(json.dumps(base))
    other["profile"]["fig5"]["draws"] = 5          # another study's section changed
    del other["profile"]["real"]
    other["paths"]["a"] = 2                        # volatile
    assert config_hash(base) == config_hash(other)
    changed = json.loads(json.dumps(base))
    changed["profile"]["runs"] = 10                # a key this job reads
    assert config_hash(changed) != config_hash(base)
    fig5 = {**json.loads(json.dumps(base)), "job": "fig5_cell"}
    fig5_more = json.loads(json.dumps(fig5))
    fig5_more["profile"]["fig5"]["draws"] = 5      # the fig5 job's own section counts
    assert config_hash(fig5) != config_hash(fig5_more)


def test_config_hash_of_a_one_method_job_leaves_out_other_methods_options():
    """Changing faux_ig's baseline or FlipTest's GAN changes only those methods' jobs."""
    from faux.studies.job import config_hash

    def cfg(method, **opts):
        return {"job": "table1_cell", "method": method, "seed": 0, "profile": {"gan_steps": 10},
                "model": {"aux": {"width": 8}, "gan": {"lr": 1e-3}},
                "synthetic": {"options": {"output": "prob", "ng": "sample",
                                          "ig_baseline": "zeros", **opts},
                              "unfair_map": {}}}

    for m in ("fta", "faux_ng", "lic_ub", "fliptest"):
        assert config_hash(cfg(m)) == config_hash(cfg(m, ig_baseline="mean")), m
    assert config_hash(cfg("faux_ig")) != config_hash(cfg("faux_ig", ig_baseline="mean"))
    assert config_hash(cfg("faux_ng")) != config_hash(cfg("faux_ng", ng="feature"))
    assert config_hash(cfg("faux_ng")) != config_hash(cfg("faux_ng", output="logit"))  # shared
    gan = cfg("faux"), cfg("faux")
    gan[1]["model"]["gan"]["lr"] = 1.0
    assert config_hash(gan[0]) == config_hash(gan[1])
    flip = cfg("fliptest"), cfg("fliptest")
    flip[1]["model"]["gan"]["lr"] = 1.0
    assert config_hash(flip[0]) != config_hash(flip[1])


# ------------------------------------------------------------------ issue 15: reliability
def _env(**kw):
    import os

    env = {**os.environ, "FAUX_PROGRESS": "off", **kw}
    return env


def _copy_backache(root: Path) -> Path:
    import shutil

    src = Path("/work/shared/data") if Path("/work/shared/data/pmlb").is_dir() else None
    from faux.data.pmlb_data import pmlb_path

    dest = pmlb_path("backache", root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(pmlb_path("backache", src), dest)
    return dest


def test_job_folder_is_named_by_its_overrides_not_its_number():
    from faux.harness.identity import job_dir_name

    a = job_dir_name(["method=fta", "column=Synthetic-1", "profile=quick", "logger=csv"])
    assert a == job_dir_name(["column=Synthetic-1", "profile=quick", "method=fta"])  # order, logger
    assert a == job_dir_name(["column=Synthetic-1", "profile=quick", "method=fta", "logger=wandb"])
    assert a != job_dir_name(["column=Synthetic-1", "profile=quick", "method=faux_ng"])
    assert a.startswith("j") and len(a) == 13


def test_same_sweep_over_a_changed_data_root_reruns(tmp_path):
    import gzip

    data = tmp_path / "data"
    path = _copy_backache(data)
    sweep = tmp_path / "sweep"
    args = ("-m", "data=backache", f"hydra.sweep.dir={sweep}")
    env = _env(FAUX_DATA_DIR=str(data))
    run = lambda: subprocess.run([sys.executable, "-m", "faux.run", *args], cwd=ROOT,  # noqa: E731
                                 capture_output=True, text=True, timeout=300, env=env)
    r = run()
    assert r.returncode == 0, r.stderr
    (res_path,) = sweep.glob("*/result.json")
    before = json.loads(res_path.read_text())
    r = run()
    assert "skipped" in r.stdout + r.stderr                 # unchanged data: skipped
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    head, row = lines[0].split("\t"), lines[1].split("\t")
    j = next(i for i, h in enumerate(head) if h != "target")
    row[j] = str(float(row[j]) + 1.0)                       # one value of one row
    lines[1] = "\t".join(row)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    r = run()
    assert r.returncode == 0, r.stderr
    assert "skipped" not in r.stdout + r.stderr             # changed data: the job reran
    after = json.loads(res_path.read_text())
    assert after["data_sha256"] != before["data_sha256"]
    assert after["config_hash"] != before["config_hash"]


def test_a_failing_logger_never_loses_the_result(tmp_path, monkeypatch, capsys):
    from hydra import compose, initialize_config_dir

    import faux.run as frun

    class Broken:
        def log_hyperparams(self, params):
            raise ConnectionError("wandb: network unreachable\nretrying...")

    monkeypatch.setattr("faux.harness.joblog._make_logger", lambda cfg: Broken())
    monkeypatch.setenv("FAUX_DATA_DIR", "/work/shared/data")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["data=backache", f"paths.output_dir={tmp_path}"])
    res = frun.execute(cfg)
    assert res["status"] == "ok"
    stored = json.loads((tmp_path / "result.json").read_text())
    assert stored["metrics"] == json.loads(json.dumps(res["metrics"]))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: logger Broken failed (ConnectionError")
    assert "result.json" in err[0]


def test_write_json_atomic_leaves_no_part(tmp_path):
    from faux.harness.results import write_json_atomic

    write_json_atomic(tmp_path / "result.json", {"a": 1})
    write_json_atomic(tmp_path / "result.json", {"a": 2})
    assert json.loads((tmp_path / "result.json").read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def _bad_option(tmp_path, *overrides):
    cache = tmp_path / "cache"
    r = subprocess.run([sys.executable, "-m", "faux.run", "experiment=table1", "method=fta",
                        "column=Synthetic-1", f"paths.log_dir={tmp_path}", *overrides],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=_env(FAUX_CACHE_DIR=str(cache)))
    assert r.returncode == 2, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()
    assert len(last) == 1, r.stderr                          # one line, no traceback
    assert not [p for p in cache.rglob("*") if p.is_file()]  # nothing built or trained
    return last[0]


def test_fusion_sum_is_refused_before_training(tmp_path):
    line = _bad_option(tmp_path, "columns.Synthetic-1.fusion=sum")
    assert line.startswith("error: unknown fusion 'sum'")


def test_bias_abc_is_a_one_line_error(tmp_path):
    line = _bad_option(tmp_path, "columns.Synthetic-1.bias=abc")
    assert line.startswith("error: bias must be a number in [0, 1]") and "abc" in line


def test_unknown_method_is_refused_before_training(tmp_path):
    line = _bad_option(tmp_path, "method=nope")
    assert line.startswith("error:") and "nope" in line


# ------------------------------------------------------------------ issue 17: W&B labels
def test_run_labels_name_study_cell_method_reading_profile():
    from faux.harness.joblog import run_labels

    cfg = {"task_name": "table1", "job": "table1_cell", "seed": 0, "column": "Synthetic-1",
           "method": "fta", "reading": {"name": "gumbel", "ng": "feature"},
           "profile": {"name": "quick", "runs": 3}, "data": {"name": "magic", "kind": "pmlb"}}
    assert run_labels(cfg) == {"study": "table1", "job": "table1_cell", "column": "Synthetic-1",
                               "method": "fta", "reading": "gumbel", "profile": "quick",
                               "seed": 0}
    real = {"task_name": "real", "job": "real_cell", "seed": 1, "data": {"name": "adult"},
            "profile": {"name": "paper"}}
    assert run_labels(real) == {"study": "real", "job": "real_cell", "dataset": "adult",
                                "profile": "paper", "seed": 1}


# a W&B job run carries the labels as config and tags: tests/test_wandb.py (the offline
# job there, one run for both checks)


@pytest.mark.slow
def test_online_wandb_without_a_server_keeps_the_result_and_gives_up_soon(tmp_path):
    """Finding 4a: WANDB_MODE=online with no reachable server cost 110 s, exit 1, no result.
    Now: result.json first, the logger's failure one warning line, exit 0, bounded wait."""
    import os

    job = tmp_path / "job"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_MODE="online", WANDB_SILENT="true", WANDB_BASE_URL="http://127.0.0.1:9",
               WANDB_API_KEY="0" * 40, FAUX_PROGRESS="off")
    r = subprocess.run([sys.executable, "-m", "faux.run", "data=wdbc", "logger=wandb",
                        f"hydra.run.dir={job}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((job / "result.json").read_text())["metrics"]["dataset"] == "wdbc"
    warn = [x for x in r.stderr.splitlines() if x.startswith("warning: logger WandbLogger failed")]
    assert len(warn) == 1 and "Traceback" not in r.stderr


def test_an_online_logger_waits_for_the_server_less_than_wandbs_own_default(tmp_path,
                                                                          monkeypatch):
    """wandb waits 90 s for a server that does not answer; a job's logger sets its own wait
    (INIT_TIMEOUT_S) unless the user set WANDB_INIT_TIMEOUT."""
    import os

    from faux.reports.wandb_report import INIT_TIMEOUT_S, wandb_logger

    monkeypatch.delenv("WANDB_INIT_TIMEOUT", raising=False)
    wandb_logger(mode="offline", save_dir=str(tmp_path), project="p")
    assert os.environ["WANDB_INIT_TIMEOUT"] == str(INIT_TIMEOUT_S) and INIT_TIMEOUT_S < 90
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "7")
    wandb_logger(mode="offline", save_dir=str(tmp_path), project="p")
    assert os.environ["WANDB_INIT_TIMEOUT"] == "7"


def test_scalar_metrics_add_the_mean_of_each_list():
    from faux.harness.joblog import scalar_metrics

    m = {"ap_runs": [0.2, 0.4], "positive_rate": 0.3, "skipped": False, "column": "S",
         "gan_ks_runs": [], "mixed": [1, "a"]}
    assert scalar_metrics(m) == pytest.approx({"ap_mean": 0.3, "positive_rate": 0.3})


def test_memoised_result_is_keyed_by_config_hash_and_code(monkeypatch):
    """A memo entry is reached only by the same config hash and the same faux code."""
    import faux.harness.cache
    from faux.harness.identity import memo_key

    a = memo_key("abc")
    assert a == memo_key("abc") and memo_key("abd") != a
    monkeypatch.setattr(faux.harness.cache, "package_version", lambda: "otherversion")
    assert memo_key("abc") != a                            # changed code: another entry


# ------------------------------------------------------------- issue 12: the covering sweeper
def test_covering_sweeper_composes_every_value_once_not_every_job(monkeypatch):
    """Before launch the sweeper composes a covering sample: every override of the batch in
    at least one composed job, 15 of Table 1's 64, in the batch's order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    from hydra_plugins.faux_sweeper.faux_sweeper import CoveringSweeper, covering_sample

    batch = [[f"column=Synthetic-{c}", f"method=m{m}"] for c in range(1, 9) for m in range(8)]
    sample = covering_sample(batch)
    assert len(sample) == 15 and sample[0] == batch[0]
    assert {o for job in sample for o in job} == {o for job in batch for o in job}
    assert [batch.index(job) for job in sample] == sorted(batch.index(job) for job in sample)
    seen = []
    monkeypatch.setattr(BasicSweeper, "validate_batch_is_legal", lambda self, b: seen.append(b))
    CoveringSweeper(max_batch_size=None, params=None).validate_batch_is_legal(batch)
    assert seen == [sample]


def test_sweep_with_a_bad_value_fails_before_any_job_runs(tmp_path):
    sweep = tmp_path / "sweep"
    r = _run("-m", "data=backache,no_such_data", f"hydra.sweep.dir={sweep}")
    assert r.returncode != 0 and "no_such_data" in r.stderr
    assert not list(sweep.glob("*/result.json"))
    cfg = _run("--cfg", "hydra", "--package", "hydra.sweeper")
    assert "CoveringSweeper" in cfg.stdout, cfg.stderr
