"""faux.worlds: the validation worlds' exact counterfactuals, the models, the reference
counterfactuals, the scores, and the runner (small sizes throughout)."""

import json
import random

import numpy as np
import pandas as pd
import pytest
import torch

from audit_world import proxy_world
from faux.audit.result import AuditResult
from faux.worlds import dowhy_worlds as dw
from faux.worlds.counterfactuals import MeanShift, Oracle, QuantileMap, make_transport
from faux.worlds.evaluate import agreement, score_audit, score_transport, truth
from faux.worlds.models import train_models
from faux.worlds.planted import planted_world
from faux.worlds.profiler_worlds import choose_roles, profiler_world
from faux.worlds.run import main
from faux.worlds.world import World

N = 400
#: a small audit, for the tests only (the suite runs the audit at its defaults)
SMALL_AUDIT = dict(sample=N, aux_epochs=3, aux_seeds=1, null_permutations=1)


def _closed_form(w: World) -> pd.DataFrame:
    """The counterfactual by hand: for x = a c + f(others) + n, x_cf = x + a (1 - 2c)."""
    flip = 1 - 2 * w.c
    s, X, cf = w.meta["strength"], w.X, w.X.copy()
    family = w.name.rsplit("_", 1)[0]
    if family == "proxy_chain":
        cf["p1"] = X["p1"] + s * flip
        cf["p2"] = X["p2"] + 0.8 * s * flip     # p2 = 0.8 p1 + n
        cf["p3"] = X["p3"] + s * flip
    elif family == "unequal_noise":
        for q in ("q1", "q2", "q3"):
            cf[q] = X[q] + s * flip
    elif family == "interaction":
        cf["d1"] = X["d1"] + s * flip
        cf["d2"] = X["d2"] + s * flip * (X["x1"] + 0.5)  # d2 = d1 x1 + 0.5 d1 + n
        cf["d3"] = X["d3"] + s * flip * X["x2"]          # d3 = s c x2 + n
    elif family == "discrete_proxy":
        cf["k"] = X["k"] + s * flip
        cf["p1"] = X["p1"] + 0.5 * s * flip              # p1 = 0.5 k + n
    else:
        raise AssertionError(family)
    return cf


@pytest.fixture(scope="module")
def dowhy_all():
    return [build() for build in dw.dowhy_worlds(N).values()]


def test_each_dowhy_counterfactual_is_the_closed_form(dowhy_all):
    assert len(dowhy_all) == 8
    for w in dowhy_all:
        expected = _closed_form(w)
        np.testing.assert_allclose(w.X_cf.to_numpy(), expected.to_numpy(), rtol=0, atol=1e-9,
                                   err_msg=w.name)
        assert w.source == "dowhy" and 0.35 < w.c.mean() < 0.65 and 0.4 < w.y.mean() < 0.6


def test_the_discrete_proxy_takes_few_integer_values(dowhy_all):
    for w in (w for w in dowhy_all if w.name.startswith("discrete_proxy")):
        a = w.meta["strength"]
        for frame in (w.X, w.X_cf):
            k = frame["k"].to_numpy()
            assert np.array_equal(k, np.round(k)) and k.min() >= 0 and k.max() <= 3 + a
        assert set(np.unique(w.X["k"][w.c == 0])) <= {0, 1, 2, 3}


def _moves(w: World) -> None:
    keep = w.non_descendants
    assert keep and w.descendants
    assert np.array_equal(w.X[keep].to_numpy(), w.X_cf[keep].to_numpy()), w.name
    for col in w.descendants:
        assert (w.X_cf[col] != w.X[col]).any(), (w.name, col)


def test_non_descendants_are_unchanged_and_descendants_move(dowhy_all):
    for w in [*dowhy_all, planted_world(N), profiler_world(0, n=N), profiler_world(1, n=N)]:
        _moves(w)


