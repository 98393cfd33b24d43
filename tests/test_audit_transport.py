"""The transport counterfactual (faux.audit.counterfactual.transport) on closed-form worlds: an additive-noise
chain whose exact counterfactual is known row by row, features that c does not cause, a
categorical descendant, and the null transports."""

import numpy as np
import pytest

from faux.audit.counterfactual import transport as tp
from faux.audit.sources.layout import Block, Layout


def _chain(n=6000, seed=0):
    """c -> a -> b (additive noise), u and x independent of c; each row's exact
    counterfactual under do(c := 1 - c) from the same noise."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    u, x, e_a, e_b = rng.normal(size=(4, n))

    def rows(c):
        a = 1.2 * c + 0.5 * u + e_a
        b = 0.8 * a - 0.3 * x + 0.5 * e_b
        return np.column_stack([u, x, a, b])

    return rows(c), rows(1 - c), c


def test_an_additive_noise_chain_is_carried_to_its_exact_counterfactual():
    X, X_cf, c = _chain()
    t = tp.fit_transport(X, c, 2, tp.features_of(4, names=["u", "x", "a", "b"]))
    assert [t.features[i].name for i in t.fixed] == ["u", "x"]
    assert [t.features[i].name for i in t.moved] == ["a", "b"]  # the chain's order
    out = t.transport(X, c, 1 - c)
    err = np.abs(out.x - X_cf).mean(axis=0)
    assert err[0] == err[1] == 0                     # held fixed, bit for bit
    assert err[2] < 0.03 and err[3] < 0.03           # against moves of 1.2 and 0.96
    assert out.moved.all()


def test_a_row_carried_to_its_own_group_stays_as_it_is():
    X, _, c = _chain(2000)
    t = tp.fit_transport(X, c, 2, tp.features_of(4))
    out = t.transport(X, c, c)
    assert np.array_equal(out.x, X) and not out.moved.any()


def test_null_transports_hold_the_same_features_and_move_the_rest_by_noise_only():
    X, X_cf, c = _chain(4000)
    t = tp.fit_transport(X, c, 2, tp.features_of(4))
    (null,) = tp.null_transports(t, X, c, 1, seed=0)
    assert null.fixed == t.fixed and null.moved == t.moved
    move = np.abs(null.transport(X, c, 1 - c).x - X).mean(axis=0)
    true = np.abs(X_cf - X).mean(axis=0)
    assert move[0] == move[1] == 0
    assert (move[2:] < 0.1 * true[2:]).all()


def test_a_categorical_descendant_moves_as_a_category_and_keeps_its_position():
    """job in {a, b, c} one-hot: group 1 has more 'b', group 0 more 'a'; 'c' is as common in
    both. A row of 'c' keeps it; an 'a' of group 0 becomes the 'b' group 1 has in excess."""
    rng = np.random.default_rng(1)
    n = 6000
    g = rng.integers(0, 2, n)
    probs = np.where(g[:, None] == 0, [0.6, 0.1, 0.3], [0.1, 0.6, 0.3])
    lev = np.array([rng.choice(3, p=p) for p in probs])
    x_other = rng.normal(size=n)
    X = np.column_stack([np.eye(3)[lev], x_other])
    layout = Layout(4, (Block("job", (0, 1, 2), ("a", "b", "c")),), (3,))
    feats = tp.features_of(4, layout, ["job=a", "job=b", "job=c", "x"])
    t = tp.fit_transport(X, g, 2, feats)
    assert [t.features[i].name for i in t.moved] == ["job"]
    out = t.transport(X, g, 1 - g).x
    new = out[:, :3].argmax(axis=1)
    assert set(np.unique(out[:, :3])) <= {0.0, 1.0} and (out[:, :3].sum(axis=1) == 1).all()
    assert (new[lev == 2] == 2).all()                        # as common in both: kept
    assert (new[(lev == 0) & (g == 0)] == 1).all()           # a -> the b group 1 has in excess
    assert (new[(lev == 1) & (g == 1)] == 0).all()
    assert np.array_equal(out[:, 3], x_other)


def test_the_coupling_keeps_a_level_the_other_group_has_at_least_half_as_often():
    p = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    q = np.array([[0.3, 0.2, 0.5], [0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    cur = np.array([0, 0, 2])
    # 0.3 >= 0.25 keeps; 0.2 < 0.25 moves to the largest excess (level 2); 0.3 < 0.4 moves
    assert tp._coupled(cur, p, q).tolist() == [0, 2, 1]


def test_holm_rejects_in_step_down_order():
    p = np.array([0.001, 0.04, 0.012, 0.9])
    assert tp._holm(p, 0.05).tolist() == [True, False, True, False]
    assert tp._holm(p, 0.001).tolist() == [False, False, False, False]


def test_three_groups_are_carried_to_the_one_asked_for():
    rng = np.random.default_rng(2)
    n = 6000
    g = rng.integers(0, 3, n)
    e, u = rng.normal(size=(2, n))
    shift = np.array([0.0, 1.0, -1.5])
    X = np.column_stack([u, shift[g] + 0.4 * u + e])
    t = tp.fit_transport(X, g, 3, tp.features_of(2))
    to = np.full(n, 2)
    out = t.transport(X, g, to).x
    want = shift[2] + 0.4 * u + e
    assert np.abs(out[:, 1] - want).mean() < 0.05 and np.array_equal(out[:, 0], u)


@pytest.mark.parametrize("kind", ["same noise", "wider noise in group 1"])
def test_residuals_are_carried_as_they_are_unless_the_groups_noise_differs(kind):
    rng = np.random.default_rng(3)
    n = 8000
    g = rng.integers(0, 2, n)
    z = rng.normal(size=n)
    sd = np.where(g == 1, 2.0, 1.0) if kind != "same noise" else np.ones(n)
    X = np.column_stack([0.5 * g + sd * z])
    t = tp.fit_transport(X, g, 2, tp.features_of(1))
    out = t.transport(X, g, 1 - g).x[:, 0]
    sd_to = np.where(g == 0, 2.0, 1.0) if kind != "same noise" else np.ones(n)
    want = 0.5 * (1 - g) + sd_to * z        # the same rank in the other group
    assert (t.fits[0].resid is None) == (kind == "same noise")
    assert np.abs(out - want).mean() < 0.1


def test_rows_carried_a_block_at_a_time_are_the_rows_carried_at_once(monkeypatch):
    """A chain with noise that differs by group (rank-mapped), a categorical descendant and
    three target groups: carried ``ROWS_AT_ONCE`` rows at a time (several blocks and a short
    last one) gives the same rows and moves, bit for bit, as all rows in one block."""
    rng = np.random.default_rng(5)
    n = 5000
    g = rng.integers(0, 3, n)
    u = rng.normal(size=n)
    a = 0.8 * g + 0.5 * u + np.where(g == 1, 2.0, 1.0) * rng.normal(size=n)
    lev = np.array([rng.choice(3, p=[0.6, 0.2, 0.2] if k == 0 else [0.2, 0.6, 0.2])
                    for k in g])
    b = 0.7 * a - 0.4 * lev + rng.normal(size=n)
    X = np.column_stack([u, a, np.eye(3)[lev], b])
    layout = Layout(6, (Block("job", (2, 3, 4), ("p", "q", "r")),), (0, 1, 5))
    t = tp.fit_transport(X, g, 3, tp.features_of(6, layout, ["u", "a", "job=p", "job=q",
                                                              "job=r", "b"]))
    assert len(t.moved) == 3 and t.fits[[t.features[i].name for i in t.moved].index("a")
                                        ].resid is not None
    to = (g + 1 + rng.integers(0, 2, n)) % 3
    monkeypatch.setattr(tp, "ROWS_AT_ONCE", 10 ** 9)
    whole = t.transport(X, g, to)
    monkeypatch.setattr(tp, "ROWS_AT_ONCE", 512)
    blocks = t.transport(X, g, to)
    assert np.array_equal(blocks.x, whole.x) and np.array_equal(blocks.moved, whole.moved)
    assert whole.moved.any(axis=0).all()


# --------------------------------------------------------------------------- in the audit


def _world(n=1500, seed=0):
    """x1, x2, x3 independent of c; proxy = c + noise (its descendant)."""
    from audit_world import proxy_world

    return proxy_world(n, seed)


class _Reads(__import__("torch").nn.Module):
    """A logistic model on chosen columns of (x1, x2, x3, proxy)."""

    def __init__(self, weights):
        import torch

        super().__init__()
        self.w = torch.tensor(weights, dtype=torch.float32)

    def forward(self, x):
        return x @ self.w - 0.5 * self.w[3]


def _audit(model, X, c, **kw):
    import faux

    return faux.audit(model, X, c, counterfactual="transport", aux_epochs=2, progress=False,
                      null_transports=4, **kw)


def test_the_audit_by_transport_flags_a_proxy_reader_and_not_a_fair_model():
    X, c = _world()
    unfair = _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, c)
    e = unfair.summary["effects"]["c"]
    assert e["counterfactual"] == "transport" and e["held_fixed"] == ["x1", "x2", "x3"]
    assert e["moved"] == ["proxy"] and e["fits"] == 3
    truth = np.abs(X["proxy"].to_numpy() - 0.5) < 2.0   # most rows cross 0.5 when c flips
    assert e["flagged"] > 0.5 * truth.sum()
    assert e["model_test"]["p_value"] < 0.01
    assert e["rows"][0]["moved"][0].startswith("proxy: ")
    cols = set(unfair.scores.columns)
    assert {"p", "p_cf", "effect", "decision_changes", "flagged", "p_value"} <= cols
    fair = _audit(_Reads([1.0, -1.0, 0.5, 0.0]), X, c)   # reads only what c does not cause
    f = fair.summary["effects"]["c"]
    assert f["flagged"] == 0 and f["expected_false_flags"]["count"] == 0
    assert f["model_test"]["p_value"] == 1.0
    assert "expected by chance" in f["headline"]


def test_held_columns_stay_and_an_unknown_one_is_refused_in_one_line():
    from faux.errors import ConfigError

    X, c = _world(600)
    res = _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, c, hold=["proxy"])
    e = res.summary["effects"]["c"]
    assert e["moved"] == [] and e["flagged"] == 0
    with pytest.raises(ConfigError, match=r"hold names \['proxi'\].*features are x1, x2") as err:
        _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, c, hold=["proxi"])
    assert "\n" not in str(err.value)


def test_a_continuous_attribute_is_left_to_the_aux_counterfactual():
    """A continuous attribute has no groups to carry a row between: its effects are the aux
    counterfactual's, the categorical attribute beside it is carried."""
    import pandas as pd

    X, c = _world(800)
    age = np.random.default_rng(0).normal(40, 10, len(X))
    res = _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, pd.DataFrame({"c": c, "age": age}),
                 protected_type=["binary", "continuous"])
    e = res.summary["effects"]
    assert list(e) == ["c", "age"]
    assert e["c"]["counterfactual"] == "transport" and "counterfactual" not in e["age"]
    assert e["age"]["aux_models"] == 3


