"""The ``real_models`` table of the real-data sweep: the fairness check of each dataset's models.

Per dataset, mean ± std over seeds of the check of the targets and the aux (probe AUROC,
proxy-swap |Δp|, parity gap, accuracy; ``faux.studies.fairness_check``), the adversaries and
FlipTest's GANs, and each fair model's verdict. The verdict is taken on the means over seeds
(``faux.studies.fairness_check.verdict``, with the jobs' targets); the number of seeds whose
own verdict passed is beside it. A fair model that fails, or whose jobs carry no check, is
flagged (:func:`fail_mark`, :func:`flags_md`).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from faux.methods.builtin import FlipTestMethod
from faux.reports.base import fmt
from faux.reports.real_sweep import DATASET_LABELS, RealSweep, ms
from faux.studies.fairness_check import TARGETS, verdict


def fail_mark(check: dict, model: str = "fair") -> str | None:
    """The flag of a fair model that fails the check (or has none); None when it passes."""
    what = "fair model" if model == "fair" else "proxy-blind model"
    if not check.get("checked"):
        return f"{what} NOT CHECKED (jobs without the fairness check)"
    if check.get(f"{model}_pass"):
        return None
    return f"{what} FAILS the check: {check[f'{model}_fails']}"


#: real_models columns: (column, part, where, key); where = "check" (metrics.fairness_check)
#: or "models" (metrics.models)
MODEL_FACTS = (
    ("unfair_probe_auroc", "unfair", "check", "probe_auroc"),
    ("fair_probe_auroc", "fair", "check", "probe_auroc"),
    ("blind_probe_auroc", "blind", "check", "probe_auroc"),
    ("unfair_swap", "unfair", "check", "proxy_swap_mean_abs_dprob"),
    ("fair_swap", "fair", "check", "proxy_swap_mean_abs_dprob"),
    ("blind_swap", "blind", "check", "proxy_swap_mean_abs_dprob"),
    ("unfair_dp_gap", "unfair", "check", "dp_gap"), ("fair_dp_gap", "fair", "check", "dp_gap"),
    ("blind_dp_gap", "blind", "check", "dp_gap"),
    ("unfair_accuracy", "unfair", "check", "accuracy"),
    ("fair_accuracy", "fair", "check", "accuracy"),
    ("blind_accuracy", "blind", "check", "accuracy"),
    ("aux_probe_y_auroc", "aux", "check", "probe_auroc"),
    ("aux_c_accuracy", "aux", "check", "accuracy"),
    ("fair_adv_accuracy", "fair", "models", "adv_accuracy"),
    ("c_chance", "fair", "models", "c_chance"),
    ("aux_auroc", "aux", "models", "auroc"),
    ("aux_adv_y_accuracy", "aux", "models", "adv_accuracy"),
    ("gan_ks", FlipTestMethod.name, "models", "ks"),
)
MODEL_LABELS = {
    "unfair_probe_auroc": "unfair model: probe AUROC of c",
    "fair_probe_auroc": "fair model: probe AUROC of c",
    "blind_probe_auroc": "proxy-blind model: probe AUROC of c",
    "unfair_swap": "unfair model: proxy swap \\|Δp\\|",
    "fair_swap": "fair model: proxy swap \\|Δp\\|",
    "blind_swap": "proxy-blind model: proxy swap \\|Δp\\|",
    "unfair_dp_gap": "unfair model: parity gap", "fair_dp_gap": "fair model: parity gap",
    "blind_dp_gap": "proxy-blind model: parity gap",
    "unfair_accuracy": "unfair model: y accuracy", "fair_accuracy": "fair model: y accuracy",
    "blind_accuracy": "proxy-blind model: y accuracy",
    "aux_probe_y_auroc": "aux: probe AUROC of y", "aux_c_accuracy": "aux: c accuracy (test)",
    "fair_adv_accuracy": "fair model: its adversary's c accuracy",
    "c_chance": "c majority rate", "aux_auroc": "aux: c AUROC (validation)",
    "aux_adv_y_accuracy": "aux: its adversary's y accuracy", "gan_ks": "GANs: mean KS",
}


def _fact(r: dict, part: str, where: str, key: str):
    m = r["metrics"]
    src = m.get("fairness_check", {}) if where == "check" else m["models"]
    return (src.get(part) or {}).get(key)


def _verdict_of(row: dict, model: str, targets: dict) -> dict:
    return verdict({"probe_auroc": row["unfair_probe_auroc"], "accuracy": row["unfair_accuracy"],
                    "proxy_swap_mean_abs_dprob": row["unfair_swap"]},
                   {"probe_auroc": row[f"{model}_probe_auroc"],
                    "accuracy": row[f"{model}_accuracy"],
                    "proxy_swap_mean_abs_dprob": row[f"{model}_swap"]}, targets)


def models_frame(rs: RealSweep) -> pd.DataFrame:
    """One row per dataset: the check's means and stds over seeds and each fair model's
    verdict on those means (the ``real_models`` table)."""
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        checked = [r for r in res if "fairness_check" in r["metrics"]]
        row = {"dataset": d, "n_seeds": len(res),
               "n_train": int(np.mean([r["metrics"]["n_train"] for r in res]))}
        for col, part, where, key in MODEL_FACTS:
            m, s = ms([_fact(r, part, where, key) for r in res])
            row[col], row[f"{col}_std"] = m, s
        row["checked"] = len(checked) == len(res)
        targets = checked[0]["metrics"]["fairness_check"]["targets"] if checked else TARGETS
        v = _verdict_of(row, "fair", targets)
        row["fair_pass"] = bool(row["checked"] and v["pass"])
        row["fair_fails"] = "; ".join(v["fails"])
        for k, ok in v["checks"].items():
            row[f"fair_{k}_ok"] = ok
        row["n_seeds_pass"] = sum(bool(r["metrics"]["fairness_check"]["pass"]) for r in checked)
        blind = [r for r in checked if "blind_verdict" in r["metrics"]["fairness_check"]]
        row["n_seeds_blind"] = len(blind)
        if blind:
            vb = _verdict_of(row, "blind", targets)
            row["blind_pass"] = bool(row["checked"] and vb["pass"])
            row["blind_fails"] = "; ".join(vb["fails"])
            for k, ok in vb["checks"].items():
                row[f"blind_{k}_ok"] = ok
        else:
            row["blind_pass"], row["blind_fails"] = None, ""
        row["n_seeds_blind_pass"] = sum(
            bool(r["metrics"]["fairness_check"]["blind_verdict"]["pass"]) for r in blind)
        overrides = {json.dumps(r["metrics"].get("fairness_check", {}).get("fair_overrides") or {},
                                sort_keys=True) for r in res}
        row["fair_overrides"] = " | ".join(sorted(overrides))
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_cell(r, model: str = "fair") -> str:
    """A fair model's verdict in a table cell, with the seeds whose own verdict passed."""
    if model == "blind" and not getattr(r, "n_seeds_blind", 0):
        return "— (not trained)"
    if not r.checked:
        return "**NOT CHECKED**"
    ok = r.fair_pass if model == "fair" else r.blind_pass
    fails = r.fair_fails if model == "fair" else r.blind_fails
    n_pass = r.n_seeds_pass if model == "fair" else r.n_seeds_blind_pass
    n = r.n_seeds if model == "fair" else r.n_seeds_blind
    word = "pass" if ok else "**FAILS**"
    why = "" if ok else f": {fails}"
    return f"{word}{why} ({n_pass}/{n} seeds pass)"


