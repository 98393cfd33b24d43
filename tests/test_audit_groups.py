"""Several protected attributes, their intersection, and the group views with intervals over
rows and over aux seeds (``faux.audit.passes.groups``, ``faux.audit.sources.intersection``)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

import faux
from faux.audit.cli import EXIT_INPUT, EXIT_OK, main
from faux.audit.passes import groups
from faux.audit.scores.aux import train_aux
from faux.audit.sources.array_source import ArraySource
from faux.audit.sources.data_scan import scan
from faux.audit.sources.intersection import OTHER, intersection_of
from faux.errors import ConfigError, DataError


def _world(n=1200, seed=0, cells=None):
    """sex (binary) is carried by ``psex``, race (3 values) by ``prace``; x1, x2 are noise.
    ``cells``: rows per (sex, race) cell instead of independent draws."""
    rng = np.random.default_rng(seed)
    if cells is None:
        sex, race = rng.integers(0, 2, n), rng.integers(0, 3, n)
    else:
        pairs = [(s, r) for (s, r), k in cells.items() for _ in range(k)]
        sex, race = (np.array(v) for v in zip(*pairs))
        n = len(sex)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n),
                      "psex": sex + 0.3 * rng.normal(size=n),
                      "prace": race + 0.3 * rng.normal(size=n)})
    c = pd.DataFrame({"sex": np.array(["f", "m"])[sex], "race": np.array(["a", "b", "c"])[race]})
    return X, c


class ReadsSexProxy(torch.nn.Module):
    """Reads x1 and the proxy of sex; never race's proxy."""

    def forward(self, x):
        return 0.5 * x[:, 0] + 3.0 * x[:, 2]


def _audit(X, c, **kw):
    kw = {"aux_epochs": 5, "progress": False, "min_cell": 10, **kw}
    return faux.audit(ReadsSexProxy(), X, c, **kw)


@pytest.fixture(scope="module")
def two():
    X, c = _world()
    return X, c, _audit(X, c)


def test_only_the_attribute_whose_proxy_the_model_reads_scores_high(two):
    X, c, res = two
    g = res.summary["groups"]
    assert g["attributes"] == ["sex", "race"] and g["primary_view"] == "sex"
    assert set(g["views"]) == {"sex", "race", "sex x race"}
    sex, race = res.by_group("sex"), res.by_group("race")
    # the model moves along the sex direction only: fAux+NG (cosine) near 1 for sex, low for
    # race, in every group
    assert sex.mean_score.min() > 0.8 > 0.5 > race.mean_score.max()
    m0 = res.summary["settings"]["primary"]
    s = res.scores
    assert s[m0].mean() > 2 * s[f"{m0}:race"].mean()
    # the columns: the first attribute's unsuffixed (deciding flagged), the others suffixed
    assert {f"{m}:{v}" for m in res.summary["settings"]["methods"]
            for v in ("race", "sex x race")} <= set(s.columns)


def test_views_count_every_row_and_the_primary_view_is_the_flagged_summary(two):
    X, c, res = two
    for name, view in res.summary["groups"]["views"].items():
        assert sum(r["rows"] for r in view["rows"]) == len(X), name
        assert all(0 <= r["flagged"] <= r["rows"] for r in view["rows"])
    prim = res.by_group()
    by = res.summary["flagged"]["by_group"]
    assert {str(k): (v["rows"], v["flagged"]) for k, v in by.items()} == {
        g: (r.rows, r.flagged) for g, r in prim.iterrows()}
    race = res.by_group("race")
    assert list(race.index) == ["a", "b", "c"]
    assert race.rows.tolist() == c.race.value_counts().sort_index().tolist()


def test_difference_and_ratio_are_metricframe_like(two):
    _, _, res = two
    for view in res.summary["groups"]["views"]:
        rate = res.by_group(view).rate
        assert res.difference(view) == pytest.approx(rate.max() - rate.min())
        want = rate.min() / rate.max() if rate.max() > 0 else 1.0
        assert res.ratio(view) == pytest.approx(want)
        assert res.summary["groups"]["views"][view]["largest_difference"] == pytest.approx(
            res.difference(view))
    assert groups.difference_ratio([0.1, 0.4, None, float("nan")]) == pytest.approx((0.3, 0.25))
    with pytest.raises(ConfigError, match="no view 'age'"):
        res.by_group("age")


