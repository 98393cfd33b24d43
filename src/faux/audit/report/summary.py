"""summary.json's content, built from the results of the audit's stages
(``faux.audit.inputs``, ``faux.audit.stages``): the settings, scoring, flagged rows,
calibration, effects, groups, outcomes and provenance, the gate, and the warnings about what
weakens the result."""

from __future__ import annotations

import time
from dataclasses import dataclass

from faux.audit.report.outputs import SUMMARY_SCHEMA
from faux.audit.scores.calibration import calibration_statement
from faux.audit.sources.provenance import provenance
from faux.audit.verdict.rule import summary as verdict_summary

UNREACHABLE_WARN = 0.01  # a warning when more rows than this share are unreachable
OFF_SUPPORT_WARN = 0.05  # ... or have their counterfactual off the data's support


def _excess(effects: dict, limit: float, n: int) -> list[str]:
    """Per attribute whose flags exceed the upper end of the 95 % interval of what chance
    flags (measured by the null transports) by more than ``limit`` of the rows."""
    out = []
    for name, e in effects.items():
        interval = e["expected_false_flags"].get("interval")
        if interval is None:  # the aux counterfactual measures no interval
            continue
        excess = e["flagged"] - interval[1]
        if excess > limit * n:
            out.append(f"{name}: {e['flagged']:,} rows flagged, {excess:,.0f} more than the "
                       f"{interval[1]:,.0f} chance flags at most (95 %), above "
                       f"{limit:.4%} of the rows")
    return out


@dataclass(frozen=True)
class Summary:
    """summary.json's ``content`` and the gate's reasons (``gate``; empty: passed)."""

    content: dict
    gate: list


def gate_reasons(plan, inputs, scanned, settled, rate: float,
                 effects: dict | None = None) -> list[str]:
    """Why the gate failed (empty: passed or none set). ``effects``: the effect verdict's,
    per attribute (empty or None: the score verdict decides)."""
    st, n_flag = plan.st, settled.n_flag
    limit = st.max_flagged_rate
    if effects:  # the effect verdict: --max-flagged-rate and --max-excess-flags gate
        out = []
        if limit is not None and rate > limit:
            out.append(f"flagged rate {rate:.4%} exceeds {limit:.4%}: {n_flag:,} rows flagged "
                       f"by the effect verdict for {inputs.c_cols[0]}")
        if st.max_excess_flags is not None:
            out += _excess(effects, st.max_excess_flags, scanned.sc.n_rows)
        return out
    elif st.fail_above is not None:
        allowed = limit if limit is not None else 0.0
        if rate > allowed:
            return [f"{n_flag} rows ({rate:.4%}) score above {st.fail_above} with "
                    f"{plan.primary}; allowed rate {allowed:.4%}"]
    elif limit is not None and rate > limit:
        return [f"flagged rate {rate:.4%} exceeds {limit:.4%} (threshold {settled.thr})"]
    return []


def _settings(plan, inputs, scanned, settled) -> dict:
    st, eff = plan.st, inputs.eff
    return {"methods": list(plan.methods), "primary": plan.primary, "threshold": settled.thr,
            "fail_above": st.fail_above, "max_flagged_rate": st.max_flagged_rate,
            "max_excess_flags": st.max_excess_flags,
            "sample": int(len(scanned.sc.sample_rows)), "batch_size": int(st.batch_size),
            "seed": st.seed, "aux": st.aux, "verdict": st.verdict,
            "decision_threshold": eff.decision_threshold, "materiality": eff.materiality,
            "steps": eff.steps, "support_margin": eff.support_margin,
            "task": st.task, "positive_label": st.positive_label,
            "standardisation": "features divided by their sample std after centring; 0/1 "
                               "columns unscaled",
            "faux_ng_reading": "sample (per-row unit vectors)"}


def _scoring(plan, inputs, scanned, fitted, tally) -> dict:
    sc, target, scorer = scanned.sc, inputs.target, fitted.scorer
    k = 1 if sc.protected.kind != "categorical" else len(sc.protected.levels)
    return {"mode": target.scoring_mode, "device": str(scorer.device),
            "fd_step_std": None if target.differentiable else plan.st.fd_step,
            "model_calls_per_row": scorer.calls_per_row(k, len(inputs.feats)),
            "rows_scored": int(tally.n_scored),
            "rows_scored_are": "all" if fitted.sampled is None else "sample",
            "seconds": round(tally.seconds, 3),
            "rows_per_s": round(sc.n_rows / max(tally.seconds, 1e-9), 1)}


def _user_units(inputs) -> dict | None:
    """A Pipeline's continuous features that are an affine function of one of the user's
    columns (``faux.audit.sources.layout.Units``): feature -> that column, the slope and intercept;
    the report and the rows' moves show those features in the user's units."""
    layout = inputs.layout
    units = getattr(layout, "units", None) if layout is not None else None
    if not units:
        return None
    return {inputs.feats[u.column]: {"column": u.name, "slope": u.slope,
                                     "intercept": u.intercept}
            for u in units}


