"""The Fig. 4/10 figure of one dataset (``figures/fig4_<dataset>.png``).

Scores of different methods live on different scales, so the figure has one panel per
method, each with its own y axis (the test's unfairness score): a box per model, unfair
grey, Adel fair blue, proxy-blind orange; box = 25-75 %, line = median, whiskers = 5-95 %
of the individuals' scores pooled over seeds (from ``scores.npz``; without it, the per-seed
quantiles averaged over seeds), no outliers; the panel's title gives the AUROC of the unfair
model against each fair model. The figure states each model's fairness check once, in its
legend entry (probe AUROC, swap |Δp|, accuracy, verdict); a failing fair model's entry is red.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from faux.methods import registry
from faux.reports.real_sweep import DATASET_LABELS

#: the scored targets: the unfair model, the Adel fair model, the proxy-blind fair model
MODELS = ("unfair", "fair", "blind")
COLORS = {"unfair": "#9e9e9e", "fair": "#4a7fc1", "blind": "#e08a2c"}
UNFAIR_COLOR, FAIR_COLOR = COLORS["unfair"], COLORS["fair"]
FAIL_COLOR = "#c62828"
MODEL_NAMES = {"unfair": "unfair model", "fair": "Adel fair model",
               "blind": "proxy-blind fair model"}
TICKS = {"unfair": "unfair", "fair": "Adel", "blind": "blind"}


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

