"""Pipelines that encode string columns: split, layout, batches, unseen categories."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

from faux.audit.counterfactual import effects as E
from faux.audit.loaders.encoders import EncodedSource, split, transform
from faux.audit.sources.array_source import ArraySource
from faux.audit.sources.file_source import FileSource
from faux.errors import DataError


def people(n=400, seed=0):
    """sex drives relationship (Husband/Wife/Unmarried) and a little of hours."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    married = rng.random(n) < 0.6
    rel = np.where(married, np.where(sex == 1, "Husband", "Wife"),
                   np.where(rng.random(n) < 0.5, "Unmarried", "Own-child"))
    hours = 40 + 5 * sex + 8 * rng.normal(size=n)
    job = rng.choice(["clerk", "sales", "tech"], n)
    X = pd.DataFrame({"relationship": rel, "hours": hours, "job": job})
    y = ((rel == "Husband") | (hours > 50)).astype(int)
    return X, sex, y


def fitted(X, y, drop=None):
    pre = ColumnTransformer([("cat", OneHotEncoder(drop=drop), ["relationship", "job"]),
                             ("num", StandardScaler(), ["hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=500))]).fit(X, y)


def test_split_gives_the_encoders_and_the_model_and_exact_blocks():
    X, _, y = people()
    model = fitted(X, y)
    enc = split(model)
    assert enc is not None and isinstance(enc.rest[-1], LogisticRegression)
    assert enc.raw_features == ["relationship", "hours", "job"]
    by = {b.name: b for b in enc.layout.blocks}
    rel = by["relationship"]
    assert rel.levels == ("Husband", "Own-child", "Unmarried", "Wife")
    assert [enc.names[c] for c in rel.columns] == [
        "cat__relationship_Husband", "cat__relationship_Own-child",
        "cat__relationship_Unmarried", "cat__relationship_Wife"]
    assert enc.layout.continuous == (enc.names.index("num__hours"),)
    # the split reproduces the whole Pipeline
    x = transform(enc, X, 0)
    np.testing.assert_allclose(enc.rest.predict_proba(x)[:, 1], model.predict_proba(X)[:, 1])


def test_a_dropped_level_is_a_row_of_zeros():
    X, _, y = people()
    enc = split(fitted(X, y, drop="first"))
    rel = {b.name: b for b in enc.layout.blocks}["relationship"]
    assert len(rel.columns) == 3 and rel.codes[0] == (0.0, 0.0, 0.0)
    assert rel.codes[3] == (0.0, 0.0, 1.0)


def test_ordinal_codes_are_one_column_with_integer_levels():
    X, _, y = people()
    model = make_pipeline(
        ColumnTransformer([("ord", OrdinalEncoder(), ["relationship"])], remainder="drop"),
        LogisticRegression()).fit(X, y)
    enc = split(model)
    (b,) = enc.layout.blocks
    assert b.columns == (0,) and b.codes == ((0.0,), (1.0,), (2.0,), (3.0,))


def test_a_pipeline_without_encoders_is_not_split():
    X, _, y = people()
    num = X[["hours"]]
    assert split(make_pipeline(StandardScaler(), LogisticRegression()).fit(num, y)) is None
    assert split(LogisticRegression().fit(num, y)) is None


def test_encoded_batches_equal_the_pipelines_own_encoding(tmp_path):
    X, sex, y = people()
    enc = split(fitted(X, y))
    full = transform(enc, X, 0)
    mem = EncodedSource(ArraySource(X.assign(sex=sex), "sex"), enc)
    got = np.concatenate([b.x for b in mem.batches(enc.names, "sex", None, 64)])
    np.testing.assert_allclose(got, full)
    path = tmp_path / "people.csv"
    X.assign(sex=sex).to_csv(path, index=False)
    fs = EncodedSource(FileSource(path), enc)
    batches = list(fs.batches(enc.names, "sex", None, 100))
    np.testing.assert_allclose(np.concatenate([b.x for b in batches]), full)
    np.testing.assert_array_equal(np.concatenate([b.c for b in batches]), sex)


def test_an_unseen_category_is_one_line_naming_column_value_and_row():
    X, sex, y = people()
    enc = split(fitted(X, y))
    bad = X.copy()
    bad.loc[7, "job"] = "astronaut"
    with pytest.raises(DataError) as err:
        transform(enc, bad, 100)
    msg = str(err.value)
    assert "'job'" in msg and "'astronaut'" in msg and "row 107" in msg and "\n" not in msg


def test_the_counterfactual_swaps_the_category_the_aux_reads():
    """An aux reading sex from relationship moves a Husband to Wife, never fractionally."""
    X, sex, y = people(1200)
    enc = split(fitted(X, y))
    x = transform(enc, X, 0)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    blocks = [c for b in enc.layout.blocks for c in b.columns]
    scale[blocks] = 1.0
    z = torch.tensor((x - mean) / scale)
    rel = {b.name: b for b in enc.layout.blocks}["relationship"]
    w = torch.zeros(x.shape[1], dtype=torch.float64)
    w[rel.columns[0]], w[rel.columns[3]] = 3.0, -3.0    # Husband male, Wife female

    def aux(t):
        return (t * torch.tensor(scale) + torch.tensor(mean)) @ w

    gaps = E.group_gaps(aux, z, sex, "binary")
    cf = E.counterfactual(aux, z, torch.tensor(sex), gaps,
                          E.Space("binary", enc.layout, mean, scale))
    bi = enc.layout.blocks.index(rel)
    husband = (X["relationship"] == "Husband").to_numpy()
    assert (cf.moved[husband, bi] == 3).all()          # Husband -> Wife
    raw = cf.z.numpy() * scale + mean
    assert np.isin(np.round(raw[:, blocks], 12), (0.0, 1.0)).all()


def _pipeline_world(n=3000):
    X, sex, _ = people(n, seed=1)
    rng = np.random.default_rng(2)
    y = ((X["relationship"] == "Husband") * 1.5 + (X["hours"] - 40) / 10
         + 0.3 * rng.normal(size=n) > 0.8).astype(int)
    return X, sex, y, fitted(X, y)


def test_an_audit_of_a_pipeline_on_raw_string_columns_swaps_categories(tmp_path):
    import faux

    X, sex, y, model = _pipeline_world()
    res = faux.audit(model, X, pd.Series(sex, index=X.index, name="sex"), seed=0,
                     progress=False, sample=2000, out_dir=tmp_path / "mem")
    flagged = res.scores["flagged"].to_numpy()
    assert flagged.sum() > 0
    words = json.dumps(res.summary["effects"]["sex"]["rows"], ensure_ascii=False)
    assert "relationship: Husband → Wife" in words or "relationship: Wife → Husband" in words
    # the truth: the world's own counterfactual (people(): a married row's relationship
    # swaps Husband <-> Wife, hours move by 5 the other way; the rest stays)
    cf = X.assign(relationship=X["relationship"].map(
        {"Husband": "Wife", "Wife": "Husband"}).fillna(X["relationship"]),
        hours=X["hours"] + 5 * (1 - 2 * sex))
    truth = (model.predict_proba(X)[:, 1] >= 0.5) != (model.predict_proba(cf)[:, 1] >= 0.5)
    assert (flagged & truth).sum() / flagged.sum() >= 0.9
    assert (flagged & truth).sum() / truth.sum() >= 0.8
    # the same data from a CSV file, the protected column beside the features
    path = tmp_path / "people.csv"
    X.assign(sex=sex).to_csv(path, index=False)
    res_f = faux.audit(model, data=path, protected="sex", seed=0, progress=False, sample=2000,
                       out_dir=tmp_path / "file")
    np.testing.assert_array_equal(res_f.summary["flagged"]["count"],
                                  res.summary["flagged"]["count"])


def test_a_pipeline_meeting_an_unseen_category_is_one_line_and_writes_nothing(tmp_path):
    import subprocess
    import sys

    import skops.io as sio

    X, sex, y, model = _pipeline_world(600)
    sio.dump(model, tmp_path / "m.skops")
    bad = X.assign(sex=sex)
    bad.loc[17, "job"] = "astronaut"
    bad.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "faux.audit.cli", "audit", "--model",
                        str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"),
                        "--protected", "sex", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'astronaut'" in lines[0] and "row 17" in lines[0]
    assert not out.exists()


# --- every layout read from the fitted objects: nested Pipelines, infrequent levels, drop,
# handle_unknown, and the steps faux cannot map ---------------------------------------------

CATS, NUMS = ["relationship", "job", "union"], ["hours", "age"]


def world(n=600, seed=1):
    """``people`` with a job of two rare levels, a binary union column and an age; the label
    reads relationship, hours and job."""
    X, sex, _ = people(n, seed)
    rng = np.random.default_rng(seed + 10)
    X["job"] = rng.choice(["clerk", "sales", "tech", "manager", "intern"], n,
                          p=[0.35, 0.3, 0.25, 0.06, 0.04])
    X["union"] = rng.choice(["no", "yes"], n)
    X["age"] = rng.integers(18, 70, n).astype(float)
    y = ((X["relationship"] == "Husband") * 1.5 + (X["hours"] - 40) / 10
         + (X["job"] == "manager") - (X["job"] == "intern") + 0.3 * rng.normal(size=n)
         > 0.8).astype(int)
    return X, sex, y.to_numpy()


def model_of(X, y, cat, num=None, *, remainder="drop", verbose=True):
    """A ColumnTransformer (``cat`` on CATS, ``num`` on NUMS) and a logistic regression."""
    trs = [("cat", clone(cat), CATS)] + ([("num", clone(num), NUMS)] if num is not None else [])
    pre = ColumnTransformer(trs, remainder=remainder, verbose_feature_names_out=verbose)
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=1000))]).fit(X, y)


