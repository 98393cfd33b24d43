"""Aggregation cannot mix or lose results (issue 15): every result.json is checked against
its job's .hydra/config.yaml, malformed files are one-line reports, every cell of the
sweep's grid is accounted for, and the exit status says whether anything is missing;
the end-of-run summary and provenance (issue 17)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from faux import aggregate
from faux.harness.identity import job_dir_name
from faux.reports.sweep import check_result, expected_jobs, read_sweep
from faux.studies.job import config_hash

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("Synthetic-1", "Synthetic-2")
METHODS = ("fta", "faux")


def _config(column, method):
    return {"job": "table1_cell", "task_name": "table1", "seed": 0, "column": column,
            "method": method, "profile": {"name": "tiny", "runs": 2},
            "paths": {"output_dir": "${hydra:runtime.output_dir}"},
            "logger": {"save_dir": "${paths.output_dir}"}}


def _job(sweep: Path, column, method, ap=0.5, config=None, folder=None):
    ovr = [f"column={column}", f"method={method}", "experiment=table1"]
    d = sweep / (folder or job_dir_name(ovr))
    (d / ".hydra").mkdir(parents=True, exist_ok=True)
    cfg = config or _config(column, method)
    (d / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    (d / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(ovr))
    (d / "table1_cell.log").write_text("log\n")
    plain = {k: v for k, v in _config(column, method).items() if k not in ("paths", "logger")}
    metrics = {"column": column, "method": method, "xc": "magic", "xy": "backache",
               "bias": 0.5, "fusion": "outer", "ap_runs": [ap, ap + 0.01],
               "ap_top30_runs": [ap, ap], "positive_rate": 0.3,
               "threshold": 0.01}
    res = {"status": "ok", "job": "table1_cell", "config_hash": config_hash(plain, "d" * 64),
           "data_sha256": "d" * 64, "config": plain, "metrics": metrics,
           "timings": {"wall_s": 1.0}}
    (d / "result.json").write_text(json.dumps(res))
    return d


def _sweep(tmp_path, skip=()):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {
        "sweeper": {"params": {"column": ",".join(COLUMNS), "method": ",".join(METHODS)}},
        "overrides": {"task": ["experiment=table1", "logger=csv"]}}}))
    dirs = {}
    for c in COLUMNS:
        for m in METHODS:
            if (c, m) not in skip:
                dirs[c, m] = _job(sweep, c, m, ap=0.6 if m == "faux" else 0.4)
    return sweep, dirs


def _aggregate(tmp_path, sweep, capsys):
    rc = aggregate.main([str(sweep), "--table", "table1", "--results-dir",
                         str(tmp_path / "results"), "--figures-dir", str(tmp_path / "fig")])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return rc, out.out, out.err


def test_complete_sweep_prints_the_summary_and_writes_provenance(tmp_path, capsys):
    sweep, _ = _sweep(tmp_path)
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 0, err
    assert "== table1 ==" in out and "ours / paper" in out       # ours beside the paper's
    assert "C1 does not hold (0/8)" in out and "C5" in out      # Table 1's claims line
    prov = json.loads((tmp_path / "results" / "table1.provenance.json").read_text())
    assert prov["n_jobs"] == 4 and prov["profile"] == "tiny"
    assert prov["overrides"] == ["experiment=table1", "logger=csv"]
    assert "table1.provenance.json" in out                        # the paths written


def test_expected_grid_comes_from_the_sweep_config(tmp_path):
    sweep, _ = _sweep(tmp_path)
    jobs = expected_jobs(sweep)
    assert len(jobs) == 4
    assert sorted(j[:2] for j in jobs)[0] == ["column=Synthetic-1", "method=faux"]


def test_a_cell_that_never_started_is_listed_and_exit_is_1(tmp_path, capsys):
    # the finding: only methods seen were looked for; here no fta job exists at all
    sweep, _ = _sweep(tmp_path, skip={("Synthetic-1", "fta"), ("Synthetic-2", "fta")})
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 1
    lines = [x for x in err.splitlines() if "never started" in x]
    assert len(lines) == 2 and all("method=fta" in x for x in lines)
    assert "Failed or missing (2)" in out


@pytest.mark.parametrize("content, reason", [
    ("[1, 2]", "holds a list, not a JSON object"),
    ('{"status": "ok", "config_hash": "x", "metrics": {}}', "has no 'job'"),
    ('{"status": "ok", "job": "table1_c', "not valid JSON"),
    ('{"status": "failed", "job": "table1_cell"}', "status 'failed'"),
])
def test_malformed_result_is_one_line(tmp_path, capsys, content, reason):
    sweep, dirs = _sweep(tmp_path)
    d = dirs["Synthetic-2", "faux"]
    (d / "result.json").write_text(content)
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 1
    (line,) = [x for x in err.splitlines() if "method=faux" in x and "Synthetic-2" in x]
    assert reason in line and str(d / "table1_cell.log") in line


def test_truncated_npz_is_one_line(tmp_path, capsys):
    sweep, dirs = _sweep(tmp_path)
    d = dirs["Synthetic-1", "fta"]
    np.savez(d / "records.npz", a=np.arange(10_000.0))
    good, why = check_result(d)
    assert good is not None and why is None                      # a complete archive passes
    data = (d / "records.npz").read_bytes()
    (d / "records.npz").write_bytes(data[: len(data) // 2])
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 1
    (line,) = [x for x in err.splitlines() if "records.npz" in x]
    assert "truncated or corrupt (BadZipFile)" in line


def test_result_of_another_config_is_rejected(tmp_path, capsys):
    # a rerun with other overrides rewrote .hydra/config.yaml; result.json is the old job's
    sweep, dirs = _sweep(tmp_path)
    d = dirs["Synthetic-1", "faux"]
    cfg = _config("Synthetic-1", "faux")
    cfg["seed"] = 1
    (d / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    res, why = check_result(d)
    assert res is None and "another config" in why
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 1 and "another config" in err


def test_a_result_edited_after_its_job_is_rejected_not_crashed_on(tmp_path, capsys):
    """A finished result whose metrics were edited (a number turned into text) is no
    result: the aggregation names it and the job reruns, instead of a traceback."""
    from faux.harness.results import finished, metrics_digest

    sweep, dirs = _sweep(tmp_path)
    d = dirs["Synthetic-2", "fta"]
    res = json.loads((d / "result.json").read_text())
    res["metrics_sha256"] = metrics_digest(res["metrics"])
    (d / "result.json").write_text(json.dumps(res))
    assert check_result(d)[0] is not None and finished(d, res["config_hash"]) is not None
    res["metrics"]["ap_runs"] = ["0.5", "oops"]
    (d / "result.json").write_text(json.dumps(res))
    got, why = check_result(d)
    assert got is None and "edited or corrupted" in why
    assert finished(d, res["config_hash"]) is None
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 1 and "edited or corrupted" in err


def test_rerun_that_crashed_is_not_reported_current(tmp_path, capsys):
    sweep, dirs = _sweep(tmp_path)
    d = dirs["Synthetic-2", "fta"]
    (d / "result.json").rename(d / "result.stale.json")         # what faux.run does first
    rc, out, err = _aggregate(tmp_path, sweep, capsys)
    assert rc == 1 and "rerun started, never finished" in err


def test_same_cell_in_two_folders_uses_the_newer_and_says_so(tmp_path, capsys):
    sweep, dirs = _sweep(tmp_path)
    old = _job(sweep, "Synthetic-1", "fta", ap=0.1, folder="0")   # an old numbered folder
    t = time.time()
    import os

    os.utime(old / "result.json", (t - 1000, t - 1000))
    s = read_sweep(sweep)
    assert len(s.results) == 4
    (kept,) = [r for r in s.results if r["metrics"]["column"] == "Synthetic-1"
               and r["metrics"]["method"] == "fta"]
    assert kept["_dir"] == str(dirs["Synthetic-1", "fta"])
    assert len(s.notes) == 1 and str(old) in s.notes[0]


def test_real_hydra_jobs_pass_the_config_check(tmp_path, monkeypatch):
    """Folders written by faux.run itself: the stored hash matches .hydra/config.yaml, the
    grid from multirun.yaml is the jobs launched. Each job records the hash of its
    config.yaml in the cache, equal to what resolving the file gives, so the aggregation of
    a fresh sweep resolves no config; an edited config.yaml is still resolved and caught."""
    import os

    from faux.reports import sweep as sw

    monkeypatch.setenv("FAUX_CACHE_DIR", str(tmp_path / "cache"))
    sweep = tmp_path / "sweep"
    r = subprocess.run([sys.executable, "-m", "faux.run", "-m", "data=backache,wdbc",
                        f"hydra.sweep.dir={sweep}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "FAUX_PROGRESS": "off"})
    assert r.returncode == 0, r.stderr
    recorded = sorted((tmp_path / "cache" / "config_hash").glob("*"))
    assert len([p for p in recorded if not p.name.startswith(".")]) == 2
    for job in (d for d in sweep.iterdir() if (d / "result.json").is_file()):
        res = json.loads((job / "result.json").read_text())
        assert sw._config_hash_of(job / ".hydra" / "config.yaml",
                                  res.get("data_sha256")) == res["config_hash"]
    calls = []
    real = sw._config_hash_of
    monkeypatch.setattr(sw, "_config_hash_of", lambda p, d: calls.append(p) or real(p, d))
    s = read_sweep(sweep)
    assert calls == []               # every hash recorded by its job
    assert len(s.results) == 2 and not s.unfinished and not s.never_started
    assert sorted(j[0] for j in expected_jobs(sweep)) == ["data=backache", "data=wdbc"]
    (one,) = [Path(x["_dir"]) for x in s.results if x["metrics"]["dataset"] == "wdbc"]
    cfg = yaml.safe_load((one / ".hydra" / "config.yaml").read_text())
    cfg["seed"] = 7
    (one / ".hydra" / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert "another config" in check_result(one)[1]
    assert calls == [one / ".hydra" / "config.yaml"]


def test_stored_config_hash_is_memoised_by_the_config_bytes(tmp_path, monkeypatch):
    """Resolving each job's config.yaml was most of an aggregation: the hash is memoised in
    the cache by the file's bytes (and data checksum, code); other bytes are resolved anew."""
    from faux.reports import sweep as sw

    monkeypatch.setenv("FAUX_CACHE_DIR", str(tmp_path / "cache"))
    job = tmp_path / "job"
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "config.yaml").write_text("job: summary\nseed: 0\nlr: 1e-3\n")
    first = sw.stored_config_hash(job, "d1")
    calls = []
    real = sw._config_hash_of
    monkeypatch.setattr(sw, "_config_hash_of", lambda p, d: calls.append(p) or real(p, d))
    assert sw.stored_config_hash(job, "d1") == first and calls == []        # from the memo
    assert sw.stored_config_hash(job, "d2") != first and len(calls) == 1    # other data
    (job / ".hydra" / "config.yaml").write_text("job: summary\nseed: 1\nlr: 1e-3\n")
    assert sw.stored_config_hash(job, "d1") != first and len(calls) == 2    # other config