def test_a_world_whose_non_descendant_moves_is_refused():
    w = planted_world(50)
    bad = w.X_cf.copy()
    bad["x1"] += 1.0
    with pytest.raises(ValueError, match="non-descendant"):
        World("bad", "", w.X, w.c, bad, w.descendants, w.y)


def test_the_planted_world_is_the_audit_tests_world():
    w = planted_world(300, seed=0)
    X, c = proxy_world(300, seed=0)
    pd.testing.assert_frame_equal(w.X, X)
    assert np.array_equal(w.c, c)


def test_causal_profiler_worlds_are_reproducible_by_seed_and_leave_the_rng_alone():
    states = random.getstate(), np.random.get_state()[1].copy(), torch.random.get_rng_state()
    a, b = profiler_world(2, n=N), profiler_world(2, n=N)
    assert random.getstate() == states[0]
    assert np.array_equal(np.random.get_state()[1], states[1])
    assert torch.equal(torch.random.get_rng_state(), states[2])
    pd.testing.assert_frame_equal(a.X, b.X)
    pd.testing.assert_frame_equal(a.X_cf, b.X_cf)
    assert np.array_equal(a.c, b.c) and np.array_equal(a.y, b.y) and a.meta == b.meta
    other = profiler_world(2, n=N, seed=7)
    assert not a.X.shape == other.X.shape or not np.allclose(a.X.to_numpy(), other.X.to_numpy())
    assert a.X.shape[1] == 8 and "c" not in a.X.columns and a.source == "causal-profiler"


def test_a_linear_profiler_world_moves_each_descendant_by_one_total_effect():
    """Same noise, linear mechanisms: x_cf - x = (1 - 2c) * the total effect of c on x, the
    same for every row."""
    w = profiler_world(0, n=N)
    assert w.meta["kind"] == "linear/gaussian"
    moved = (w.X_cf - w.X)[w.descendants].to_numpy() * (1 - 2 * w.c)[:, None]
    np.testing.assert_allclose(moved, np.broadcast_to(moved[0], moved.shape), atol=1e-9)


def test_roles_in_a_graph():
    # X1 -> X2 -> X3 -> X10, X1 -> X4; X5 root with one child; others isolated roots
    parents = {f"X{i}": [] for i in range(1, 11)}
    parents.update({"X2": ["X1"], "X3": ["X2"], "X4": ["X1"], "X10": ["X3", "X5"],
                    "X6": ["X5"]})
    assert choose_roles(parents) == ("X1", "X10")
    assert choose_roles({f"X{i}": [] for i in range(1, 11)}) is None


@pytest.fixture(scope="module")
def chain_models():
    w = dw.proxy_chain(n=1000, level="strong")
    return w, train_models(w)


def test_the_oracle_scores_precision_and_recall_one(chain_models):
    w, models = chain_models
    X_hat = make_transport("oracle", w).fit(w.X, w.c).transport(w.X, w.c, 1 - w.c)
    for m in models.values():
        s = score_transport(m, w, X_hat)
        if m.fair:
            assert s["n_flagged"] == 0 and s["mae"] == 0
            continue
        assert s["n_true_flips"] > 20, m.name
        assert s["precision"] == s["recall"] == 1.0 and s["mae"] == 0 and s["spearman"] == 1.0


def test_fair_models_have_zero_true_flips_and_zero_weight_on_descendants(chain_models):
    w, models = chain_models
    desc = [list(w.X.columns).index(d) for d in w.descendants]
    for name in ("fair_logistic", "fair_mlp"):
        m = models[name]
        tr = truth(m, w)
        assert m.fair and tr.flips.sum() == 0 and np.all(tr.effect == 0), name
        assert ((tr.p >= 0.5) == w.y).mean() > 0.65, name  # it reads the non-descendants
    assert np.all(models["fair_logistic"].obj[-1].coef_[0, desc] == 0)
    assert torch.all(models["fair_mlp"].obj.first.weight[:, desc] == 0)
    assert truth(models["logistic"], w).flips.sum() > 0