def test_intervals_contain_the_estimates_and_name_their_method(two):
    _, _, res = two
    g = res.summary["groups"]
    assert g["interval"]["bootstrap"] == groups.BOOTSTRAP and g["interval"]["aux_seeds"] == 3
    assert "bootstrap" in g["interval"]["text"] and "seed" in g["interval"]["text"]
    for view in g["views"].values():
        for r in view["rows"]:
            for est, keys in (("rate", ("rate_ci", "rate_seed_ci")),
                              ("mean_score", ("mean_score_ci", "mean_score_seed_ci"))):
                for k in keys:
                    if k == "rate_seed_ci" and view["flagged_by"] == "effect":
                        # the effect verdict flags a row only when every aux seed agrees:
                        # the seeds are in the flag, not around it
                        assert r[k] is None
                        continue
                    lo, hi = r[k]
                    assert lo - 1e-9 <= r[est] <= hi + 1e-9, (view, r["group"], k)
            assert 0 <= r["rate_ci"][0]
            assert r["rate_seed_ci"] is None or r["rate_seed_ci"][1] <= 1
            assert 1 <= len(r["top_features"]) <= groups.N_TOP_FEATURES


def test_bootstrap_intervals_shrink_with_rows_at_the_binomial_rate():
    rng = np.random.default_rng(0)
    widths = []
    for n in (400, 40_000):
        lo, hi = groups.bootstrap_rate(n, n // 10, rng)
        assert lo <= 0.1 <= hi
        widths.append(hi - lo)
        # a percentile bootstrap of a rate is about +-1.96 binomial standard deviations
        assert hi - lo == pytest.approx(2 * 1.96 * np.sqrt(0.09 / n), rel=0.25)
    assert widths[1] < widths[0] / 5
    assert groups.bootstrap_rate(50, 0, rng) == [0.0, 0.0]


def test_bootstrap_of_the_mean_from_binned_sums_matches_the_standard_error():
    rng = np.random.default_rng(1)
    for n in (500, 50_000):
        v = rng.exponential(size=n)
        st = groups.GroupStats(groups._edges(v[:2000]))
        st.add(np.zeros(n, dtype=int), v, np.zeros(n, dtype=bool))
        g = st.groups["0"]
        assert g.rows == n and g.bin_sum.sum() == pytest.approx(v.sum())
        lo, hi = groups.bootstrap_mean(g.bin_n, g.bin_sum, rng)
        assert lo < v.mean() < hi
        assert hi - lo == pytest.approx(2 * 1.96 * v.std() / np.sqrt(n), rel=0.25)


def test_seed_interval_is_zero_wide_when_the_seeds_are_one(monkeypatch):
    X, c = _world(600)
    monkeypatch.setattr(groups, "aux_seed", lambda seed, i: seed)
    res = _audit(X, c, verdict="score")  # the score verdict: flagged rates have seed intervals
    for view in res.summary["groups"]["views"].values():
        for r in view["rows"]:
            assert r["rate_seed_ci"] == [r["rate"], r["rate"]]
            assert r["mean_score_seed_ci"] == pytest.approx([r["mean_score"]] * 2)
    monkeypatch.undo()
    res = _audit(X, c)  # distinct seeds: aux models differ, so do their mean scores
    widths = [r["mean_score_seed_ci"][1] - r["mean_score_seed_ci"][0]
              for v in res.summary["groups"]["views"].values() for r in v["rows"]]
    assert min(widths) > 0


def test_scan_counts_the_combinations_across_batches():
    X, c = _world(777, seed=3)
    c = c.assign(age=np.random.default_rng(0).uniform(18, 90, len(c)))
    sc = scan(ArraySource(X, c), list(X.columns), ["sex", "age", "race"], None, sample=300,
              batch_size=50)
    assert [sc.attrs[a].kind for a in ("sex", "age", "race")] == [
        "binary", "continuous", "categorical"]
    want = c.groupby(["sex", "race"]).size()
    assert sc.joint == {(s, None, r): int(k) for (s, r), k in want.items()}
    assert sc.protected is sc.attrs["sex"] and (sc.c == sc.cs["sex"]).all()


def test_intersection_aux_has_one_output_per_cell_small_ones_merged():
    cells = {(0, 0): 120, (0, 1): 120, (0, 2): 120, (1, 0): 120, (1, 1): 20, (1, 2): 30}
    X, c = _world(cells=cells)
    sc = scan(ArraySource(X, c), list(X.columns), ["sex", "race"], None, sample=10_000,
              batch_size=64)
    inter = intersection_of(sc, min_cell=50)
    assert inter.name == "sex x race" and inter.merged == ["m x b", "m x c"]
    assert inter.info.levels == ["f x a", "f x b", "f x c", "m x a", OTHER]
    assert inter.info.counts == [120, 120, 120, 120, 50]
    z = (sc.x - sc.mean) / sc.scale
    net, _ = train_aux(z, inter.labels(sc.cs), inter.info, epochs=2)
    assert net(torch.as_tensor(z[:7], dtype=torch.float32)).shape == (7, 6 - 2 + 1)
    assert len(intersection_of(sc, min_cell=0).info.levels) == 6  # nothing merged
    with pytest.raises(DataError, match="--min-cell"):
        intersection_of(sc, min_cell=1000)
    assert intersection_of(sc, min_cell=50, enabled=False) is None
    res = _audit(X, c, min_cell=50)
    view = res.summary["groups"]["views"]["sex x race"]
    assert view["aux_outputs"] == 5 and view["merged"] == ["m x b", "m x c"]
    assert view["min_cell"] == 50
    assert res.by_group("sex x race").loc[OTHER, "rows"] == 50


def test_continuous_attributes_have_a_view_but_stay_out_of_the_intersection():
    X, c = _world(600)
    c = c.assign(age=np.random.default_rng(0).uniform(18, 90, len(c)))[["age", "sex", "race"]]
    res = _audit(X, c)
    g = res.summary["groups"]
    assert set(g["views"]) == {"age", "sex", "race", "sex x race"}
    assert g["primary_view"] == "age" and res.summary["protected"]["kind"] == "continuous"
    assert list(res.by_group("age").index) == ["above mean", "below mean"]


def test_one_attribute_keeps_its_columns_and_scores_whatever_the_aux_seeds():
    X, c = _world(600)
    # the score verdict: the first aux alone scores every row (the effect verdict's flags
    # need every aux seed to agree, so they depend on aux_seeds by design)
    a = _audit(X, c.sex.values, aux_seeds=1, verdict="score")
    b = _audit(X, c.sex.values, aux_seeds=2, verdict="score")
    methods = a.summary["settings"]["methods"]
    assert list(a.scores.columns) == ["row_id", *methods, "flagged", "group"]
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.summary["flagged"] == b.summary["flagged"]
    assert list(a.summary["groups"]["views"]) == ["c"]
    assert b.summary["groups"]["interval"]["aux_seeds"] == 2


def test_fdr_flags_each_view_by_its_own_benjamini_hochberg_cut():
    X, c = _world(600)
    eff = _audit(X, c, fdr=True, alpha=0.05)  # the effect verdict: BH cuts only the scores
    by = eff.summary["flagged"]["by_group"]
    assert {str(k): v["flagged"] for k, v in by.items()} == eff.by_group().flagged.to_dict()
    assert sum(v["flagged"] for v in by.values()) == int(eff.scores.flagged.sum()) > 0
    res = _audit(X, c, fdr=True, alpha=0.05, verdict="score")
    by = res.summary["flagged"]["by_group"]
    prim = res.by_group()
    assert {str(k): v["flagged"] for k, v in by.items()} == prim.flagged.to_dict()
    m0 = res.summary["settings"]["primary"]
    for name, view in res.summary["groups"]["views"].items():
        col = m0 if name == "sex" else f"{m0}:{name}"
        thr = view["threshold"]
        n_above = int((res.scores[col] > thr).sum()) if thr is not None else 0
        assert sum(r["flagged"] for r in view["rows"]) == n_above, name


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def files(tmp_path):
    X, c = _world(600)
    data = tmp_path / "people.csv"
    pd.concat([X, c], axis=1).to_csv(data, index=False)
    model = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(ReadsSexProxy()), model)
    return tmp_path, data, model


