"""The audit's effect verdict: a row is flagged when the model's decision changes at its
counterfactual (the protected attribute and what the aux reads it from moved to the other
group's values) under every aux model.

Planted proxy world (tests/audit_world.py): ``proxy = c + 0.3 noise``. The true
counterfactual of a row flips c and holds the noise: ``proxy +- 1``. A logistic model trained
on the proxy changes its decision there for a share of the rows; one trained without the
proxy never does.
"""

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import faux
from audit_world import proxy_world
from faux.audit.cli import EPILOG, EXIT_GATE, EXIT_INPUT, build_parser, main
from faux.errors import ConfigError

N = 3000
KW = dict(sample=1500, aux_epochs=10, progress=False, counterfactual="aux")  # its mechanics


def _world():
    X, c = proxy_world(N, seed=0)
    x = X.to_numpy()
    noise = np.random.default_rng(1).normal(size=N)
    y = (x[:, 0] + 1.5 * x[:, 3] + 0.3 * noise > 0.75).astype(int)
    return X, c, y


@pytest.fixture(scope="module")
def world():
    X, c, y = _world()
    unfair = LogisticRegression().fit(X.to_numpy(), y)
    blind = LogisticRegression().fit(X.to_numpy()[:, :3], y)
    X_cf = X.copy()
    X_cf["proxy"] = X["proxy"] + (1 - 2 * c)  # flip c, hold the noise
    return X, c, unfair, blind, X_cf


def _blind_fn(blind):
    return lambda x: blind.predict_proba(np.asarray(x)[:, :3])[:, 1]


@pytest.fixture(scope="module")
def unfair_run(world, tmp_path_factory):
    X, c, unfair, _, _ = world
    out = tmp_path_factory.mktemp("effects") / "unfair"
    return faux.audit(unfair, X, c, out_dir=out, **KW)


@pytest.fixture(scope="module")
def blind_run(world):
    X, c, _, blind, _ = world
    return faux.audit(_blind_fn(blind), X, c, **KW)


def test_effect_verdict_flags_the_rows_whose_decision_truly_changes(world, unfair_run):
    X, c, unfair, _, X_cf = world
    p, p_cf = unfair.predict_proba(X.to_numpy())[:, 1], unfair.predict_proba(X_cf.to_numpy())[:, 1]
    truth = (p >= 0.5) != (p_cf >= 0.5)
    flagged = unfair_run.scores["flagged"].to_numpy().astype(bool)
    assert truth.sum() > 100
    assert flagged.sum() > 0
    precision = (flagged & truth).sum() / flagged.sum()
    assert precision >= 0.8, precision
    assert (flagged & truth).sum() / truth.sum() >= 0.5
    assert unfair_run.summary["flagged"]["count"] == int(flagged.sum())
    assert unfair_run.summary["settings"]["verdict"] == "effect"


def test_a_model_that_ignores_the_proxy_flags_at_most_2_percent(blind_run):
    flagged = blind_run.scores["flagged"].to_numpy().astype(bool)
    assert flagged.mean() <= 0.02, flagged.mean()


def test_scores_parquet_holds_the_effects(unfair_run):
    s = pd.read_parquet(unfair_run.out_dir / "scores.parquet")
    for col in ("p", "p_cf", "effect", "effect_lo", "effect_hi", "decision_changes",
                "off_support", "unreachable", "p_value", "flagged", "faux_ng"):
        assert col in s.columns, col
    assert len(s) == N
    assert s["p_cf"].between(0, 1).all() and s["p"].between(0, 1).all()
    assert (s["effect_lo"] <= s["effect"] + 1e-12).all()
    assert (s["effect"] <= s["effect_hi"] + 1e-12).all()
    np.testing.assert_allclose(s["p_cf"] - s["p"], s["effect"], atol=1e-9)
    assert s["decision_changes"].dtype == bool
    # with no materiality the verdict is the decision change under every aux model
    assert (s["flagged"] == s["decision_changes"]).all()
    assert s["p_value"].between(0, 1).all() and (s["p_value"] > 0).all()
    # rows with a larger effect have a smaller (or equal) p-value
    order = np.argsort(np.abs(s["effect"].to_numpy()))
    assert (np.diff(s["p_value"].to_numpy()[order]) <= 1e-12).all()


