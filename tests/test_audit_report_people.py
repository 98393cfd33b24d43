"""The report a model-risk committee reads: its first screen is the conclusion (a badge by a
stated rule, one sentence per attribute, the flagged / expected / test numbers), every
number on the page is summary.json's, the flagged people are shown in the user's own units
(a Pipeline's raw columns, before its encoders), and the page stays bounded whatever the
number of rows."""

import json
import math
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import faux
from faux.audit.report import page as report
from faux.audit.report.conclusion import conclude, p_text
from faux.errors import ConfigError

KW = dict(seed=0, progress=False, aux_epochs=3, null_permutations=2, null_transports=5)


def _world(n=1500, seed=0):
    """sex drives relationship and hours; region drives job; the model reads the raw
    string and number columns through its own encoders (one-hot, standard scaler)."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    region = rng.choice(["north", "south", "west"], n, p=[0.5, 0.3, 0.2])
    married = rng.random(n) < 0.6
    rel = np.where(married, np.where(sex == 1, "Husband", "Wife"),
                   np.where(rng.random(n) < 0.5, "Unmarried", "Own-child"))
    hours = np.round(40 + 6 * sex + 8 * rng.normal(size=n))
    gain = np.where(rng.random(n) < 0.1, rng.integers(1000, 20000, n), 0)
    job = np.where(region == "west", rng.choice(["tech", "sales"], n),
                   rng.choice(["clerk", "sales", "tech"], n))
    X = pd.DataFrame({"relationship": rel, "hours": hours, "gain": gain, "job": job})
    y = ((rel == "Husband") * 1.2 + (hours - 42) / 8 + gain / 10000
         + 0.4 * rng.normal(size=n) > 0.6).astype(int)
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["relationship", "job"]),
                             ("num", StandardScaler(), ["hours", "gain"])])
    model = Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=500))]).fit(X, y)
    return X, pd.DataFrame({"sex": sex, "region": region}), y, model


@pytest.fixture(scope="module")
def pipeline_audit(tmp_path_factory):
    X, c, y, model = _world()
    out = tmp_path_factory.mktemp("report") / "audit"
    res = faux.audit(model, X, c, y=y, out_dir=out, aux_seeds=1, model_version="credit-v7",
                     **KW)
    return X, c, model, res, out


# ----------------------------------------------------------------------------- the page


class _Numbers(HTMLParser):
    """Each ``data-src`` number's path and text, per section; the listed people."""

    def __init__(self):
        super().__init__()
        self.section, self.numbers, self.src, self.text = None, [], None, ""
        self.people, self.orders = {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
        if "data-src" in a:
            self.src, self.text = json.loads(a["data-src"]), ""
        if tag == "div" and a.get("class") == "person":
            self.people[self.section] = self.people.get(self.section, 0) + 1
            self.orders.append(dict(re.findall(r"--(o\d):(\d+)", a.get("style", ""))))

    def handle_data(self, data):
        if self.src is not None:
            self.text += data

    def handle_endtag(self, tag):
        if tag == "span" and self.src is not None:
            self.numbers.append((self.section, self.src, self.text))
            self.src = None


def _at(summary, path):
    v = summary
    for k in path:
        v = v[k]
    return v


def _agrees(shown: str, value) -> bool:
    """Whether the page's text ``shown`` is ``value`` rounded (to the digits shown)."""
    if isinstance(value, list):
        parts = re.fullmatch(r"\[(.*), (.*)\]", shown)
        return parts is not None and all(_agrees(p, v) for p, v in zip(parts.groups(), value,
                                                                        strict=True))
    if shown.startswith("p < "):
        return value < float(shown[4:])
    shown = shown.removeprefix("p = ")
    scale = 100.0 if shown.endswith("%") else 1.0
    digits = shown.rstrip("%").replace(",", "")
    x = float(digits)
    mant = digits.lstrip("+-").split("e")[0]
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    exp = int(digits.split("e")[1]) if "e" in digits else 0
    unit = 10.0 ** (exp - decimals)
    if "." not in mant and "e" not in digits:  # an integer shown: a count, or 2 significant
        unit = 1.0 if abs(x) < 100 or float(value) == int(value) else \
            10 ** max(0, int(math.log10(abs(x))) - 1)
    return abs(x - float(value) * scale) <= unit / 2 + 1e-9 * abs(x)


def test_every_number_on_the_page_is_summary_json_s(pipeline_audit):
    *_, res, out = pipeline_audit
    s = json.loads((out / "summary.json").read_text())
    p = _Numbers()
    p.feed((out / "report.html").read_text(encoding="utf-8"))
    assert len(p.numbers) > 100
    wrong = [(sec, path, text, _at(s, path)) for sec, path, text in p.numbers
             if not _agrees(text, _at(s, path))]
    assert not wrong, wrong[:5]
    # each section's numbers: the verdict's three per attribute, the evidence's rates, the
    # people's, the moves' counts
    by = {}
    for sec, path, _ in p.numbers:
        by.setdefault(sec, set()).add(tuple(map(str, path)))
    for a in ("sex", "region"):
        for key in (("flagged",), ("expected_false_flags", "count"),
                    ("expected_false_flags", "interval"), ("model_test", "p_value")):
            assert ("effects", a, *key) in by["verdict"], (a, key)
        assert ("effects", a, "rows", "0", "effect") in by["people"]
    assert any(k[:4] == ("groups", "views", "sex x region", "verdict") for k in by["evidence"])
    assert any(k[:3] == ("effects", "sex", "moved_counts") for k in by["moves"])


def test_the_agreement_check_sees_a_wrong_number():
    assert _agrees("308", 308) and _agrees("6", 6.5) and _agrees("[0, 17]", [0.0, 17.0])
    assert _agrees("10.27%", 0.10266) and _agrees("p < 0.001", 5e-52)
    assert _agrees("p = 0.84", 0.838) and _agrees("+0.753", 0.7533)
    assert not _agrees("309", 308) and not _agrees("10.37%", 0.10266)
    assert not _agrees("p < 0.001", 0.002) and not _agrees("p = 0.84", 0.85)
    assert not _agrees("[0, 18]", [0.0, 17.0])


def test_the_first_screen_is_the_conclusion(pipeline_audit):
    *_, res, out = pipeline_audit
    page = (out / "report.html").read_text(encoding="utf-8")
    s = res.summary
    c = conclude(s)
    first = page.split('<section id="verdict">')[1].split("</section>")[0]
    assert page.index('<section id="verdict">') < page.index('<section id="evidence">')
    assert f'<span class="badge {c["badge"]}">{c["badge"]}</span>' in first
    assert "How the badge is given." in first and "REVIEW: no gate failed" in first
    for a in c["attributes"]:
        assert ("evidence" if a["evidence"] else "no evidence") + \
            " of individual unfairness for <b>" + a["name"] in first
    assert "credit-v7" in page.split("</h1>")[1].split("</p>")[0]  # the model's version
    # the diagnostics come after the verdict, in their own section, never "flagged"
    diag = page.split('<section id="diagnostics"')[1].split("</section>")[0]
    assert page.index('<section id="people">') < page.index('<section id="diagnostics"')
    assert "flagged" not in re.sub(r"<[^>]+>", "", diag).replace("who is flagged", "")


def test_people_are_shown_in_the_users_units(pipeline_audit):
    """A Pipeline's flagged rows: the raw values as read (before its encoders), what the
    counterfactual changed in the raw columns' units and categories; applying those changes
    to the raw row gives the model's output at the counterfactual (one fit: its own)."""
    X, c, model, res, _ = pipeline_audit
    s = res.summary
    assert s["data"]["user_units"]["num__hours"]["column"] == "hours"
    assert s["provenance"]["model"]["version"] == "credit-v7"
    for e in s["effects"].values():
        assert e["rows"]
        assert not [f for f in e["moved_counts"] if "__" in f]  # the user's names
        assert all(0 <= k <= e["flagged"] for k in e["moved_counts"].values())
        for r in e["rows"]:
            person = X.loc[r["row_id"]]
            assert r["raw"] == {**{k: person[k] for k in X.columns},
                                **{k: c.loc[r["row_id"], k] for k in c.columns}}
            assert r["moved"] and not [m for m in r["moved"] if "__" in m]
            cf = X.loc[[r["row_id"]]].copy()
            for ch in r["changes"]:
                assert ch["feature"] in e["moved_counts"] and ch["feature"] in X.columns
                assert person[ch["feature"]] == ch["from"]
                cf[ch["feature"]] = ch["to"]
            np.testing.assert_allclose(model.predict_proba(cf)[0, 1], r["p_cf"], atol=1e-6)


def test_the_moves_and_the_intersection_add_up(pipeline_audit):
    *_, res, _ = pipeline_audit
    s = res.summary
    for e in s["effects"].values():
        listed = {}
        for r in e["rows"]:
            for ch in r["changes"]:
                listed[ch["feature"]] = listed.get(ch["feature"], 0) + 1
        assert all(e["moved_counts"][f] >= k for f, k in listed.items()), (listed,
                                                                           e["moved_counts"])
    cells = s["groups"]["views"]["sex x region"]["verdict"]
    assert cells["attribute"] == "sex"
    assert sum(r["flagged"] for r in cells["rows"]) == s["flagged"]["count"]
    assert sum(r["rows"] for r in cells["rows"]) == s["data"]["rows"]
    assert all(r["rate_ci"][0] <= r["rate"] <= r["rate_ci"][1] for r in cells["rows"])


def test_the_people_can_be_sorted_without_a_script(pipeline_audit):
    *_, out = pipeline_audit
    page = (out / "report.html").read_text(encoding="utf-8")
    p = _Numbers()
    p.feed(page)
    assert "<script" not in page
    n_sex = len(pipeline_audit[3].summary["effects"]["sex"]["rows"][:report.LISTED])
    orders = p.orders[:n_sex]
    for key in ("o1", "o2", "o3", "o4"):
        assert sorted(int(o[key]) for o in orders) == list(range(n_sex)), key
    rows = pipeline_audit[3].summary["effects"]["sex"]["rows"][:n_sex]
    by_effect = sorted(range(n_sex), key=lambda i: int(orders[i]["o1"]))
    assert [rows[i]["effect"] for i in by_effect] == sorted(r["effect"] for r in rows)
    assert ".sorter:has(.o1:checked)" in page


def test_a_100k_row_audit_lists_a_bounded_page():
    """However many rows, the page lists at most ``LISTED`` people per attribute, each with
    at most ``PROFILE_VALUES`` values, and stays a few hundred kilobytes."""
    n = 100_000
    rng = np.random.default_rng(0)
    sex = rng.integers(0, 2, n)
    X = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(60)}).assign(
        w=sex + 0.5 * rng.normal(size=n))

    def model(x):
        x = np.asarray(x, dtype=np.float64)
        return 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1] + 2.5 * (x[:, -1] - 0.5))))

    res = faux.audit(model, X, sex, aux_epochs=1, aux_seeds=2, null_permutations=2,
                     null_transports=2, sample=2000, methods=["faux_ng"], progress=False)
    assert res.summary["flagged"]["count"] > 10_000
    page = res.to_html()
    assert page == res._repr_html_()
    assert len(page.encode()) < 1_000_000
    p = _Numbers()
    p.feed(page)
    assert p.people["people"] == report.LISTED
    profiles = re.findall(r"<details><summary>this person's values</summary>(.*?)</details>",
                          page)
    assert len(profiles) == report.LISTED
    assert all(x.count("<b>") <= report.PROFILE_VALUES for x in profiles)
    assert "and 22 more" in profiles[0]  # 61 features and the protected value, 40 shown


