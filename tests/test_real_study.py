"""The real-data study (Fig. 4/10, Tables 3-4): pipeline, job, report builders, bad input."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faux.data.real import RealData
from faux.errors import ConfigError, DataError
from faux.reports.fig4 import build as build_fig4
from faux.reports.sweep import Sweep, read_sweep
from faux.reports.table3 import build as build_table3
from faux.reports.table4 import build as build_table4
from faux.studies import real as real_study
from faux.studies.real import (
    RealSettings,
    discrete_mask,
    run_real,
    select_rows,
    subsample,
    summarise_pair,
    target_facts,
)

ROOT = Path(__file__).resolve().parents[1]
#: the methods the real-data study runs: every registered one but LIC-UB (needs dx/dc)
METHODS = ("fta", "fta_lin", "unfair_map", "fliptest", "faux", "faux_ng", "faux_ig",
           "faux_path")
TINY = RealSettings(max_train_rows=300, n_score=60, max_epochs=2, patience=2, gan_steps=4,
                    variants={"faux_ng_feature": {"method": "faux_ng", "ng": "feature"}},
                    report_variants={"faux_ig_mean": {"method": "faux_ig",
                                                      "ig_baseline": "mean"}},
                    n_random_rankings=20, gan_quality_rows=100, accelerator="cpu")


# ----------------------------------------------------------------------------- helpers


def _toy_data(n=600, seed=0, c_values=(0, 1)) -> RealData:
    """A small split dataset: a proxy of c, a one-hot feature, noise; y depends on the proxy."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n) if len(c_values) == 2 else np.full(n, c_values[0])
    proxy = c + 0.5 * rng.normal(size=n)
    noise = rng.normal(size=n)
    cat = rng.integers(0, 3, n)
    onehot = np.eye(3)[cat]
    y = ((proxy + 0.5 * noise + 0.3 * rng.normal(size=n)) > 0.5).astype(np.int64)
    X = np.c_[proxy, noise, onehot].astype(np.float32)
    names = ("proxy", "noise", "colour=red", "colour=green", "colour=blue")
    groups = ("proxy", "noise", "colour", "colour", "colour")
    tr, va, te = np.arange(0, 400), np.arange(400, 500), np.arange(500, n)
    return RealData(
        name="toy", X_train=X[tr], X_val=X[va], X_test=X[te], y_train=y[tr], y_val=y[va],
        y_test=y[te], c_train=c[tr], c_val=c[va], c_test=c[te], feature_names=names,
        feature_groups=groups, protected="c", categorical=("colour",),
        continuous=("proxy", "noise"), c_labels=("a", "b"), y_labels=("no", "yes"),
        mean=np.zeros(5), scale=np.ones(5), train_idx=tr, val_idx=va, test_idx=te, seed=seed)


