"""``report.html``: one self-contained page (plots embedded as base64 PNG; no script, no
external file or request), rendered from the jinja2 template ``templates/report.html.j2``
with autoescaping (a feature name or group label is text, never markup).

The page tells one story, first screen first: the conclusion (a PASS / REVIEW / FAIL badge,
``faux.audit.report.conclusion``, one sentence per protected attribute and the three numbers a
committee asks first), the evidence (the flags against what chance gives, the flagged rate
by group), the people with the largest effects in their own units (a Pipeline's raw
columns), what the counterfactuals changed, the effects by group, the group outcomes, the
settings and provenance, and, in their own section, the diagnostics (the fAux scores, their
thresholds, the baselines, the feature ranking). Every number shown is one of summary.json's
(a ``data-src`` attribute names where), formatted for people; the pictures draw summary.json
and the plot sample of the scores. The page's size does not grow with the data: at most
``LISTED`` people per attribute, ``PROFILE_VALUES`` values per person, ``CELLS`` cells per
picture, ``faux.audit.report.plots.POINTS`` points per scatter (the pictures: that
module)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
from markupsafe import Markup

from faux.audit.report.conclusion import (
    conclude,
    count_text,
    p_text,
    test_p,
    test_words,
    what_changes,
)
from faux.audit.report.plots import (
    effects_plot,
    expected_plot,
    hist_plot,
    moved_plot,
    null_plot,
    ranking_plot,
    rates_plot,
)

TEMPLATE = "report.html.j2"
LISTED = 20  # flagged people listed per attribute (the largest |effect| first)
PROFILE_VALUES = 40  # a listed person's values shown (the rest: the data's row)
CELLS = 25  # groups (or intersection cells) drawn per picture, the largest first


# ----------------------------------------------------------------------------- formatting

def _is_undefined(v) -> bool:
    from jinja2 import Undefined

    return isinstance(v, Undefined)


def _finite(v) -> bool:
    return (isinstance(v, int | float | np.number) and not isinstance(v, bool)
            and math.isfinite(v))


def fmt(v) -> str:
    """A value for a cell: 4 significant digits, ``[lo, hi]`` for an interval, ``-`` for
    a missing or non-finite one."""
    if v is None or _is_undefined(v):
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | np.integer):
        return f"{int(v):,}"
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}" if math.isfinite(v) else "-"
    if isinstance(v, list | tuple):
        if len(v) == 2 and all(isinstance(x, int | float | np.number) or x is None for x in v):
            return f"[{fmt(v[0])}, {fmt(v[1])}]"
        return ", ".join(fmt(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


def pct(v) -> str:
    """A rate (or an interval of rates) as a percentage."""
    if isinstance(v, list | tuple) and len(v) == 2:
        return f"[{pct(v[0])}, {pct(v[1])}]"
    if v is None or _is_undefined(v) or not _finite(v):
        return "-"
    return f"{float(v):.2%}"


def human(v) -> str:
    """A value of a person, for people: ``5,013``, ``27``, ``38.23``, ``0.0417``, text as
    it is; no scientific notation."""
    if v is None or _is_undefined(v):
        return "-"
    if isinstance(v, bool) or not isinstance(v, int | float | np.number):
        return str(v)
    if not math.isfinite(v):
        return "-"
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 0.01:
        return f"{v:.4g}"
    return f"{v:.2g}" if abs(v) >= 1e-4 else ("0" if v == 0 else f"{v:.1e}")


def _show(value, style: str) -> str:
    """``value`` as the page shows it (``style``: count, count0, pct, prob, signed, p, num,
    interval0, pct_interval)."""
    if style == "p":
        return p_text(value)
    if value is None or (not isinstance(value, list | tuple) and not _finite(value)):
        return "-"
    if style == "count":
        return f"{int(value):,}"
    if style == "count0":
        return f"{float(value):,.0f}"
    if style == "count1":
        return f"{float(value):,.1f}"
    if style == "pct":
        return f"{float(value):.2%}"
    if style == "prob":
        return f"{float(value):.3f}"
    if style == "signed":
        return f"{float(value):+.3f}"
    if style == "signed4":
        return f"{float(value):+.4g}"
    if style == "num4":
        return f"{float(value):.4g}"
    if style == "interval0":
        return f"[{float(value[0]):,.0f}, {float(value[1]):,.0f}]"
    if style == "pct_interval":
        return f"[{float(value[0]):.2%}, {float(value[1]):.2%}]"
    if style == "signed_interval":
        return f"[{float(value[0]):+.3f}, {float(value[1]):+.3f}]"
    if style == "signed4_interval":
        return f"[{float(value[0]):+.4g}, {float(value[1]):+.4g}]"
    return human(value)


def number(value, src, style: str = "num") -> Markup:
    """A number of summary.json on the page: its text, marked with where it comes from
    (``data-src``: its path in summary.json, a JSON list of keys and indices)."""
    return Markup('<span class="n" data-src="{}">{}</span>').format(
        json.dumps(list(src)), _show(value, style))


# ----------------------------------------------------------------------------- the page parts

def _shown_rows(rows: list, n: int = CELLS) -> list:
    """At most ``n`` groups of a view, the most rows first (then by name)."""
    rows = [r for r in rows if r.get("rate") is not None and r.get("rows")]
    return sorted(rows, key=lambda r: (-r["rows"], str(r["group"])))[:n]



def _user_name(s):
    """A feature's name in the user's words: a Pipeline's encoded continuous column by the
    user's column it is computed from (``summary["data"]["user_units"]``)."""
    units = (s.get("data") or {}).get("user_units") or {}

    def name(f: str) -> str:
        u = units.get(f)
        return u["column"] if u else f
    return name