def _model(inputs) -> dict:
    target = inputs.target
    return {"source": target.source, "kind": target.kind,
            "differentiable": target.differentiable, "task": target.task,
            "task_from": target.task_from,
            "output": ("predicted value" if target.regressor else
                       "probability of the positive class"),
            "reads_columns": ("by name (its stored feature names)"
                              if target.feature_names is not None
                              and inputs.feats == target.feature_names else "in order"),
            **target.provenance()}


def build(plan, inputs, scanned, fitted, scored, settled) -> Summary:
    """summary.json's content and the gate, from the stages' results (``plan`` and
    ``inputs``: ``faux.audit.inputs``; the others: ``faux.audit.stages``). The pass's
    observers finish here: the effect passes, the described rows' values, the outcome
    counts and the group views."""
    from faux.audit.passes.groups import finish_views
    from faux.audit.passes.outcome_pass import flagged_by_group, flagged_intervals

    st, sc, n = plan.st, scanned.sc, scanned.sc.n_rows
    tally, target = scored.tally, inputs.target
    rate = settled.n_flag / n
    effects = {ps.name: ps.finish(n) for ps in fitted.passes}
    scored.row_values.attach(effects)
    outcomes, performance = scored.outcome.finish()
    gate = gate_reasons(plan, inputs, scanned, settled, rate, effects)
    groups = finish_views(fitted.views, sc, scanned.z_sample, scanned.feature_of,
                          plan.methods, n_rows=n, alpha=st.alpha, seed=st.seed,
                          primary_threshold=settled.thr, effect_views=set(effects))
    flagged_intervals(groups)
    content = {
        "schema_version": SUMMARY_SCHEMA, "name": inputs.name, "model": _model(inputs),
        "data": {"rows": n, "features": inputs.feats, "protected": inputs.c_cols[0],
                 "label": inputs.y_col, "user_units": _user_units(inputs)},
        "protected": {"kind": sc.protected.kind,
                      "levels": [str(v) for v in sc.protected.levels],
                      "counts": sc.protected.counts},
        "settings": _settings(plan, inputs, scanned, settled),
        "scoring": _scoring(plan, inputs, scanned, fitted, tally),
        "aux_quality": fitted.quality,
        "flagged": {"count": int(settled.n_flag), "rate": rate,
                    "by_group": flagged_by_group(settled.per_group)},
        "calibration": calibration_statement(
            plan.rule, st.alpha, st.null_permutations, fitted.null, plan.methods,
            settled.thresholds, tally.n_scored,
            settled.above[plan.primary] if fitted.passes else settled.n_flag, st.fdr,
            st.verdict),
        "verdict": verdict_summary(st.verdict, inputs.eff, effects, fitted.passes, n_rows=n,
                                   primary=plan.primary),
        "effects": effects,
        "thresholds": {m: {"threshold": t, "rows_above": int(settled.above[m]),
                           "rate_above": settled.above[m] / max(tally.n_scored, 1)}
                       for m, t in settled.thresholds.items()},
        "top_features": [{"feature": f, "importance": float(v)}
                         for f, v in list(fitted.ranking.items())[:10]],
        "gate": {"passed": not gate, "reasons": gate, "exit_code": 0 if not gate else 1},
        "groups": groups, "outcomes": outcomes, "performance": performance,
        "provenance": provenance(inputs.raw_source, target.provenance(), st.model_version),
        "missing": None if scanned.missing is None else scanned.missing.summary(n),
        "seconds_total": round(time.perf_counter() - plan.t_start, 3),
        "baselines": settled.baselines,
    }
    return Summary(content=content, gate=gate)


def result_warnings(summary: dict, encoded: bool = False) -> list[str]:
    """What makes the result weaker, one line each: an aux model near chance, a Pipeline
    audited after its encoders, more than ``UNREACHABLE_WARN`` of the rows unreachable by
    the counterfactual, more than ``OFF_SUPPORT_WARN`` of them off the data's support. Raised
    (``FauxAuditWarning``) once the outputs are in place: an audit that fails warns of
    nothing but its error."""
    out = []
    for name, v in ((summary.get("groups") or {}).get("views", {})).items():
        w = (v.get("aux_quality") or {}).get("warning")
        if w:
            out.append(f"{name}: {w}")
    if encoded:
        out.append(f"the model is a Pipeline that encodes its own columns: it is audited after "
                   f"its encoders, on the {len(summary['data']['features'])} columns they "
                   "output; the counterfactuals swap the encoders' categories")
    n = max(int(summary["data"]["rows"]), 1)
    for name, e in (summary.get("effects") or {}).items():
        if e.get("unreachable", 0) / n > UNREACHABLE_WARN:
            out.append(f"{name}: {e['unreachable']:,} rows ({e['unreachable'] / n:.2%}) could "
                       "not be moved to the other group's values by the aux models "
                       "(unreachable): the verdict says nothing about them")
        if e.get("off_support", 0) / n > OFF_SUPPORT_WARN:
            out.append(f"{name}: the counterfactuals of {e['off_support']:,} rows "
                       f"({e['off_support'] / n:.2%}) leave the data's support (widened by "
                       f"{summary['settings']['support_margin']:g} of its range): their "
                       "effects extrapolate the model")
    return [" ".join(m.split()) for m in out]