def test_the_model_that_reads_c_gets_c_and_its_flip(chain_models):
    w, models = chain_models
    m = models["with_c"]
    assert m.reads_c and m.obj.n_features_in_ == w.X.shape[1] + 1
    tr = truth(m, w)
    same_c = np.asarray(m.proba(pd.concat([w.X_cf, pd.Series(w.c, name="c")], axis=1)))
    assert not np.allclose(tr.p_cf, same_c)  # the truth flips c too


def test_the_metrics_on_a_hand_made_case():
    s = agreement(true_flips=[1, 1, 0, 0, 0], flags=[1, 0, 1, 0, 0],
                  true_effect=[0.4, -0.3, 0.1, 0.0, 0.2], est_effect=[0.5, 0.0, 0.3, 0.0, 0.1])
    assert s["precision"] == 0.5 and s["recall"] == 0.5
    assert s["n_flagged"] == 2 and s["n_true_flips"] == 2 and s["hits"] == 1
    assert s["false_flags"] == 1
    assert s["mae"] == pytest.approx((0.1 + 0.3 + 0.2 + 0 + 0.1) / 5)
    # ranks: true (5, 1, 3, 2, 4), estimated (5, 1.5, 4, 1.5, 3): Pearson of the ranks
    assert s["spearman"] == pytest.approx(np.corrcoef([5, 1, 3, 2, 4],
                                                      [5, 1.5, 4, 1.5, 3])[0, 1])
    none = agreement([0, 0], [0, 0], [0.0, 0.0], [0.1, -0.1])
    assert np.isnan(none["precision"]) and np.isnan(none["recall"]) and np.isnan(none["spearman"])
    assert none["false_flags"] == 0


def test_mean_shift_and_quantile_map_by_hand():
    X = pd.DataFrame({"a": [0.25, 1.25, 2.25, 3.25, 10.25, 11.25, 12.25, 13.25],
                      "k": [0, 0, 1, 1, 1, 1, 2, 2]}, index=range(10, 18))
    c = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    ms = MeanShift().fit(X, c).transport(X, c, 1 - c)
    assert ms.index.equals(X.index)
    np.testing.assert_allclose(ms["a"], X["a"] + np.where(c == 0, 10.0, -10.0))
    np.testing.assert_allclose(ms["k"], X["k"] + np.where(c == 0, 1.0, -1.0))
    qm = QuantileMap().fit(X, c).transport(X, c, 1 - c)
    np.testing.assert_allclose(qm["a"], X["a"] + np.where(c == 0, 10.0, -10.0))
    np.testing.assert_array_equal(qm["k"], X["k"] + np.where(c == 0, 1, -1))
    assert np.array_equal(QuantileMap().fit(X, c).transport(X, c, c), X.to_numpy())


def test_the_oracle_refuses_what_it_does_not_know():
    w = planted_world(50)
    oracle = Oracle(w).fit(w.X, w.c)
    pd.testing.assert_frame_equal(oracle.transport(w.X.iloc[5:9], w.c[5:9], 1 - w.c[5:9]),
                                  w.X_cf.iloc[5:9])
    with pytest.raises(ValueError, match="oracle"):
        oracle.transport(w.X, w.c, w.c)
    with pytest.raises(ValueError, match="unknown counterfactual"):
        make_transport("nearest", w)


