"""Fig. 4/10 from the real-data sweep (jobs ``real_cell``).

``build_fig4``: ``fig4.csv`` (one row per dataset and method: medians of the models'
scores, the AUROC of telling the unfair model's scores from the fair model's, mean ± std
over seeds; with the proxy-blind fair model of ``profile.real.blind_model`` also
``median_blind``, ``auroc_blind``, ``paired_win_blind``: the unfair model against it),
``fig4.md`` (the AUROCs, and a status line per dataset: which fair model fAux+NG separates
from the unfair one), ``real_models.{csv,md}`` (the fairness check of the targets and
the aux: probe AUROC, proxy-swap |Δp|, parity gap, accuracy, and each fair model's
pass/fail against the targets; the adversaries and the GANs) and
``figures/fig4_<dataset>.png``.

The fair model's verdict is taken on the means over seeds
(``faux.studies.fairness_check.verdict``, with the jobs' targets); the number of seeds whose
own verdict passed is beside it. A fair model that fails, or whose jobs carry no check, is
flagged in ``fig4.md`` (a line under the table) and in the figure (a red line under the
title: "fair model FAILS the check"). The figure states each model's check once, in its
legend entry (probe AUROC, swap |Δp|, accuracy, verdict).
Scores of different methods live on different scales, so the figure has one panel per
method, each with its own y axis (the test's unfairness score): a box per model, unfair
grey, Adel fair blue, proxy-blind orange; box = 25-75 %, line = median, whiskers = 5-95 %
of the individuals' scores pooled over seeds (from ``scores.npz``; without it, the per-seed
quantiles averaged over seeds), no outliers; the panel's title gives the AUROC of the unfair
model against each fair model.

Methods: whatever the jobs scored (``metrics.method_names``), in the registry's order.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods import registry
from faux.methods.builtin import FAuxNGMethod, FlipTestMethod
from faux.reports.base import Report, fmt, write_tables
from faux.reports.real_sweep import (
    DATASET_LABELS,
    RealSweep,
    finish,
    method_names,
    ms,
)
from faux.studies.fairness_check import TARGETS, verdict

NAME = "fig4"
#: the scored targets: the unfair model, the Adel fair model, the proxy-blind fair model
MODELS = ("unfair", "fair", "blind")
COLORS = {"unfair": "#9e9e9e", "fair": "#4a7fc1", "blind": "#e08a2c"}
UNFAIR_COLOR, FAIR_COLOR = COLORS["unfair"], COLORS["fair"]
FAIL_COLOR = "#c62828"
MODEL_NAMES = {"unfair": "unfair model", "fair": "Adel fair model",
               "blind": "proxy-blind fair model"}
TICKS = {"unfair": "unfair", "fair": "Adel", "blind": "blind"}
#: fAux+NG "separates" an unfair model from a fair one at AUROC >= 0.5 + SEPARATES_MARGIN and
#: "reverses" them at <= 0.5 - SEPARATES_MARGIN (the status line of fig4.md)
SEPARATES_MARGIN = 0.1
STATUS_METHOD = FAuxNGMethod.name


def _load_scores(res: dict) -> dict | None:
    path = Path(res.get("_dir", "")) / res["metrics"].get("scores_file", "scores.npz")
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError):
        return None


def _box_stats(values: np.ndarray) -> dict:
    q05, q25, q50, q75, q95 = np.quantile(values, (0.05, 0.25, 0.5, 0.75, 0.95))
    return {"med": q50, "q1": q25, "q3": q75, "whislo": q05, "whishi": q95, "fliers": []}


def box_stats(results: list[dict], method: str, model: str) -> tuple[dict, str] | None:
    """Box statistics of one method and model pooled over seeds, and their source (None
    when no job scored that model)."""
    pooled = []
    for r in results:
        z = _load_scores(r)
        key = f"{method}__{model}"
        if z is None or key not in z:
            pooled = None
            break
        pooled.append(z[key])
    if pooled:
        return _box_stats(np.concatenate(pooled).astype(np.float64)), "pooled scores"
    qs = [r["metrics"]["methods"][method][model] for r in results
          if model in r["metrics"]["methods"].get(method, {})]
    if not qs:
        return None
    mean = {k: float(np.mean([q[k] for q in qs])) for k in ("q05", "q25", "q50", "q75", "q95")}
    return ({"med": mean["q50"], "q1": mean["q25"], "q3": mean["q75"], "whislo": mean["q05"],
             "whishi": mean["q95"], "fliers": []}, "per-seed quantiles averaged")


def _g(v, f: str) -> str:
    return "—" if v is None or not np.isfinite(v) else format(v, f)


def check_line(check: dict, model: str = "fair") -> str:
    """One model's fairness check (probe AUROC of c, swap |Δp|, accuracy) and, for a fair
    model, its verdict (the checks it fails): the text of its legend entry."""
    out = (f"probe {_g(check.get(f'{model}_probe_auroc'), '.2f')}, swap "
           f"{_g(check.get(f'{model}_swap'), '.3f')}, accuracy "
           f"{_g(check.get(f'{model}_accuracy'), '.3f')}")
    if model == "unfair":
        return out
    if not check.get("checked"):
        return out + " — NOT CHECKED"
    if check.get(f"{model}_pass"):
        return out + " — passes the check"
    failed = [k for k in ("probe", "swap", "accuracy") if check.get(f"{model}_{k}_ok") is False]
    return out + " — FAILS the check" + (f" ({', '.join(failed)})" if failed else "")


def fail_mark(check: dict, model: str = "fair") -> str | None:
    """The flag of a fair model that fails the check (or has none); None when it passes."""
    what = "fair model" if model == "fair" else "proxy-blind model"
    if not check.get("checked"):
        return f"{what} NOT CHECKED (jobs without the fairness check)"
    if check.get(f"{model}_pass"):
        return None
    return f"{what} FAILS the check: {check[f'{model}_fails']}"


def _scored_models(results: list[dict]) -> tuple[str, ...]:
    seen = {m for r in results for m in r["metrics"].get("scored_models", ("unfair", "fair"))}
    return tuple(m for m in MODELS if m in seen or m in ("unfair", "fair"))


def fig4_figure(dataset: str, results: list[dict], methods: list[str], aurocs: dict,
                path: Path, check: dict | None = None, aurocs_blind: dict | None = None
                ) -> Path:
    """One panel per method: a box per model (unfair grey, Adel fair blue, proxy-blind
    orange) on the method's own axis, titled with the AUROC of the unfair model against each
    fair model.

    ``check``: the dataset's row of ``real_models`` (probe, swap, accuracy, verdicts): stated
    once, in the legend; a failing fair model's entry is red and says why.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n = len(methods)
    ncols = min(4, n)
    nrows = math.ceil(n / ncols)
    check = check or {}
    aurocs_blind = aurocs_blind or {}
    models = [m for m in _scored_models(results)
              if m != "blind" or any(np.isfinite(v) for v in aurocs_blind.values())]
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.5 * ncols, 2.6 * nrows + 1.6),
                             squeeze=False, layout="constrained", dpi=100)
    sources = set()
    for i, (ax, method) in enumerate(zip(axes.ravel(), methods)):
        stats, colors = [], []
        for model in models:
            got = box_stats(results, method, model)
            if got is None:
                continue
            st, src = got
            st["label"] = TICKS[model]
            stats.append(st)
            colors.append(COLORS[model])
            sources.add(src)
        parts = ax.bxp(stats, showfliers=False, patch_artist=True, widths=0.6)
        for patch, color in zip(parts["boxes"], colors):
            patch.set_facecolor(color)
        for med in parts["medians"]:
            med.set_color("black")
        title = f"{registry.label(method)}\nvs Adel {_g(aurocs.get(method), '.2f')}"
        if "blind" in models:
            title += f" · vs blind {_g(aurocs_blind.get(method), '.2f')}"
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=9)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        ax.yaxis.get_offset_text().set_fontsize(8)
        if i % ncols == 0:
            ax.set_ylabel("unfairness score", fontsize=10)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    seeds = len(results)
    n_score = sum(int(r["metrics"].get("n_score", 0)) for r in results)
    protected = results[0]["metrics"].get("protected", "c") if results else "c"
    fig.suptitle(f"{DATASET_LABELS.get(dataset, dataset)} (c = {protected}): each test's "
                 f"unfairness scores of an unfair and {len(models) - 1} fair model(s)\n"
                 f"boxes 25-75 %, whiskers 5-95 % of {n_score:,} individuals ({seeds} seed(s), "
                 f"{' / '.join(sorted(sources))}); titles: AUROC, unfair vs each fair model\n"
                 f"(> 0.5: the test scores the unfair model higher, as it should)",
                 fontsize=10)
    handles = [Patch(facecolor=COLORS[m], edgecolor="black",
                     label=f"{MODEL_NAMES[m]}: {check_line(check, m)}") for m in models]
    leg = fig.legend(handles=handles, loc="outside lower center", ncol=1, fontsize=9,
                     frameon=False, title="fairness check on the test split; a fair model "
                     "passes with probe AUROC of c ≤ 0.60, swap ≤ half the unfair model's,\n"
                     "accuracy within 2 points of the unfair model's",
                     title_fontsize=9)
    for text, m in zip(leg.get_texts(), models):
        if m != "unfair" and not (check.get("checked") and check.get(f"{m}_pass")):
            text.set_color(FAIL_COLOR)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _per_model(per: list[dict], model: str, key: str) -> float:
    vals = [p[model][key] for p in per if model in p]
    return float(np.mean(vals)) if vals else float("nan")


