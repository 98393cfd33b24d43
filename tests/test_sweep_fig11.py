"""Fig. 11 sweep: FlipTest's AP against GAN quality over transport weights."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from faux.reports.fig11 import build as build_fig11
from faux.reports.fig11 import fig11_correlations, fig11_frame
from faux.reports.sweep import Sweep, read_sweep
from faux.studies.grid import check_cell, grid_problems, sweep_values

ROOT = Path(__file__).resolve().parents[1]
TINY = "{epochs: 2, max_steps: 20, hidden: 16, depth: 1}"


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "faux.run", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)


def test_grid_is_synthetic5_over_transport_weights():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=fig11", "profile=quick"],
                      return_hydra_config=True)
    keys = ["column.xc", "column.xy", "column.bias", "column.fusion",
            "model.gan.transport_weight", "gan_seed"]
    values, n_jobs = sweep_values(cfg, keys)
    assert [values[k][0] for k in keys[:4]] == ["australian", "credit_g", "0.5", "outer"]
    lams = sorted(float(v) for v in values["model.gan.transport_weight"])
    assert lams[0] == 0.0 and lams[-1] >= 1e-2 and len(lams) >= 6
    assert any(0 < v < 1e-4 for v in lams)            # A.11.4: best below 1e-4
    assert n_jobs == len(lams) * len(values["gan_seed"])
    assert grid_problems("fig11", values) == []


def test_bad_values_are_refused(tmp_path):
    probs = grid_problems("fig11", {"column.xc": ["wdbc"], "column.xy": ["wdbc"],
                                    "model.gan.transport_weight": ["-1e-3", "abc"],
                                    "gan_seed": ["-2"]})
    text = " | ".join(probs)
    for needle in ("must differ", "transport weight -1e-3", "transport weight abc",
                   "gan_seed -2"):
        assert needle in text
    with pytest.raises(Exception, match="bias 3"):
        check_cell("fig11", {"column.bias": 3})
    sweep = tmp_path / "sweep"
    r = _run("-m", "experiment=fig11", f"hydra.sweep.dir={sweep}", "column.xc=nope",
             "model.gan.transport_weight=1e-3,-1")
    assert r.returncode == 2 and not sweep.exists()
    # the error line (a progress summary may follow it)
    last = next(line for line in r.stderr.splitlines() if line.startswith("error: fig11 grid"))
    assert "fig11 grid refused" in last and "'nope'" in last and "-1" in last


def test_tiny_sweep_shares_the_column_target_and_aggregates(tmp_path):
    sweep = tmp_path / "sweep"
    env = {**os.environ, "FAUX_CACHE_DIR": str(tmp_path / "cache"), "FAUX_JOBS": "2",
           "OMP_NUM_THREADS": "1"}
    gens = "{" + ", ".join(f"{d}: {TINY}" for d in ("australian", "credit_g")) + "}"
    r = _run("-m", "experiment=fig11", "profile=quick", f"hydra.sweep.dir={sweep}",
             "model.gan.transport_weight=0,1e-2,1e-1", "gan_seed=0", "column.fusion=concat",
             f"+synthetic.generators={gens}", "profile.max_epochs=3", "profile.gan_steps=20",
             "profile.synth={n_train: 300, n_val: 120, n_test: 200}",
             "profile.fig11.quality_rows=80", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    results = sorted(sweep.glob("*/result.json"))
    assert len(results) == 3
    logs = "".join(p.read_text() for p in sweep.glob("*/*.log"))
    built = re.findall(r"cache miss: (\w+)", logs)
    assert built.count("generator") == 2 and built.count("target") == 2   # target + reference
    for p in results:
        m = json.loads(p.read_text())["metrics"]
        assert 0 <= m["ks"] <= 1 and m["mse"] >= 0
        # AP is NaN only when the tiny column has no positive (or no negative) individual
        assert 0 <= m["ap"] <= 1 if 0 < m["positive_rate"] < 1 else np.isnan(m["ap"])
        assert m["quality_rows"] == 80 and m["gen_steps"] == 20
    rep = build_fig11(read_sweep(sweep), tmp_path / "res", tmp_path / "fig")
    assert not rep.missing and len(rep.frame) == 3
    assert (tmp_path / "fig" / "fig11.png").stat().st_size > 10_000
    head = (tmp_path / "res" / "fig11.csv").read_text().splitlines()[0]
    assert head.startswith("xc,xy,bias,fusion,transport_weight,gan_seed")


def _fake(n=12, seed=0) -> Sweep:
    rng = np.random.default_rng(seed)
    lams = [0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
    res = []
    for i in range(n):
        ks = rng.uniform(0.05, 0.5)
        res.append({"job": "fig11_cell", "_dir": f"/nowhere/{i}", "timings": {"wall_s": 1.0},
                    "metrics": {"xc": "australian", "xy": "credit_g", "bias": 0.5,
                                "fusion": "outer", "dim": 1050,
                                "transport_weight": lams[i % 6], "gan_seed": i // 6,
                                "gen_steps": 100, "ap": 0.9 - ks + rng.normal(0, 0.01),
                                "ap_top30": 0.5, "ks": ks, "mse": rng.uniform(0, 1),
                                "mse_real": 0.1, "positive_rate": 0.3, "started": float(i),
                                "finished": i + 1.0, "peak_rss_mb": 10.0}})
    return Sweep(results=res)


def test_correlations_match_scipy_and_reflect_the_construction(tmp_path):
    sweep = _fake()
    frame = fig11_frame(sweep)
    corr = fig11_correlations(frame)
    assert corr["n_points"] == 12
    assert np.isclose(corr["pearson_ap_ks"], pearsonr(frame["ks"], frame["ap"]).statistic)
    assert np.isclose(corr["spearman_ap_mse"], spearmanr(frame["mse"], frame["ap"]).statistic)
    assert corr["pearson_ap_ks"] < -0.95          # AP = 0.9 - KS + small noise
    assert abs(corr["pearson_ap_mse"]) < 0.8      # MSE drawn independently
    build_fig11(sweep, tmp_path / "res", tmp_path / "fig")
    md = (tmp_path / "res" / "fig11.md").read_text()
    assert "pearson_ap_ks" in md and md.count("\n| ") >= 7      # header + 6 lambdas
    assert (tmp_path / "fig" / "fig11.png").exists()
    # the same job twice (two sweeps given) counts once
    twice = Sweep(results=sweep.results + sweep.results[:3])
    assert len(fig11_frame(twice)) == 12
    # too few points: correlations are NaN, not an error
    few = fig11_correlations(fig11_frame(Sweep(results=sweep.results[:2])))
    assert np.isnan(few["pearson_ap_ks"])


@pytest.mark.parametrize("experiment, overrides", [
    ("fig11", []),
    ("fig5", ["pair=magic/backache", "fusion=outer", "bias=0.5", "draw=0"]),
])
def test_section_4_4_studies_take_the_whole_reading(experiment, overrides):
    # Fig. 5 and Fig. 11 build their columns as Table 1 does under the reading: its CVAE
    # settings (latent size), decoding, IFS output and threshold rule (Fig. 11 also its target)
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from faux.studies import fig5, fig11
    from faux.studies.readings import reading_of

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}", "profile=quick",
                                           "reading=axes/softmax_latent16_ng_ifs_kstd",
                                           "paths.output_dir=.", *overrides])
    plain = OmegaConf.to_container(cfg, resolve=True)
    s = {"fig11": fig11, "fig5": fig5}[experiment].Settings.from_config(plain)
    name, r = reading_of(plain)
    assert s.reading == name == "softmax_latent16_ng_ifs_kstd"
    assert s.threshold == r["threshold"] == "k_std"
    assert s.synth.output == "logit" and s.synth.gen_opts["decoding"] == "softmax"
    assert all(v.get("latent_dim") == 16 for v in s.synth.gen_study.values())
    assert len(s.synth.gen_study) == 2