def test_score_audit_reads_the_audits_flags_and_effects_in_row_order():
    w = planted_world(N)
    m = train_models(w, names=["logistic"])["logistic"]
    tr = truth(m, w)
    order = np.random.default_rng(0).permutation(N)  # scores.parquet need not be in row order
    flagged = tr.flips.copy()
    flagged[:5] = ~flagged[:5]
    effect = tr.effect + 0.01
    scores = pd.DataFrame({"row_id": order, "flagged": flagged[order], "effect": effect[order],
                           "p": tr.p[order]})
    s = score_audit(AuditResult({}, {}, pd.DataFrame(), scores), m, w, tr)
    assert s == {**agreement(tr.flips, flagged, tr.effect, effect), "p_gap": 0.0,
                 "chance_hi": None}
    summary = {"effects": {"c": {"expected_false_flags": {"interval": [0.0, 7.5]}}}}
    assert score_audit(AuditResult(summary, {}, pd.DataFrame(), scores), m, w,
                       tr)["chance_hi"] == 7.5
    with pytest.raises(ValueError, match="effect verdict"):
        score_audit(AuditResult({}, {}, pd.DataFrame(), scores.drop(columns="effect")), m, w)


def test_score_audit_end_to_end_on_a_small_audit():
    from faux.worlds.evaluate import run_audit

    w = planted_world(N)
    m = train_models(w, names=["logistic"])["logistic"]
    s = score_audit(run_audit(m, w, **SMALL_AUDIT), m, w)
    assert s["p_gap"] < 1e-9 and s["n_true_flips"] > 50
    assert s["precision"] > 0.8 and s["recall"] > 0.3, s  # the planted world: the audit's home


def test_the_runner_writes_the_tables_and_resumes(tmp_path, capsys):
    args = ["--quick", "--out", str(tmp_path), "--rows", "300", "--profiler-count", "1",
            "--worlds", "proxy_chain_weak", "profiler_*", "--models", "logistic",
            "fair_logistic", "with_c", *[f"--audit-arg={k}={v}" for k, v in SMALL_AUDIT.items()
                                         if k != "sample"], "--audit-arg", "sample=300"]
    from faux.worlds.run import COUNTERFACTUALS

    n_jobs = 2 * (3 * len(COUNTERFACTUALS) - 2)  # 2 worlds x 3 models; with_c is not audited
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"[{n_jobs}/{n_jobs}]" in out and "| model | counterfactual |" in out
    df = pd.read_csv(tmp_path / "worlds.csv")
    assert len(df) == n_jobs
    assert set(df["world"]) == {"proxy_chain_weak", "profiler_00"}
    oracle = df[df["counterfactual"] == "oracle"]
    assert (oracle["false_flags"] == 0).all() and (oracle["mae"] == 0).all()
    assert (oracle.loc[~oracle["fair"], ["precision", "recall"]] == 1).all().all()
    assert (df.loc[df["fair"], "n_true_flips"] == 0).all()
    md = (tmp_path / "worlds.md").read_text()
    assert "## Medians over worlds" in md and "fair_logistic | audit" in md
    first = (tmp_path / "worlds.csv").read_bytes()
    jobs = (tmp_path / "worlds.quick.jobs.jsonl").read_text().splitlines()
    assert json.loads(jobs[0])["settings"]["audit"]["aux_epochs"] == 3 and len(jobs) == n_jobs + 1
    assert main(args) == 0
    assert f"({n_jobs} done before)" in capsys.readouterr().out
    assert (tmp_path / "worlds.csv").read_bytes() == first


def test_the_faux_transport_finds_the_flips_and_leaves_fair_models_alone(chain_models):
    """The audit's transport on the proxy chain: the non-descendants stay, the flips of the
    unfair models are found, and the fair models (zero weight on c's descendants) get no
    flag (a mean shift moves the non-descendants by chance and flags some)."""
    w, models = chain_models
    tr = make_transport("transport", w).fit(w.X, w.c)
    X_hat = tr.transport(w.X, w.c, 1 - w.c)
    fixed = [c for c in w.X.columns if c not in w.descendants]
    pd.testing.assert_frame_equal(X_hat[fixed], w.X[fixed])
    for name in ("logistic", "mlp"):
        s = score_transport(models[name], w, X_hat)
        assert s["recall"] > 0.8 and s["precision"] > 0.8, (name, s)
    for name in ("fair_logistic", "fair_mlp"):
        assert score_transport(models[name], w, X_hat)["n_flagged"] == 0, name