def imputed(enc, *after):
    return Pipeline([("imp", SimpleImputer(strategy="most_frequent")), ("enc", enc),
                     *[(f"after{i}", s) for i, s in enumerate(after)]])


def short(name):
    return str(name).split("__")[-1]


def mapped_layout(model):
    """The split's blocks keyed by name (their columns by output name, the ColumnTransformer's
    prefix left out), and the continuous columns' names."""
    enc = split(model)
    names = [short(n) for n in enc.names]
    blocks = {b.name: ([names[c] for c in b.columns], b.levels, b.codes, b.unseen)
              for b in enc.layout.blocks}
    return blocks, sorted(names[c] for c in enc.layout.continuous)


def encoded(model, X):
    out = model[:-1].transform(X)
    return np.asarray(out.toarray() if hasattr(out, "toarray") else out, dtype=np.float64)


def assert_codes_only(model, X, rows):
    """Every row the audit built (``rows``, the counterfactuals) holds, in each raw
    categorical column's encoded columns (by their output names), values that some row of the
    data has there: a code of one of its levels, never a fractional one-hot value."""
    names = [short(n) for n in model[:-1].get_feature_names_out()]
    x = encoded(model, X)
    for col in CATS:
        idx = [k for k, n in enumerate(names) if n.startswith(col + "_") or n == col]
        allowed = {tuple(v) for v in np.round(x[:, idx], 9)}
        got = {tuple(v) for v in np.round(rows[:, idx], 9)}
        assert got <= allowed, (col, sorted(got - allowed)[:3])