def _job(tmp_path, dataset: str, *overrides, log=lambda s: None) -> dict:
    """One real-data job through the composed config (conf/experiment/real.yaml)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[
            "experiment=real", f"data={dataset}", f"paths.data_dir={tmp_path}",
            f"paths.output_dir={tmp_path / 'job'}", "profile.max_epochs=2", "profile.patience=1",
            "profile.gan_steps=2", "profile.real.max_train_rows=100", "profile.real.n_score=10",
            *overrides])
    plain = OmegaConf.to_container(cfg, resolve=True)
    return real_study.run(real_study.Settings.from_config(plain), tmp_path / "job", log)


def test_study_runs_every_registered_method_it_can():
    assert real_study.methods() == METHODS
    assert real_study.report_methods() == ("fliptest", "faux", "faux_ng", "faux_ig")


def _sweep_of(*job_dirs) -> Sweep:
    sweep = Sweep()
    for d in job_dirs:
        res = json.loads((Path(d) / "result.json").read_text())
        res["_dir"] = str(d)
        sweep.results.append(res)
    return sweep


def _fake_result(metrics: dict, job_dir: Path) -> Path:
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "result.json").write_text(json.dumps(
        {"status": "ok", "job": "real_cell", "config_hash": "x" * 16, "metrics": metrics},
        default=float))
    return job_dir


# ----------------------------------------------------------------------------- metrics


def test_summarise_pair_auroc_and_win_rate():
    rng = np.random.default_rng(0)
    fair = rng.random(200)
    s = summarise_pair(fair + 1.0, fair)
    assert s["auroc"] == 1.0 and s["paired_win"] == 1.0
    assert s["unfair"]["median"] == pytest.approx(np.median(fair) + 1.0)
    s = summarise_pair(fair, fair)
    assert s["auroc"] == pytest.approx(0.5) and s["paired_win"] == pytest.approx(0.5)
    s = summarise_pair(fair, fair + 1.0)
    assert s["auroc"] == 0.0 and s["paired_win"] == 0.0


def test_subsample_and_single_group_errors():
    assert np.array_equal(subsample(5, None, 0), np.arange(5))
    a, b = subsample(100, 10, 3), subsample(100, 10, 3)
    assert np.array_equal(a, b) and len(np.unique(a)) == 10
    data = _toy_data(c_values=(1,))
    with pytest.raises(DataError, match="single value"):
        select_rows(data, TINY, seed=0)
    with pytest.raises(ConfigError):
        RealSettings(variants={"fta": {"method": "faux_ng"}})
    with pytest.raises(ConfigError):
        RealSettings(variants={"x": {"method": "nosuch"}})
    with pytest.raises(ConfigError, match="report variant"):
        RealSettings(report_variants={"x": {"method": "fta"}})
    with pytest.raises(ConfigError, match="max_train_rows"):
        RealSettings(max_train_rows=5)
    with pytest.raises(ConfigError, match="n_score"):
        RealSettings(n_score=1)


def test_fair_model_must_be_adel():
    from faux.models.mlp import MLPSpec
    from faux.studies.real import ModelSpecs, default_specs

    d = default_specs()
    specs = ModelSpecs(d.target, MLPSpec(max_epochs=1), d.aux, d.gan)
    with pytest.raises(ConfigError, match="Adel"):
        run_real(_toy_data(), specs, TINY, seed=0, log=lambda s: None)


def test_discrete_mask_flags_everything_but_continuous():
    assert discrete_mask(_toy_data()).tolist() == [False, False, True, True, True]


# ----------------------------------------------------------------------------- pipeline


def test_run_real_on_toy_data_writes_every_metric():
    data = _toy_data()
    res = run_real(data, settings=TINY, seed=1, log=lambda s: None)
    m = res.metrics
    names = [*METHODS, "faux_ng_feature"]
    assert m["method_names"] == names and m["n_score"] == 60 and m["n_train"] == 300
    for name in names:
        s = m["methods"][name]
        assert 0.0 <= s["auroc"] <= 1.0
        assert s["unfair"]["q05"] <= s["unfair"]["median"] <= s["unfair"]["q95"]
        for model in ("unfair", "fair"):
            arr = res.arrays[f"{name}__{model}"]
            assert arr.shape == (60,) and np.isfinite(arr).all()
            assert s[model]["median"] == pytest.approx(np.median(arr), rel=1e-5, abs=1e-7)
    # every scored individual is a test row; c and y match the table
    assert np.isin(res.arrays["score_idx"], data.test_idx).all()
    t3 = m["table3"]
    assert set(t3["mi"]) == {"proxy", "noise", "colour"}
    assert t3["top_mi"][0] == "proxy"          # the proxy carries c
    assert set(t3["ndcg"]) == {"fliptest", "faux", "faux_ng", "faux_ig", "faux_ig_mean"}
    # the variant is IG from another baseline: the same method, not the same numbers
    assert t3["reports"]["faux_ig_mean"] != t3["reports"]["faux_ig"]
    assert all(0 < v <= 1 for v in t3["ndcg"].values())
    t4 = m["table4"]
    d = data.n_features
    # FlipTest: two generators and two critics (2 x 128 MLPs) against one 2 x 64 aux MLP
    assert t4["fliptest_params"] == m["models"]["fliptest"]["n_params"] > t4["faux_params"] > 0
    assert t4["faux_params"] == (d * 64 + 64) + (64 * 64 + 64) + 65      # 2 x 64 MLP
    assert m["models"]["aux"]["kind"] == "adel"
    assert {"accuracy", "dp_gap", "adv_accuracy"} <= set(m["models"]["fair"])
    fc = m["fairness_check"]
    for part, probed in (("unfair", "c"), ("fair", "c"), ("aux", "y")):
        assert fc[part]["probe_target"] == probed and 0 <= fc[part]["probe_auroc"] <= 1
    assert m["models"]["fair"]["accuracy"] == fc["fair"]["accuracy"]
    assert fc["checks"]["swap"] is None          # the toy declares no proxy edit
    json.dumps(m)   # JSON-serialisable


def test_ssl_absent_is_skipped_with_a_message(tmp_path):
    lines = []
    out = _job(tmp_path, "ssl", log=lines.append)
    assert out["skip_kind"] == "absent" and "no SSL CSV" in out["skipped"]
    assert str(tmp_path / "ssl") in out["skipped"]
    assert len(lines) == 1 and lines[0].startswith("ssl seed 0: skipped: no SSL CSV")
    rep = build_fig4(_sweep_of(_fake_result(out, tmp_path / "job")), tmp_path / "r", tmp_path / "f")
    assert not rep.missing and rep.files == []
    assert any("ssl seed 0: skipped: no SSL CSV" in line for line in rep.lines)


def test_ssl_runs_when_its_csv_is_placed_with_the_check(tmp_path):
    from test_data_real import _ssl_frame, _write_ssl

    _write_ssl(tmp_path, _ssl_frame(n=600))
    out = _job(tmp_path, "ssl")
    assert "skipped" not in out and out["dataset"] == "ssl" and out["n_score"] == 10
    fc = out["fairness_check"]
    assert 0 <= fc["fair"]["probe_auroc"] <= 1 and fc["aux"]["probe_target"] == "y"
    # SSL declares no proxy edit: the swap is not measured and not part of the verdict
    assert fc["fair"]["proxy_swap_n"] == 0 and fc["checks"]["swap"] is None
    assert (tmp_path / "job" / "scores.npz").is_file()


def test_ssl_csv_missing_a_column_is_a_missing_cell(tmp_path):
    (tmp_path / "ssl").mkdir()
    pd.DataFrame({"SSL SCORE": [300, 100], "RACE CODE CD": ["BLK", "WHI"]}).to_csv(
        tmp_path / "ssl" / "ssl.csv", index=False)
    out = _job(tmp_path, "ssl")
    assert out["skip_kind"] == "error" and "lacks column(s)" in out["skipped"]
    assert "\n" not in out["skipped"]
    rep = build_table3(_sweep_of(_fake_result(out, tmp_path / "job")), tmp_path / "r",
                       tmp_path / "f")
    assert rep.missing and "lacks column(s)" in rep.missing[0][1]


def test_missing_adult_files_are_a_one_line_skip(tmp_path, monkeypatch):
    import faux.data.real as real_mod

    def offline(url, dest, timeout=60.0):
        raise OSError("network unreachable")

    monkeypatch.setattr(real_mod, "_fetch", offline)
    out = _job(tmp_path, "adult")
    assert out["skip_kind"] == "error" and "\n" not in out["skipped"]
    assert "adult.data" in out["skipped"] and str(tmp_path / "aif360" / "adult") in out["skipped"]
    rep = build_fig4(_sweep_of(_fake_result(out, tmp_path / "job")), tmp_path / "r", tmp_path / "f")
    assert rep.missing == [("adult seed 0", f"skipped: {out['skipped']}")]


def test_non_real_dataset_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="real dataset"):
        _job(tmp_path, "magic")


# ----------------------------------------------------------------------------- fairness check


def test_verdict_against_issue_14_targets():
    from faux.studies.fairness_check import verdict

    unfair = {"probe_auroc": 0.88, "proxy_swap_mean_abs_dprob": 0.080, "accuracy": 0.85}
    ok = {"probe_auroc": 0.59, "proxy_swap_mean_abs_dprob": 0.039, "accuracy": 0.831}
    v = verdict(unfair, ok)
    assert v["pass"] and v["fails"] == [] and v["checks"] == {
        "probe": True, "swap": True, "accuracy": True}
    for key, bad, word in (("probe_auroc", 0.61, "probe"),
                           ("proxy_swap_mean_abs_dprob", 0.041, "swap"),
                           ("accuracy", 0.829, "accuracy")):
        v = verdict(unfair, {**ok, key: bad})
        assert not v["pass"] and not v["checks"][word] and len(v["fails"]) == 1
        assert v["fails"][0].startswith(word)
    # no declared edit: the swap is not checked, the others decide
    v = verdict({**unfair, "proxy_swap_mean_abs_dprob": None},
                {**ok, "proxy_swap_mean_abs_dprob": float("nan")})
    assert v["checks"]["swap"] is None and v["pass"]
    # targets from the config
    assert not verdict(unfair, ok, {"probe_max": 0.5})["pass"]


def test_fair_by_dataset_must_name_fair_model_fields():
    with pytest.raises(ConfigError, match="nosuch.*not a field"):
        RealSettings(fair_by_dataset={"bank": {"nosuch": 1}})
    with pytest.raises(ConfigError, match="targets"):
        RealSettings(targets={"probe_max": 0.6})
    assert RealSettings(fair_by_dataset={"bank": {"decor_momentum": 0.95}}).fair_overrides(
        "bank") == {"decor_momentum": 0.95}


def _figure_texts(monkeypatch) -> list[str]:
    """Every text of the figures saved from now on (suptitle, figure texts, panel titles,
    legend entries and titles, axis labels)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    texts, save = [], Figure.savefig

    def spy(fig, *a, **k):
        texts.extend([fig._suptitle.get_text() if fig._suptitle else "",
                      *(t.get_text() for t in fig.texts), *(ax.get_title() for ax in fig.axes),
                      *(ax.get_ylabel() for ax in fig.axes),
                      *(t.get_text() for leg in fig.legends for t in leg.get_texts()),
                      *(leg.get_title().get_text() for leg in fig.legends)])
        return save(fig, *a, **k)

    monkeypatch.setattr(Figure, "savefig", spy)
    return texts