def _fig4_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        res = rs.of(d)
        for method in method_names(res):
            per = [r["metrics"]["methods"][method] for r in res
                   if method in r["metrics"]["methods"]]
            au_m, au_s = ms([p["auroc"] for p in per])
            win_m, _ = ms([p["paired_win"] for p in per])
            row = {"dataset": d, "method": method,
                   "median_unfair": _per_model(per, "unfair", "median"),
                   "median_fair": _per_model(per, "fair", "median"),
                   "auroc": au_m, "auroc_std": au_s, "paired_win": win_m,
                   "n_seeds": len(per),
                   "n_score": int(np.mean([r["metrics"]["n_score"] for r in res]))}
            blind = [p for p in per if "auroc_blind" in p]
            row["median_blind"] = _per_model(blind, "blind", "median")
            row["auroc_blind"], row["auroc_blind_std"] = ms([p["auroc_blind"] for p in blind])
            row["paired_win_blind"] = ms([p["paired_win_blind"] for p in blind])[0]
            row["n_seeds_blind"] = len(blind)
            for q in ("q25", "q75"):
                for model in MODELS:
                    row[f"{q}_{model}"] = _per_model(per, model, q)
            rows.append(row)
    return pd.DataFrame(rows)


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


def _models_frame(rs: RealSweep) -> pd.DataFrame:
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


