"""Section 4.4 sweep (Fig. 5): grid checks, a tiny parallel sweep, resume, and the figure."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from faux.errors import ConfigError
from faux.harness.cache import Cache
from faux.reports.fig5 import build as build_fig5
from faux.reports.fig5 import fig5_frame, fig5_groups, load_fig5, quantile_bins
from faux.reports.sweep import Sweep, read_sweep
from faux.studies.fig5 import architectures
from faux.studies.grid import (
    ALL_PAIRS,
    TABLE2,
    GridCheck,
    check_cell,
    grid_problems,
    parse_pair,
    sweep_values,
)

ROOT = Path(__file__).resolve().parents[1]
TINY = "{epochs: 2, max_steps: 20, hidden: 16, depth: 1}"


def _compose(*overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=True)


# --------------------------------------------------------------------------- the grid


def test_grid_of_a75_in_the_paper_profile_and_a_subset_in_quick():
    assert len(ALL_PAIRS) == 20 and len(set(ALL_PAIRS)) == 20
    assert all(parse_pair(p)[0] != parse_pair(p)[1] for p in ALL_PAIRS)
    values, n_jobs = sweep_values(_compose("experiment=fig5", "profile=paper"),
                                  ["pair", "fusion", "bias", "draw"])
    assert sorted(values["pair"]) == sorted(ALL_PAIRS)
    assert values["fusion"] == ["concat", "outer"]
    assert [float(b) for b in values["bias"]] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert n_jobs == 20 * 2 * 5 * len(values["draw"])
    quick, n_quick = sweep_values(_compose("experiment=fig5", "profile=quick"), ["pair", "draw"])
    assert set(quick["pair"]) < set(ALL_PAIRS) and n_quick < n_jobs
    # the quick subset still needs every Table 2 dataset's CVAE
    assert {d for p in quick["pair"] for d in parse_pair(p)} == set(TABLE2)
    # a command-line override replaces the profile's values (Hydra's order)
    one, n_one = sweep_values(_compose("experiment=fig5", "profile=quick", "pair=wdbc/magic"),
                              ["pair"])
    assert one["pair"] == ["wdbc/magic"] and n_one == n_quick // len(quick["pair"])


def test_grid_problems_lists_every_bad_value():
    good = {"pair": ["magic/backache"], "fusion": ["outer"], "bias": ["0", "1.0"], "draw": ["0"]}
    assert grid_problems("fig5", good) == []
    bad = {"pair": ["foo/magic", "magic/magic", "magic"], "fusion": ["sum"],
           "bias": ["1.5", "-0.1", "x"], "draw": ["1.5"]}
    probs = grid_problems("fig5", bad)
    text = " | ".join(probs)
    for needle in ("unknown dataset 'foo'", "xc and xy must differ", "'magic' is not 'xc/xy'",
                   "fusion 'sum'", "bias 1.5", "bias -0.1", "bias x", "draw 1.5"):
        assert needle in text, needle
    assert len(probs) == 8
    with pytest.raises(ConfigError, match="bias 2"):
        check_cell("fig5", {"pair": "magic/backache", "bias": 2})
    with pytest.raises(ConfigError, match="unknown study"):
        GridCheck("fig99")


def test_architectures_are_drawn_in_range_and_differ_across_draws():
    archs = [architectures(d, 0, (8, 128), (1, 4)) for d in range(30)]
    for a in archs:
        assert 8 <= a["target_width"] <= 128 and 1 <= a["target_depth"] <= 4
        assert 8 <= a["aux_width"] <= 128 and 1 <= a["aux_depth"] <= 4
    assert architectures(3, 0, (8, 128), (1, 4)) == archs[3]
    assert len({(a["target_width"], a["target_depth"]) for a in archs}) > 20
    assert len({a["target_depth"] for a in archs}) == 4


def _run(*args, env=None, timeout=240):
    return subprocess.run([sys.executable, "-m", "faux.run", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_bad_override_is_refused_before_any_job(tmp_path):
    sweep = tmp_path / "sweep"
    r = _run("-m", "experiment=fig5", "profile=quick", f"hydra.sweep.dir={sweep}",
             "pair=foo/magic,magic/backache", "bias=0.5,1.5", "fusion=outer,sum")
    assert r.returncode == 2
    # the error line (a progress summary may follow it)
    last = next(line for line in r.stderr.splitlines() if line.startswith("error: fig5 grid"))
    assert last.startswith("error: fig5 grid refused")
    for needle in ("'foo'", "bias 1.5", "fusion 'sum'"):
        assert needle in last
    assert not sweep.exists()          # nothing launched: no job folder, no multirun.yaml


def test_cache_lock_is_exclusive_between_processes(tmp_path):
    code = ("import sys,time;from faux.harness.cache import Cache\n"
            "with Cache(sys.argv[1]).lock('x'):\n"
            "    print(time.time(), flush=True); time.sleep(0.6); print(time.time())\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    spans = sorted(tuple(map(float, p.communicate()[0].split())) for p in procs)
    assert spans[1][0] >= spans[0][1] - 1e-3        # the second entered after the first left
    with Cache(tmp_path).lock("a/b c") as held:         # odd names are made safe
        assert held and (tmp_path / "locks" / "a_b_c.lock").exists()
    # non-blocking: False at once while another process holds the lock, True once free
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                         text=True)
    p.stdout.readline()                                 # the other process holds it now
    with Cache(tmp_path).lock("x", blocking=False) as held:
        assert held is False
    with Cache(tmp_path).lock("x") as held:             # blocks until the other releases it
        assert held and p.wait(timeout=10) == 0


# --------------------------------------------------------------------------- a tiny sweep


def test_tiny_parallel_sweep_trains_each_cvae_once_resumes_and_aggregates(tmp_path):
    sweep = tmp_path / "sweep"
    env = {**os.environ, "FAUX_CACHE_DIR": str(tmp_path / "cache"), "FAUX_JOBS": "2",
           "OMP_NUM_THREADS": "1"}
    gens = "{" + ", ".join(f"{d}: {TINY}" for d in ("backache", "wdbc", "credit_g")) + "}"
    args = ("-m", "experiment=fig5", "profile=quick", f"hydra.sweep.dir={sweep}",
            "pair=backache/wdbc,credit_g/wdbc", "fusion=concat", "bias=0,1.0", "draw=0",
            f"+synthetic.generators={gens}", "profile.max_epochs=3",
            "profile.fig5.synth={n_train: 300, n_val: 100, n_test: 200}")
    r = _run(*args, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    results = sorted(sweep.glob("*/result.json"))
    assert len(results) == 4
    logs = "".join(p.read_text() for p in sweep.glob("*/*.log"))
    built = re.findall(r"cache miss: (\w+)", logs)
    # 3 datasets -> 3 CVAEs although two workers started on the same pair at once;
    # targets: per pair the bias-0 and bias-1 targets and one shared bias-0 reference
    assert built.count("generator") == 3
    assert built.count("target") == 2 * 3
    for p in results:
        m = json.loads(p.read_text())["metrics"]
        with np.load(p.parent / "records.npz") as z:
            assert z["faux_ng"].shape == z["label"].shape == (200,)
            assert set(np.unique(z["label"])) <= {0, 1}
            assert float(z["bias"]) == m["bias"] and np.isclose(z["aux_accuracy"],
                                                                m["aux_accuracy"])
            assert (z["target_grad_norm"] >= 0).all() and np.isfinite(z["faux_ig"]).all()
            assert np.isclose(z["label"].mean(), m["positive_rate"])
        assert set(m["ap"]) == {"faux", "faux_ng", "faux_ig", "faux_path"}
    before = [p.stat().st_mtime_ns for p in results]
    r = _run(*args, "hydra/launcher=basic", env=env)    # resume: every job is found finished
    assert r.returncode == 0, r.stderr[-3000:]
    assert (r.stdout + r.stderr).count("skipped") == 4
    assert [p.stat().st_mtime_ns for p in results] == before
    rep = build_fig5(read_sweep(sweep), tmp_path / "results", tmp_path / "figures")
    assert not rep.missing
    assert (tmp_path / "figures" / "fig5.png").stat().st_size > 10_000
    csv = (tmp_path / "results" / "fig5.csv").read_text().splitlines()
    assert csv[0].startswith("panel,bin,ap,positive_rate,n")
    panels = {line.split(",")[0] for line in csv[1:]}
    assert panels == {"all", "bias", "aux_accuracy", "target_gradient", "target_gradient_logit",
                      "target_gradient_job_rank"}


# --------------------------------------------------------------------------- aggregation


def _fake_sweep(tmp_path, n_per_job=400, seed=0) -> Sweep:
    """Jobs whose faux_ng separates the labels better at higher bias and aux accuracy, and
    worse where the target gradient is large."""
    rng = np.random.default_rng(seed)
    results = []
    for j, (bias, acc) in enumerate([(b, a) for b in (0.0, 0.5, 1.0) for a in (0.6, 0.8, 0.95)]):
        d = tmp_path / f"job{j}"
        d.mkdir()
        lab = (rng.random(n_per_job) < 0.3).astype(np.int8)
        gn = rng.lognormal(size=n_per_job)
        big = gn > np.quantile(gn, 0.95)
        signal = (bias + acc) * lab * np.where(big, 0.0, 1.0)
        ng = 1 / (1 + np.exp(-(signal + rng.normal(size=n_per_job))))
        np.savez(d / "records.npz", faux=ng * 3, faux_ng=ng, faux_ig=ng ** 2, label=lab,
                 ifs=ng, target_grad_norm=gn, target_grad_norm_logit=gn * 4,
                 bias=bias, aux_accuracy=acc)
        ap = {m: 0.5 for m in ("faux", "faux_ng", "faux_ig")}
        results.append({"job": "fig5_cell", "status": "ok", "config_hash": f"h{j}",
                        "_dir": str(d), "timings": {"wall_s": 2.0},
                        "metrics": {"pair": "magic/backache", "fusion": "outer", "bias": bias,
                                    "draw": j, "column_seed": j, "aux_accuracy": acc,
                                    "positive_rate": float(lab.mean()), "ap": ap,
                                    "records": "records.npz", "started": 100.0 + j,
                                    "finished": 102.0 + j, "peak_rss_mb": 100.0 + j,
                                    "dim": 360}})
        (d / "result.json").write_text(json.dumps({k: v for k, v in results[-1].items()
                                                   if k != "_dir"}))
    return Sweep(results=results)


def test_pooled_ap_bins_and_trends_on_known_records(tmp_path):
    sweep = _fake_sweep(tmp_path)
    pooled, jobs, missing = load_fig5(sweep)
    assert not missing and pooled["label"].size == 9 * 400
    groups = fig5_groups(pooled, jobs)
    frame = fig5_frame(pooled, groups)
    ng = frame[frame["method"] == "faux_ng"].set_index(["panel", "bin"])
    # "all" is sklearn's AP of the concatenated records; positive rate is the label mean
    assert np.isclose(ng.loc[("all", "all"), "ap"],
                      average_precision_score(pooled["label"], pooled["faux_ng"]))
    assert np.isclose(ng.loc[("all", "all"), "positive_rate"], pooled["label"].mean())
    # panel (a): one bin per bias level, AP rising with bias
    aps = ng.loc["bias"]["ap"].to_numpy()
    assert list(ng.loc["bias"].index) == ["0", "0.5", "1"] and (np.diff(aps) > 0).all()
    # panel (b): aux accuracy bins hold whole jobs; AP rises with accuracy
    acc = ng.loc["aux_accuracy"]
    assert acc["n"].sum() == pooled["label"].size and (np.diff(acc["ap"].to_numpy()) > 0).all()
    # panel (c): the top (5%) gradient bin has no signal here: its AP is the lowest
    grad = ng.loc["target_gradient"]
    assert len(grad) == 5 and grad["n"].iloc[-1] == pytest.approx(0.05 * 3600, abs=2)
    assert grad["ap"].iloc[-1] < grad["ap"].iloc[:-1].min()
    # within-job quantiles: the top bin is exactly each job's 5% largest (no-signal) rows
    rank = ng.loc["target_gradient_job_rank"]
    assert rank["n"].iloc[-1] == 9 * 20 and rank["n_jobs"].iloc[-1] == 9
    assert rank["ap"].iloc[-1] < rank["ap"].iloc[:-1].min()
    logit = ng.loc["target_gradient_logit"]       # a monotone transform: the same bins
    assert logit["ap"].to_numpy() == pytest.approx(grad["ap"].to_numpy())
    # the bins of each panel partition the pooled individuals
    for panel in ("bias", "aux_accuracy", "target_gradient", "target_gradient_job_rank"):
        assert ng.loc[panel]["n"].sum() == 3600
    build_fig5(sweep, tmp_path / "res", tmp_path / "fig")
    text = (tmp_path / "res" / "fig5.md").read_text()
    assert "spearman_bias: 1.000" in text and "jobs_per_minute" in text
    assert (tmp_path / "fig" / "fig5_faux_rank.png").exists()
    # faux = 3 * faux_ng here: the same order within every job, so the same rank AP
    fx = frame[frame["method"] == "faux"].set_index(["panel", "bin"])
    assert fx["ap_job_rank"].to_numpy() == pytest.approx(ng["ap_job_rank"].to_numpy())


def test_rank_pooling_removes_between_job_effects(tmp_path):
    """Two jobs, no signal within either; the job with more positives scores higher overall.
    Raw pooling rewards that; pooling within-job ranks gives the random-guess AP."""
    rng = np.random.default_rng(1)
    results = []
    for j, (rate, shift) in enumerate(((0.8, 5.0), (0.1, 0.0))):
        d = tmp_path / f"job{j}"
        d.mkdir()
        lab = (rng.random(4000) < rate).astype(np.int8)
        sc = shift + rng.normal(size=4000)                   # independent of the label
        np.savez(d / "records.npz", faux=sc, faux_ng=sc, faux_ig=sc, label=lab, ifs=sc,
                 target_grad_norm=rng.random(4000))
        results.append({"job": "fig5_cell", "_dir": str(d), "metrics": {
            "pair": "magic/backache", "fusion": "concat", "bias": 0.5, "draw": j,
            "column_seed": j, "aux_accuracy": 0.8, "positive_rate": float(lab.mean()),
            "ap": {"faux": 0.5, "faux_ng": 0.5, "faux_ig": 0.5}}})
    pooled, jobs, _ = load_fig5(Sweep(results=results))
    row = fig5_frame(pooled, fig5_groups(pooled, jobs)).iloc[0]
    assert row["panel"] == "all"
    assert row["ap"] > row["positive_rate"] + 0.3            # raw pooling: a strong artefact
    assert row["ap_job_rank"] == pytest.approx(row["positive_rate"], abs=0.03)
    assert row["ap_job_mean"] == pytest.approx((0.8 + 0.1) / 2, abs=0.03)


def test_missing_records_are_reported_not_fatal(tmp_path):
    sweep = _fake_sweep(tmp_path)
    (Path(sweep.results[0]["_dir"]) / "records.npz").unlink()
    rep = build_fig5(sweep, tmp_path / "res", tmp_path / "fig")
    assert len(rep.missing) == 1 and "records unreadable" in rep.missing[0][1]
    assert (tmp_path / "res" / "fig5.csv").exists()


def test_quantile_bins_partition_and_merge_ties():
    idx, bins = quantile_bins(np.arange(100.0), (0, 0.25, 0.5, 0.75, 1))
    assert np.bincount(idx).tolist() == [25, 25, 25, 25] and bins[-1][1] == 99.0
    idx, bins = quantile_bins(np.array([0.8] * 10 + [0.9] * 10), (0, 0.25, 0.5, 0.75, 1))
    assert len(bins) == 2 and np.bincount(idx).tolist() == [10, 10]
    idx, bins = quantile_bins(np.full(7, 0.8), (0, 0.5, 1))
    assert bins == [(0.8, 0.8)] and (idx == 0).all()


def test_aggregate_cli_runs_the_fig5_builder(tmp_path):
    from faux import aggregate

    (tmp_path / "sweep").mkdir()
    _fake_sweep(tmp_path / "sweep")
    rc = aggregate.main([str(tmp_path / "sweep"), "--table", "fig5",
                         "--results-dir", str(tmp_path / "res"),
                         "--figures-dir", str(tmp_path / "fig")])
    assert rc == 0
    rows = (tmp_path / "res" / "fig5.csv").read_text().splitlines()
    # 3 methods x (all, 3 biases, 2 aux-accuracy bins (quartile edges 0.6, 0.6, 0.8, 0.95,
    # 0.95 merge into 2 bins), 5 gradient bins x 3 (prob, logit, within-job rank))
    assert len(rows) == 1 + 3 * (1 + 3 + 2 + 3 * 5)


def test_scoring_chunks_do_not_change_scores():
    import torch

    from faux.methods.gradients import score
    from faux.models.mlp import MLP

    torch.manual_seed(0)
    x = torch.rand(300, 12)
    tgt, aux = MLP(12, 16, 2), MLP(12, 8, 1)
    for m in ("faux", "faux_ng", "faux_ig"):
        whole = score(m, tgt, aux, x, ig_steps=20)
        chunked = score(m, tgt, aux, x, ig_steps=20, batch_size=7)
        assert torch.allclose(whole, chunked, rtol=1e-5, atol=1e-7), m
