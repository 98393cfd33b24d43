"""The audit's conclusion in words, read from summary.json alone: one sentence per protected
attribute and a pass / fail / review badge with the rule that gives it (the report's first
screen and ``AuditResult``'s repr). Nothing here computes a statistic: each number is one of
summary.json's, formatted for people."""

from __future__ import annotations

import math

#: the model-level test's p-value under which an attribute's flags are evidence
EVIDENCE_P = 0.05

RULE = ("FAIL: a gate was set (--max-flagged-rate, --max-excess-flags; --fail-above under "
        "--verdict score) and "
        "the audit exceeds it (exit code 1). REVIEW: no gate failed, but for at least one "
        "protected attribute the model-level test gives p < {p:g} and more rows are flagged "
        "than the upper end of the 95 % interval expected for a model that ignores the "
        "attribute. PASS: no gate failed and no attribute shows that evidence.")
RULE_SCORE = ("FAIL: a gate was set (--fail-above / --max-flagged-rate) and the audit exceeds "
              "it (exit code 1). REVIEW: no gate failed, but more rows are flagged than the "
              "calibration expects for a model that ignores the protected attribute. PASS: "
              "no gate failed and no more rows are flagged than that.")


def p_text(p) -> str:
    """A p-value for people: ``p < 0.001`` below a thousandth, else two significant digits."""
    if p is None or not isinstance(p, int | float) or not math.isfinite(p):
        return "p not computed"
    return "p < 0.001" if p < 1e-3 else f"p = {p:.2g}"


def test_p(e: dict) -> tuple[float | None, str]:
    """An attribute's model-level p-value and its test: the transport's negative binomial,
    the aux counterfactual's paired Wilcoxon test (its permutation p-value cannot go below
    1/(1 + null aux models))."""
    t = e.get("model_test") or {}
    if e.get("counterfactual") == "transport":
        return t.get("p_value"), "negative binomial against the c-blind transports"
    return t.get("wilcoxon_p"), "paired Wilcoxon test against the c-blind aux models"


def expected(e: dict) -> tuple[float, list | None]:
    """The flags expected for a model that ignores the attribute: the count, and its 95 %
    interval when the counterfactual gives one (the transport's)."""
    ef = e.get("expected_false_flags") or {}
    return float(ef.get("count") or 0.0), ef.get("interval")


def evidence(e: dict) -> bool:
    """Whether an attribute's effects are evidence of individual unfairness: the model-level
    test's p below ``EVIDENCE_P`` and more rows flagged than the upper end of the expected
    count's interval (the expected count itself where it has none)."""
    p, _ = test_p(e)
    count, interval = expected(e)
    bar = interval[1] if interval and interval[1] is not None else count
    return (p is not None and math.isfinite(p) and p < EVIDENCE_P
            and e["flagged"] > bar)


def test_words(e: dict) -> str:
    """An attribute's model-level test in words, its p-values for people (``p < 0.001``)."""
    t = e.get("model_test") or {}
    nulls = list(t.get("null_statistics") or [])
    n = len(nulls)
    if e.get("counterfactual") == "transport":
        rank = t.get("rank_p")
        least = (rank is not None and n and abs(rank - 1 / (n + 1)) < 1e-12)
        return (f"{int(t['statistic']):,} of the {int(t['rows']):,} sample rows flagged; under "
                f"the {n} c-blind transports: {', '.join(f'{int(k):,}' for k in nulls)}; "
                f"{p_text(t.get('p_value'))} (a negative binomial with their mean and spread); "
                f"the count's rank among them: {p_text(rank)}"
                + (f" (the smallest possible with {n})" if least else ""))
    return (f"mean |effect| over the {int(t.get('rows') or 0):,} sample rows "
            f"{t['statistic']:.3f} under the aux models against "
            f"{', '.join(f'{v:.3f}' for v in nulls)} under {n} c-blind aux models: "
            f"{p_text(t.get('p_value'))} (a permutation test: the smallest possible is "
            f"1/{n + 1}); paired Wilcoxon test over the rows: {p_text(t.get('wilcoxon_p'))}")


