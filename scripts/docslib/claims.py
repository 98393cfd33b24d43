"""The paper's claims each study checks, held or not, from its results: ``make docs`` writes
them to ``docs/figures/claims.json``; the README's status table and its tests read that file.

One function per study, ``<study>(results, snippet) -> list[claim]``; a claim is a dict
``{"id", "claim", "held", "ours"}`` (the paper's statement, whether our numbers hold it, and
those numbers; Table 1's claims add per column the bootstrap interval and its state, holds,
fails or undecided: :func:`table1`). ``results`` is ``outputs/results``; ``snippet`` is the
study's markdown (``outputs/results/<study>.md`` when built, else the committed
``docs/figures/<study>.md``), which the real-data studies are read from. The thresholds are the paper's own words:
Table 1's C1-C5 (``faux.reports.readings.CLAIMS``), Section 4.3 (Fig. 4), 4.4 (Fig. 5),
A.7.1 (Fig. 8), A.10 (Tables 3 and 4) and A.11.4 (Fig. 11).
"""

from __future__ import annotations

import re
from pathlib import Path

HELD, PARTLY, NOT_HELD, UNKNOWN = "held", "partly", "not held", "unknown"
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def status(claims: list[dict]) -> str:
    """``held`` when every claim holds, ``not held`` when none does, else ``partly``;
    ``unknown`` without claims (results the claims could not be read from)."""
    if not claims:
        return UNKNOWN
    n = sum(bool(c["held"]) for c in claims)
    return HELD if n == len(claims) else NOT_HELD if n == 0 else PARTLY


def _claim(cid: str, text: str, held: bool, ours: str) -> dict:
    return {"id": cid, "claim": text, "held": bool(held), "ours": ours}


def md_tables(text: str) -> list[list[list[str]]]:
    """Every markdown table in ``text`` as rows of stripped cells (the rule line dropped)."""
    tables, cur = [], []
    for line in text.splitlines() + [""]:
        s = line.strip()
        if s.startswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                cur.append(cells)
        elif cur:
            tables.append(cur)
            cur = []
    return tables


def first_number(cell: str) -> float | None:
    m = _NUM.search(cell.replace("−", "-"))
    return float(m.group()) if m else None


# --------------------------------------------------------------------------- synthetic
def table1(results: Path, snippet: str) -> list[dict]:
    """C1-C5 of Table 1, each column decided by the bootstrap interval of the claim's
    statistic (``table1_intervals.json``, written by aggregation beside ``table1.csv``;
    ``faux.reports.table1_intervals``): holds / fails / undecided per column, the claim held
    when it holds on every column. ``ours``: ``holds 4/8, fails 1/8, undecided 3/8``."""
    import json

    from faux.metrics.intervals import counts, summary
    from faux.reports.readings import CLAIMS
    from faux.reports.table1_intervals import NAME, claim_states

    path = results / NAME
    if not path.is_file():
        raise FileNotFoundError(f"no {NAME} beside table1.csv: aggregate the sweep again "
                                "(`make table1`) to decide the claims with intervals")
    data = json.loads(path.read_text())
    out = []
    for k, states in claim_states(data).items():
        c = data["claims"][k]
        n = counts(states.values())
        claim = _claim(k, CLAIMS[k], n["holds"] == len(states), summary(states.values()))
        claim.update(states=n, statistic=c["statistic"], bound=c["bound"], strict=c["strict"],
                     intervals={col: {"point": v.get("point"), "interval": v.get("interval"),
                                      "state": states[col]}
                                for col, v in c["columns"].items()},
                     bootstrap=data["bootstrap"], machines=data.get("machines") or [])
        out.append(claim)
    return out


def readings(results: Path, snippet: str) -> list[dict]:
    """Table 1's C1-C5 under the reading the study selects (the first row of readings.csv)."""
    import pandas as pd

    from faux.reports.readings import CLAIMS

    best = pd.read_csv(results / "readings.csv").iloc[0]
    out = []
    for k, text in CLAIMS.items():
        ok, n = (int(v) for v in str(best[k]).split("/"))
        out.append(_claim(k, f"{text} (reading `{best['reading']}`, the study's choice)",
                          ok == n, f"{ok}/{n} columns"))
    return out


def _spearman(values) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(range(len(values)), values).statistic)