def test_three_groups_each_row_carried_to_the_group_of_largest_effect():
    rng = np.random.default_rng(4)
    n = 1500
    g = rng.integers(0, 3, n)
    import pandas as pd

    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n), "x3": rng.normal(size=n),
                      "proxy": np.array([0.0, 1.0, 2.0])[g] + 0.2 * rng.normal(size=n)})
    res = _audit(_Reads([0.0, 0.0, 0.0, 3.0]), X, np.array(["a", "b", "z"])[g])
    e = res.summary["effects"]["c"]
    assert e["flagged"] > 0
    for row in e["rows"]:
        assert row["to"] in ("a", "b", "z") and row["to"] != row["group"]


def test_nothing_flagged_is_said_plainly_and_words_describe_each_flagged_row(tmp_path):
    import json

    X, c = _world(1200)
    fair = _audit(_Reads([1.0, -1.0, 0.5, 0.0]), X, c)
    assert fair.summary["effects"]["c"]["headline"].startswith("c: no row flagged")
    _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, c, out_dir=tmp_path / "out")
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    e = s["effects"]["c"]
    assert s["verdict"]["counterfactual"] == "transport" and "held fixed" in s["verdict"]["text"]
    assert e["headline"].startswith(f"c: {e['flagged']:,} of 1,200 rows")
    row = e["rows"][0]
    assert row["text"].startswith(f"the same person with c {row['group']} → {row['to']}")
    assert row["decision_changes"] and abs(row["p_cf"] - row["p"] - row["effect"]) < 1e-9
    assert row["values"]["proxy"] is not None  # the row's own values, for the report