# ----------------------------------------------------------------------------- the conclusion


def _effect(flagged, count, interval, p):
    return {"attribute": "a", "counterfactual": "transport", "flagged": flagged,
            "expected_false_flags": {"count": count, "interval": interval},
            "model_test": {"p_value": p}}


def _summary(effects, passed=True, limit=None, rate=0.1):
    return {"settings": {"materiality": None, "max_flagged_rate": limit, "fail_above": None},
            "model": {"task": "classification"}, "effects": effects,
            "flagged": {"count": 10, "rate": rate},
            "gate": {"passed": passed, "reasons": [] if passed else ["too many"]}}


def test_the_badge_follows_its_stated_rule():
    ev = _effect(308, 6.5, [0.0, 17.0], 5e-52)
    none = _effect(412, 522.4, [324.0, 766.0], 0.838)
    above = _effect(20, 6.5, [0.0, 17.0], 0.001)  # a small p, above the band
    c = conclude(_summary({"sex": ev, "race": none}))
    assert c["badge"] == "REVIEW" and c["why"] == ("evidence of individual unfairness for "
                                                    "sex; no gate set")
    assert c["attributes"][0]["sentence"] == (
        "evidence of individual unfairness for sex: 308 decisions change, 6 [0, 17] expected "
        "for a model that ignores sex; model-level test p < 0.001")
    assert c["attributes"][1]["sentence"] == (
        "no evidence of individual unfairness for race: 412 decisions change, 522 [324, 766] "
        "expected by chance; model-level test p = 0.84")
    assert conclude(_summary({"race": none}))["badge"] == "PASS"
    assert conclude(_summary({"a": above}))["attributes"][0]["evidence"]
    assert not conclude(_summary({"a": _effect(15, 6.5, [0.0, 17.0], 0.001)}))[
        "attributes"][0]["evidence"]  # inside the band expected by chance
    fail = conclude(_summary({"race": none}, passed=False, limit=0.01, rate=0.1373))
    assert fail["badge"] == "FAIL"
    assert fail["why"] == "fails the gate of at most 1.00% of rows flagged (13.73% flagged; " \
                          "exit code 1)"
    ok = conclude(_summary({"sex": ev}, passed=True, limit=0.2))
    assert ok["badge"] == "REVIEW" and "within the gate of at most 20.00%" in ok["why"]
    assert p_text(0.0004) == "p < 0.001" and p_text(0.0456) == "p = 0.046"
    assert p_text(float("nan")) == "p not computed"