def test_score_verdict_reproduces_the_score_flags(world, unfair_run):
    X, c, unfair, _, _ = world
    res = faux.audit(unfair, X, c, verdict="score", **KW)
    primary = res.summary["settings"]["primary"]
    thr = res.summary["settings"]["threshold"]
    old = res.scores[primary].to_numpy() > thr
    np.testing.assert_array_equal(res.scores["flagged"].to_numpy(), old)
    assert res.summary["flagged"]["count"] == int(old.sum())
    # the diagnostic scores of the effect run are the same scores, with the same threshold
    np.testing.assert_allclose(unfair_run.scores[primary], res.scores[primary])
    assert unfair_run.summary["thresholds"][primary]["rows_above"] == int(old.sum())
    assert "effect" not in res.scores.columns


def test_a_black_box_is_called_once_per_row_and_counterfactual(world):
    X, c, unfair, _, _ = world
    n, sample, seeds, perms = 400, 300, 2, 1
    Xs, cs = X.iloc[:n], c[:n]
    rows = {}

    def counted(tag):
        def fn(x):
            rows[tag] = rows.get(tag, 0) + len(x)
            return unfair.predict_proba(np.asarray(x))[:, 1]
        return fn

    kw = dict(sample=sample, aux_epochs=5, progress=False, aux_seeds=seeds,
              null_permutations=perms, batch_size=128, counterfactual="aux")
    # every row's diagnostic scores, as the score verdict computes them (the default
    # fd_scores="sample" scores the sample rows only: tests/test_audit_sampled_scores.py)
    res = faux.audit(counted("effect"), Xs, cs, fd_scores="all", **kw)
    old = faux.audit(counted("score"), Xs, cs, verdict="score", **kw)
    directions = 1  # binary c
    # every row and its counterfactual under each aux (in one call per batch), and the
    # sample rows under each permuted-c aux; the top flagged rows' eq. 9 contributions
    # (a central-difference gradient, 2 d rows each) differ as the flagged rows do
    contributions = 2 * X.shape[1] * (len(res.top_flagged) - len(old.top_flagged))
    # the score verdict calls the model once more per row for the groups' outcomes (its
    # decisions); the effect verdict reads them from its own call
    expected = (n * (1 + seeds * directions) + sample * (1 + perms * directions)
                + contributions - n)
    assert rows["effect"] - rows["score"] == expected
    assert res.summary["verdict"]["model_calls_per_row"] == 1 + seeds * directions


@pytest.mark.parametrize("flag, value, word", [("--steps", "0", "steps"),
                                               ("--materiality", "2", "materiality"),
                                               ("--decision-threshold", "1.5",
                                                "decision_threshold"),
                                               ("--verdict", "votes", "verdict")])
def test_bad_effect_settings_are_refused_in_one_line(tmp_path, capsys, flag, value, word):
    X, c = proxy_world(200, 0)
    data = tmp_path / "d.csv"
    X.assign(gender=c).to_csv(data, index=False)
    out = tmp_path / "out"
    rc = main(["audit", "--model", str(tmp_path / "absent.skops"), "--data", str(data),
               "--protected", "gender", "--out", str(out), "--no-progress", flag, value])
    err = capsys.readouterr().err
    assert rc == EXIT_INPUT
    assert len(err.strip().splitlines()) == 1, err
    assert word in err.replace("-", "_"), err
    assert not out.exists()


@pytest.mark.parametrize("kw", [dict(steps=0), dict(materiality=2.0), dict(materiality=0),
                                dict(decision_threshold=1.5), dict(support_margin=-1),
                                dict(verdict="effect", fail_above=0.1)])
def test_bad_effect_settings_are_refused_before_the_data_are_read(kw):
    class Exploding:
        columns = ["a"]

        def __getattr__(self, name):
            raise AssertionError("the data were read")

    with pytest.raises(ConfigError) as e:
        faux.audit(lambda x: x[:, 0], Exploding(), np.zeros(3), **kw)
    assert "\n" not in str(e.value)


def test_the_planted_proxy_is_ranked_first(unfair_run):
    assert next(iter(unfair_run.feature_ranking)) == "proxy"


def test_the_summary_states_the_effects_in_words(unfair_run):
    s = json.loads((unfair_run.out_dir / "summary.json").read_text())
    eff = s["effects"]["c"]
    assert eff["flagged"] == s["flagged"]["count"] > 0
    assert "changing c through its proxies" in eff["headline"]
    rows = eff["rows"]
    assert 0 < len(rows) <= 50
    effects = [abs(r["effect"]) for r in rows]
    assert effects == sorted(effects, reverse=True)
    r = rows[0]
    assert 0 <= r["p"] <= 1 and 0 <= r["p_cf"] <= 1
    assert r["interval"][0] <= r["effect"] <= r["interval"][1]
    assert re.search(r"moves this person's predicted probability by [+-]0\.\d+ \[", r["text"])
    assert "the decision changes" in r["text"]
    assert any(m.startswith("proxy: ") and " → " in m for m in r["moved"]), r["moved"]
    html = (unfair_run.out_dir / "report.html").read_text()
    assert "evidence of individual unfairness for <b>c</b>" in html
    assert f">{r['row_id']:,}<" in html.split('<section id="people">')[1]