def what_changes(s: dict) -> str:
    """What a flagged row is, in words: ``decisions change``, ``predictions move by at least
    0.1``, a regressor's ``predicted values move by at least 2``."""
    st = s["settings"]
    d = st.get("materiality")
    if (s.get("model") or {}).get("task") == "regression":
        return f"predicted values move by at least {d:g}"
    if d is not None:
        return f"predicted probabilities move by at least {d:g}"
    return "decisions change"


def count_text(count: float, interval) -> str:
    """``6 [0, 17]``: the expected count and its 95 % interval."""
    if interval and None not in interval:
        return f"{count:,.0f} [{interval[0]:,.0f}, {interval[1]:,.0f}]"
    return f"{count:,.1f}"


def gate_text(s: dict) -> str | None:
    """The gate and how the audit stands against it, or None when none was set."""
    st, g = s["settings"], s["gate"]
    limit, above = st.get("max_flagged_rate"), st.get("fail_above")
    if limit is None and above is None:
        return None
    rate = s["flagged"]["rate"]
    if above is not None:
        what = (f"no row scoring above {above:g}" if limit is None else
                f"at most {limit:.2%} of rows scoring above {above:g}")
    else:
        what = f"at most {limit:.2%} of rows flagged"
    if g["passed"]:
        return f"within the gate of {what} ({rate:.2%} flagged)"
    return f"fails the gate of {what} ({rate:.2%} flagged; exit code 1)"


def sentence(s: dict, name: str, e: dict) -> str:
    """``evidence of individual unfairness for sex: 308 decisions change, 6 [0, 17] expected
    for a model that ignores sex; model-level test p < 0.001``."""
    count, interval = expected(e)
    p, _ = test_p(e)
    if evidence(e):
        return (f"evidence of individual unfairness for {name}: {e['flagged']:,} "
                f"{what_changes(s)}, {count_text(count, interval)} expected for a model that "
                f"ignores {name}; model-level test {p_text(p)}")
    return (f"no evidence of individual unfairness for {name}: {e['flagged']:,} "
            f"{what_changes(s)}, {count_text(count, interval)} expected by chance; "
            f"model-level test {p_text(p)}")


def conclude(s: dict) -> dict:
    """``badge`` (PASS, FAIL or REVIEW), ``why`` (one line), ``rule`` (how the badge is
    given), ``gate`` (words or None) and per attribute ``{name, evidence, sentence}``."""
    effects = s.get("effects") or {}
    gate = gate_text(s)
    attrs = [{"name": a, "evidence": evidence(e), "sentence": sentence(s, a, e)}
             for a, e in effects.items()]
    shown = [a["name"] for a in attrs if a["evidence"]]
    if effects:
        rule = RULE.format(p=EVIDENCE_P)
        flagged_more = bool(shown)
    else:
        exp = (s.get("calibration") or {}).get("expected_false_flags")
        rule = RULE_SCORE
        flagged_more = exp is not None and s["flagged"]["count"] > exp
    if not s["gate"]["passed"]:
        badge, why = "FAIL", gate or "; ".join(s["gate"]["reasons"])
    elif flagged_more:
        badge = "REVIEW"
        why = (f"evidence of individual unfairness for {', '.join(shown)}" if effects else
               "more rows flagged than expected for a model that ignores the attribute")
        why += f"; {gate}" if gate else "; no gate set"
    else:
        badge = "PASS"
        why = ("no evidence of individual unfairness" if effects else
               "no more rows flagged than expected for a model that ignores the attribute")
        why += f"; {gate}" if gate else "; no gate set"
    return {"badge": badge, "why": why, "rule": rule, "gate": gate, "attributes": attrs}