def flags_md(models: pd.DataFrame) -> str:
    """One bullet per dataset whose fair model fails the check (or was not checked)."""
    lines = []
    for r in models.itertuples():
        mark = fail_mark({"checked": r.checked, "fair_pass": r.fair_pass,
                          "fair_fails": r.fair_fails})
        if mark is not None:
            lines.append(f"- **{DATASET_LABELS.get(r.dataset, r.dataset)}: {mark}** "
                         f"(on the means over {r.n_seeds} seed(s); the check's targets: probe "
                         f"AUROC ≤ 0.60, swap ≤ half the unfair model's, accuracy within 2 "
                         f"points). Its column compares the tests on a model that is not "
                         f"shown to be fair.\n")
    return "".join(lines)


def row_of(models: pd.DataFrame, dataset: str):
    """The ``real_models`` row of ``dataset``."""
    return next(r for r in models.itertuples() if r.dataset == dataset)


def models_md(models: pd.DataFrame) -> str:
    """``real_models.md``: what the check measures, then one column per dataset."""
    ds = list(models["dataset"])
    blind = bool((models["n_seeds_blind"] > 0).any())
    lines = ["The fairness check (faux.studies.fairness_check; test split): probe = the larger "
             "held-out AUROC of two fresh probes (logistic, MLP 32×1) of c on the model's "
             "last hidden layer (of y for the aux); swap = mean |Δp| under the dataset's "
             "declared proxy edits (Adult: relationship Husband ↔ Wife; Bank: job student ↔ "
             "retired); parity gap and accuracy; then the adversaries and FlipTest's GANs. "
             "Mean ± std over seeds. Verdict of each fair model on the means against the "
             "targets probe ≤ 0.60, swap ≤ half the unfair model's, accuracy within 2 points "
             "of the unfair model's.\n\n",
             "| | " + " | ".join(DATASET_LABELS.get(d, d) for d in ds) + " |\n",
             "|---|" + "---|" * len(ds) + "\n"]
    m = models.set_index("dataset")
    for col, text in MODEL_LABELS.items():
        if col.startswith("blind_") and not blind:
            continue
        cells = [fmt(m.loc[d, col], m.loc[d, f"{col}_std"]) for d in ds]
        lines.append(f"| {text} | " + " | ".join(cells) + " |\n")
    lines.append("| fair model's recipe overrides (real_study.fair_by_dataset) | "
                 + " | ".join(f"`{m.loc[d, 'fair_overrides']}`" for d in ds) + " |\n")
    lines.append("| **fair model vs the targets** | "
                 + " | ".join(verdict_cell(row_of(models, d)) for d in ds) + " |\n")
    if blind:
        lines.append("| **proxy-blind model vs the targets** | "
                     + " | ".join(verdict_cell(row_of(models, d), "blind") for d in ds) + " |\n")
    return "".join(lines)

