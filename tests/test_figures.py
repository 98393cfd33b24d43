"""Figures that read: what each figure states (once), its size, and the numbers behind it."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faux.methods.registry import readings_methods
from faux.reports import fig4, fig11, readings
from faux.reports.sweep import Sweep
from faux.studies.fairness_check import verdict

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 300_000
MAX_WIDTH = 1000


def _png_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as im:
        return im.size


def _spy_texts(monkeypatch) -> list[dict]:
    """Per saved figure: its suptitle, panel titles, y labels, legend entries and title."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figs, save = [], Figure.savefig

    def spy(fig, *a, **k):
        figs.append({"suptitle": fig._suptitle.get_text() if fig._suptitle else "",
                     "titles": [ax.get_title() for ax in fig.axes if ax.get_title()],
                     "ylabels": [ax.get_ylabel() for ax in fig.axes],
                     "legend": [t.get_text() for leg in fig.legends for t in leg.get_texts()],
                     "legend_title": [leg.get_title().get_text() for leg in fig.legends],
                     "texts": [t.get_text() for t in fig.texts]})
        return save(fig, *a, **k)

    monkeypatch.setattr(Figure, "savefig", spy)
    return figs


# ----------------------------------------------------------------------------- Fig. 4

METHODS = ("fta", "fliptest", "faux", "faux_ng")


def _quantiles(center: float) -> dict:
    q = {f"q{p:02d}": center + (p - 50) / 100 for p in (5, 25, 50, 75, 95)}
    return {**q, "median": q["q50"], "mean": center}


def _check(probe, swap, acc) -> dict:
    return {"probe_auroc": probe, "proxy_swap_mean_abs_dprob": swap, "accuracy": acc,
            "dp_gap": 0.1, "probe_target": "c", "proxy_swap_n": 50}


def _metrics(seed: int, auroc_fair: float, auroc_blind: float) -> dict:
    unfair, fair, blind = _check(0.88, 0.08, 0.85), _check(0.58, 0.002, 0.84), \
        _check(0.86, 0.0, 0.85)
    fc = {"unfair": unfair, "fair": fair, "blind": blind, "aux": _check(0.55, 0.0, 0.7),
          **verdict(unfair, fair), "blind_verdict": verdict(unfair, blind),
          "fair_overrides": {}}
    methods = {m: {"unfair": _quantiles(1.0), "fair": _quantiles(0.8),
                   "blind": _quantiles(1.2), "auroc": auroc_fair, "paired_win": auroc_fair,
                   "auroc_blind": auroc_blind, "paired_win_blind": auroc_blind}
               for m in METHODS}
    return {"dataset": "adult", "seed": seed, "protected": "sex", "n_train": 100,
            "n_score": 50, "method_names": list(METHODS),
            "scored_models": ["unfair", "fair", "blind"], "methods": methods,
            "fairness_check": fc, "models": {}}


def _sweep(*metrics) -> Sweep:
    sweep = Sweep()
    for m in metrics:
        sweep.results.append({"status": "ok", "job": "real_cell", "config_hash": "x" * 16,
                              "metrics": json.loads(json.dumps(m)), "_dir": "/nonexistent"})
    return sweep


def test_fig4_figure_states_the_check_once_with_labelled_axes(tmp_path, monkeypatch):
    figs = _spy_texts(monkeypatch)
    fig4.build(_sweep(_metrics(0, 0.02, 0.80), _metrics(1, 0.04, 0.76)), tmp_path / "r",
               tmp_path / "f")
    png = tmp_path / "f" / "fig4_adult.png"
    assert png.stat().st_size <= MAX_BYTES and _png_size(png)[0] <= MAX_WIDTH
    (f,) = figs
    # one panel per method, titled with both separations; the y axis says what it shows
    assert len(f["titles"]) == len(METHODS)
    assert f["titles"][-1] == "fAux+NG\nvs Adel 0.03 · vs blind 0.78"
    assert f["ylabels"].count("unfairness score") == 1          # first column of one row
    # the check once, in the legend: three models, the blind one failing its probe
    assert [e.split(":")[0] for e in f["legend"]] == [
        "unfair model", "Adel fair model", "proxy-blind fair model"]
    assert f["legend"][0] == "unfair model: probe 0.88, swap 0.080, accuracy 0.850"
    assert f["legend"][1].endswith("passes the check")
    assert f["legend"][2].endswith("FAILS the check (probe)")
    every = [f["suptitle"], *f["titles"], *f["legend"], *f["legend_title"], *f["texts"]]
    assert sum("probe 0.58" in t for t in every) == 1
    assert "(c = sex)" in f["suptitle"] and "100 individuals (2 seed(s)" in f["suptitle"]


def test_fig4_tables_compare_the_unfair_model_with_both_fair_models(tmp_path):
    fig4.build(_sweep(_metrics(0, 0.02, 0.80), _metrics(1, 0.04, 0.76)), tmp_path / "r",
               tmp_path / "f")
    f = pd.read_csv(tmp_path / "r" / "fig4.csv")
    ng = f[f.method == "faux_ng"].iloc[0]
    assert ng.auroc == pytest.approx(0.03) and ng.auroc_blind == pytest.approx(0.78)
    assert ng.auroc_blind_std == pytest.approx(np.std([0.80, 0.76], ddof=1), abs=1e-4)
    assert ng.median_blind == pytest.approx(1.2) and ng.n_seeds_blind == 2
    md = (tmp_path / "r" / "fig4.md").read_text()
    assert "| method | Adult vs Adel fair | Adult vs proxy-blind |" in md
    assert ("fAux+NG ranks the Adel fair model (passes the check) above the unfair model "
            "(reversed): AUROC 0.030 ± 0.014") in md
    assert ("ranks the unfair model above the proxy-blind fair model (fails the check): "
            "AUROC 0.780 ± 0.028") in md
    models = pd.read_csv(tmp_path / "r" / "real_models.csv")
    assert models.fair_pass.item() and not models.blind_pass.item()
    assert models.blind_swap.item() == 0.0 and models.n_seeds_blind_pass.item() == 0
    assert "| **proxy-blind model vs the targets** | **FAILS**: probe AUROC 0.860 > 0.60" \
        in (tmp_path / "r" / "real_models.md").read_text()