def audited(model, X, sex, **kw):
    """The audit of ``model`` (a few aux epochs) and every counterfactual row it built (by
    the aux counterfactual or by transport)."""
    import faux
    from faux.audit.counterfactual import transport as tp

    rows = []
    real, real_tp = E.exact_rows, tp.Transport.transport

    def record(x, dz, x_scale, layout):
        out = real(x, dz, x_scale, layout)
        rows.append(out)
        return out

    def record_tp(self, x, g, g_to):
        out = real_tp(self, x, g, g_to)
        rows.append(out.x)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(E, "exact_rows", record)
        mp.setattr(tp.Transport, "transport", record_tp)
        res = faux.audit(model, X, pd.Series(sex, index=X.index, name="sex"), seed=0,
                         progress=False, aux_epochs=5, **kw)
    return res, np.concatenate(rows)


def described(res):
    return [(r["row_id"], r["moved"]) for r in res.summary["effects"]["sex"]["rows"]]


NESTED = {  # (nested layout, its flat equivalent): the same encoded columns, in order
    "imputer before the encoder": (
        dict(cat=imputed(OneHotEncoder()), num=StandardScaler()),
        dict(cat=OneHotEncoder(), num=StandardScaler())),
    "numeric branch imputer and scaler": (
        dict(cat=imputed(OneHotEncoder()), num=make_pipeline(SimpleImputer(), StandardScaler())),
        dict(cat=OneHotEncoder(), num=StandardScaler())),
    "scaler after the encoder": (
        dict(cat=imputed(OneHotEncoder(), MaxAbsScaler()), num=StandardScaler()),
        dict(cat=OneHotEncoder(), num=StandardScaler())),
    "remainder passthrough": (
        dict(cat=imputed(OneHotEncoder()), remainder="passthrough"),
        dict(cat=OneHotEncoder(), remainder="passthrough")),
    "short feature names": (
        dict(cat=imputed(OneHotEncoder()), num=StandardScaler(), verbose=False),
        dict(cat=OneHotEncoder(), num=StandardScaler(), verbose=False)),
    "ordinal": (
        dict(cat=imputed(OrdinalEncoder()), num=StandardScaler()),
        dict(cat=OrdinalEncoder(), num=StandardScaler())),
}


