"""report.html: one self-contained page (no external requests), well formed, with every
section in order (the verdict first; under the effect verdict the fAux scores in a
diagnostics section after it); text from the data (feature names, group labels) escaped;
the group table with intervals when the summary has one, the flagged counts per group
otherwise."""

import base64
import copy
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import faux
from faux.audit.report.page import fmt, human, pct, render, write_report
from faux.audit.result import AuditResult

# the score verdict's sections, and the effect verdict's (the default)
SECTIONS = ("verdict", "summary", "threshold-rule", "null-distribution", "groups", "flagged",
            "features", "baselines", "aux-quality", "how-to-read")
EFFECT_SECTIONS = ("verdict", "evidence", "people", "moves", "effects-by-group", "outcomes",
                   "summary", "diagnostics", "how-to-read")
VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "wbr", "source"}
EVIL = "<script>alert(1)</script>"


class _Page(HTMLParser):
    """Tags in order, checked for nesting; every src/href and every section id."""

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.urls, self.ids, self.tags = [], [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        a = dict(attrs)
        self.urls += [a[k] for k in ("src", "href") if k in a]
        if tag == "section":
            self.ids.append(a.get("id"))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    return p


def _self_contained(page: str, p: _Page) -> None:
    assert "http://" not in page and "https://" not in page
    assert all(u.startswith("data:image/png;base64,") for u in p.urls), p.urls
    assert not any(u.startswith("//") for u in p.urls)
    assert not [t for t, a in p.tags if t in ("script", "link", "iframe", "object", "embed")]
    assert "@import" not in page and "url(" not in page
    for u in p.urls:  # every embedded image is a PNG
        assert base64.b64decode(u.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def _groups():
    row = {"group": "Female", "rows": 400, "flagged": 12, "rate": 0.03,
           "rate_ci": [0.0171, 0.0468], "rate_seed_ci": [0.025, 0.035], "mean_score": 0.21,
           "mean_score_ci": [0.19, 0.23], "mean_score_seed_ci": [0.2, 0.22],
           "top_features": [[EVIL, 0.5], ["age", 0.25]]}
    row2 = dict(row, group="<b>Male</b>", rows=600, flagged=6, rate=0.01,
                rate_ci=[0.0042, 0.0195])
    view = {"kind": "categories", "min_cell": 30, "merged": ["Other", "Unknown"],
            "rows": [row, row2], "largest_difference": 0.02, "largest_ratio": 3.0,
            "metric": "flagged rate"}
    return {"attributes": ["sex"], "primary_view": "sex",
            "views": {"sex x race": dict(view, kind="intersections"), "sex": view},
            "interval": {"level": 0.95, "bootstrap": 200, "aux_seeds": 3,
                         "text": "95% intervals: 200 bootstrap resamples; 3 aux seeds"}}


def _summary():
    return {
        "name": "synthetic <audit>",
        "model": {"source": "Net", "kind": "torch", "differentiable": True},
        "data": {"rows": 1000, "features": [EVIL, "age"], "protected": "sex", "label": None},
        "protected": {"kind": "binary", "levels": ["Female", "<b>Male</b>"]},
        "settings": {"methods": ["faux_ng", "faux"], "primary": "faux_ng", "threshold": 0.8,
                     "fail_above": None, "max_flagged_rate": 0.01, "sample": 1000},
        "scoring": {"mode": "autograd", "fd_step_std": None, "model_calls_per_row": 0,
                    "rows_per_s": 1234.0},
        "aux_quality": {"auroc": 0.81, "accuracy": 0.75},
        "flagged": {"count": 18, "rate": 0.018,
                    "by_group": {"Female": {"rows": 400, "flagged": 12, "rate": 0.03},
                                 "<b>Male</b>": {"rows": 600, "flagged": 6, "rate": 0.01}}},
        "calibration": {"rule": "null quantile", "alpha": 0.01, "fdr": False,
                        "null_permutations": 3, "null_rows_per_permutation": 1000,
                        "null_quantiles": {"faux_ng": {"50%": 0.3, "99%": 0.8}},
                        "expected_false_flags": 10.0,
                        "text": "faux_ng above the 0.99 quantile of its null scores"},
        "thresholds": {"faux_ng": {"threshold": 0.8, "rows_above": 18, "rate_above": 0.018}},
        "top_features": [{"feature": EVIL, "importance": 0.7},
                         {"feature": "age", "importance": 0.1}],
        "gate": {"passed": False, "reasons": ["flagged rate 1.8% exceeds 1%"], "exit_code": 1},
        "baselines": {"rows": 500, "of_rows": 1000, "sampled": True, "k": 9,
                      "flagged_in_sample": 9, "k_text": "k = 9, the sample rows faux_ng flags",
                      "top_k_chance": 0.018, "primary": "faux_ng",
                      "methods": {"consistency": {"label": "kNN consistency", "value": 0.93,
                                                  "spearman_with_primary": 0.125,
                                                  "top_k_overlap": 0.3333,
                                                  "text": "consistency text"},
                                  "fta": {"label": "FTA", "value": 0.2,
                                          "spearman_with_primary": None,
                                          "top_k_overlap": 0.5, "text": "fta text"}}},
    }


def _result(summary):
    rng = np.random.default_rng(0)
    top = pd.DataFrame([{"row_id": 7, "score": 0.95, "group": "<b>Male</b>",
                         "top_features": [(EVIL, 0.4), ("age", -0.1)]}])
    plot = {"faux_ng": rng.uniform(size=500), "faux": rng.uniform(size=500),
            "group": np.where(rng.uniform(size=500) < 0.4, "Female", "<b>Male</b>"),
            "null:faux_ng": np.sort(rng.uniform(size=300))}
    return AuditResult(summary, {EVIL: 0.7, "age": 0.1}, top, plot_scores=plot, passed=False)


def test_page_is_self_contained_well_formed_and_escapes_the_data(tmp_path):
    s = _summary()
    s["groups"] = _groups()
    path = tmp_path / "report.html"
    write_report(_result(s), path)
    page = path.read_text(encoding="utf-8")
    p = _parse(page)
    _self_contained(page, p)
    assert p.ids == list(SECTIONS)
    assert page.count("data:image/png;base64,") == 3  # null, groups, ranking
    # a feature name or group label is text: escaped everywhere it appears
    assert "<script" not in page and "<b>Male" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # table, rows, groups
    assert "&lt;b&gt;Male&lt;/b&gt;" in page and "synthetic &lt;audit&gt;" in page
    assert '<span class="badge FAIL">FAIL</span>fails the gate of at most 1.00% of rows ' \
           "flagged (1.80% flagged; exit code 1)" in page
    assert "Gate FAILED (exit code 1): flagged rate 1.8% exceeds 1%" in page
    # the threshold rule, the baselines and the how-to-read text
    assert "faux_ng above the 0.99 quantile of its null scores" in page
    assert "expected false flags" in page and "about <span" in page  # 10.0 expected
    assert "sampled: 500 of 1,000 rows" in page
    assert "k = 9: the sample rows faux_ng scores above its threshold" in page
    assert "33.33%" in page and "<td>-</td>" in page  # FTA's Spearman: not computed
    assert "What a score means." in page and "Check the aux quality first." in page


def test_group_table_renders_the_views_with_intervals(tmp_path):
    s = _summary()
    s["groups"] = _groups()
    page = render(_result(s))
    groups = page.split('<section id="groups">')[1].split("</section>")[0]
    # the primary view first, then the others
    assert groups.index("sex (primary view)") < groups.index("sex x race")
    assert "[1.71%, 4.68%]" in groups and "[0.42%, 1.95%]" in groups  # rate intervals
    assert "[0.19, 0.23]" in groups and "[0.2, 0.22]" in groups  # mean score intervals
    assert "rate 95% interval" in groups and "200 bootstrap resamples" in groups
    assert "merged: Other, Unknown" in groups and "largest ratio: 3" in groups
    assert groups.count("<tr>") == 2 * 3  # per view: header + 2 groups


def test_without_groups_the_flagged_counts_per_group_are_shown():
    s = _summary()
    s["calibration"] = {"rule": "manual threshold", "alpha": None, "null_permutations": 0,
                        "null_quantiles": None, "expected_false_flags": None,
                        "text": "manual threshold: faux_ng > 0.8"}
    res = _result(s)
    del res.plot_scores["null:faux_ng"]
    del res.summary["baselines"]
    page = render(res)
    p = _parse(page)
    _self_contained(page, p)
    assert p.ids == list(SECTIONS)
    groups = page.split('<section id="groups">')[1].split("</section>")[0]
    assert "<td>Female</td><td>400</td><td>12</td><td>3.00%</td>" in groups
    assert "manual threshold: faux_ng &gt; 0.8" in page and "no null distribution" in page
    assert "No baselines were computed." in page and "expected false flags" not in page


def test_cell_formats():
    assert fmt(None) == fmt(float("nan")) == "-"
    assert fmt(0.123456) == "0.1235" and fmt(1234) == "1,234"
    assert fmt([0.1, 0.25]) == "[0.1, 0.25]" and fmt(["a", "b", "c"]) == "a, b, c"
    assert pct(0.0123) == "1.23%" and pct([0.01, None]) == "[1.00%, -]"
    # a person's values, for people: separators, no float noise, no scientific notation
    assert human(5013) == human(5013.0) == "5,013" and human(53.0) == "53"
    assert human(38.2345) == "38.23" and human(0.04172) == "0.04172" and human("Wife") == "Wife"
    assert human(None) == human(float("nan")) == "-" and human(123456.7) == "123,457"


@pytest.fixture(scope="module")
def audited():
    import torch

    rng = np.random.default_rng(0)
    n = 600
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n),
                      EVIL: c + 0.3 * rng.normal(size=n)})

    class Proxy(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x[:, 0] + 4 * torch.sigmoid(8 * x[:, 1]) * (x[:, 2] - 0.5)

    return faux.audit(Proxy(), X, c, aux_epochs=3, null_permutations=2, progress=False)


def test_a_real_audits_page(audited):
    assert "null:faux_ng" in audited.plot_scores and "null:faux" in audited.plot_scores
    null = audited.plot_scores["null:faux_ng"]
    assert len(null) == 2 * 600 and (np.diff(null) >= 0).all()  # sorted null sample
    page = render(audited)
    p = _parse(page)
    _self_contained(page, p)
    # the effect verdict (the default): the verdict, its evidence, the people, then the rest
    assert p.ids == list(EFFECT_SECTIONS)
    assert "<script" not in page
    # the flags against chance, the rates by group, the moves, the effects by group; then
    # the diagnostics' null, score histogram and ranking
    assert page.count("data:image/png;base64,") == 7
    b = audited.summary["baselines"]
    assert f"all {b['rows']:,} rows" in page
    diag = page.split('<section id="diagnostics"')[1]
    assert diag.index("Baselines") > 0 and page.index("Baselines") > page.index("diagnostics")


def test_report_survives_a_json_round_trip(audited, tmp_path):
    """The page renders from what summary.json holds (None for non-finite numbers)."""
    s = copy.deepcopy(audited.summary)
    s["settings"]["threshold"] = float("inf")  # e.g. Benjamini-Hochberg flagging nobody
    plots = {k: v for k, v in audited.plot_scores.items() if not k.startswith("effect.")}
    res = AuditResult(s, audited.feature_ranking, audited.top_flagged.iloc[:0],
                      plot_scores=plots)
    page = render(res)
    _self_contained(page, _parse(page))
    assert "No plot sample of the effects" in page  # the plot sample is not saved
    assert page.count("data:image/png;base64,") == 6
