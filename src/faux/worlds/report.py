"""worlds.csv, worlds_methods.csv and worlds.md: one row per world, model and counterfactual
(or method), and the medians over worlds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: worlds.csv's columns, in order
COLUMNS = ["world", "source", "model", "fair", "counterfactual", "n_rows", "n_true_flips",
           "n_flagged", "hits", "precision", "recall", "spearman", "mae", "false_flags", "p_gap",
           "chance_hi"]


#: worlds_methods.csv's columns, in order (``faux.worlds.methods``; the timings stay in the
#: jobs file, so that a rerun writes the same bytes)
METHOD_COLUMNS = ["world", "source", "model", "fair", "method", "n_rows", "n_true_flips",
                  "positive_rate", "ap", "ap_effect", "spearman", "flag_rate", "aux_accuracy"]


def frame(rows: list[dict], world_order, model_order, cf_order, columns=COLUMNS,
          last: str = "counterfactual") -> pd.DataFrame:
    """The job rows as worlds.csv's table (``columns``), in the catalog's world, model and
    counterfactual order (``last``: the third key, ``method`` for worlds_methods.csv)."""
    df = pd.DataFrame(rows)
    for col in columns:
        if col not in df.columns:
            df[col] = np.nan
    rank = {name: {v: i for i, v in enumerate(order)} for name, order in
            (("world", world_order), ("model", model_order), (last, cf_order))}
    df = df.sort_values(["world", "model", last], kind="stable",
                        key=lambda s: s.map(rank[s.name])).reset_index(drop=True)
    return df[columns]


def _num(v, digits: int = 3) -> str:
    """A metric with ``digits`` decimals; "–" when undefined."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


def _count(v) -> str:
    """A count (a median of counts may end in .5)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:,.1f}" if not float(v).is_integer() else f"{int(v):,}"


def _median(s: pd.Series) -> tuple[float, int]:
    s = s.dropna()
    return (float(s.median()) if len(s) else float("nan")), len(s)


def _cell(s: pd.Series) -> str:
    m, k = _median(s)
    return f"{_num(m)} ({k})"


def medians_table(df: pd.DataFrame, models, cfs) -> str:
    """Per model x counterfactual, medians over worlds (in parentheses: the worlds where the
    value is defined: precision needs a flag, recall a true flip, Spearman a varying effect)."""
    lines = ["| model | counterfactual | worlds | precision | recall | spearman | mae | "
             "flagged | true flips | false flags |", "|---" * 10 + "|"]
    for m in models:
        for cf in cfs:
            sub = df[(df["model"] == m) & (df["counterfactual"] == cf)]
            if sub.empty:
                continue
            lines.append(
                f"| {m} | {cf} | {len(sub)} | {_cell(sub['precision'])} | {_cell(sub['recall'])} | "
                f"{_cell(sub['spearman'])} | {_num(_median(sub['mae'])[0])} | "
                f"{_count(_median(sub['n_flagged'])[0])} | "
                f"{_count(_median(sub['n_true_flips'])[0])} | "
                f"{_count(_median(sub['false_flags'])[0])} |")
    return "\n".join(lines)


def fair_table(df: pd.DataFrame, models, cfs) -> str:
    """The fair models' flags, all false: median, largest and total over worlds, the worlds
    with at least one, and (an audit that measures it) the worlds whose flags exceed the
    upper end of the audit's own interval of what chance flags."""
    lines = ["| model | counterfactual | worlds | median false flags | max | total | "
             "worlds with any | above the audit's chance interval | rows |", "|---" * 9 + "|"]
    fair = set(df.loc[df["fair"].astype(bool), "model"])
    for m in (m for m in models if m in fair):
        for cf in cfs:
            sub = df[(df["model"] == m) & (df["counterfactual"] == cf)]
            if sub.empty:
                continue
            ff = sub["false_flags"]
            hi = pd.to_numeric(sub["chance_hi"], errors="coerce")
            above = "–" if hi.isna().all() else str(int((ff > hi).sum()))
            lines.append(f"| {m} | {cf} | {len(sub)} | {_count(float(ff.median()))} | "
                         f"{_count(float(ff.max()))} | {_count(float(ff.sum()))} | "
                         f"{int((ff > 0).sum())} | {above} | {_count(float(sub['n_rows'].sum()))} |")
    return "\n".join(lines)


