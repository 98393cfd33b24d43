"""The status table is the single source: the README's status block is claims.json rendered,
every "held"/"holds" in the README matches claims.json, and each study's claims follow its
numbers (fabricated results with known answers)."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_JSON = ROOT / "docs" / "figures" / "claims.json"


@pytest.fixture(scope="module")
def md():
    spec = importlib.util.spec_from_file_location("make_docs", ROOT / "scripts" / "make_docs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_docs"] = mod
    spec.loader.exec_module(mod)
    return mod


def _block(text: str, begin: str, end: str) -> str:
    a, b = text.index(begin), text.index(end)
    return text[a:b + len(end)]


def test_readme_status_block_is_claims_json_rendered(md):
    data = json.loads(CLAIMS_JSON.read_text())
    text = (ROOT / "README.md").read_text()
    assert _block(text, md.STATUS_BEGIN, md.STATUS_END) == md.status_block(data, "docs/figures")
    for name, e in data["studies"].items():
        assert e["status"] == md.C.status(e["claims"]), name


def test_every_held_in_the_readme_matches_claims_json(md):
    data = json.loads(CLAIMS_JSON.read_text())["studies"]
    text = (ROOT / "README.md").read_text()
    rest = text.replace(_block(text, md.STATUS_BEGIN, md.STATUS_END), "")
    for name, e in data.items():
        for c in e["claims"]:
            wrong = dict(c, held=not c["held"])
            assert md.claim_phrase(wrong) + " (" not in rest, (name, c["id"])
            # the phrase with its numbers (Table 1's: "holds 4/8, fails 1/8, undecided 3/8")
            rest = rest.replace(f"{md.claim_phrase(c)} ({c['ours']})", "")
            rest = rest.replace(md.claim_phrase(c) + " (", "")
    assert not re.search(r"\b(held|holds)\b", rest, re.I), "a 'held' the claims file does not back"
    everything_held = all(e["status"] == "held" for e in data.values())
    assert everything_held or not re.search(r"\breproduced\b", text, re.I)


def test_status_words(md):
    c = [{"held": True}, {"held": False}]
    assert md.C.status(c) == "partly"
    assert md.C.status(c[:1]) == "held" and md.C.status(c[1:]) == "not held"
    assert md.C.status([]) == "unknown"


def _table1_jobs(tmp_path, strength: dict, n=400, runs=3, store=True):
    """Fabricated Table 1 jobs on the 8 paper columns: labels at rate 0.3, each method's scores
    ``strength * label + noise`` per run (its own noise), stored as the job stores them."""
    import numpy as np

    from faux.reports import paper_values as P
    from faux.studies.table1 import save_scores

    g = np.random.default_rng(0)
    jobs = []
    for c in P.TABLE1_COLUMNS:
        y = (g.random(n) < 0.3).astype(int)
        for m, s in strength.items():
            folder = tmp_path / f"{c}-{m}"
            folder.mkdir(parents=True)
            seeds = [0] if m in ("fta", "fta_lin", "lic_ub") else list(range(runs))
            sc = [s * y + g.normal(size=n) for _ in seeds]
            from sklearn.metrics import average_precision_score

            aps = [float(average_precision_score(y, r)) for r in sc]
            name = save_scores(folder, y, sc, seeds) if store else None
            jobs.append({"_dir": str(folder), "metrics": {
                "column": c, "method": m, "ap_runs": aps, "run_seeds": seeds,
                "scores_file": name, "machine": {"cpu": "Test CPU", "kernels": "AVX2",
                                                 "torch_threads": 2}}})
    return jobs


def test_table1_claims_from_bootstrap_intervals(md, tmp_path):
    """LIC-UB near perfect (C1 holds), fAux+NG well above both FTAs (C2 holds), fAux+IG well
    below (C3 fails), fAux and fAux+NG drawn alike (C4 undecided), every fAux variant far
    below 0.9 (C5 fails)."""
    from faux.reports import table1_intervals as T

    strength = {"lic_ub": 8.0, "fta": 0.5, "fta_lin": 0.5, "faux": 1.5, "faux_ng": 1.5,
                "faux_ig": 0.0}
    data = T.build(_table1_jobs(tmp_path / "jobs", strength), b=300)
    assert set(data["bootstrap"]["resampled"]["Synthetic-1"]) == {"rows", "runs"}
    T.write(data, tmp_path)
    got = {c["id"]: c for c in md.C.table1(tmp_path, "")}
    assert got["C1"]["held"] and got["C1"]["ours"] == "holds 8/8, fails 0/8, undecided 0/8"
    assert got["C2"]["states"] == {"holds": 8, "fails": 0, "undecided": 0}
    assert got["C3"]["states"]["fails"] == 8 and not got["C3"]["held"]
    assert got["C4"]["states"]["undecided"] >= 3 and not got["C4"]["held"]
    assert got["C5"]["ours"] == "holds 0/4, fails 4/4, undecided 0/4"
    s1 = got["C2"]["intervals"]["Synthetic-1"]
    lo, hi = s1["interval"]
    assert 0 < lo <= s1["point"] <= hi and s1["state"] == "holds"
    assert got["C1"]["bootstrap"]["B"] == 300
    assert got["C1"]["machines"][0]["cpu"] == "Test CPU"
    assert got["C1"]["machines"][0]["n_jobs"] == 48
    # a column without results is never decided; the status cell names the three counts
    del data["claims"]["C2"]["columns"]["Synthetic-8"]["interval"]
    T.write(data, tmp_path)
    c2 = {c["id"]: c for c in md.C.table1(tmp_path, "")}["C2"]
    assert c2["ours"] == "holds 7/8, fails 0/8, undecided 1/8" and not c2["held"]
    assert "C2 ✗ holds 7/8, fails 0/8, undecided 1/8" in md.claims_cell(
        {"claims": [c2], "status": "partly"})


def test_table1_claims_without_stored_rows_bootstrap_the_runs(md, tmp_path):
    from faux.reports import table1_intervals as T

    data = T.build(_table1_jobs(tmp_path, {"faux": 2.0, "faux_ng": 2.0}, store=False), b=200)
    assert data["bootstrap"]["resampled"]["Synthetic-1"] == ["runs"]
    assert data["claims"]["C4"]["columns"]["Synthetic-1"]["interval"] is not None
    assert data["claims"]["C1"]["columns"]["Synthetic-1"]["state"] == "undecided"  # no LIC-UB


def test_a_memoised_rerun_finds_the_scores_where_they_were_written(tmp_path):
    """A reused job's folder holds only result.json; its scores are read from the folder of
    the job that computed them (``scores_path``)."""
    from pathlib import Path

    from faux.reports import table1_intervals as T

    jobs = _table1_jobs(tmp_path / "first", {"faux": 2.0, "faux_ng": 2.0})
    for j in jobs:
        j["metrics"]["scores_path"] = str(Path(j["_dir"]) / j["metrics"]["scores_file"])
        j["_dir"] = str(tmp_path / "rerun")                  # no scores.npz there
    assert T.build(jobs, b=50)["bootstrap"]["resampled"]["Synthetic-1"] == ["rows", "runs"]
    for j in jobs:
        j["metrics"]["scores_path"] = str(tmp_path / "deleted.npz")
    assert T.build(jobs, b=50)["bootstrap"]["resampled"]["Synthetic-1"] == ["runs"]


def test_table1_claims_need_the_intervals_file(md, tmp_path):
    pd.DataFrame([{"column": "Synthetic-1", "method": "fta", "ap_mean": 0.3}]).to_csv(
        tmp_path / "table1.csv", index=False)
    with pytest.raises(FileNotFoundError, match="table1_intervals.json"):
        md.C.table1(tmp_path, "")


def test_fig8_and_fig11_claims(md, tmp_path):
    pd.DataFrame({"pair": ["a/b"] * 3 + ["c/d"] * 3, "fusion": ["outer"] * 6,
                  "bias": [0, 0.5, 1] * 2, "ifs_mean": [0.1, 0.2, 0.3, 0.1, 0.3, 0.2]}
                 ).to_csv(tmp_path / "fig8.csv", index=False)
    held = {c["id"]: c["held"] for c in md.C.fig8(tmp_path, "")}
    assert held == {"a/b outer": True, "c/d outer": False}
    ks = [0.1, 0.2, 0.3, 0.4, 0.5]
    pd.DataFrame({"ap": [0.9, 0.8, 0.7, 0.6, 0.5], "ap_top30": [0.9, 0.8, 0.7, 0.6, 0.5],
                  "ks": ks, "mse": [0.3, 0.2, 0.5, 0.1, 0.4]}).to_csv(tmp_path / "fig11.csv")
    got = {c["id"]: c for c in md.C.fig11(tmp_path, "")}
    assert got["KS"]["held"] and "-1.00 / -1.00" in got["KS"]["ours"] and got["MSE"]["held"]
    # the rule of fig11.md: a weak correlation of the right sign does not hold the KS claim
    pd.DataFrame({"ap": [0.9, 0.8, 0.7, 0.6, 0.5], "ap_top30": [0.9, 0.8, 0.7, 0.6, 0.5],
                  "ks": [0.3, 0.2, 0.5, 0.1, 0.4], "mse": ks}).to_csv(tmp_path / "fig11.csv")
    got = {c["id"]: c for c in md.C.fig11(tmp_path, "")}
    assert not got["KS"]["held"] and not got["MSE"]["held"]


FIG4 = """Fig. 4/10: AUROC ...

