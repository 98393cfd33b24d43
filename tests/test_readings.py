"""The readings study (issue 13): every named reading composes and runs one tiny column; bad
readings are refused before any job starts; the claims and the selection rule."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from faux.errors import ConfigError
from faux.reports.readings import claims, paper, paper_distance
from faux.studies.readings import AXES, NUMERIC, check_reading

ROOT = Path(__file__).resolve().parents[1]
READINGS = sorted(p.stem for p in (ROOT / "conf" / "reading").glob("*.yaml"))


def _compose(*overrides, hydra=False):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)


def test_every_reading_composes_to_a_complete_valid_reading():
    seen = set()
    for name in READINGS:
        r = _compose("experiment=readings", f"reading={name}").reading
        assert r.name == name
        vals = check_reading(r, name)
        assert set(vals) == set(AXES) | set(NUMERIC)
        seen.add(tuple(sorted(vals.items())))
    assert len(seen) == len(READINGS)          # no two names for one reading


def test_the_sweep_lists_every_reading_file():
    cfg = _compose("experiment=readings", hydra=True)
    swept = str(cfg.hydra.sweeper.params.reading).split(",")
    assert sorted(swept) == READINGS


def test_check_reading_names_the_choices():
    r = dict(_compose("experiment=readings", "reading=gumbel").reading)
    with pytest.raises(ConfigError, match="ng='bad' is not one of feature, sample"):
        check_reading({**r, "ng": "bad"})
    with pytest.raises(ConfigError, match="unknown axis 'colour'"):
        check_reading({**r, "colour": 1})
    r.pop("threshold")
    with pytest.raises(ConfigError, match="axis 'threshold' has no value"):
        check_reading(r)


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "FAUX_PROGRESS": "plain"})


@pytest.mark.parametrize("bad,msg", [("reading=gumbel,nope", "unknown reading 'nope'; choose from"),
                                     ("reading.ng=bad", "ng='bad' is not one of feature, sample")])
def test_bad_readings_are_refused_before_any_job(tmp_path, bad, msg):
    r = _run("faux.run", "-m", "experiment=readings", "profile=tiny", "column=Synthetic-2",
             bad, f"hydra.sweep.dir={tmp_path}")
    assert msg in r.stderr
    assert not list(tmp_path.rglob("result.json"))


def test_every_reading_runs_one_tiny_column(tmp_path):
    sweep, results = tmp_path / "sweep", tmp_path / "results"
    r = _run("faux.run", "-m", "experiment=readings", "profile=tiny", "launcher=joblib",
             "column=Synthetic-2", "generator_scores=false", f"hydra.sweep.dir={sweep}")
    assert r.returncode == 0, r.stderr[-3000:]
    a = _run("faux.aggregate", str(sweep), "--table", "readings", "--results-dir",
             str(results), "--figures-dir", str(tmp_path / "fig"))
    assert "selected reading" in a.stdout
    df = pd.read_csv(results / "readings.csv")
    assert sorted(df["reading"]) == READINGS
    rates = df.set_index("reading")["rate Synthetic-2"]
    some = df["rate Synthetic-2"].between(0, 1, inclusive="neither")
    assert some.sum() >= len(df) // 2
    for m in ("fta", "fta_lin", "faux", "faux_ng", "faux_ig", "lic_ub"):
        v = df[f"{m} Synthetic-2"]
        assert v[some].between(0, 1).all()          # AP where both classes occur
        assert v[~some].isna().all()                # undefined (NaN) where one class only
    assert rates["gumbel_top30"] == pytest.approx(0.3)          # the fixed top fraction
    assert rates["gumbel_kstd"] >= rates["gumbel"]               # k std <= mean + k std
    assert (tmp_path / "fig" / "readings.png").stat().st_size > 10_000
    assert not df["complete"].any()                               # one column of eight
    assert a.returncode == 1                                      # the missing cells are named
    assert "gumbel/Synthetic-1" in a.stderr


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
    ap["lic_ub"]["Synthetic-5"] = 0.94                             # C1 needs 0.95 everywhere
    ap["faux_ng"]["Synthetic-2"] = ap["fta_lin"]["Synthetic-2"]     # C2 is strict
    ap["faux"]["Synthetic-1"] = 0.9                               # C4: NG 0.876 < fAux 0.9
    c = claims(ap)
    assert c["C1"] == (False, 7, 8) and c["C2"] == (False, 7, 8) and c["C4"] == (False, 3, 4)
    assert c["C3"][0] and c["C5"][0]
    # |0.94 - 0.965| + |0.683 - 0.999| + |0.9 - 0.332| over the 32 fitted cells
    assert paper_distance(ap) == pytest.approx((0.025 + 0.316 + 0.568) / 32)