def by_source_table(df: pd.DataFrame, models, cfs) -> str:
    """Median precision / recall per source (who computed the truth) and model."""
    head = "| source | model | " + " | ".join(f"{cf} P / R" for cf in cfs) + " |"
    lines = [head, "|---" * (2 + len(cfs)) + "|"]
    for source in df["source"].unique():
        for m in models:
            sub = df[(df["source"] == source) & (df["model"] == m)]
            if sub.empty or sub["fair"].astype(bool).any():
                continue
            cells = []
            for cf in cfs:
                s = sub[sub["counterfactual"] == cf]
                cells.append("–" if s.empty else
                             f"{_num(_median(s['precision'])[0])} / {_num(_median(s['recall'])[0])}")
            lines.append(f"| {source} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: the candidates for the audit's default counterfactual, simplest first (docs/decisions.md,
#: "The audit's default counterfactual: the rule")
CANDIDATES = ("audit_aux", "transport", "transport_sinks_last")
UNFAIR = ("logistic", "mlp", "trees")
FAIR = ("fair_logistic", "fair_mlp")
#: the most false flags (a share of the rows) a candidate's fair models may have, median
FAIR_LIMIT = 0.01


def selection(df: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The rule of docs/decisions.md over the candidates present: per candidate, the median
    share of false flags of each fair model and the median F1 over worlds x unfair models;
    the candidate chosen (None: none present)."""
    out = []
    for cf in (c for c in CANDIDATES if c in set(df["counterfactual"])):
        sub = df[df["counterfactual"] == cf]
        fair = sub[sub["model"].isin(FAIR)]
        share = {m: float((fair[fair["model"] == m]["false_flags"]
                           / fair[fair["model"] == m]["n_rows"]).median()) for m in FAIR}
        unfair = sub[sub["model"].isin(UNFAIR)]
        p, r = unfair["precision"].fillna(0.0), unfair["recall"]
        f1 = (2 * p * r / (p + r)).where((p + r) > 0, 0.0).dropna()
        out.append({"counterfactual": cf, **{f"{m} false flags": v for m, v in share.items()},
                    "median F1": float(f1.median()) if len(f1) else float("nan"),
                    "eligible": all(v <= FAIR_LIMIT for v in share.values())})
    table = pd.DataFrame(out)
    if table.empty or not table["eligible"].any():
        return table, None
    ok = table[table["eligible"]]
    best = ok["median F1"].max()
    return table, str(ok[ok["median F1"] >= best - 0.01].iloc[0]["counterfactual"])


def selection_table(df: pd.DataFrame) -> str:
    """The rule's table and its choice, in markdown."""
    table, chosen = selection(df)
    if table.empty:
        return "No candidate was run."
    head = (["candidate"] + [f"{m}: false flags (median share of rows)" for m in FAIR]
            + ["median F1 (unfair models)", "eligible"])
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for row in table.to_dict("records"):
        cells = ([row["counterfactual"]] + [_num(row[f"{m} false flags"], 4) for m in FAIR]
                 + [_num(row["median F1"]), "yes" if row["eligible"] else "no"])
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\nChosen by the rule: **{chosen or 'none'}**.")
    return "\n".join(lines)


def _label(name: str) -> str:
    from faux.methods import registry

    return f"{registry.label(name)} (`{name}`)"


def _ap_cell(sub: pd.DataFrame, col: str = "ap") -> str:
    """The median AP over worlds; in parentheses, the worlds where it is above the positive
    rate (a random ranking's AP) over those where it is defined."""
    ok = sub.dropna(subset=[col])
    m = float(ok[col].median()) if len(ok) else float("nan")
    return f"{_num(m)} ({int((ok[col] > ok['positive_rate']).sum())}/{len(ok)})"


def methods_table(df: pd.DataFrame, models, methods) -> str:
    """Per method, the median over worlds of its AP against the true flips (in parentheses:
    the worlds where it beats a random ranking / where it is defined: a true flip) and of its
    Spearman against |true effect| (in parentheses: the worlds where it is defined), for each
    model with true flips; first the positive rate (the AP of a random ranking) and the AP
    of |true effect| itself."""
    models = [m for m in models if m in set(df.loc[~df["fair"].astype(bool), "model"])]
    head = ["method", *(f"{m} AP" for m in models), *(f"{m} Spearman" for m in models)]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    first = df.drop_duplicates(["world", "model"])
    by_model = {m: first[(first["model"] == m) & (first["n_true_flips"] > 0)] for m in models}
    lines.append("| random ranking (= positive rate) | "
                 + " | ".join(_cell(by_model[m]["positive_rate"]) for m in models)
                 + " |" + " – |" * len(models))
    lines.append("| \\|true effect\\| (exact) | "
                 + " | ".join(_ap_cell(by_model[m], "ap_effect") for m in models)
                 + " |" + " 1.000 |" * len(models))
    for name in methods:
        sub = df[df["method"] == name]
        if sub.empty:
            continue
        cells = [_ap_cell(sub[sub["model"] == m]) for m in models]
        cells += [_cell(sub.loc[sub["model"] == m, "spearman"]) for m in models]
        lines.append(f"| {_label(name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def methods_fair_table(df: pd.DataFrame, models, methods) -> str:
    """The fair models (no true flip: AP undefined): per method with a default threshold
    (the audit's, ``audit_threshold``), the share of rows at or above it, median and largest
    over worlds; every such flag is false."""
    from faux.methods import registry

    fair = [m for m in models if m in set(df.loc[df["fair"].astype(bool), "model"])]
    head = ["method", "threshold", *(f"{m}: share flagged, median (max)" for m in fair)]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name in methods:
        t = registry.get(name).audit_threshold
        sub = df[df["method"] == name]
        if t is None or sub.empty:
            continue
        cells = []
        for m in fair:
            r = sub.loc[sub["model"] == m, "flag_rate"].dropna()
            cells.append("–" if r.empty else f"{_num(float(r.median()))} ({_num(float(r.max()))})")
        lines.append(f"| {_label(name)} | {t:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def methods_markdown(df: pd.DataFrame, models, methods) -> str:
    """worlds.md's section on Table 1's methods."""
    n_worlds = df["world"].nunique()
    return "\n\n".join([
        "## Table 1's methods against the exact counterfactual",
        f"{n_worlds} worlds; each registered method's per-row scores of each differentiable "
        "model (`faux.worlds.methods`: trees are not differentiable, `with_c` reads c), "
        "ranked against the rows whose decision truly flips. Median over worlds of the "
        "average precision (AP) and of Spearman's rho against |true effect|; in "
        "parentheses, for AP the worlds where it beats a random ranking (AP = the positive "
        "rate) / the worlds with a true flip, for Spearman the worlds where it is defined. "
        "LIC-UB and its path mean read the exact counterfactual (the target's derivative "
        "along the line between a row's two versions): references, not tests.",
        methods_table(df, models, methods),
        "Fair models (no true flip, so no AP): the share of rows each method flags at its "
        "default threshold (the audit's).",
        methods_fair_table(df, models, methods),
    ])


def markdown(df: pd.DataFrame | None, models, cfs, *, command: str, profile: str,
             worlds_text: str, methods_df: pd.DataFrame | None = None,
             methods=()) -> str:
    """worlds.md: the counterfactuals' sections (``df``) and Table 1's methods'
    (``methods_df``), each when given."""
    parts = ["# Validation worlds: estimated counterfactuals and Table 1's methods against "
             "the exact ones"]
    if df is not None:
        parts += counterfactual_sections(df, models, cfs, command=command, profile=profile,
                                         worlds_text=worlds_text)
    else:
        parts.append(f"`{command}` (profile `{profile}`): from {worlds_text}; decision "
                     "threshold 0.5.")
    if methods_df is not None:
        parts.append(methods_markdown(methods_df, models, methods))
    return "\n\n".join(parts) + "\n"


def counterfactual_sections(df: pd.DataFrame, models, cfs, *, command: str, profile: str,
                            worlds_text: str) -> list[str]:
    n_worlds = df["world"].nunique()
    return [
        f"`{command}` (profile `{profile}`): {n_worlds} worlds, from {worlds_text}; decision "
        "threshold 0.5. Per world, model and counterfactual: precision and recall of the rows "
        "flagged (decision changes at the estimated counterfactual; for the audit, its "
        "`flagged`) against the rows whose decision truly changes at the exact counterfactual, "
        "Spearman and MAE of the estimated effect against the true one. Medians over worlds; "
        "in parentheses, the worlds where the value is defined.",
        "## Medians over worlds", medians_table(df, models, cfs),
        "## Fair models (zero weight on c's descendants): every flag is false",
        fair_table(df, models, cfs),
        "## Median precision / recall by who computed the truth", by_source_table(df, models, cfs),
        "## The default counterfactual, by the rule of docs/decisions.md", selection_table(df),
    ]