def test_the_rule_picks_the_best_eligible_candidate_and_the_simpler_on_a_tie():
    from faux.worlds.report import selection

    def rows(cf, f1_like, fair_flags):
        out = [{"counterfactual": cf, "model": m, "precision": f1_like, "recall": f1_like,
                "false_flags": 0, "n_rows": 1000} for m in ("logistic", "mlp", "trees")]
        out += [{"counterfactual": cf, "model": m, "precision": 0.0, "recall": np.nan,
                 "false_flags": fair_flags, "n_rows": 1000}
                for m in ("fair_logistic", "fair_mlp")]
        return out

    df = pd.DataFrame(rows("audit_aux", 0.5, 30) + rows("transport", 0.9, 0)
                      + rows("transport_sinks_last", 0.95, 20))
    table, chosen = selection(df)
    assert chosen == "transport"            # sinks_last is better but flags 2 % of fair rows
    assert table.set_index("counterfactual")["eligible"].to_dict() == {
        "audit_aux": False, "transport": True, "transport_sinks_last": False}
    df = pd.DataFrame(rows("transport", 0.9, 0) + rows("transport_sinks_last", 0.905, 0))
    assert selection(df)[1] == "transport"  # within 0.01: the simpler one


# --------------------------------------------------------------------------- Table 1's methods


class _ReadsX1AndProxy(torch.nn.Module):
    """A closed-form model of the planted world: logit 4 (x1 + 0.3 proxy - 0.5). The
    counterfactual moves the proxy by +-1, so a row's decision flips only when x1 + 0.3 proxy
    is within 0.3 of 0.5 on the side the move crosses: few rows, all near the boundary."""

    def forward(self, x):
        return 4.0 * (x[:, 0] + 0.3 * x[:, 3] - 0.5)


def _near_boundary_model():
    from faux.worlds.models import FittedModel

    module = _ReadsX1AndProxy()

    def proba(rows):
        x = torch.as_tensor(np.asarray(rows, dtype=np.float32))
        return torch.sigmoid(module(x)).double().numpy()

    return FittedModel("near_boundary", module, proba)


@pytest.fixture(scope="module")
def planted_methods():
    from faux.worlds.methods import method_names, score_world

    w = planted_world(1500)
    models = {"near_boundary": _near_boundary_model(),
              **train_models(w, names=["fair_logistic"])}
    rows = score_world(w, models, method_names(), epochs=(30, 5))
    return w, {(r["model"], r["method"]): r for r in rows}


def test_gradient_methods_rank_the_flips_of_a_model_near_its_boundary(planted_methods):
    """Rows flip only near the model's boundary, where its gradient is largest: the local
    gradient methods rank them well above a random ranking (they cannot tell the side the
    move crosses from the other: about half the rows near the boundary flip), the attack,
    the path and integrated gradients above it; LIC-UB along the line between a row's two
    exact versions, and its path mean (the secant in the limit), rank them almost perfectly.
    fAux+NG reads directions only, and this model's gradient has one direction on every row:
    its ranking is the aux's, no better than random."""
    w, rows = planted_methods
    r = {name: rows[("near_boundary", name)] for _, name in rows}
    rate = r["fta"]["positive_rate"]
    assert 0.05 < rate < 0.25 and r["fta"]["ap_effect"] > 0.95
    for name in ("fta", "fta_lin", "faux"):
        assert r[name]["ap"] > 3 * rate, name
    for name in ("unfair_map", "faux_path", "faux_ig"):
        assert r[name]["ap"] > rate + 0.05, name
    for name in ("lic_ub", "lic_ub_path"):
        assert r[name]["ap"] > 0.95, name
    assert r["lic_ub_path"]["spearman"] > 0.99
    assert abs(r["faux_ng"]["ap"] - rate) < 0.05 and abs(r["faux_ng"]["spearman"]) < 0.2
    assert 0.9 < r["fta"]["aux_accuracy"] <= 1