def test_weak_fair_recipe_fails_the_check_and_is_flagged(tmp_path, monkeypatch):
    """A fair model with no adversary and no decorrelation (a plain MLP) still reads c off
    the toy's proxy: the job's check fails it, and Fig. 4 flags it (table and figure)."""
    import faux.studies.fairness_check as fcm

    # declare a swap for the toy: the one-hot colour (independent of c), so it is measured
    monkeypatch.setitem(fcm.PROXY_EDITS, "toy", (("colour=red", "colour=green"),))
    weak = {"alpha": 0.0, "decor": 0.0, "adv_norm": False, "alpha_min": 0.0}
    settings = replace(TINY, max_epochs=5, fair_by_dataset={"toy": weak})
    lines = []
    m = run_real(_toy_data(), settings=settings, seed=0, log=lines.append).metrics
    fc = m["fairness_check"]
    assert fc["fair_overrides"] == weak
    assert fc["fair"]["probe_auroc"] > 0.8 and fc["unfair"]["probe_auroc"] > 0.8
    assert fc["checks"]["probe"] is False and not fc["pass"]
    assert any(f.startswith("probe AUROC") for f in fc["fails"])
    assert fc["fair"]["proxy_swap_n"] > 0 and fc["fair"]["proxy_swap_mean_abs_dprob"] >= 0
    assert any("fair model FAILS: probe AUROC" in line for line in lines)
    json.dumps(m)

    texts = _figure_texts(monkeypatch)
    build_fig4(_sweep_of(_fake_result(m, tmp_path / "job")), tmp_path / "r", tmp_path / "f")
    md = (tmp_path / "r" / "fig4.md").read_text()
    assert "**toy: fair model FAILS the check: probe AUROC" in md
    models = pd.read_csv(tmp_path / "r" / "real_models.csv")
    assert not models.fair_pass.item() and not models.fair_probe_ok.item()
    assert models.fair_probe_auroc.item() == pytest.approx(fc["fair"]["probe_auroc"], abs=1e-4)
    assert "**FAILS**" in (tmp_path / "r" / "real_models.md").read_text()
    # the check is stated once, in the legend, and the failing fair model's entry says so
    entries = [t for t in texts if t.startswith(("unfair model: probe", "Adel fair model:"))]
    assert len(entries) == 2, texts
    assert entries[0] == (f"unfair model: probe {fc['unfair']['probe_auroc']:.2f}, swap "
                          f"{fc['unfair']['proxy_swap_mean_abs_dprob']:.3f}, accuracy "
                          f"{fc['unfair']['accuracy']:.3f}")
    assert entries[1].startswith(f"Adel fair model: probe {fc['fair']['probe_auroc']:.2f}")
    assert "FAILS the check (probe" in entries[1]
    assert sum(f"probe {fc['fair']['probe_auroc']:.2f}" in t for t in texts) == 1
    # one titled panel per method, each with its separation AUROC; the y axis is labelled
    titles = [t for t in texts if "\nvs Adel " in t]
    assert len(titles) == len(m["method_names"]), texts
    assert "unfairness score" in texts

    # the same job with a fair model that passes: no flag anywhere
    passing = json.loads(json.dumps(m))
    passing["fairness_check"]["fair"].update(probe_auroc=0.55, proxy_swap_mean_abs_dprob=0.0,
                                             accuracy=fc["unfair"]["accuracy"])
    passing["fairness_check"]["pass"] = True
    texts.clear()
    build_fig4(_sweep_of(_fake_result(passing, tmp_path / "job2")), tmp_path / "r2",
               tmp_path / "f2")
    assert "FAILS" not in (tmp_path / "r2" / "fig4.md").read_text()
    assert pd.read_csv(tmp_path / "r2" / "real_models.csv").fair_pass.item()
    assert texts and not any("FAILS" in t for t in texts)