@pytest.mark.parametrize("case", list(NESTED))
def test_a_nested_layout_is_audited_as_its_flat_equivalent(case):
    X, sex, y = world()
    nested_kw, flat_kw = NESTED[case]
    nested, flat = model_of(X, y, **nested_kw), model_of(X, y, **flat_kw)
    np.testing.assert_allclose(nested.predict_proba(X), flat.predict_proba(X), atol=1e-9)
    layout = mapped_layout(nested)
    assert layout == mapped_layout(flat)
    assert set(layout[0]) == set(CATS) and layout[1] == sorted(NUMS)
    res_n, rows_n = audited(nested, X, sex)
    res_f, rows_f = audited(flat, X, sex)
    flagged = res_n.scores["flagged"].to_numpy()
    assert flagged.sum() > 0
    np.testing.assert_array_equal(flagged, res_f.scores["flagged"].to_numpy())
    assert described(res_n) == described(res_f)
    assert any(m.startswith("relationship: ") for _, ms in described(res_n) for m in ms)
    assert_codes_only(nested, X, rows_n)
    assert_codes_only(flat, X, rows_f)


def test_a_scaler_after_the_encoder_scales_the_levels_codes():
    X, sex, y = world()
    model = model_of(X, y, imputed(OneHotEncoder(sparse_output=False), StandardScaler()),
                     StandardScaler())
    enc = split(model)
    blocks, cont = mapped_layout(model)
    flat, _ = mapped_layout(model_of(X, y, OneHotEncoder(), StandardScaler()))
    assert {k: v[:2] for k, v in blocks.items()} == {k: v[:2] for k, v in flat.items()}
    assert cont == sorted(NUMS)
    x = encoded(model, X)
    for b in enc.layout.blocks:  # each row's encoded block is its raw category's code
        for v in X[b.name].unique():
            rows = x[(X[b.name] == v).to_numpy()][:, list(b.columns)]
            np.testing.assert_allclose(rows, np.broadcast_to(
                b.codes[b.levels.index(v)], rows.shape))
    res, rows = audited(model, X, sex)
    assert res.scores["flagged"].sum() > 0
    assert_codes_only(model, X, rows)


def level_name(enc, col, v):
    """The level a raw category ``v`` of ``col`` is, as the fitted encoder groups it."""
    inf = getattr(enc, "infrequent_categories_", None)
    j = CATS.index(col)
    if inf is not None and inf[j] is not None and v in list(inf[j]):
        return "infrequent_sklearn"
    return v


GROUPED = {
    "min_frequency": OneHotEncoder(min_frequency=50),
    "max_categories": OneHotEncoder(max_categories=3),
    "min_frequency, drop first": OneHotEncoder(min_frequency=50, drop="first"),
    "min_frequency, drop the infrequent": OneHotEncoder(  # job's first category is rare
        categories=[["Husband", "Own-child", "Unmarried", "Wife"],
                    ["intern", "clerk", "manager", "sales", "tech"], ["no", "yes"]],
        min_frequency=50, drop="first"),
    "drop if_binary": OneHotEncoder(drop="if_binary"),
    "drop explicit": OneHotEncoder(drop=["Wife", "tech", "yes"]),
    "ordinal max_categories": OrdinalEncoder(max_categories=3),
}


@pytest.mark.parametrize("case", list(GROUPED))
def test_grouped_and_dropped_levels_are_mapped_from_the_fitted_encoder(case):
    X, sex, y = world()
    model = model_of(X, y, GROUPED[case], StandardScaler())
    enc, ohe = split(model), model.named_steps["pre"].named_transformers_["cat"]
    names = [short(n) for n in enc.names]
    x = encoded(model, X)
    by = {b.name: b for b in enc.layout.blocks}
    for col in CATS:
        b = by[col]
        assert [names[c] for c in b.columns] == [
            n for n in names if n.startswith(col + "_") or n == col]
        for v in X[col].unique():  # the level's code is what the model's encoder outputs
            level = level_name(ohe, col, v)
            rows = x[(X[col] == v).to_numpy()][:, list(b.columns)]
            np.testing.assert_array_equal(rows, np.broadcast_to(
                b.codes[b.levels.index(level)], rows.shape))
    assert [names[c] for c in enc.layout.continuous] == NUMS
    res, rows = audited(model, X, sex)
    assert_codes_only(model, X, rows)
    for row_id, moved in described(res):  # a swap starts from the row's own level
        for m in moved:
            col, _, change = m.partition(": ")
            if col in CATS:
                raw = X.loc[row_id, col]
                assert change.split(" → ")[0] == level_name(ohe, col, raw), (row_id, m)