def fig5(results: Path, snippet: str) -> list[dict]:
    """Section 4.4 on fAux (the paper's plotted test; within-job ranks pooled, as in
    ``fig5_faux_rank.png``) and fAux+NG (raw scores pooled, ``fig5.png``)."""
    import pandas as pd

    frame = pd.read_csv(results / "fig5.csv")
    out = []
    for method, col, label in (("faux", "ap_job_rank", "fAux"), ("faux_ng", "ap", "fAux+NG")):
        f = frame[frame["method"] == method]
        if f.empty:
            continue
        bias = f[f["panel"] == "bias"].assign(b=lambda d: d["bin"].astype(float))
        hi = bias.loc[bias.b >= 0.75, col].mean()
        lo = bias.loc[bias.b <= 0.25, col].mean()
        out.append(_claim(f"bias/{label}", f"{label} ranks better on highly biased data "
                          "(bias ≥ 0.75) than on little bias (≤ 0.25)", hi > lo,
                          f"AP {hi:.3f} vs {lo:.3f}"))
        aux = f[f["panel"] == "aux_accuracy"][col].to_numpy(float)
        if len(aux) >= 2:
            out.append(_claim(f"aux/{label}", f"{label} ranks better with a more accurate "
                              "aux model (top vs bottom quartile)", aux[-1] > aux[0],
                              f"AP {aux[-1]:.3f} vs {aux[0]:.3f}"))
        g = f[f["panel"] == "target_gradient"]
        lift = (g[col] - g["positive_rate"]).to_numpy(float)
        if len(lift) >= 2:
            out.append(_claim(f"grad/{label}", f"{label} is worse on the 5% largest target "
                              "gradients than on the other bins", lift[-1] < lift[:-1].min(),
                              f"lift {lift[-1]:+.3f} vs {lift[:-1].min():+.3f}…"
                              f"{lift[:-1].max():+.3f}"))
    return out


def fig8(results: Path, snippet: str) -> list[dict]:
    """A.7.1: a higher bias parameter gives more discrimination (mean IFS rises with bias)."""
    import pandas as pd

    frame = pd.read_csv(results / "fig8.csv")
    out = []
    for (pair, fusion), g in frame.groupby(["pair", "fusion"], sort=False):
        g = g.sort_values("bias")
        ifs = g["ifs_mean"].to_numpy(float)
        rising = bool(len(ifs) >= 2 and (ifs[1:] > ifs[:-1]).all())
        out.append(_claim(f"{pair} {fusion}", "mean IFS rises with the bias parameter", rising,
                          "mean IFS " + " → ".join(f"{v:.3g}" for v in ifs)
                          + f" at bias {', '.join(f'{b:g}' for b in g['bias'])}"))
    return out


def fig11(results: Path, snippet: str) -> list[dict]:
    """A.11.4: a smaller KS gives a higher AP; MSE does not track AP. Decided by the rule
    fig11.md states (``faux.reports.fig11.claim_rows``: the paper's sign at |Pearson| >=
    ``CORRELATES``, or |Pearson| below it where the paper finds no relation)."""
    import pandas as pd

    from faux.reports.fig11 import claim_rows, fig11_correlations

    corr = fig11_correlations(pd.read_csv(results / "fig11.csv"))
    return [_claim(q, text, agrees, f"Pearson / Spearman(AP, {q}) {ours}")
            for q, text, ours, agrees in claim_rows(corr)]


# --------------------------------------------------------------------------- real data
def _dataset_table(snippet: str, first: str) -> tuple[list[str], dict[str, list[str]]]:
    """The first table whose header's first cell is ``first``: (datasets, {row: cells})."""
    for t in md_tables(snippet):
        if t and t[0][0] == first and len(t[0]) > 1:
            return t[0][1:], {r[0]: r[1:] for r in t[1:]}
    raise ValueError(f"no table headed '| {first} |' in the snippet")


def fig4_facts(snippet: str) -> dict:
    """``{dataset: {"auroc": {method label: AUROC}, "fair_check": "pass"|"fails"|None}}``
    from Fig. 4's table (AUROC < 0.5: the fair model scores higher)."""
    datasets, rows = _dataset_table(snippet, "method")
    out = {d: {"auroc": {}, "fair_check": None} for d in datasets}
    for label, cells in rows.items():
        if label.startswith("*"):              # the fair model's verdict row
            for d, cell in zip(datasets, cells):
                out[d]["fair_check"] = ("pass" if cell.lower().startswith("pass")
                                        else "fails" if "fail" in cell.lower() else None)
            continue
        for d, cell in zip(datasets, cells):
            v = first_number(cell)
            if v is not None:
                out[d]["auroc"][label] = v
    return out