# ----------------------------------------------------------------------------- harness


@pytest.mark.slow  # the longest test (~160 s idle); the job itself: test_run_real_on_toy_data_writes_every_metric
def test_sweep_on_adult_with_ssl_absent_and_builders(tmp_path, data_dir):
    """experiment=real through Hydra: Adult on a tiny subsample, SSL without its CSV."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "aif360").symlink_to(data_dir / "aif360")        # Adult and Bank, no ssl/ folder
    sweep = tmp_path / "sweep"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "FAUX_DATA_DIR": str(root)}
    r = subprocess.run(
        [sys.executable, "-m", "faux.run", "-m", "experiment=real", "hydra/launcher=basic",
         "data=adult,ssl", "seed=0", "profile.real.max_train_rows=400",
         "profile.real.n_score=80", "profile.max_epochs=2", "profile.patience=1",
         "profile.gan_steps=4", "real_study.n_random_rankings=20",
         "real_study.gan_quality_rows=100", "trainer.accelerator=cpu",
         f"hydra.sweep.dir={sweep}", f"paths.log_dir={tmp_path / 'out'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ssl seed 0: skipped: no SSL CSV" in r.stdout + r.stderr
    s = read_sweep(sweep)
    assert len(s.results) == 2 and not s.unfinished
    adult = next(x for x in s.results if x["metrics"]["dataset"] == "adult")
    assert (Path(adult["_dir"]) / "scores.npz").is_file()
    with np.load(Path(adult["_dir"]) / "scores.npz") as z:
        assert z["faux_ng__unfair"].shape == (80,)
    assert adult["config"]["model"]["aux"]["_target_"].endswith("AdelSpec")

    res_dir, fig_dir = tmp_path / "results", tmp_path / "figures"
    fig4 = build_fig4(s, res_dir, fig_dir)
    assert not fig4.missing and any("no SSL CSV" in line for line in fig4.lines)
    f = pd.read_csv(res_dir / "fig4.csv")
    assert {"dataset", "method", "median_unfair", "median_fair", "auroc"} <= set(f.columns)
    assert set(f.method) >= set(METHODS) and set(f.dataset) == {"adult"}
    assert f.auroc.between(0, 1).all()
    assert (fig_dir / "fig4_adult.png").stat().st_size > 10_000
    # the fairness check ran in the job and landed in result.json, then in the reports
    fc = adult["metrics"]["fairness_check"]
    for part in ("unfair", "fair", "aux"):
        assert 0 <= fc[part]["probe_auroc"] <= 1 and 0 <= fc[part]["accuracy"] <= 1
        assert fc[part]["proxy_swap_n"] > 0       # Husband / Wife rows of the test split
    assert fc["aux"]["probe_target"] == "y" and isinstance(fc["pass"], bool)
    assert set(fc["checks"]) == {"probe", "swap", "accuracy"}
    models = pd.read_csv(res_dir / "real_models.csv")
    assert models.fair_swap.item() == pytest.approx(
        fc["fair"]["proxy_swap_mean_abs_dprob"], abs=1e-4)
    assert models.fair_pass.item() == fc["pass"]
    assert "fair model vs the fairness check" in (res_dir / "fig4.md").read_text()

    build_table3(s, res_dir, fig_dir)
    t3 = pd.read_csv(res_dir / "table3.csv")
    assert {"dataset", "method", "ndcg_mean", "ndcg_std", "paper_mean"} <= set(t3.columns)
    assert set(t3.method) == {"fliptest", "faux", "faux_ng", "faux_ig", "faux_ig_mean", "random"}
    assert t3.loc[t3.method == "faux_ig", "paper_mean"].item() == pytest.approx(0.896)
    assert "0.896" in (res_dir / "table3.md").read_text()
    assert "fAux+IG (mean)" in (res_dir / "table3.md").read_text()

    build_table4(s, res_dir, fig_dir)
    t4 = pd.read_csv(res_dir / "table4.csv")
    assert {"dataset", "fliptest_params_mean", "faux_params_mean", "params_ratio",
            "fliptest_time_s_mean", "faux_time_s_mean", "time_ratio"} <= set(t4.columns)
    row = t4.iloc[0]
    assert row.params_ratio == pytest.approx(row.fliptest_params_mean / row.faux_params_mean)
    assert row.faux_params_mean == 97 * 64 + 64 + 64 * 64 + 64 + 65

    # the same job given twice (two sweeps) counts once; an unfinished job is a missing cell
    (sweep / "99" / ".hydra").mkdir(parents=True)
    twice = read_sweep(sweep)
    twice.results += read_sweep(sweep).results
    rep = build_table4(twice, res_dir, fig_dir)
    assert pd.read_csv(res_dir / "table4.csv").n_seeds.item() == 1
    assert len(rep.missing) == 1 and "unfinished" in rep.missing[0][1]


def test_adel_models_get_their_own_epoch_cap():
    # the Adel warm-up (alpha 100 -> 1) must fit under the cap: the quick profile gives the
    # fair model and the Adel aux 80 epochs where every other model gets 30
    from dataclasses import replace

    res = run_real(_toy_data(), settings=replace(TINY, max_epochs=1, patience=None,
                                                 adel_max_epochs=3), seed=1, log=lambda s: None)
    models = res.metrics["models"]
    assert models["unfair"]["epochs"] == 1
    assert models["fair"]["epochs"] == 3 and models["aux"]["epochs"] == 3


def test_quick_profile_caps_the_adel_models_past_their_warm_up():
    import math

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import faux.run  # noqa: F401  (resolvers)

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=real", "profile=quick", "data=adult",
                                           "paths.output_dir=."])
    s = real_study.Settings.from_config(OmegaConf.to_container(cfg, resolve=True))
    fair = s.specs.fair
    warm = math.ceil(math.log(fair.alpha / max(fair.alpha_min, 1.0)) / -math.log(fair.alpha_decay))
    assert s.study.max_epochs == 30
    assert s.study.adel_max_epochs >= warm + s.study.patience + 10
    assert fair.pair > 0 and fair.decor_momentum > 0        # the recipe of decisions_fair.md


@pytest.mark.parametrize("profile,mmd,last_width,probe_target",
                         [("quick", 3.0, 8, 0.56), ("paper", 30.0, None, None)])
def test_the_fair_models_mmd_weight_follows_the_profile_and_the_aux_has_none(profile, mmd,
                                                                            last_width,
                                                                            probe_target):
    """Round 8 of docs/decisions_fair.md: 30 at the paper's sizes, 3 on the quick profile's
    8,000 rows (30 cost Adult 6 points of accuracy there). Round 10: the quick profile's
    fair model has an 8-unit last hidden layer; the paper's and the aux's keep the width.
    Round 12: the quick profile's fair model steers alpha by a logistic probe toward 0.56 and
    chooses the epoch under it; the paper's and the aux's do not."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import faux.run  # noqa: F401  (resolvers)
    from faux.models.adel import AdelSpec

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=real", f"profile={profile}",
                                           "data=bank", "paths.output_dir=."])
    s = real_study.Settings.from_config(OmegaConf.to_container(cfg, resolve=True))
    assert s.specs.fair.mmd == mmd and s.specs.aux.mmd == 0.0
    assert s.specs.fair.last_width == last_width and s.specs.aux.last_width is None
    assert s.specs.fair.probe_target == probe_target and s.specs.aux.probe_target is None
    assert s.specs.fair.probe_select == (probe_target is not None)
    assert s.specs.fair.probe_kind == "logistic" and not s.specs.aux.probe_select
    assert AdelSpec().mmd == 30.0          # the library default is the paper's
    # without Hydra (run_real's defaults) the same two recipes, up to the profile's epochs
    d = real_study.default_specs()
    sizes = {"max_epochs": s.specs.fair.max_epochs, "patience": s.specs.fair.patience}
    assert replace(d.aux, **sizes) == s.specs.aux
    if profile == "paper":
        assert replace(d.fair, **sizes) == s.specs.fair