def _verdict_cell(r, model: str = "fair") -> str:
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


def _flags_md(models: pd.DataFrame) -> str:
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


def separation_word(auroc: float) -> str:
    """``separates`` / ``reverses`` / ``does not separate`` (``SEPARATES_MARGIN`` around 0.5)."""
    if auroc is None or not np.isfinite(auroc):
        return "not measured"
    if auroc >= 0.5 + SEPARATES_MARGIN:
        return "separates"
    if auroc <= 0.5 - SEPARATES_MARGIN:
        return "reverses"
    return "does not separate"


def status_lines(frame: pd.DataFrame, models: pd.DataFrame, method: str = STATUS_METHOD
                 ) -> str:
    """Per dataset: which fair model ``method`` (fAux+NG) separates from the unfair one."""
    out = []
    for d in dict.fromkeys(frame["dataset"]):
        sub = frame[(frame.dataset == d) & (frame.method == method)]
        if sub.empty:
            continue
        r = sub.iloc[0]
        mr = _row(models, d)
        parts = []
        for model, au, sd in (("fair", r.auroc, r.auroc_std),
                              ("blind", r.auroc_blind, r.auroc_blind_std)):
            if model == "blind" and not np.isfinite(au):
                continue
            ok = mr.fair_pass if model == "fair" else mr.blind_pass
            name = f"the {MODEL_NAMES[model]} ({'passes' if ok else 'fails'} the check)"
            word = separation_word(au)
            what = {"separates": f"ranks the unfair model above {name}",
                    "reverses": f"ranks {name} above the unfair model (reversed)",
                    }.get(word, f"{word} the unfair model from {name}")
            parts.append(f"{what}: AUROC {fmt(au, sd)}")
        out.append(f"- **{DATASET_LABELS.get(d, d)}**: {registry.label(method)} "
                   + "; ".join(parts) + ".\n")
    if not out:
        return ""
    return (f"Status ({registry.label(method)}; separates: AUROC ≥ "
            f"{0.5 + SEPARATES_MARGIN:.1f}, reverses: ≤ {0.5 - SEPARATES_MARGIN:.1f}):\n\n"
            + "".join(out))


