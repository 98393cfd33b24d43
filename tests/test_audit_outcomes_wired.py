"""The audit's summary and report carry the groups' outcomes (equal to fairlearn's on the raw
rows), the provenance of the data and model, Wilson intervals on the flagged rates (0 flagged
is not [0, 0]) and the flagged rows of every attribute with their feature values."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    demographic_parity_difference,
    equalized_odds_difference,
    selection_rate,
)

import faux
from faux.audit.report.page import render


def _model(x):
    x = np.asarray(x, dtype=np.float64)
    return 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1] + 2.5 * (x[:, 2] - 0.5))))


def _world(n=400, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["f", "m"], n)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    X = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n),
                      "proxy": (sex == "m") + 0.3 * rng.normal(size=n)})
    y = (rng.random(n) < 0.4 + 0.2 * (sex == "m")).astype(int)
    return X, sex, race, y


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    X, sex, race, y = _world()
    data = tmp_path_factory.mktemp("d") / "people.csv"
    X.assign(sex=sex, race=race, income=np.where(y == 1, ">50K", "<=50K")).to_csv(data,
                                                                               index=False)
    out = data.parent / "out"
    # a function does not state its classes: the positive label is named, never guessed
    res = faux.audit(_model, data=data, protected=["sex", "race"], label="income",
                     positive_label=">50K", aux_epochs=2, aux_seeds=2, null_permutations=2,
                     sample=400, progress=False, out_dir=out)
    return res, X, sex, race, y, data, out


def test_outcomes_equal_fairlearn_on_the_raw_rows(labelled):
    res, X, sex, race, y, _, _ = labelled
    d = (_model(X.to_numpy()) >= 0.5).astype(int)
    outs = res.summary["outcomes"]["views"]
    assert set(outs) == {"sex", "race", "sex x race"}
    for name, g in (("sex", sex), ("race", race)):
        o = outs[name]
        for grp in np.unique(g):
            m = g == grp
            assert o["by_group"][grp]["rows"] == m.sum()
            assert o["by_group"][grp]["selection_rate"] == pytest.approx(
                selection_rate(y[m], d[m]), abs=1e-12)
            lo, hi = o["by_group"][grp]["selection_rate_interval"]
            assert lo <= o["by_group"][grp]["selection_rate"] <= hi
        assert o["gaps"]["demographic_parity_difference"]["value"] == pytest.approx(
            demographic_parity_difference(y, d, sensitive_features=g), abs=1e-12)
        assert o["gaps"]["equalized_odds_difference"]["value"] == pytest.approx(
            equalized_odds_difference(y, d, sensitive_features=g), abs=1e-12)
    assert res.summary["outcomes"]["settings"]["positive_label"] == ">50K"
    perf = res.summary["performance"]
    assert perf["rows"] == len(y) and perf["accuracy"] == pytest.approx((y == d).mean())


def test_provenance_names_the_data_file_hash_and_the_versions(labelled):
    res, *_, data, out = labelled
    prov = res.summary["provenance"]
    assert prov["data"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    v = prov["versions"]
    assert v["faux"] and v["python"].count(".") == 2 and v["torch"] and v["sklearn"]
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["provenance"]["data"]["sha256"] == prov["data"]["sha256"]
    page = (out / "report.html").read_text()
    head = page.split('<section id="summary">')[1].split("</section>")[0]
    assert prov["data"]["sha256"] in head and f"faux {v['faux']}" in head


def test_report_shows_the_outcomes_and_every_attributes_flagged_rows(labelled):
    res, *_ = labelled
    page = render(res)
    sec = page.split('<section id="outcomes">')[1].split("</section>")[0]
    assert "demographic parity difference" in sec and "equalized odds difference" in sec
    assert "Wilson" in sec and "sex x race" in sec
    people = page.split('<section id="people">')[1].split("</section>")[0]
    for name, e in res.summary["effects"].items():
        if not e["rows"]:
            assert f"No row flagged for {name}." in people
        assert f'{name}: {len(e["rows"][:20])} of the' in people
        for r in e["rows"][:20]:  # the page lists the first 20 of each attribute
            assert r["values"] is not None and set(r["values"]) >= {"u", "v", "proxy", name}
            assert f'data-src="[&#34;effects&#34;, &#34;{name}&#34;, &#34;rows&#34;, ' \
                   f'{e["rows"].index(r)}, &#34;row_id&#34;]">{r["row_id"]:,}<' in people
    assert "http://" not in page and "https://" not in page


def test_a_group_with_no_flagged_row_has_an_interval_above_zero(labelled):
    res, *_ = labelled
    for view in res.summary["groups"]["views"].values():
        for r in view["rows"]:
            lo, hi = r["rate_ci"]
            assert lo <= r["rate"] <= hi and hi > 0
        assert view["largest_difference_ci"] is not None
    for v in res.summary["flagged"]["by_group"].values():
        assert v["interval"][1] > 0


def test_without_a_label_only_selection_rates_are_reported():
    X, sex, _, _ = _world(200)
    res = faux.audit(_model, X, sex, aux_epochs=2, aux_seeds=2, null_permutations=2,
                     progress=False)
    o = res.summary["outcomes"]
    assert "no label given" in o["settings"]["note"] and res.summary["performance"] is None
    d = (_model(X.to_numpy()) >= 0.5).astype(int)
    g = o["views"][res.summary["data"]["protected"]]
    for grp in ("f", "m"):
        assert g["by_group"][grp]["selection_rate"] == pytest.approx(d[sex == grp].mean())
        assert "tpr" not in g["by_group"][grp]
    assert "equalized_odds_difference" not in g["gaps"]
    prov = res.summary["provenance"]["data"]
    assert prov["file"] is None and "hash_pandas_object" in prov["hash_of"]
    assert "no label given" in render(res)
