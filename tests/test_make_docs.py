"""scripts/make_docs.py on fabricated minimal outputs: small PNGs, snippets naming the command
and profile, and one line naming a missing study and its make target."""

import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def make_docs():
    spec = importlib.util.spec_from_file_location("make_docs", ROOT / "scripts" / "make_docs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_docs"] = mod          # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def _job(folder: Path, profile: str, overrides: list[str], mtime: float) -> None:
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    res = folder / "result.json"
    res.write_text(json.dumps({"status": "ok", "job": "x", "config_hash": "h",
                               "config": {"profile": {"name": profile}}, "metrics": {},
                               "timings": {"wall_s": 1.0}}))
    os.utime(res, (mtime, mtime))


def _png(path: Path, w: int, h: int, noise: bool) -> None:
    """A smooth image (compresses well), or noise (only a smaller size gets it < 200 KB)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if noise:
        px = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    else:
        x = np.linspace(0, 255, w, dtype=np.float32)[None, :, None]
        y = np.linspace(0, 255, h, dtype=np.float32)[:, None, None]
        px = np.broadcast_to((x + y) / 2, (h, w, 3)).astype(np.uint8)
    Image.fromarray(px).save(path)


@pytest.fixture
def outputs(tmp_path) -> Path:
    out = tmp_path / "outputs"
    res = out / "results"
    res.mkdir(parents=True)
    t0 = 1_700_000_000.0
    # Table 1: a quick sweep, then a paper sweep with an extra override; results after both
    for i, m in enumerate(("faux", "fta")):
        _job(out / "table1/multiruns/quick" / str(i), "quick",
             [f"method={m}", "column=Synthetic-1", "experiment=table1", "profile=quick",
              "logger=csv"], t0)
        _job(out / "table1/multiruns/paper" / str(i), "paper",
             [f"method={m}", "column=Synthetic-1", "experiment=table1", "profile=paper",
              "logger=csv", "profile.gan_steps=2000"], t0 + 100)
    # what Hydra saves beside a sweep: the command line's overrides (the quick sweep's
    # multirun.yaml is absent: the overrides all its jobs share stand in)
    (out / "table1/multiruns/paper/multirun.yaml").write_text(yaml.safe_dump(
        {"hydra": {"overrides": {"task": ["experiment=table1", "profile=paper", "logger=csv",
                                          "profile.gan_steps=2000"]}}}))
    (res / "table1.md").write_text("| method | Synthetic-1 |\n|---|---|\n| fAux | 0.9 / 0.3 |\n")
    (res / "table1.csv").write_text("column,method,ap_mean\nSynthetic-1,faux,0.9\n")
    os.utime(res / "table1.md", (t0 + 200, t0 + 200))
    # Fig. 11: one sweep, a big figure
    _job(out / "fig11/multiruns/quick/0", "quick", ["transport_weight=0.1", "experiment=fig11",
                                                   "profile=quick"], t0)
    _job(out / "fig11/multiruns/quick/1", "quick", ["transport_weight=1.0", "experiment=fig11",
                                                   "profile=quick"], t0)
    (res / "fig11.md").write_text("Spearman AP vs KS: -0.5\n")
    _png(out / "figures" / "fig11.png", 2400, 1600, noise=False)
    # Fig. 8: a single run (not a multirun), results from its csv
    _job(out / "fig8/runs/2026-01-01_00-00-00", "tiny", ["experiment=fig8", "profile=tiny"], t0)
    (res / "fig8.csv").write_text("fusion,bias,ifs_mean\nouter,0.5,0.0123456\n")
    _png(out / "figures" / "fig8.png", 600, 400, noise=True)
    return out


def test_snippets_pngs_and_provenance(make_docs, outputs, tmp_path, capsys):
    docs = tmp_path / "docs" / "figures"
    rc = make_docs.main(["--outputs", str(outputs), "--out", str(docs),
                         "--only", "table1,fig11,fig8", "--readme", str(tmp_path / "R.md")])
    assert rc == 0, capsys.readouterr().err
    t1 = (docs / "table1.md").read_text()
    # the paper sweep made these results (its last job is the latest before them)
    assert "Made by `make table1 PROFILE=paper ARGS=profile.gan_steps=2000` (profile `paper`, " \
           "2 job(s)" in t1
    assert "| fAux | 0.9 / 0.3 |" in t1
    f11 = (docs / "fig11.md").read_text()
    assert "`make fig11 PROFILE=quick`" in f11 and "![" in f11 and "(fig11.png)" in f11
    png = docs / "fig11.png"
    assert png.stat().st_size < 200_000
    with Image.open(png) as im:
        assert im.width <= 1000 and abs(im.width / im.height - 1.5) < 0.02
    f8 = (docs / "fig8.md").read_text()
    assert "`make fig8 PROFILE=tiny`" in f8 and "| outer | 0.5 | 0.01235 |" in f8
    assert (outputs / "figures" / "fig8.png").stat().st_size > 200_000
    assert (docs / "fig8.png").stat().st_size < 200_000
    with Image.open(docs / "fig8.png") as im:        # noise: made narrower, same aspect
        assert im.width < 600 and abs(im.width / im.height - 1.5) < 0.02
    index = (docs / "README.md").read_text()
    for name in ("table1", "fig11", "fig8"):
        assert f"]({name}.md)" in index
    assert "(profile `paper`)" in index and "fig4.md" not in index


def test_results_older_than_the_paper_sweep_are_the_quick_ones(make_docs, outputs, tmp_path):
    res = outputs / "results" / "table1.md"
    t = 1_700_000_000.0 + 50        # aggregated after the quick sweep, before the paper one
    os.utime(res, (t, t))
    os.utime(outputs / "table1/multiruns/paper/0/result.json", (t + 5000, t + 5000))
    os.utime(outputs / "table1/multiruns/paper/1/result.json", (t + 5000, t + 5000))
    prov = make_docs.provenance(make_docs.BY_NAME["table1"], outputs, outputs / "results")
    assert prov.profile == "quick"
    assert prov.command == "make table1 PROFILE=quick ARGS=column=Synthetic-1"


def test_missing_study_is_one_line_naming_its_target(make_docs, outputs, tmp_path, capsys):
    docs = tmp_path / "docs" / "figures"
    rc = make_docs.main(["--outputs", str(outputs), "--out", str(docs),
                         "--only", "table1,fig5", "--readme", str(tmp_path / "R.md")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: no results for fig5") and "`make fig5`" in err
    assert not docs.exists()                          # nothing written when a study is absent
    rc = make_docs.main(["--outputs", str(outputs), "--out", str(docs),      # all studies
                         "--readme", str(tmp_path / "R.md")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    for name in ("fig4", "table3", "table4", "fig5"):
        assert name in err
    assert "make fig4 table3 table4 fig5" in err


def test_results_without_any_sweep_name_the_target(make_docs, tmp_path, capsys):
    out = tmp_path / "outputs"
    (out / "results").mkdir(parents=True)
    (out / "results" / "table1.md").write_text("x\n")
    rc = make_docs.main(["--outputs", str(out), "--out", str(tmp_path / "d"), "--only", "table1",
                         "--readme", str(tmp_path / "R.md")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "make table1" in err and len(err.splitlines()) == 1


def test_provenance_written_by_aggregation_wins(make_docs, outputs, tmp_path):
    """Results re-aggregated from the quick sweep after the paper sweep: the mtime guess
    would say paper; the provenance file aggregation writes says quick."""
    from faux.harness import provenance

    quick = outputs / "table1/multiruns/quick"
    results = [json.loads(p.read_text()) for p in sorted(quick.glob("*/result.json"))]
    (quick / "multirun.yaml").write_text(yaml.safe_dump(
        {"hydra": {"overrides": {"task": ["experiment=table1", "profile=quick", "seed=3"]}}}))
    path = provenance.write(outputs / "results", "table1", [quick], results)
    assert json.loads(path.read_text())["profile"] == "quick"
    prov = make_docs.provenance(make_docs.BY_NAME["table1"], outputs, outputs / "results")
    assert prov.profile == "quick" and prov.n_jobs == 2 and prov.source == str(quick)
    assert prov.command == "make table1 PROFILE=quick ARGS=seed=3"


def test_readme_status_and_results_blocks_between_markers(make_docs, outputs, tmp_path):
    res = outputs / "results"
    (res / "table1.md").write_text("Table 1: AP, ours / paper.\n| method | S1 |\n|---|---|\n"
                                   "| fAux | 0.9 / 0.3 |\n\nTop-30% AP:\n\n| method | S1 |\n")
    (res / "table1.csv").write_text("column,method,ap_mean\n" + "".join(
        f"Synthetic-{i},lic_ub,0.95\n" for i in range(1, 9)))
    from faux.reports import table1_intervals as T
    from test_docs_claims import _table1_jobs

    # C1 holds (LIC-UB near perfect), C2-C5 fail (every fAux variant below both FTAs)
    T.write(T.build(_table1_jobs(tmp_path / "jobs", {
        "lic_ub": 8.0, "fta": 3.0, "fta_lin": 3.0, "faux": 0.0, "faux_ng": 0.0,
        "faux_ig": 0.0}), b=200), res)
    (res / "fig4.md").write_text(
        "| method | Adult |\n|---|---|\n| FlipTest | 0.6 ± 0.1 (1 / 1) |\n"
        "| fAux+NG | 0.2 ± 0.1 (1 / 2) |\n| *fair model vs the fairness check* | pass (5/5) |\n")
    (res / "real_models.md").write_text("models\n")
    _png(outputs / "figures" / "fig4_adult.png", 300, 200, noise=False)
    _job(outputs / "real/multiruns/quick/0", "quick", ["data=adult", "experiment=real",
                                                      "profile=quick"], 1_700_000_000.0)
    (outputs / "real/multiruns/quick/multirun.yaml").write_text(yaml.safe_dump(
        {"hydra": {"overrides": {"task": ["experiment=real", "profile=quick", "logger=csv"]}}}))
    readme = tmp_path / "repo" / "README.md"
    readme.parent.mkdir()
    readme.write_text(f"# faux\n\n{make_docs.STATUS_BEGIN}\nold\n{make_docs.STATUS_END}\n\n"
                      f"mid\n\n{make_docs.FRONT_BEGIN}\nold\n{make_docs.FRONT_END}\n\nrest\n")
    docs = tmp_path / "repo" / "docs" / "figures"
    args = ["--outputs", str(outputs), "--out", str(docs), "--only", "table1,fig4",
            "--readme", str(readme)]
    assert make_docs.main(args) == 0
    text = readme.read_text()
    assert text.startswith(f"# faux\n\n{make_docs.STATUS_BEGIN}") and text.endswith("\nrest\n")
    assert "\nold\n" not in text and "\nmid\n" in text
    # the status table: one row per study built, its claims, command and measured time
    data = json.loads((docs / "claims.json").read_text())
    assert set(data["studies"]) == {"table1", "fig4"}
    t1 = data["studies"]["table1"]
    assert [c["held"] for c in t1["claims"]] == [True, False, False, False, False]
    assert t1["status"] == "partly" and t1["time"] == {"job_s": 2.0, "n_jobs": 2, "span_s": None}
    assert "| [Table 1](docs/figures/table1.md) |" in text
    assert ("**partly** (1/5): C1 ✓ holds 8/8, fails 0/8, undecided 0/8; C2 ✗ holds 0/8, "
            "fails 8/8, undecided 0/8") in text
    assert "| 2 s over 2 job(s) |" in text
    assert "| [Fig. 4/10](docs/figures/fig4.md) |" in text and "**not held** (0/1)" in text
    # the results block: Table 1's first table, its claims, Fig. 4 and the reversal finding
    assert "| fAux | 0.9 / 0.3 |" in text and "Top-30%" not in text
    assert ("Claims: C1: held (holds 8/8, fails 0/8, undecided 0/8); C2: not held (holds 0/8, "
            "fails 8/8, undecided 0/8)") in text
    assert "**On Adult the fair model passes" in text and "AUROC 0.200" in text
    assert "(docs/figures/fig4_adult.png)" in text and "`make fig4 PROFILE=quick`" in text
    assert "reproduced" not in text
    assert (docs / "fig4_adult.png").is_file()
    assert make_docs.main(args) == 0 and readme.read_text() == text     # idempotent
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert make_docs.main(args[:-1] + [str(plain)]) == 0
    assert plain.read_text() == "no markers\n"


def test_real_data_rows_come_from_the_committed_snippet(make_docs, outputs, tmp_path):
    """Without the real-data study's results, its rows are read from docs/figures/fig4.md."""
    docs = tmp_path / "docs" / "figures"
    docs.mkdir(parents=True)
    (docs / "fig4.md").write_text(
        "Made by `make fig4 PROFILE=paper` (profile `paper`, 1 job(s) in `x`).\n\n"
        "| method | Bank |\n|---|---|\n| FTA | 0.4 ± 0 (1 / 1) |\n| fAux+NG | 0.7 ± 0 (1 / 1) |\n")
    assert make_docs.main(["--outputs", str(outputs), "--out", str(docs), "--only", "fig11",
                           "--readme", str(tmp_path / "R.md")]) == 0
    fig4 = json.loads((docs / "claims.json").read_text())["studies"]["fig4"]
    assert fig4["status"] == "held" and fig4["profile"] == "paper" and fig4["time"] is None
    assert fig4["command"] == "make fig4 PROFILE=paper"
    # results the claims cannot be read from (no fig11.csv): a row that says so, not a crash
    fig11 = json.loads((docs / "claims.json").read_text())["studies"]["fig11"]
    assert fig11["status"] == "unknown" and "fig11.csv" in fig11["error"]
    assert "**unknown**: no claims read (FileNotFoundError" in make_docs.claims_cell(fig11)