def test_the_null_tests_the_model_not_the_aux(unfair_run, blind_run):
    u = unfair_run.summary["effects"]["c"]["model_test"]
    b = blind_run.summary["effects"]["c"]["model_test"]
    n_null = unfair_run.summary["calibration"]["null_permutations"]
    assert u["resolution"] == pytest.approx(1 / (1 + n_null))
    assert u["p_value"] == pytest.approx(1 / (1 + n_null))  # the smallest it can be
    assert u["wilcoxon_p"] < 1e-3
    assert b["p_value"] > 1 / (1 + n_null)
    assert b["wilcoxon_p"] > 0.05
    # expected false flags are measured under the permuted-c aux models, not assumed
    ef = blind_run.summary["effects"]["c"]["expected_false_flags"]
    assert ef["count"] >= 0 and "permuted" in ef["text"]
    assert "resolution" in unfair_run.summary["effects"]["c"]["model_test"]["text"]


def test_nothing_flagged_is_said_plainly(blind_run):
    eff = blind_run.summary["effects"]["c"]
    if eff["flagged"] == 0:
        assert eff["headline"].startswith("c: no row flagged")
        assert "model-level test" in eff["headline"]


def test_every_protected_attribute_gets_its_own_effects(world):
    X, c, unfair, _, _ = world
    other = np.random.default_rng(5).integers(0, 2, N)
    cs = pd.DataFrame({"c": c, "coin": other})
    res = faux.audit(unfair, X, cs, intersection=False, aux_seeds=2, null_permutations=1,
                     **KW)
    assert set(res.summary["effects"]) == {"c", "coin"}
    assert "effect:coin" in res.scores.columns and "flagged:coin" in res.scores.columns
    assert res.summary["effects"]["c"]["flagged"] > res.summary["effects"]["coin"]["flagged"]
    assert "changing coin through its proxies" in res.summary["effects"]["coin"]["headline"]


def test_the_help_example_gates_on_the_flagged_rate(tmp_path, capsys):
    import skops.io as sio

    lines = EPILOG.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("faux audit"))
    cmd = []
    for line in lines[i:]:
        cmd.append(line.strip().rstrip("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    example = " ".join(cmd)
    args = build_parser().parse_args(example.split()[1:])
    assert args.verdict == "effect" and args.fail_above is None
    rate = args.max_flagged_rate
    assert rate is not None and f"more than {rate:.0%} of the rows" in " ".join(EPILOG.split())
    X, c, y = _world()
    data = tmp_path / "people.parquet"
    X.assign(sex=c, income=y).to_parquet(data)
    model = tmp_path / "model.skops"
    sio.dump(LogisticRegression().fit(X.to_numpy(), y), model)
    argv = [a.replace("model.skops", str(model)).replace("adult.parquet", str(data))
            for a in example.split()[1:]]
    rc = main([*argv, "--no-progress", "--aux-epochs", "10", "--sample", "1500",
               "--out", str(tmp_path / "out")])
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["flagged"]["rate"] > rate
    assert rc == EXIT_GATE
    assert "flagged" in capsys.readouterr().err


def test_moved_features_name_swapped_levels_and_the_largest_continuous_moves():
    from faux.audit.counterfactual.effects import Layout
    from faux.audit.verdict.words import moved_features

    names = ["age", "relationship=Husband", "relationship=Wife", "hours", "income", "smoker"]
    x = np.array([[38.0, 1, 0, 40.0, 10.0, 0], [50.0, 0, 1, 30.0, 20.0, 1]])
    layout = Layout.infer(x, names)
    mean, scale = np.array([40.0, 0, 0, 35.0, 15.0, 0]), np.array([10.0, 1, 1, 5.0, 5.0, 1])
    z = (x[0] - mean) / scale
    z_cf = z.copy()
    z_cf[0] += 0.32  # age +3.2
    z_cf[3] += 0.1  # hours +0.5
    z_cf[4] += 1e-5  # income: too small to name
    moved = np.array([1, -1])  # relationship -> its level 1 (Wife); smoker unchanged
    words = moved_features(layout, names, x[0], z_cf, moved, mean, scale, 3)
    assert words == ["relationship: Husband → Wife", "age: 38 → 41.2", "hours: 40 → 40.5"]