def _profile(rec: dict) -> tuple[list, int]:
    """A listed person's values: the user's own columns for a Pipeline (``raw``), else the
    features as the model reads them; at most ``PROFILE_VALUES`` of them, and how many more."""
    vals = rec.get("raw") or rec.get("values") or {}
    items = [(str(k), human(v)) for k, v in vals.items()]
    return items[:PROFILE_VALUES], max(0, len(items) - PROFILE_VALUES)


def _before_after(a, b) -> tuple[str, str]:
    """A moved value before and after, for people; enough digits to see a small move."""
    x, y = human(a), human(b)
    if x == y and _finite(a) and _finite(b) and a != b:
        x, y = f"{float(a):.6g}", f"{float(b):.6g}"
    return x, y


def _ranks(values, reverse: bool = False) -> list[int]:
    """Each item's position when sorted by ``values`` (stable)."""
    order = sorted(range(len(values)), key=lambda i: values[i], reverse=reverse)
    out = [0] * len(values)
    for pos, i in enumerate(order):
        out[i] = pos
    return out


def _people(s, name: str, e: dict) -> dict:
    """The listed flagged people of an attribute: the first ``LISTED`` of its rows in
    summary.json (the largest |effect| first), each with its sort positions."""
    rows = list(e.get("rows") or [])[:LISTED]
    eff = [r["effect"] for r in rows]
    orders = {"o1": _ranks(eff), "o2": _ranks(eff, reverse=True),
              "o3": _ranks([r["row_id"] for r in rows]),
              "o4": _ranks([(str(r["group"]), -abs(r["effect"])) for r in rows])}
    people = []
    for i, r in enumerate(rows):
        profile, more = _profile(r)
        changes = r.get("changes")
        if changes is None:  # a summary written before the changes were kept: the words
            changes = [{"feature": w, "from": "", "to": ""} for w in r.get("moved", [])]
        people.append({
            "i": i, "rec": r, "profile": profile, "more": more,
            "changes": [(c["feature"], *_before_after(c["from"], c["to"])) for c in changes],
            "style": ";".join(f"--{k}:{v[i]}" for k, v in orders.items())})
    return {"name": name, "e": e, "people": people, "total": int(e["flagged"]),
            "in_summary": len(e.get("rows") or [])}


def _rate_panels(s) -> list:
    """The flagged rate's panels: each attribute whose effects flag it (its own groups),
    then each intersection (the audit's flags, per cell)."""
    out = []
    views = ((s.get("groups") or {}).get("views") or {})
    for vname, v in views.items():
        if v.get("flagged_by") == "effect":
            title, rows, src = (f"{vname}: rows flagged for {vname}, by {vname} group",
                                v["rows"], ["groups", "views", vname, "rows"])
        elif v.get("verdict"):
            title, rows, src = (f"{vname}: rows flagged for {v['verdict']['attribute']}, by "
                                "cell", v["verdict"]["rows"],
                                ["groups", "views", vname, "verdict", "rows"])
        else:
            continue
        out.append({"title": title, "view": vname, "src": src, "all": len(rows),
                    "rows": _shown_rows([dict(r, _i=i) for i, r in enumerate(rows)])})
    return out