def test_the_repr_states_the_conclusion(pipeline_audit):
    *_, res, _ = pipeline_audit
    text = repr(res)
    c = conclude(res.summary)
    assert text.splitlines()[1] == f"  {c['badge']}: {c['why']}"
    for a in c["attributes"]:
        assert f"  {a['sentence']}" in text.splitlines()
    assert "protected 'sex', 'region'" in text.splitlines()[0]


def test_the_model_version_is_one_line_of_text(tmp_path):
    X, c, y, model = _world(300)
    for bad in ("", "a\nb", 7, "x" * 201):
        with pytest.raises(ConfigError, match="model_version must be one line") as err:
            faux.audit(model, X, c["sex"], model_version=bad, out_dir=tmp_path / "o", **KW)
        assert "\n" not in str(err.value)
    assert not (tmp_path / "o").exists()


def test_the_cli_records_the_model_version(tmp_path, capsys):
    import skops.io as sio

    from faux.audit.cli import main

    X, c, y, model = _world(400)
    sio.dump(model, tmp_path / "m.skops")
    X.assign(sex=c["sex"]).to_csv(tmp_path / "d.csv", index=False)
    args = ["audit", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"),
            "--protected", "sex", "--aux-epochs", "2", "--no-progress", "--null-transports", "3"]
    trust = [t for t in sio.get_untrusted_types(file=tmp_path / "m.skops")]
    for t in trust:
        args += ["--trust-type", t]
    assert main([*args, "--out", str(tmp_path / "a"), "--model-version", "v2.1 (abc123)"]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["provenance"]["model"]["version"] == "v2.1 (abc123)"
    assert "v2.1 (abc123)" in (tmp_path / "a" / "report.html").read_text()
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["provenance"]["model"]["version"] is None
    assert "not given (--model-version" in (tmp_path / "b" / "report.html").read_text()
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "c"), "--model-version", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--model-version" in err and not (tmp_path / "c").exists()