def unseen_world(encoder):
    """A model (``encoder`` after an imputer) fitted without the jobs of rows 17, 40 and 41,
    and the data with them as 'astronaut'."""
    X, sex, y = world()
    bad = X.copy()
    bad.loc[[17, 40, 41], "job"] = "astronaut"
    keep = bad["job"] != "astronaut"
    model = model_of(X[keep], y[keep], imputed(encoder), StandardScaler())
    return model, bad, sex


ACCEPTS = {  # an encoder that accepts an unseen category, and the level it then reads as
    "ignore": (OneHotEncoder(handle_unknown="ignore"), "(unseen)"),
    "infrequent_if_exist": (OneHotEncoder(handle_unknown="infrequent_if_exist",
                                          min_frequency=50), "infrequent_sklearn"),
    # all zeros is the dropped level's code: an unseen job reads as the first job, clerk
    "ignore, drop first": (OneHotEncoder(handle_unknown="ignore", drop="first"), "clerk"),
    "use_encoded_value": (OrdinalEncoder(handle_unknown="use_encoded_value",
                                         unknown_value=-1), "(unseen)"),
}


@pytest.mark.parametrize("case", list(ACCEPTS))
def test_an_unseen_category_the_encoder_accepts_is_encoded_as_the_model_does(case):
    import warnings

    encoder, level = ACCEPTS[case]
    model, bad, sex = unseen_world(encoder)
    enc = split(model)
    job = {b.name: b for b in enc.layout.blocks}["job"]
    x = transform(enc, bad, 0)
    np.testing.assert_allclose(enc.rest.predict_proba(x), model.predict_proba(bad))
    assert job.levels[job.level_of(x[17, list(job.columns)])] == level
    assert job.unseen == (level == "(unseen)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res, rows = audited(model, bad, sex)
    said = [str(w.message) for w in caught if "never saw" in str(w.message)]
    assert len(said) == 1 and "'job'" in said[0] and "3 values" in said[0]
    assert "\n" not in said[0] and repr(level) in said[0]
    assert sum("never saw" in w for w in res.warnings) == 1
    assert_codes_only(model, bad, rows)
    assert all("→ (unseen)" not in m for _, ms in described(res) for m in ms)


def test_a_counterfactual_swaps_an_unseen_category_to_a_known_one():
    """A row holding the unseen level moves to a known level, never the other way."""
    from faux.audit.sources.layout import Block, Layout

    n = 300
    rng = np.random.default_rng(0)
    sex = rng.integers(0, 2, n)
    level = np.where(sex == 1, 0, np.where(rng.random(n) < 0.5, 1, 2))  # 2: unseen
    x = np.zeros((n, 3))
    x[level == 0, 0], x[level == 1, 1] = 1.0, 1.0
    x[:, 2] = rng.normal(size=n)
    block = Block("job", (0, 1), ("a", "b", "(unseen)"),
                  ((1.0, 0.0), (0.0, 1.0), (0.0, 0.0)), unseen=True)
    layout = Layout(3, (block,), (2,))
    mean, scale = np.zeros(3), np.ones(3)
    z = torch.tensor(x)
    w = torch.tensor([3.0, -3.0, 0.0], dtype=torch.float64)

    def aux(t):
        return t @ w

    gaps = E.group_gaps(aux, z, sex, "binary")
    cf = E.counterfactual(aux, z, torch.tensor(sex), gaps, E.Space("binary", layout, mean, scale))
    moved = cf.moved[:, 0].numpy()
    assert (moved[level == 2] == 0).any()           # unseen -> a
    assert not (moved == 2).any()                   # never -> unseen
    assert np.isin(np.round(cf.z.numpy()[:, :2], 12), (0.0, 1.0)).all()


def test_an_unseen_category_in_a_nested_layout_is_one_line_naming_column_value_and_row():
    import faux

    model, bad, sex = unseen_world(OneHotEncoder())
    with pytest.raises(DataError) as err:
        faux.audit(model, bad, pd.Series(sex, index=bad.index, name="sex"), seed=0,
                   progress=False, aux_epochs=5)
    msg = str(err.value)
    assert "'job'" in msg and "'astronaut'" in msg and "row 17" in msg and "\n" not in msg
    # a missing value the imputer fills is no unseen category
    gap = bad.copy()
    gap.loc[[17, 40, 41], "job"] = np.nan
    enc = split(model)
    np.testing.assert_allclose(enc.rest.predict_proba(transform(enc, gap, 0)),
                               model.predict_proba(gap))


def _unmappable():
    from sklearn.pipeline import FeatureUnion
    from sklearn.preprocessing import (
        FunctionTransformer,
        KBinsDiscretizer,
        TargetEncoder,
    )

    lower = FunctionTransformer(lambda f: f.apply(lambda s: s.str.lower()))
    return {
        "a TargetEncoder": (dict(cat=TargetEncoder(), num=StandardScaler()), "pre > cat",
                            "TargetEncoder"),
        "a FunctionTransformer": (dict(cat=OneHotEncoder(), num=FunctionTransformer(np.log1p)),
                                  "pre > num", "FunctionTransformer"),
        "a KBinsDiscretizer": (dict(cat=OneHotEncoder(), num=KBinsDiscretizer(
            n_bins=3, quantile_method="averaged_inverted_cdf")), "pre > num",
            "KBinsDiscretizer"),
        "an encoder in a FeatureUnion": (dict(cat=FeatureUnion(
            [("ohe", OneHotEncoder()), ("ord", OrdinalEncoder())]), num=StandardScaler()),
            "pre > cat", "FeatureUnion"),
        "a step before the encoder": (dict(cat=Pipeline([("lower", lower),
                                                         ("ohe", OneHotEncoder())])),
                                      "pre > cat > lower", "FunctionTransformer"),
    }


@pytest.mark.parametrize("case", list(_unmappable()))
def test_a_step_faux_cannot_map_is_refused_in_one_line_naming_it(case):
    import faux
    from faux.errors import ConfigError

    X, sex, y = world(300)
    kw, path, cls = _unmappable()[case]
    model = model_of(X, y, **kw)
    for run in (lambda: split(model),
                lambda: faux.audit(model, X, pd.Series(sex, index=X.index, name="sex"),
                                   progress=False, aux_epochs=5)):
        with pytest.raises(ConfigError) as err:
            run()
        msg = str(err.value)
        assert f"'{path}'" in msg and cls in msg and "\n" not in msg


def test_an_encoder_faux_cannot_map_at_the_top_of_the_pipeline_is_refused():
    from sklearn.preprocessing import TargetEncoder

    from faux.errors import ConfigError

    X, _, y = world(300)
    model = Pipeline([("te", TargetEncoder()), ("lr", LogisticRegression())]).fit(X[CATS], y)
    with pytest.raises(ConfigError, match="'te' \\(TargetEncoder\\)"):
        split(model)


def test_a_missing_value_indicator_of_a_categorical_column_is_refused():
    from faux.errors import ConfigError

    X, _, y = world(300)
    X.loc[3, "job"] = np.nan
    cat = Pipeline([("imp", SimpleImputer(strategy="most_frequent", add_indicator=True)),
                    ("ohe", OneHotEncoder())])
    with pytest.raises(ConfigError, match="indicator"):
        split(model_of(X, y, cat))


def test_an_ordinal_encoder_writing_missing_values_as_nan_is_refused_and_a_number_is_a_level():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from faux.errors import ConfigError

    X, _, y = world(300)
    X.loc[[3, 5], "job"] = np.nan

    def fit(enc):
        pre = ColumnTransformer([("cat", enc, CATS), ("num", StandardScaler(), NUMS)])
        return Pipeline([("pre", pre), ("hgb", HistGradientBoostingClassifier(max_iter=5))]
                        ).fit(X, y)

    with pytest.raises(ConfigError, match="'pre > cat' \\(OrdinalEncoder\\).*NaN"):
        split(fit(OrdinalEncoder()))
    enc = split(fit(OrdinalEncoder(encoded_missing_value=-1)))
    job = {b.name: b for b in enc.layout.blocks}["job"]
    assert job.levels[-1] == "nan" and job.codes[-1] == (-1.0,)