def _fig4_md(frame: pd.DataFrame, models: pd.DataFrame) -> str:
    ds = list(dict.fromkeys(frame["dataset"]))
    blind = bool(np.isfinite(frame["auroc_blind"]).any())
    cols = [(d, "fair") for d in ds] + ([(d, "blind") for d in ds] if blind else [])
    cols.sort(key=lambda c: (ds.index(c[0]), c[1] != "fair"))
    head = {"fair": "vs Adel fair", "blind": "vs proxy-blind"}
    out = ["Fig. 4/10: AUROC of telling the unfair model's scores from a fair model's "
           "(0.5 = no separation, < 0.5 = the fair model scores higher), mean ± std over "
           "seeds; in brackets the median score of the unfair model / of that fair model. Fair "
           "models: "
           "the Adel fair model (adversarially trained to hide c)"
           + (" and the proxy-blind fair model (the unfair recipe blind to the declared "
              "proxy edit by construction)" if blind else "") + ".\n\n",
           "| method | " + " | ".join(f"{DATASET_LABELS.get(d, d)} {head[m]}" for d, m in cols)
           + " |\n",
           "|---|" + "---|" * len(cols) + "\n"]

    def cell(d, model, method):
        sub = frame[(frame.dataset == d) & (frame.method == method)]
        if sub.empty:
            return "—"
        r = sub.iloc[0]
        if model == "fair":
            return f"{fmt(r.auroc, r.auroc_std)} ({r.median_unfair:.3g} / {r.median_fair:.3g})"
        if not np.isfinite(r.auroc_blind):
            return "—"
        return (f"{fmt(r.auroc_blind, r.auroc_blind_std)} ({r.median_unfair:.3g} / "
                f"{r.median_blind:.3g})")

    for method in dict.fromkeys(frame["method"]):
        out.append(f"| {registry.label(method)} | "
                   + " | ".join(cell(d, m, method) for d, m in cols) + " |\n")
    out.append("| *fair model vs the fairness check* | "
               + " | ".join(_verdict_cell(_row(models, d), m) for d, m in cols) + " |\n")
    status = status_lines(frame, models)
    if status:
        out.append("\n" + status)
    flags = _flags_md(models)
    if flags:
        out.append("\n" + flags)
    out.append("\n" + _models_md(models))
    return "".join(out)


def _row(models: pd.DataFrame, dataset: str):
    return next(r for r in models.itertuples() if r.dataset == dataset)


def _models_md(models: pd.DataFrame) -> str:
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
                 + " | ".join(_verdict_cell(_row(models, d)) for d in ds) + " |\n")
    if blind:
        lines.append("| **proxy-blind model vs the targets** | "
                     + " | ".join(_verdict_cell(_row(models, d), "blind") for d in ds) + " |\n")
    return "".join(lines)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    models = _models_frame(rs)
    report = finish(rs, NAME, _fig4_frame(rs), lambda f: _fig4_md(f, models), results_dir)
    if not report.files:
        return report
    frame = report.frame
    report.files += write_tables(models, _models_md(models), None, "real_models",
                                 Path(results_dir))
    for d in rs.datasets():
        sub = frame[frame.dataset == d]
        methods = list(sub["method"])
        aurocs = dict(zip(sub["method"], sub["auroc"]))
        aurocs_blind = dict(zip(sub["method"], sub["auroc_blind"]))
        check = _row(models, d)._asdict() if d in set(models["dataset"]) else {}
        report.files.append(fig4_figure(d, rs.of(d), methods, aurocs,
                                        Path(figures_dir) / f"fig4_{d}.png", check,
                                        aurocs_blind))
    report.lines[-1] = "wrote " + ", ".join(str(f) for f in report.files)
    return report