def _settings_rows(s) -> list[tuple[str, str]]:
    sc, m = s["scoring"], s["model"]
    st = s["settings"]
    mode = (sc["mode"] if m["differentiable"] else
            f"black box: central finite differences, step {sc['fd_step_std']} standard "
            f"deviations, {sc['model_calls_per_row']} model calls per row")
    if sc.get("rows_scored_are") == "sample":
        mode += f" scored, of the {sc['rows_scored']:,} sample rows (--fd-scores sample)"
    rows = [("model", m["source"])]
    if m.get("file"):
        loader = m.get("loader") or "?"
        if loader == "pickle":
            loader += " (ran code from the file; trusted with --trust-pickle)"
        rows += [("model file", m["file"]), ("loaded by", loader)]
        if m.get("class"):
            rows.append(("model class", m["class"]))
    if m.get("task"):
        rows.append(("task", f"{m['task']} ({m.get('task_from') or '?'}); output: "
                     f"{m.get('output') or '?'}"))
    if m.get("reads_columns"):
        rows.append(("columns", f"read {m['reads_columns']}"))
    units = (s["data"].get("user_units") or {})
    feats = f"{len(s['data']['features'])}"
    if units:
        feats += (f" (the Pipeline's encoded columns; {len(units)} continuous ones shown in "
                  "your units)")
    v = s.get("verdict") or {}
    rows += [("rows", f"{s['data']['rows']:,}"), ("features", feats),
             ("protected", f"{s['data']['protected']} ({s['protected']['kind']})")]
    if s.get("effects"):
        rows.append(("verdict", v.get("text") or "-"))
        if v.get("null_transports"):
            rows.append(("chance", f"{v['null_transports']} transports fitted with the "
                         "attribute permuted (c-blind): the expected flags and the "
                         "model-level test"))
    rows += [("diagnostic scores" if s.get("effects") else "scores", ", ".join(st["methods"])),
             ("aux sample", f"{st['sample']:,} rows (80% fit, 20% held out)"),
             ("time", f"{s.get('seconds_total') or 0:,.1f} s for the whole audit (the "
              f"scoring pass alone: {sc['rows_per_s']:,.0f} rows/s; scoring: {mode})")]
    return rows


def _level(v) -> str:
    """An interval's level as a percentage (0.95 or 95 -> 95%)."""
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        return ""
    return f"{v:.0%}" if v <= 1 else f"{v:g}%"


def _group_views(groups: dict) -> list:
    """The views of ``summary["groups"]``, the primary view first."""
    views = groups.get("views") or {}
    first = groups.get("primary_view")
    return sorted(views.items(), key=lambda kv: kv[0] != first)


def _quantile_names(cal: dict) -> list[str]:
    """The null quantiles' names, one per distinct quantile (a name whose values repeat an
    earlier name's for every method, such as ``0.99`` beside ``99%``, is left out)."""
    qs = cal.get("null_quantiles") or {}
    names: list[str] = []
    for by_name in qs.values():
        for q in by_name:
            if q in names:
                continue
            same = any(all(qs[m].get(q) == qs[m].get(k) for m in qs) for k in names)
            if not same:
                names.append(q)
    return names


def _token(s) -> str:
    """A short name unique to this audit's page (its radio groups' names), so that two
    reports shown in one notebook do not share them."""
    key = repr((s.get("name"), (s.get("provenance") or {}).get("data"), s["flagged"]["count"],
                s.get("seconds_total")))
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def environment():
    """The jinja2 environment of the report (autoescape on; the ``fmt``, ``pct`` and
    ``human`` filters, ``number`` for a summary number with its source)."""
    from jinja2 import Environment, PackageLoader

    env = Environment(loader=PackageLoader("faux.audit", "templates"), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    env.filters["pct"] = pct
    env.filters["human"] = human
    env.globals["number"] = number
    env.globals["p_text"] = p_text
    return env


def render(result) -> str:
    """The report page of an ``AuditResult`` as a string."""
    s = result.summary
    effects = s.get("effects") or {}
    regression = (s.get("model") or {}).get("task") == "regression"
    c = conclude(s)
    verdicts = {a["name"]: a["evidence"] for a in c["attributes"]}
    name = _user_name(s)
    groups = s.get("groups")
    panels = _rate_panels(s) if effects else []
    plots = {"null": null_plot(result), "groups": hist_plot(result),
             "ranking": ranking_plot(result.feature_ranking, name)}
    if effects:
        plots.update(expected=expected_plot(s, verdicts),
                     rates=rates_plot(panels) if panels else None,
                     moved=moved_plot(s, name), effects=effects_plot(result, regression))
    flagged_rows = [{"row_id": r.row_id, "score": r.score, "group": r.group,
                     "top_features": list(r.top_features)}
                    for r in result.top_flagged.itertuples()]
    env = environment()
    env.filters["user_name"] = name
    return env.get_template(TEMPLATE).render(
        s=s, c=c, effect_mode=bool(effects), regression=regression, token=_token(s),
        what=what_changes(s), tests={a: test_p(e) for a, e in effects.items()},
        test_words={a: test_words(e) for a, e in effects.items()},
        expected_text={a: count_text(e["expected_false_flags"]["count"],
                                     e["expected_false_flags"].get("interval"))
                       for a, e in effects.items()},
        people=[_people(s, a, e) for a, e in effects.items()], listed=LISTED,
        panels=panels, user_name=name, settings_rows=_settings_rows(s),
        null_quantile_names=_quantile_names(s["calibration"]),
        has_null=f"null:{s['settings']['primary']}" in result.plot_scores,
        groups=groups, group_views=_group_views(groups) if groups else [],
        level=_level((groups or {}).get("interval", {}).get("level")),
        flagged_rows=flagged_rows, b=s.get("baselines"), plots=plots,
        cells=CELLS, profile_values=PROFILE_VALUES,
        aux_views=[(n, v["aux_quality"]) for n, v in ((groups or {}).get("views") or {}).items()
                   if v.get("aux_quality")])


def write_report(result, path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(result))