def test_target_facts_keep_the_probe_controls_history():
    """round 12: a fair model steered by probe_target leaves its control in result.json."""
    rows = select_rows(_toy_data(), TINY, seed=0)
    check = {"accuracy": 0.8, "dp_gap": 0.1}
    info = {"n_params": 10, "train_time_s": 1.0, "alpha_last": 1.25,
            "probe_history": [{"epoch": 44, "val_probe": 0.61, "floor": 1.0}]}
    facts = target_facts(info, check, rows)
    assert facts["alpha_last"] == 1.25
    assert facts["probe_history"] == [{"epoch": 44, "val_probe": 0.61, "floor": 1.0}]
    assert "probe_history" not in target_facts({**info, "probe_history": []}, check, rows)


# ----------------------------------------------------------------------------- proxy-blind model


def test_merge_edits_makes_a_network_blind_to_the_edit():
    import torch

    from faux.models.mlp import MLP
    from faux.models.proxy_blind import MergeEdits, ProxyBlind

    torch.manual_seed(0)
    model = ProxyBlind(MergeEdits([(2, 3)], 5), MLP(5, width=8, depth=1)).eval()
    x = torch.randn(20, 5)
    x[:, 2:] = torch.eye(3)[torch.arange(20) % 3]
    swapped = x[:, [0, 1, 3, 2, 4]]                   # red <-> green
    assert torch.equal(model(x), model(swapped))
    assert torch.equal(model.hidden(x), model.hidden(swapped))
    other = x[:, [0, 1, 4, 3, 2]]                     # red <-> blue is not merged: it moves
    assert not torch.equal(model(x), model(other))
    with pytest.raises(ConfigError, match="two distinct columns"):
        MergeEdits([(2, 2)], 5)
    with pytest.raises(ConfigError, match="two distinct columns"):
        MergeEdits([(2, 5)], 5)