def test_single_run_with_extra_overrides_names_its_python_command(make_docs, outputs):
    run = outputs / "fig8/runs/2026-01-01_00-00-00"
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(
        ["experiment=fig8", "profile=tiny", "fig8.epochs=2"]))
    prov = make_docs.provenance(make_docs.BY_NAME["fig8"], outputs, outputs / "results")
    assert prov.command == "python -m faux.run experiment=fig8 profile=tiny fig8.epochs=2"


def test_a_second_generator_regime_gets_its_own_section(make_docs, outputs, tmp_path, capsys):
    """Table 1 under a second regime (``make table1-regime REGIME=<reading>``) is listed
    beside the selected reading's, naming its own command; a study other than table1 skips it."""
    from faux.harness import provenance

    sweep = outputs / "table1_p30_x/multiruns/quick"
    _job(sweep / "0", "quick", ["method=faux", "column=Synthetic-1", "experiment=table1",
                                "profile=quick", "logger=csv", "reading=p30_x"], 1_700_000_000.0)
    (sweep / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {"overrides": {"task": [
        "experiment=table1", "profile=quick", "logger=csv", "reading=p30_x", "seed=3"]}}}))
    folder = outputs / "results" / "table1_p30_x"
    folder.mkdir()
    (folder / "table1.md").write_text("| method | Synthetic-1 |\n|---|---|\n| LIC-UB | 0.99 |\n")
    provenance.write(folder, "table1", [sweep],
                     [json.loads(p.read_text()) for p in sweep.glob("*/result.json")])
    docs = tmp_path / "docs" / "figures"
    rc = make_docs.main(["--outputs", str(outputs), "--out", str(docs), "--only", "table1",
                         "--readme", str(tmp_path / "R.md")])
    assert rc == 0, capsys.readouterr().err
    text = (docs / "table1_p30_x.md").read_text()
    assert "reading `p30_x`" in text and "| LIC-UB | 0.99 |" in text
    assert "Made by `make table1-regime REGIME=p30_x PROFILE=quick ARGS=seed=3`" in text
    index = (docs / "README.md").read_text()
    assert index.index("(table1.md)") < index.index("(table1_p30_x.md)")
    other = tmp_path / "other"
    assert make_docs.main(["--outputs", str(outputs), "--out", str(other), "--only", "fig11",
                           "--readme", str(tmp_path / "R2.md")]) == 0
    assert not (other / "table1_p30_x.md").exists()