def test_the_model_is_called_once_per_row_and_fit():
    """A binary attribute: each row and its counterfactual under each of the fits, in one
    call per batch; a three-group one: each row, and each fit towards each other group."""
    X, c = _world(600)
    res = _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, c, aux_seeds=2)
    assert res.summary["verdict"]["model_calls_per_row"] == 1 + 2
    g = np.random.default_rng(0).integers(0, 3, len(X))
    res = _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, np.array(["a", "b", "z"])[g], aux_seeds=2)
    assert res.summary["verdict"]["model_calls_per_row"] == 1 + 2 * 2


def test_a_model_that_reads_the_attribute_itself_is_flipped_with_what_it_causes():
    """The commonest unfair model: c is one of its inputs. Its column is flipped with what c
    causes (proxy), or alone with direct_only; the aux counterfactual refuses it."""
    from faux.errors import ConfigError

    X, c = _world(1200)
    Xc = X.assign(c=c)
    both = _Reads5([0.0, 0.0, 0.0, 2.0, 2.0])     # reads proxy and c
    res = _audit(both, Xc, "c", features=[*X.columns, "c"])   # c: X's own column
    e = res.summary["effects"]["c"]
    assert e["reads_attribute"] and not e["direct_only"] and e["moved"] == ["proxy"]
    assert any(m.startswith("c: ") for m in e["rows"][0]["moved"])
    direct = _audit(both, Xc, "c", features=[*X.columns, "c"], direct_only=True)
    d = direct.summary["effects"]["c"]
    assert d["direct_only"] and d["moved"] == [] and 0 < d["flagged"] < e["flagged"]
    # only the direct path: the rows whose decision c's own term decides
    x = Xc.to_numpy(dtype=float)
    logit = 2 * x[:, 3] + 2 * x[:, 4] - 2
    flip = (logit >= 0) != (logit + 2 * (1 - 2 * c) >= 0)
    assert d["flagged"] == int(flip.sum())
    with pytest.raises(ConfigError, match="reads the protected column 'c' itself"):
        import faux

        faux.audit(both, Xc, "c", features=[*X.columns, "c"], counterfactual="aux",
                   aux_epochs=2, progress=False)