def test_methods_on_a_fair_model_report_no_ap_but_their_flag_rate(planted_methods):
    from faux.methods import registry

    w, rows = planted_methods
    for (model, name), r in rows.items():
        if model != "fair_logistic":
            continue
        assert r["n_true_flips"] == 0 and np.isnan(r["ap"]) and np.isnan(r["spearman"]), name
        if registry.get(name).audit_threshold is None:
            assert np.isnan(r["flag_rate"]), name
        else:
            assert 0 <= r["flag_rate"] <= 1, name
    # the fair model's gradient has no component along the proxy, the aux's direction: fAux
    # flags almost nothing; FTA reads no aux and flags most rows
    assert rows[("fair_logistic", "faux")]["flag_rate"] < 0.05
    assert rows[("fair_logistic", "fta")]["flag_rate"] > 0.5


def test_the_ap_of_a_constant_score_is_the_positive_rate():
    from faux.worlds.evaluate import Truth
    from faux.worlds.methods import rank_scores

    p = np.array([0.1, 0.45, 0.55, 0.9, 0.3, 0.6])
    tr = Truth(p, np.array([0.2, 0.52, 0.4, 0.95, 0.1, 0.72]))  # rows 1 and 2 flip
    s = rank_scores(np.ones(6), tr)
    assert s["positive_rate"] == pytest.approx(2 / 6) and s["ap"] == pytest.approx(2 / 6)
    assert np.isnan(s["spearman"]) and s["n_true_flips"] == 2
    # |effect| (0.1, 0.07, 0.15, 0.05, 0.2, 0.12): the flips rank 2nd and 5th
    assert s["ap_effect"] == pytest.approx((1 / 2 + 2 / 5) / 2)
    assert rank_scores(np.abs(tr.effect), tr)["spearman"] == pytest.approx(1.0)


def test_trees_and_the_model_that_reads_c_are_not_scored(chain_models):
    from faux.worlds.methods import prepare, target_module

    w, models = chain_models
    prep = prepare(w)
    for name in ("trees", "with_c"):
        with pytest.raises(ValueError):
            target_module(models[name], prep)
    z = target_module(models["mlp"], prep)(prep.z).detach().numpy()
    p = 1 / (1 + np.exp(-z.astype(np.float64)))
    assert np.allclose(p, models["mlp"].proba(w.X), atol=1e-5)


def test_the_runner_scores_the_methods_and_renders_their_table(tmp_path, capsys):
    args = ["--quick", "--out", str(tmp_path), "--rows", "400", "--worlds", "planted",
            "--models", "logistic", "trees", "fair_logistic", "--skip-counterfactuals",
            "--methods", "fta", "faux", "lic_ub"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "[6/6] planted fair_logistic" in out  # trees is not differentiable: left out
    df = pd.read_csv(tmp_path / "worlds_methods.csv")
    assert len(df) == 6 and set(df["model"]) == {"logistic", "fair_logistic"}
    assert list(df["method"][:3]) == ["fta", "faux", "lic_ub"]
    assert not (tmp_path / "worlds.csv").exists()
    md = (tmp_path / "worlds.md").read_text()
    assert "## Table 1's methods against the exact counterfactual" in md
    assert "| random ranking (= positive rate) |" in md and "| FTA (`fta`) |" in md
    assert "| fAux (`faux`) | 0.05 |" in md       # the fair model's flag rate at 0.05
    first = (tmp_path / "worlds_methods.csv").read_bytes()
    assert main(args) == 0
    assert "(6 done before)" in capsys.readouterr().out
    assert (tmp_path / "worlds_methods.csv").read_bytes() == first
    with pytest.raises(SystemExit, match="fliptest needs --fliptest"):
        main([*args[:-3], "fliptest"])