def test_expected_grid_reads_dotted_sweep_keys_and_interpolations(tmp_path):
    # Fig. 11 sweeps `model.gan.transport_weight`: a key with dots, which a nested-path
    # lookup turned into `=None` (two "never started" cells on a complete sweep)
    (tmp_path / "multirun.yaml").write_text(
        "runs: 2\n"
        "hydra:\n"
        "  sweeper:\n"
        "    params:\n"
        "      model.gan.transport_weight: 0,1e-6\n"
        "      gan_seed: range(${runs})\n"
        "  overrides:\n"
        "    task: [experiment=fig11]\n")
    jobs = sorted(sorted(j) for j in expected_jobs(tmp_path))
    assert len(jobs) == 4
    assert all(not any(o.endswith("=None") for o in j) for j in jobs)
    assert ["experiment=fig11", "gan_seed=0", "model.gan.transport_weight=0"] in jobs
    assert ["experiment=fig11", "gan_seed=1", "model.gan.transport_weight=1e-06"] in jobs   # as Hydra writes it


def test_provenance_of_several_sweeps_names_every_swept_value():
    """A table aggregated from two sweeps (seeds 0-1, then 2-4) names one command that makes
    all their jobs, not the first sweep's alone."""
    from faux.harness.provenance import make_command, merge_overrides

    merged = merge_overrides([["experiment=real", "profile=quick", "data=adult,bank", "seed=0,1"],
                              ["experiment=real", "profile=quick", "data=adult,bank",
                               "seed=2,3,4", "+x=[1,2]"]])
    assert merged == ["experiment=real", "profile=quick", "data=adult,bank", "seed=0,1,2,3,4",
                      "+x=[1,2]"]
    assert make_command("fig4", "quick", merged) == \
        "make fig4 PROFILE=quick ARGS='data=adult,bank seed=0,1,2,3,4 +x=[1,2]'"
    assert merge_overrides([]) == []