def test_proxy_blind_fair_model_is_scored_and_checked_beside_the_adel_one(tmp_path,
                                                                          monkeypatch):
    import faux.studies.fairness_check as fcm

    monkeypatch.setitem(fcm.PROXY_EDITS, "toy", (("colour=red", "colour=green"),))
    lines = []
    res = run_real(_toy_data(), settings=replace(TINY, blind=True), seed=0, log=lines.append)
    m = res.metrics
    assert m["scored_models"] == ["unfair", "fair", "blind"]
    fc = m["fairness_check"]
    # blind by construction: the declared swap cannot move it; the unfair model's can move
    assert fc["blind"]["proxy_swap_n"] > 0 and fc["blind"]["proxy_swap_mean_abs_dprob"] == 0.0
    assert fc["unfair"]["proxy_swap_mean_abs_dprob"] > 0.0
    bv = fc["blind_verdict"]
    assert bv["checks"]["swap"] is True and set(bv["checks"]) == {"probe", "swap", "accuracy"}
    assert 0 <= fc["blind"]["probe_auroc"] <= 1 and fc["blind"]["probe_target"] == "c"
    assert m["models"]["blind"]["edits"] == [["colour=red", "colour=green"]]
    assert m["models"]["blind"]["accuracy"] == fc["blind"]["accuracy"]
    for name in m["method_names"]:
        s = m["methods"][name]
        arr = res.arrays[f"{name}__blind"]
        assert arr.shape == (60,) and np.isfinite(arr).all()
        assert s["blind"]["median"] == pytest.approx(np.median(arr), rel=1e-5, abs=1e-7)
        assert s["auroc_blind"] == pytest.approx(
            summarise_pair(res.arrays[f"{name}__unfair"], res.arrays[f"{name}__fair"],
                           arr)["auroc_blind"])
        assert 0 <= s["paired_win_blind"] <= 1
    assert any("proxy-blind model: probe AUROC" in line for line in lines)
    json.dumps(m)

    # a dataset without declared edits gets no blind model, and says so
    monkeypatch.delitem(fcm.PROXY_EDITS, "toy")
    lines.clear()
    m2 = run_real(_toy_data(), settings=replace(TINY, blind=True), seed=0,
                  log=lines.append).metrics
    assert m2["scored_models"] == ["unfair", "fair"] and "blind" not in m2["fairness_check"]
    assert "auroc_blind" not in m2["methods"]["faux_ng"]
    assert any("no proxy-blind fair model" in line for line in lines)


def test_summarise_pair_against_the_blind_model():
    rng = np.random.default_rng(1)
    fair = rng.random(100)
    s = summarise_pair(fair + 1.0, fair, fair + 2.0)
    assert s["auroc"] == 1.0 and s["auroc_blind"] == 0.0 and s["paired_win_blind"] == 0.0
    assert s["blind"]["median"] == pytest.approx(np.median(fair) + 2.0)
    assert "auroc_blind" not in summarise_pair(fair, fair)


@pytest.mark.parametrize("profile,on", [("quick", True), ("paper", True), ("tiny", False)])
def test_the_blind_model_switch_follows_the_profile(profile, on):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import faux.run  # noqa: F401  (resolvers)

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=real", f"profile={profile}",
                                           "data=adult", "paths.output_dir=."])
    s = real_study.Settings.from_config(OmegaConf.to_container(cfg, resolve=True))
    assert s.study.blind is on
