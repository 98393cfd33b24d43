"""Pipelines that encode string columns: split, layout, batches, unseen categories."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from faux.audit import effects as E
from faux.audit.data import ArraySource, FileSource
from faux.audit.encoders import EncodedSource, split, transform
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
    cf = E.counterfactual(aux, z, torch.tensor(sex), "binary", gaps, enc.layout, mean, scale)
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
    # the truth: a flagged Husband row's decision changes when only relationship is swapped
    swap = X.assign(relationship=X["relationship"].map(
        {"Husband": "Wife", "Wife": "Husband"}).fillna(X["relationship"]))
    truth = (model.predict_proba(X)[:, 1] >= 0.5) != (model.predict_proba(swap)[:, 1] >= 0.5)
    assert (flagged & truth).sum() / flagged.sum() >= 0.8
    assert (flagged & truth).sum() / truth.sum() >= 0.5
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