| method | Adult | Bank |
|---|---|---|
| FTA | 0.487 ± 0.018 (0.48 / 0.633) | 0.438 ± 0.020 (0.03 / 0.06) |
| FlipTest | 0.518 ± 0.013 (0.2 / 0.2) | 0.605 ± 0.056 (0.1 / 0.07) |
| fAux+NG | 0.029 ± 0.009 (0.1 / 0.3) | 0.718 ± 0.218 (0.2 / 0.1) |
| *fair model vs the fairness check* | pass (4/5 seeds pass) | **FAILS**: probe (1/5 seeds pass) |
"""


def test_fig4_claims_and_the_reversal_finding(md):
    claims = md.C.fig4(Path("-"), FIG4)
    got = {c["id"]: c for c in claims}
    assert not got["Adult"]["held"] and got["Bank"]["held"]
    assert "AUROC 0.029 vs FlipTest 0.518, fair model passes" in got["Adult"]["ours"]
    assert "FAILS" in got["Bank"]["ours"]
    finding = md.fig4_findings({"claims": claims})
    assert finding.startswith("**On Adult the fair model passes") and "0.029" in finding
    assert "Bank" not in finding                  # its fair model fails: no such finding


def test_table3_and_table4_from_their_markdown(md):
    t3 = ("| | Adult | Bank |\n|---|---|---|\n| FlipTest | 0.880 ± 0.030 / 0.810 | 0.5 / 0.7 |\n"
          "| fAux+IG | 0.818 ± 0.096 / 0.896 | 0.6 / 0.8 |\n")
    assert [c["held"] for c in md.C.table3(Path("-"), t3)] == [False, True]
    t4 = ("| | Resource | FlipTest | fAux | FlipTest / fAux |\n|---|---|---|---|---|\n"
          "| Adult | # Parameters | 141.5 K / 220 K | 10.5 K / 13 K | 13.5× / 16.9× |\n"
          "| | Training time | 19.4 s / 1012 s | 47.1 s / 12 s | 0.4× / 84.3× |\n")
    got = {c["id"]: c["held"] for c in md.C.table4(Path("-"), t4)}
    assert got == {"Adult parameters": True, "Adult training time": False}


def test_committed_claims_follow_the_committed_snippets(md):
    """The real-data rows (read from the committed snippets) agree with those snippets."""
    data = json.loads(CLAIMS_JSON.read_text())["studies"]
    for name in md.C.FROM_SNIPPET:
        if name in data:
            snippet = (ROOT / "docs" / "figures" / f"{name}.md").read_text()
            fresh = md.C.CLAIMS_OF[name](Path("-"), snippet)
            assert [c["held"] for c in fresh] == [c["held"] for c in data[name]["claims"]]