PLOTTED = "fAux+NG"


def fig4(results: Path, snippet: str) -> list[dict]:
    """Section 4.3: the plotted fAux+NG scores the unfair model above the fair one (AUROC >
    0.5) and separates them better than every baseline (the rows not named fAux)."""
    out = []
    for d, f in fig4_facts(snippet).items():
        au = f["auroc"]
        base = {m: v for m, v in au.items() if not m.startswith("fAux")}
        ng = au.get(PLOTTED)
        if ng is None or not base:
            continue
        best = max(base, key=base.get)
        check = {"pass": ", fair model passes the fairness check",
                 "fails": ", fair model FAILS the fairness check"}.get(f["fair_check"] or "", "")
        c = _claim(d, f"{PLOTTED} scores the unfair model above the fair one, better "
                   "than the baselines", ng > 0.5 and ng > base[best],
                   f"AUROC {ng:.3f} vs {best} {base[best]:.3f}{check}")
        c["facts"] = {"auroc": ng, "fair_check": f["fair_check"]}
        out.append(c)
    return out


def table3(results: Path, snippet: str) -> list[dict]:
    """A.10: fAux+IG's transparency report has a higher NDCG than FlipTest's."""
    datasets, rows = _dataset_table(snippet, "")
    ig, ft = rows.get("fAux+IG"), rows.get("FlipTest")
    if not ig or not ft:
        return []
    out = []
    for d, a, b in zip(datasets, ig, ft):
        va, vb = first_number(a), first_number(b)
        if va is not None and vb is not None:
            out.append(_claim(d, "fAux+IG's report ranks the proxies better than FlipTest's "
                              "(NDCG)", va > vb, f"NDCG {va:.3f} vs {vb:.3f}"))
    return out


def table4(results: Path, snippet: str) -> list[dict]:
    """A.10: fAux needs ~5% of FlipTest's parameters and ~10% of its training time (taken as
    a ratio FlipTest / fAux of at least 10)."""
    out, dataset = [], None
    for t in md_tables(snippet):
        if not t or t[0][:2] != ["", "Resource"]:
            continue
        for r in t[1:]:
            dataset = r[0] or dataset
            ratio = first_number(r[-1])
            if ratio is None or dataset is None:
                continue
            what = "parameters" if "param" in r[1].lower() else "training time"
            out.append(_claim(f"{dataset} {what}", f"fAux needs at most ~10% of FlipTest's "
                              f"{what}", ratio >= 10, f"FlipTest / fAux {ratio:g}×"))
        break
    return out


CLAIMS_OF = {"table1": table1, "readings": readings, "fig5": fig5, "fig8": fig8,
             "fig11": fig11, "fig4": fig4, "table3": table3, "table4": table4}
#: the results file each study's claims are computed from (the others: their markdown)
CSV = {"table1": "table1_intervals.json", "readings": "readings.csv", "fig5": "fig5.csv",
       "fig8": "fig8.csv", "fig11": "fig11.csv"}
#: studies whose claims are read from the markdown (results or committed snippet)
FROM_SNIPPET = ("fig4", "table3", "table4")
#: the status table's first column
SHORT = {"table1": "Table 1", "readings": "Table 1, readings", "fig4": "Fig. 4/10",
         "table3": "Table 3", "table4": "Table 4", "fig5": "Fig. 5", "fig8": "Fig. 8",
         "fig11": "Fig. 11"}
#: what the paper says, one line per study (the status table's "paper" column)
PAPER = {
    "table1": "Table 1 (4.2): LIC-UB ≥ 0.9 (C1); fAux+NG, fAux+IG above both FTAs (C2, C3); "
              "fAux+NG ≥ fAux on outer fusion (C4); best fAux ≥ 0.9 on concat (C5)",
    "readings": "Table 1's claims, under the reading of the benchmark this study selects",
    "fig4": "Fig. 4 (4.3): fAux+NG scores the unfair model above the fair one, "
            "better than the baselines",
    "table3": "Table 3 (A.10): fAux+IG's transparency report beats FlipTest's",
    "table4": "Table 4 (A.10): fAux needs ~5% of FlipTest's parameters, ~10% of its time",
    "fig5": "Fig. 5 (4.4): fAux better with more bias and a better aux, worse on "
            "huge target gradients",
    "fig8": "Fig. 8 (A.7.1): more bias, more discrimination",
    "fig11": "Fig. 11 (A.11.4): the GAN's KS tracks FlipTest's AP, its MSE does not",
}
