"""The method registry: a toy method registered in one place runs in every study and shows
up in Table 1, the real-data tables and the Fig. 5 sweep figure; profile.generators reaches
every synthetic study."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.protocol import Base, MethodConfig, TrainData
from faux.reports.sweep import Sweep

ROOT = Path(__file__).resolve().parents[1]


class Toy(Base):
    """|f_tar(x) - f_aux(x)| on the logits: a fairness test in a dozen lines."""

    name, label, needs, transparency = "toy", "Toy test", frozenset({"target", "aux"}), True
    audit_threshold = 0.1

    def fit(self, data: TrainData, seed: int):
        out = Toy(self.config)
        out.aux, ainfo = data.aux(seed)
        out.info = {"aux_accuracy": ainfo["accuracy"]}
        return out

    def score(self, target, batch):
        with torch.no_grad():
            x = torch.as_tensor(batch.x)
            return (target(x).reshape(len(x), -1)[:, 0] - self.aux(x).reshape(len(x), -1)[:, 0]).abs()

    def report(self, x0, **options):
        return torch.as_tensor(x0).abs().mean(0)


@pytest.fixture
def toy():
    m = registry.register(Toy)
    yield m
    registry.unregister("toy")


def _compose(*overrides) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    import faux.run  # noqa: F401  (registers ${faux_methods:})

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[*overrides, "paths.output_dir=."])
    return OmegaConf.to_container(cfg, resolve=True)


def _result(job: str, metrics: dict, job_dir: Path) -> dict:
    job_dir.mkdir(parents=True, exist_ok=True)
    res = {"status": "ok", "job": job, "config_hash": "x" * 16, "metrics": metrics,
           "timings": {"wall_s": 1.0}}
    (job_dir / "result.json").write_text(json.dumps(res, default=float))
    return {**json.loads((job_dir / "result.json").read_text()), "_dir": str(job_dir)}


def test_registry_order_needs_and_errors(toy):
    assert registry.names()[-1] == "toy"                       # after the paper's rows
    assert "toy" in registry.names(provides={"target", "aux"}, requires={"aux"})
    assert "toy" not in registry.names(provides={"target", "train"})
    assert registry.label("toy") == "Toy test"
    assert registry.label("faux_ng_feature") == "fAux+NG (feature)"
    with pytest.raises(ConfigError, match="unknown method 'nosuch'.*toy"):
        registry.get("nosuch")
    with pytest.raises(ConfigError, match="needs"):
        registry.register(type("Bad", (Toy,), {"name": "bad", "needs": {"aux", "gpu"}}))
    with pytest.raises(ConfigError, match="subclass"):
        registry.register(Toy())
    assert "bad" not in registry.names()
    with pytest.raises(ConfigError, match="unknown method"):
        registry.check_names(["faux", "nosuch"])


def test_table1_sweep_list_is_the_registry(toy):
    cfg = _compose("experiment=table1")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        full = compose("config", overrides=["experiment=table1"], return_hydra_config=True)
    swept = OmegaConf.to_container(full.hydra.sweeper.params, resolve=True)["method"]
    assert swept.split(",") == list(registry.names()) and "toy" in swept
    assert cfg["method"] in registry.names()


def test_profile_generators_reach_every_synthetic_study():
    """profile.generators (the tiny profile's small CVAEs) overrides every dataset's CVAE in
    Table 1, Fig. 5, Fig. 11 and Fig. 8 alike (Fig. 5/11 ignored it once)."""
    from faux.studies import fig5, fig8, fig11, table1

    tiny = {"epochs": 2, "max_steps": 20, "hidden": 16, "depth": 1}
    want = {"magic": tiny, "backache": tiny}
    pair = ("magic", "backache")
    # (reading=axes/gumbel: a reading with no CVAE overrides of its own; every study takes the
    # reading's)
    s1 = table1.Settings.from_config(_compose("experiment=table1", "profile=tiny",
                                              "column=Synthetic-1", "reading=axes/gumbel"))
    s5 = fig5.Settings.from_config(_compose("experiment=fig5", "profile=tiny",
                                            "pair=magic/backache", "reading=axes/gumbel"))
    s11 = fig11.Settings.from_config(_compose("experiment=fig11", "profile=tiny",
                                              "column.xc=magic", "column.xy=backache",
                                              "reading=axes/gumbel"))
    s8 = fig8.Settings.from_config(_compose("experiment=fig8", "profile=tiny",
                                            "reading=axes/gumbel"))
    for s in (s1, s5, s11):
        assert s.synth.gen_cfgs(pair) == want
    assert s8.generator_cfgs == want
    # a reading's CVAE setting (latent size 16) sits under the profile's, in Table 1
    s = table1.Settings.from_config(_compose("experiment=table1", "profile=tiny",
                                             "column=Synthetic-1",
                                             "reading=axes/softmax_latent16_ng_ifs_kstd"))
    assert s.synth.gen_cfgs(pair)["magic"] == {"latent_dim": 16, **tiny}
    # a study's per-dataset override sits under the profile's
    s = fig5.Settings.from_config(_compose("experiment=fig5", "profile=tiny", "reading=axes/gumbel",
                                           "+synthetic.generators={magic: {beta: 0.5}}"))
    assert s.synth.gen_cfgs(pair)["magic"] == {"beta": 0.5, **tiny}
    # quick has none: no overrides at all (the cache keys of quick/paper runs are unchanged)
    s = fig5.Settings.from_config(_compose("experiment=fig5", "profile=quick", "reading=axes/gumbel"))
    assert s.synth.gen_cfgs(pair) == {}


def test_toy_method_runs_everywhere_and_shows_in_every_report(toy, tmp_path):
    from faux.reports.fig4 import build as build_fig4
    from faux.reports.fig5 import build as build_fig5
    from faux.reports.table1 import build as build_table1
    from faux.reports.table3 import build as build_table3
    from faux.studies import fig5, table1
    from faux.studies.real import RealSettings, run_real
    from test_real_study import _toy_data

    cache = f"paths.cache_dir={tmp_path / 'cache'}"
    # Table 1: the toy as one cell of the tiny profile
    s = table1.Settings.from_config(_compose("experiment=table1", "profile=tiny", "method=toy",
                                             "column=Synthetic-2", cache))
    m1 = table1.run(s, tmp_path, lambda line: None)
    assert m1["method"] == "toy" and len(m1["ap_runs"]) == 1 and 0 <= m1["ap_runs"][0] <= 1
    rep = build_table1(Sweep([_result("table1_cell", m1, tmp_path / "t1")]), tmp_path / "r",
                       tmp_path / "f")
    md = (tmp_path / "r" / "table1.md").read_text()
    assert "| Toy test |" in md and "Toy test &" in (tmp_path / "r" / "table1.tex").read_text()
    assert not rep.missing
    # Fig. 5: every method reading an aux model, the toy included
    s = fig5.Settings.from_config(_compose("experiment=fig5", "profile=tiny",
                                           "pair=magic/backache", cache))
    job = tmp_path / "f5"
    job.mkdir()
    m5 = fig5.run(s, job, lambda line: None)
    assert set(m5["ap"]) == {"faux", "faux_ng", "faux_ig", "faux_path", "toy"}
    with np.load(job / "records.npz") as z:
        assert z["toy"].shape == (m5["n_test"],)
    build_fig5(Sweep([_result("fig5_cell", m5, job)]), tmp_path / "r", tmp_path / "f")
    assert "AP Toy test" in (tmp_path / "r" / "fig5.md").read_text()
    # the real-data study: scores, transparency report, Fig. 4 and Table 3
    settings = RealSettings(max_train_rows=300, n_score=40, max_epochs=2, patience=2,
                            gan_steps=4, n_random_rankings=5, gan_quality_rows=50,
                            accelerator="cpu")
    res = run_real(_toy_data(), settings=settings, seed=0, log=lambda line: None)
    assert "toy" in res.metrics["method_names"] and res.arrays["toy__fair"].shape == (40,)
    assert "toy" in res.metrics["table3"]["ndcg"]
    job = tmp_path / "real"
    job.mkdir()
    np.savez(job / "scores.npz", **res.arrays)
    sweep = Sweep([_result("real_cell", {**res.metrics, "scores_file": "scores.npz"}, job)])
    build_fig4(sweep, tmp_path / "r", tmp_path / "f")
    build_table3(sweep, tmp_path / "r", tmp_path / "f")
    assert "| Toy test |" in (tmp_path / "r" / "fig4.md").read_text()
    assert "| Toy test |" in (tmp_path / "r" / "table3.md").read_text()


def test_method_config_reaches_the_tests():
    """MethodConfig.params are the constructor arguments of the parametrised tests."""
    m = registry.get("unfair_map").build(MethodConfig(params={"unfair_map": {"steps": 3}}))
    x, c = torch.randn(50, 3), (torch.rand(50) > 0.5).long()
    fitted = m.fit(TrainData(x, c), seed=10)
    assert fitted.model.steps == 3


def test_the_registry_and_aggregation_load_without_torch():
    """Aggregation reads the method list through the registry; importing torch there cost
    ~4.5 s of every `make table1` rerun (docs/results.md, "Speed of Table 1")."""
    import subprocess
    import sys

    code = ("import sys, faux.methods.registry as r, faux.aggregate; r.names(); "
            "print('torch' in sys.modules, 'pytorch_lightning' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def _table1_metrics(method: str, ap: float) -> dict:
    return {"column": "Synthetic-2", "xc": "magic", "xy": "backache", "bias": 0.5,
            "fusion": "outer", "method": method, "ap_runs": [ap, ap + 0.01],
            "ap_top30_runs": [ap, ap], "auroc_runs": [0.6, 0.6], "positive_rate": 0.3,
            "threshold": 0.1}


def test_a_registered_method_reaches_the_audit_table1_and_the_real_tables(toy, tmp_path,
                                                                         capsys):
    """Registering a class is all it takes: the toy is offered by `faux audit --methods`
    (and scores there, on a torch model), gets a Table 1 row, and is in the real-data
    study's method and report lists."""
    import pandas as pd

    from faux.audit.cli import EXIT_OK, build_parser, main
    from faux.audit.scores.methods import audit_methods
    from faux.reports.table1 import build as build_table1
    from faux.studies import real
    from test_audit_cli import Proxy, _frame

    # the audit
    assert "toy" in audit_methods() and "toy" not in audit_methods(differentiable=False)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    assert "faux_ig,toy}" in capsys.readouterr().out            # --methods' choices
    data, model = tmp_path / "people.csv", tmp_path / "model.pt"
    _frame().to_csv(data, index=False)
    torch.jit.save(torch.jit.script(Proxy()), model)
    out = tmp_path / "audit"
    rc = main(["audit", "--aux-epochs", "2", "--no-progress", "--model", str(model), "--data",
               str(data), "--protected", "gender", "--out", str(out), "--methods", "toy",
               "faux"])
    assert rc == EXIT_OK, capsys.readouterr().err         # argparse took --methods toy
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["primary"] == "toy"
    # calibrated by default (its null scores); its audit_threshold is the manual rule's fixed one
    assert (summary["thresholds"]["toy"]["threshold"]
            == summary["calibration"]["null_quantiles"]["toy"]["0.99"])
    rc = main(["audit", "--aux-epochs", "2", "--no-progress", "--model", str(model), "--data",
               str(data), "--protected", "gender", "--out", str(out), "--methods", "faux",
               "toy", "--threshold", "0.05"])
    assert rc == EXIT_OK
    manual = json.loads((out / "summary.json").read_text())
    assert manual["thresholds"]["toy"]["threshold"] == Toy.audit_threshold
    scores = pd.read_parquet(out / "scores.parquet")
    assert scores["toy"].notna().all() and (scores["toy"] >= 0).all()
    # Table 1, from a tiny results frame
    results = [_result("table1_cell", _table1_metrics(m, 0.2 + 0.05 * i), tmp_path / f"t1_{m}")
               for i, m in enumerate(["toy", "faux", "fta"])]
    rep = build_table1(Sweep(results), tmp_path / "r", tmp_path / "f")
    assert list(rep.frame["method"]) == ["fta", "faux", "toy"]        # registry order
    assert "| Toy test |" in (tmp_path / "r" / "table1.md").read_text()
    # the real-data tables' method lists
    assert real.methods()[-1] == "toy" and "toy" in real.report_methods()
    assert "toy" not in [m for m in real.methods() if registry.get(m).score_options]