def test_fig4_without_the_blind_model_keeps_two_boxes(tmp_path, monkeypatch):
    m = _metrics(0, 0.3, 0.0)
    m["scored_models"] = ["unfair", "fair"]
    for s in m["methods"].values():
        for k in ("blind", "auroc_blind", "paired_win_blind"):
            s.pop(k)
    for k in ("blind", "blind_verdict"):
        m["fairness_check"].pop(k)
    figs = _spy_texts(monkeypatch)
    fig4.build(_sweep(m), tmp_path / "r", tmp_path / "f")
    assert len(figs[0]["legend"]) == 2 and "vs blind" not in figs[0]["titles"][0]
    f = pd.read_csv(tmp_path / "r" / "fig4.csv")
    assert f.auroc_blind.isna().all()
    assert "proxy-blind" not in (tmp_path / "r" / "fig4.md").read_text().split("\n\n")[1]


@pytest.mark.parametrize("auroc,word", [(0.8, "separates"), (0.6, "separates"),
                                        (0.55, "does not separate"), (0.4, "reverses"),
                                        (0.03, "reverses"), (float("nan"), "not measured")])
def test_separation_word(auroc, word):
    assert fig4.separation_word(auroc) == word


# ----------------------------------------------------------------------------- readings


def _readings_frame(n=3, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        row = {"reading": f"r{i}", "valid": i != n - 1}
        for m in readings_methods():
            for c in readings.COLUMNS:
                row[f"{m} {c}"] = float(rng.uniform(0.3, 1.0))
        rows.append(row)
    return pd.DataFrame(rows)


def test_claim_margins_agree_with_the_claims():
    df = _readings_frame(n=6, seed=3)
    for _, r in df.iterrows():
        ap = {m: {c: r[f"{m} {c}"] for c in readings.COLUMNS} for m in readings_methods()}
        margins = readings.claim_margins(lambda m, c, ap=ap: ap[m][c])
        held = readings.claims(ap)
        c = readings.COLUMNS[0]
        assert margins["C1"][c] == pytest.approx(ap[readings.LIC][c] - 0.9)
        assert margins["C2"][c] == pytest.approx(
            ap[readings.NG][c] - max(ap[readings.FTA][c], ap[readings.LIN][c]))
        assert set(margins["C4"]) == set(readings.OUTER)
        assert set(margins["C5"]) == set(readings.CONCAT)
        for k, (ok, n_ok, n) in held.items():
            assert len(margins[k]) == n and ok == (n_ok == n)
            assert sum(v > 0 for v in margins[k].values()) == n_ok    # no ties in random APs
    # the paper's own Table 1: C2 and C3 hold in its numbers
    paper = readings.claim_margins(readings.paper)
    assert all(v > 0 for v in paper["C3"].values())


def test_readings_figure_has_a_panel_per_claim_and_labels_the_paper(tmp_path, monkeypatch):
    figs = _spy_texts(monkeypatch)
    df = _readings_frame(n=4)
    png = readings.figure(df, tmp_path / "readings.png")
    assert png.stat().st_size <= MAX_BYTES and _png_size(png)[0] <= MAX_WIDTH
    (f,) = figs
    assert [t.split(":")[0] for t in f["titles"]] == list(readings.CLAIMS)
    for k, title in zip(readings.CLAIMS, f["titles"]):
        n_held = 0
        for _, r in df.iterrows():
            ap = {m: {c: r[f"{m} {c}"] for c in readings.COLUMNS} for m in readings_methods()}
            n_held += readings.claims(ap)[k][0]
        assert title.endswith(f"held: {n_held}/4")
    assert "paper's Table 1 (top row)" in f["suptitle"]


def test_readings_figure_labels_its_rows(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = _readings_frame(n=3)
    seen = {}
    orig = plt.Figure.savefig

    def spy(fig, *a, **k):
        seen["rows"] = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        return orig(fig, *a, **k)

    plt.Figure.savefig = spy
    try:
        readings.figure(df, tmp_path / "readings.png")
    finally:
        plt.Figure.savefig = orig
    assert seen["rows"] == ["paper (Table 1)", "r0", "r1", "r2 (invalid)"]


# ----------------------------------------------------------------------------- Fig. 11


@pytest.mark.parametrize("ks,mse,agree", [(-0.7, 0.1, (True, True)), (0.74, -0.76, (False, False)),
                                          (-0.2, -0.5, (False, False)), (-0.3, 0.29, (True, True))])
def test_fig11_claims_beside_ours(ks, mse, agree):
    corr = {"pearson_ap_ks": ks, "spearman_ap_ks": ks, "pearson_ap_mse": mse,
            "spearman_ap_mse": mse}
    rows = fig11.claim_rows(corr)
    assert [r[0] for r in rows] == ["KS", "MSE"]
    assert tuple(r[3] for r in rows) == agree


# ----------------------------------------------------------------------------- docs/figures


def test_docs_figures_are_small_enough_to_read():
    pngs = sorted((ROOT / "docs" / "figures").glob("*.png"))
    assert pngs
    for p in pngs:
        assert p.stat().st_size <= MAX_BYTES, p
        assert _png_size(p)[0] <= MAX_WIDTH, p
