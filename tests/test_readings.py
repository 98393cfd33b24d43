"""The readings study (issue 13): every named reading composes and runs one tiny column; bad
readings are refused before any job starts; the claims and the selection rule."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from faux.errors import ConfigError
from faux.harness import schema
from faux.reports.readings import claims, paper, paper_distance
from faux.studies.reading_check import AXES, NUMERIC, check_reading

ROOT = Path(__file__).resolve().parents[1]
#: every reading as ``reading=`` selects it: conf/reading/*.yaml, then conf/reading/axes/*.yaml
READINGS = (sorted(p.stem for p in (ROOT / "conf" / "reading").glob("*.yaml"))
            + sorted(f"axes/{p.stem}" for p in (ROOT / "conf" / "reading" / "axes").glob("*.yaml")))


def _name(selection: str) -> str:
    """A reading's name (its ``name:``, the file's stem) from its ``reading=`` selection."""
    return selection.rsplit("/", 1)[-1]


def _compose(*overrides, hydra=False):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)


def _targets(node):
    """Every node of a composed config that names a ``_target_``."""
    if OmegaConf.is_dict(node):
        if "_target_" in node:
            yield node
        for k in node:
            yield from _targets(node[k])


def test_every_reading_composes_to_a_complete_valid_reading_under_the_schema(tmp_path):
    """Every reading composes (one Hydra context, one composition per reading) to a typed
    config (the schema's Reading, Profile and Synthetic nodes) whose ``_target_`` nodes
    instantiate, whose reading checks complete and valid, that passes the harness's check
    of a shipped config (``faux.harness.validate.problems``) with a rule for each of its
    numbers and flags, and no two names give the same reading."""
    from hydra.utils import instantiate

    from faux.harness.guard import _sections
    from faux.harness.validate import expected, problems

    seen = set()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        for name in READINGS:
            cfg = compose("config", overrides=["experiment=readings", "profile=tiny",
                                               "column=Synthetic-2", f"reading={name}",
                                               f"paths.output_dir={tmp_path}"])
            found = list(_targets(cfg))
            assert found and all(instantiate(node) is not None for node in found), name
            r = cfg.reading
            assert OmegaConf.get_type(r) is schema.Reading
            assert OmegaConf.get_type(cfg.profile) is schema.Profile
            assert OmegaConf.get_type(cfg.synthetic) is schema.Synthetic
            assert r.name == _name(name)
            vals = check_reading(r, name)
            assert set(vals) - {"generators"} == set(AXES) | set(NUMERIC)
            assert vals["fraction"] == r.fraction
            sections = _sections(cfg)
            assert {"seed", "profile", "synthetic", "model", "reading"} <= set(sections), name
            assert problems(sections) == [], name
            assert [k for k, v in sections["reading"].items()
                    if isinstance(v, (int, float, bool)) and expected(f"reading.{k}") is None] == []
            seen.add(json.dumps(vals, sort_keys=True))
    assert len(seen) == len(READINGS)          # no two names for one reading


def test_the_two_sweeps_list_every_reading_file_once():
    study = str(_compose("experiment=readings", hydra=True).hydra.sweeper.params.reading)
    axes = str(_compose("experiment=readings_axes", hydra=True).hydra.sweeper.params.reading)
    study, axes = study.split(","), axes.split(",")
    assert sorted(study + axes) == sorted(READINGS)
    assert all(n.startswith("p30_") for n in study)     # what reading= lists
    assert all(n.startswith("axes/") for n in axes)     # conf/reading/axes/


def test_check_reading_names_the_choices():
    r = dict(_compose("experiment=readings", "reading=axes/gumbel").reading)
    with pytest.raises(ConfigError, match="ng='bad' is not one of feature, sample"):
        check_reading({**r, "ng": "bad"})
    with pytest.raises(ConfigError, match="unknown axis 'colour'"):
        check_reading({**r, "colour": 1})
    r.pop("threshold")
    with pytest.raises(ConfigError, match="axis 'threshold' has no value"):
        check_reading(r)


def test_a_readings_generators_set_each_datasets_cvae():
    from faux.studies.readings import generator_settings

    r = check_reading(_compose("experiment=readings", "reading=p30_softmax_tuned").reading)
    over, _ = generator_settings(r, ("magic", "credit_g"))
    # the per-dataset entry wins over the reading's one latent size (softmax_latent16's 16)
    assert over == {"magic": {"latent_dim": 4, "beta": 1.0},
                    "credit_g": {"latent_dim": 16, "beta": 1.0}}
    plain = check_reading(_compose("experiment=readings", "reading=p30_softmax_latent16").reading)
    assert "generators" not in plain           # a reading without the block records as before
    assert generator_settings(plain, ("magic",))[0] == {"magic": {"latent_dim": 16}}


@pytest.mark.parametrize("gens,msg", [
    ({"magic": {"latent_dim": 0}}, "generators.magic.latent_dim=0 must be an integer in [1, 64]"),
    ({"magic": {"latent_dim": 2.5}}, "generators.magic.latent_dim=2.5 must be an integer"),
    ({"magic": {"beta": -1}}, "generators.magic.beta=-1 must be a number in [0, 4]"),
    ({"magic": {"hidden": 8}}, "generators.magic.hidden is not a reading's CVAE setting"),
    ({"magic": {}}, "generators.magic must set one of latent_dim, beta")])
def test_bad_generators_are_one_line_before_anything_trains(gens, msg):
    from faux.harness.validate import problems

    r = dict(_compose("experiment=readings", "reading=p30_softmax_latent16").reading)
    with pytest.raises(ConfigError, match=re.escape(msg)):
        check_reading({**r, "generators": gens})
    found = problems({"reading": {**r, "generators": gens}})
    assert len(found) == 1 and found[0].startswith(f"reading.{msg}")


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "FAUX_PROGRESS": "plain"})


@pytest.mark.parametrize("bad,msg", [("reading=axes/gumbel,nope", "unknown reading 'nope'; choose from"),
                                     ("reading.ng=bad", "ng='bad' is not one of feature, sample")])
def test_bad_readings_are_refused_before_any_job(tmp_path, bad, msg):
    r = _run("faux.run", "-m", "experiment=readings", "profile=tiny", "column=Synthetic-2",
             bad, f"hydra.sweep.dir={tmp_path}")
    assert msg in r.stderr
    assert not list(tmp_path.rglob("result.json"))


def _tiny_readings(tmp_path, experiment, *extra):
    sweep, results = tmp_path / "sweep", tmp_path / "results"
    r = _run("faux.run", "-m", f"experiment={experiment}", "profile=tiny", "hydra/launcher=joblib",
             "column=Synthetic-2", "generator_scores=false", f"hydra.sweep.dir={sweep}", *extra)
    assert r.returncode == 0, r.stderr[-3000:]
    a = _run("faux.aggregate", str(sweep), "--table", "readings", "--results-dir",
             str(results), "--figures-dir", str(tmp_path / "fig"))
    return a, pd.read_csv(results / "readings.csv")


def _check_cells(df):
    some = df["rate Synthetic-2"].between(0, 1, inclusive="neither")
    assert some.sum() >= len(df) // 2
    for m in ("fta", "fta_lin", "faux", "faux_ng", "faux_ig", "lic_ub"):
        v = df[f"{m} Synthetic-2"]
        assert v[some].between(0, 1).all()          # AP where both classes occur
        assert v[~some].isna().all()                # undefined (NaN) where one class only
        assert df[f"nap {m} Synthetic-2"][some].between(-1, 1).all()


def test_the_prevalence_matched_study_runs_one_tiny_column(tmp_path):
    a, df = _tiny_readings(tmp_path, "readings")
    assert "selected reading" in a.stdout
    assert sorted(df["reading"]) == [n for n in READINGS if "/" not in n]
    _check_cells(df)
    rates = df.set_index("reading")["rate Synthetic-2"]
    assert ((rates - 0.3).abs() < 1e-9).all()                    # the top 30 % everywhere
    # the forms of LIC-UB are make readings-axes' (lic_ub_forms: false here); the secant gap
    # of c -> f_tar(x(c)) is every job's
    assert not [c for c in df.columns if c.startswith("lic ")]
    assert df["linearity_gap Synthetic-2"].notna().all()
    md = (tmp_path / "results" / "readings.md").read_text()
    assert md.count("| nonlinearity |") == len(df) and "| mid/logit |" not in md
    assert (tmp_path / "fig" / "readings.png").stat().st_size > 10_000
    assert not df["complete"].any() and not df["valid"].any()     # one column of eight
    assert a.returncode == 1                                      # the missing cells are named
    assert "p30_gumbel/Synthetic-1" in a.stderr


def test_new_axis_values_run_one_tiny_column(tmp_path):
    a, df = _tiny_readings(tmp_path, "readings_axes",
                           "reading=" + ",".join(f"axes/{n}" for n in (
                               "gumbel", "gumbel_top30", "gumbel_kstd", "gumbel_cal",
                               "gumbel_licmid", "gumbel_licfd", "gumbel_licpath",
                               "gumbel_licifs")))
    _check_cells(df)
    rates = df.set_index("reading")["rate Synthetic-2"]
    assert rates["gumbel_top30"] == pytest.approx(0.3)           # the fixed top fraction
    assert rates["gumbel_kstd"] >= rates["gumbel"]                # k std <= mean + k std
    assert rates["gumbel_cal"] == pytest.approx(0.3)             # bias .5: its own quantile
    lic = df.set_index("reading")["lic_ub Synthetic-2"]
    forms = df.set_index("reading")             # every form of LIC-UB (lic_ub_forms: true)
    assert {c.split()[1] for c in forms.columns if c.startswith("lic ")} >= {
        "mixed/prob", "mid/prob", "fd/prob", "observed/prob", "path/prob"}
    # the reading's LIC-UB row is the form it names
    assert lic["gumbel_licmid"] == pytest.approx(forms.loc["gumbel", "lic mid/prob Synthetic-2"])
    assert lic["gumbel_licpath"] == pytest.approx(forms.loc["gumbel", "lic path/prob Synthetic-2"])
    assert lic["gumbel"] == pytest.approx(forms.loc["gumbel", "lic mixed/prob Synthetic-2"])


@pytest.mark.slow
def test_every_one_axis_reading_runs_one_tiny_column(tmp_path):
    a, df = _tiny_readings(tmp_path, "readings_axes")
    assert sorted(df["reading"]) == sorted(_name(n) for n in READINGS if n.startswith("axes/"))
    _check_cells(df)


def _ap(value_of):
    cols = [f"Synthetic-{i}" for i in range(1, 9)]
    return {m: {c: value_of(m, c) for c in cols}
            for m in ("fta", "fta_lin", "faux", "faux_ng", "faux_ig", "lic_ub")}


def test_the_papers_own_table_holds_every_claim_at_distance_zero():
    ap = _ap(paper)
    assert all(held for held, _, _ in claims(ap).values())
    assert paper_distance(ap) == 0.0


def test_claims_fail_where_they_should():
    ap = _ap(paper)
    ap["lic_ub"]["Synthetic-5"] = 0.89                             # C1 needs 0.9 everywhere
    ap["faux_ng"]["Synthetic-2"] = ap["fta_lin"]["Synthetic-2"]     # C2 is strict
    ap["faux"]["Synthetic-1"] = 0.9                               # C4: NG 0.876 < fAux 0.9
    c = claims(ap)
    assert c["C1"] == (False, 7, 8) and c["C2"] == (False, 7, 8) and c["C4"] == (False, 3, 4)
    assert c["C3"][0] and c["C5"][0]
    # |0.89 - 0.965| + |0.683 - 0.999| + |0.9 - 0.332| over the 32 fitted cells
    assert paper_distance(ap) == pytest.approx((0.075 + 0.316 + 0.568) / 32)


def test_validity_needs_every_rate_between_the_floor_and_the_papers_cap():
    from faux.reports.readings import CAPS, COLUMNS, MIN_RATE, valid

    ok = {c: 0.3 for c in COLUMNS}
    assert valid(ok)
    assert not valid({**ok, "Synthetic-6": CAPS["Synthetic-6"] + 0.01})     # over the cap
    assert valid({**ok, "Synthetic-5": 0.6})                                # S5's cap is .68
    assert not valid({**ok, "Synthetic-1": MIN_RATE - 0.01})                # too few positives
    assert not valid({c: ok[c] for c in COLUMNS[:7]})                       # a column missing


def test_the_rule_ranks_valid_before_c1_before_claims_before_distance():
    from faux.reports.readings import COLUMNS, frame_of

    def result(name, rate, lic, ng):
        out = []
        for c in COLUMNS:
            ap = {m: [paper(m, c)] for m in ("fta", "fta_lin", "faux", "faux_ig")}
            ap["lic_ub"], ap["faux_ng"] = [lic], [ng]
            out.append({"metrics": {"reading": name, "column": c, "settings": {},
                                    "ap_runs": ap, "positive_rate": rate}})
        return out
    rows = [*result("invalid_best", 0.9, 1.0, 1.0), *result("valid_no_c1", 0.3, 0.5, 1.0),
            *result("valid_c1_far", 0.3, 0.95, 0.0), *result("valid_c1_near", 0.3, 0.95, 1.0)]
    df = frame_of(rows)
    assert list(df["reading"]) == ["valid_c1_near", "valid_c1_far", "valid_no_c1",
                                   "invalid_best"]
    assert df.loc[0, "nap lic_ub Synthetic-1"] == pytest.approx((0.95 - 0.3) / 0.7)
