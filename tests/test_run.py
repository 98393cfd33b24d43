"""The Hydra entry point: one run, a multirun, and skipping a finished job on rerun."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "faux.run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_single_run_writes_result(tmp_path):
    r = _run("data=magic", f"paths.log_dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    (res_path,) = tmp_path.glob("run/runs/*/result.json")
    res = json.loads(res_path.read_text())
    assert res["status"] == "ok" and len(res["config_hash"]) == 16
    assert res["metrics"]["n_rows"] == 19020 and res["metrics"]["n_features"] == 10
    assert res["timings"]["wall_s"] > 0
    assert (res_path.parent / "csv" / "metrics.csv").exists()


def test_multirun_and_rerun_skips_finished_jobs(tmp_path):
    sweep = tmp_path / "sweep"
    args = ("-m", "data=backache,wdbc", f"hydra.sweep.dir={sweep}")
    r = _run(*args)
    assert r.returncode == 0, r.stderr
    results = sorted(sweep.glob("*/result.json"))
    assert len(results) == 2
    names = {json.loads(p.read_text())["metrics"]["dataset"] for p in results}
    assert names == {"backache", "wdbc"}
    before = [p.stat().st_mtime_ns for p in results]
    r = _run(*args)
    assert r.returncode == 0, r.stderr
    assert "skipped" in r.stdout + r.stderr
    assert [p.stat().st_mtime_ns for p in results] == before


def test_bad_dataset_file_is_a_one_line_error(tmp_path):
    bad = tmp_path / "data" / "pmlb" / "magic"
    bad.mkdir(parents=True)
    (bad / "magic.tsv.gz").write_bytes(b"not gzip at all")
    r = _run("data=magic", f"paths.log_dir={tmp_path}", f"paths.data_dir={tmp_path / 'data'}")
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "magic" in last


def test_config_hash_ignores_other_studies_profile_sections():
    from faux.run import config_hash

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