def _run(capsys, *args):
    rc = main(["audit", "--aux-epochs", "3", "--no-progress", *map(str, args)])
    return rc, capsys.readouterr().err


def test_cli_protected_several_columns(files, capsys):
    tmp, data, model = files
    out = tmp / "out"
    rc = main(["audit", "--aux-epochs", "3", "--no-progress", "--model", str(model), "--data",
               str(data), "--protected", "sex", "race", "--out", str(out), "--aux-seeds", "2",
               "--min-cell", "20"])
    assert rc == EXIT_OK
    printed = capsys.readouterr().out
    assert "  sex x race: 6 groups" in printed and "  race: 3 groups" in printed
    s = json.loads((out / "summary.json").read_text())
    assert s["data"]["protected"] == "sex" and s["data"]["features"] == ["x1", "x2", "psex",
                                                                         "prace"]
    assert s["groups"]["attributes"] == ["sex", "race"]
    assert s["groups"]["interval"]["aux_seeds"] == 2
    assert s["groups"]["views"]["sex x race"]["min_cell"] == 20
    cols = pd.read_parquet(out / "scores.parquet").columns
    assert "faux_ng:race" in cols and "faux_ng:sex x race" in cols
    rc, _ = _run(capsys, "--model", model, "--data", data, "--protected", "sex", "race",
                 "--out", out, "--no-intersection")
    assert rc == EXIT_OK
    s = json.loads((out / "summary.json").read_text())
    assert set(s["groups"]["views"]) == {"sex", "race"}


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize("case,args,needle", [
    ("constant", ["--protected", "sex", "const"], "protected column 'const' is constant"),
    ("empty", ["--protected", "sex", "race"], "empty cell: no row has sex=m, race=c"),
    ("seeds", ["--protected", "sex", "--aux-seeds", "0"], "--aux-seeds"),
    ("min-cell", ["--protected", "sex", "race", "--min-cell", "-1"], "--min-cell"),
    ("repeated", ["--protected", "sex", "sex"], "repeated"),
    ("types", ["--protected", "sex", "race", "--protected-type", "auto", "binary", "auto"],
     "3 protected types for 2"),
])
def test_bad_group_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, case, args,
                                                            needle):
    X, c = _world(600)
    if case == "empty":  # no row is both m and c
        keep = ~((c.sex == "m") & (c.race == "c"))
        X, c = X[keep], c[keep]
    frame = pd.concat([X, c.assign(const=1)], axis=1)
    data = tmp_path / "people.csv"
    frame.to_csv(data, index=False)
    model = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(ReadsSexProxy()), model)
    feats = ["--features", "x1", "x2", "psex", "prace"]
    rc, err = _run(capsys, "--model", model, "--data", data, "--out", tmp_path / "out",
                   *feats, *args)
    assert rc == EXIT_INPUT, err
    assert err.count("\n") == 1 and err.startswith("faux audit: error:") and needle in err, err
    assert not (tmp_path / "out").exists() and _leftovers(tmp_path) == []


def test_python_api_refuses_bad_group_settings_before_any_work(monkeypatch):
    import faux.audit.stages as stages

    def no_scan(*a, **k):
        raise AssertionError("the data were read")

    monkeypatch.setattr(stages, "scan", no_scan)
    X, c = _world(100)
    for kw, needle in (({"aux_seeds": 0}, "aux_seeds"), ({"aux_seeds": 1.5}, "aux_seeds"),
                       ({"min_cell": -1}, "min_cell"), ({"intersection": "yes"}, "intersection"),
                       ({"protected_type": ["auto", "ordinal"]}, "ordinal")):
        with pytest.raises(ConfigError, match=needle):
            _audit(X, c, **kw)