class _Reads5(_Reads):
    def forward(self, x):
        return x @ self.w - 2.0


def test_a_pipeline_that_encodes_the_protected_column_itself_is_audited(tmp_path):
    """A Pipeline whose encoder reads sex (and the file holding it): the protected column is
    both the attribute and one of the model's raw columns."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from faux.audit.cli import main

    rng = np.random.default_rng(3)
    n = 1500
    sex = rng.choice(["Female", "Male"], n)
    X = pd.DataFrame({"sex": sex, "hours": 40 + 5 * (sex == "Male") + 8 * rng.normal(size=n),
                      "x": rng.normal(size=n)})
    y = ((X.sex == "Male") * 1.0 + (X.hours - 40) / 10 + X.x > 0.8).astype(int)
    pipe = Pipeline([("pre", ColumnTransformer([("cat", OneHotEncoder(), ["sex"])],
                                               remainder="passthrough")),
                     ("lr", LogisticRegression())]).fit(X, y)
    import skops.io as sio

    sio.dump(pipe, tmp_path / "m.skops")
    X.to_csv(tmp_path / "d.csv", index=False)
    rc = main(["audit", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"),
               "--protected", "sex", "--out", str(tmp_path / "out"), "--aux-epochs", "2",
               "--null-transports", "3", "--no-progress"])
    assert rc == 0
    import json

    e = json.loads((tmp_path / "out" / "summary.json").read_text())["effects"]["sex"]
    assert e["reads_attribute"] and "remainder__hours" in e["moved"]
    assert "remainder__x" in e["held_fixed"]
    assert e["flagged"] > 0 and any(m.startswith("sex: Female → Male") or
                                    m.startswith("sex: Male → Female")
                                    for r in e["rows"] for m in r["moved"])


def test_the_excess_gate_fails_an_unfair_model_and_passes_a_fair_one():
    X, c = _world(1200)
    unfair = _audit(_Reads([0.3, 0.0, 0.0, 4.0]), X, c, max_excess_flags=0.01)
    assert not unfair.passed and "more than the" in unfair.summary["gate"]["reasons"][0]
    fair = _audit(_Reads([1.0, -1.0, 0.5, 0.0]), X, c, max_excess_flags=0.0)
    assert fair.passed and fair.summary["gate"]["reasons"] == []
    assert fair.summary["settings"]["max_excess_flags"] == 0.0
    with pytest.raises(Exception, match="max_excess_flags must be a share"):
        _audit(_Reads([1.0, -1.0, 0.5, 0.0]), X, c, max_excess_flags=2)


def test_another_protected_attribute_the_model_reads_stays_as_it_is():
    """Two attributes, the model reading the second: carrying a row to the other sex never
    changes its race (one attribute at a time)."""
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 1500
    sex = rng.integers(0, 2, n)
    race = (rng.random(n) < 0.3 + 0.3 * sex).astype(int)   # depends on sex in the sample
    X = pd.DataFrame({"x1": rng.normal(size=n), "proxy": sex + 0.3 * rng.normal(size=n),
                      "race": race})
    import torch

    import faux

    class M(torch.nn.Module):
        def forward(self, x):
            return x[:, 0] + 2 * x[:, 1] + x[:, 2] - 1.5

    res = faux.audit(M(), X.assign(sex=sex), ["sex", "race"], features=["x1", "proxy", "race"],
                     counterfactual="transport", aux_epochs=2, progress=False,
                     null_transports=3, intersection=False)
    e = res.summary["effects"]["sex"]
    assert "race" in e["held_fixed"] and "proxy" in e["moved"]
    assert not any(c["feature"] == "race" for r in e["rows"] for c in r["changes"])
