"""The audit's effect verdict: per protected attribute, the model's probability at each row
and at its counterfactual (``faux.audit.effects``: the attribute, and what the aux reads it
from, moved to the other group's values), under every aux model of the attribute's view.

A row is flagged when its decision at ``decision_threshold`` changes under every aux model
(or, with ``materiality`` δ, when ``|p_cf - p| >= δ`` under every aux model with one sign).
The model is called once per batch for the rows and all their counterfactuals:
``1 + aux_seeds x directions`` rows per row (directions: 1 for a binary attribute, 2 for a
continuous one, k for a categorical one with k levels).

The null: aux models trained on a permuted attribute (``faux.audit.calibration``) read
nothing of it, so their group gap is about 0, and the effects they give on the sample rows
are what a c-blind aux moves. From them:

- the model-level test, "the outputs move with the attribute more than under a c-blind
  aux": the mean |effect| over the sample rows under the real aux models against the same
  under each null aux, p = (1 + #null >= real) / (1 + n_null) (resolution 1 / (1 + n_null)),
  and a paired one-sided Wilcoxon signed-rank test over the sample rows of
  |effect| - (mean |effect| over the null aux models) (one null aux alone can be nearly
  flat, and then a model that ignores the attribute would look significant);
- each row's p-value: the share of the pooled null |effects| at or above its |effect|
  (+1 smoothing);
- the expected false flags: the sample rows whose decision changes under every null aux,
  scaled to all rows (measured, not assumed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from faux.audit.effect_defaults import STEPS, SUPPORT_MARGIN
from faux.errors import ConfigError

VERDICTS = ("effect", "score")
VERDICT = "effect"  # the default: the counterfactual effect decides ``flagged``
DECISION_THRESHOLD = 0.5  # the model's own decision threshold on its probability
MATERIALITY = None  # None: a decision change; a number δ in (0, 1]: |Δp| >= δ
__all__ = ["STEPS", "SUPPORT_MARGIN", "VERDICT", "VERDICTS", "DECISION_THRESHOLD",
           "MATERIALITY", "Settings", "check_settings"]


@dataclass(frozen=True)
class Settings:
    decision_threshold: float = DECISION_THRESHOLD
    materiality: float | None = MATERIALITY
    steps: int = STEPS
    support_margin: float = SUPPORT_MARGIN


def _number(v) -> bool:
    return (isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
            and math.isfinite(v))


def check_settings(verdict, decision_threshold, materiality, steps, support_margin,
                   fail_above) -> None:
    """The verdict's settings, one line each, before anything is read."""
    if verdict not in VERDICTS:
        raise ConfigError(f"verdict (--verdict) must be one of {', '.join(VERDICTS)}, got "
                          f"{verdict!r}; the default {VERDICT!r} flags rows whose decision "
                          "changes with the protected attribute")
    if not _number(decision_threshold) or not 0 < decision_threshold < 1:
        raise ConfigError(f"decision_threshold (--decision-threshold) must be a probability "
                          f"above 0 and below 1, got {decision_threshold!r}; the default is "
                          f"{DECISION_THRESHOLD} (the model's own threshold)")
    if materiality is not None and (not _number(materiality) or not 0 < materiality <= 1):
        raise ConfigError(f"materiality (--materiality) must be a change of probability in "
                          f"(0, 1], got {materiality!r}; leave it unset to flag decision "
                          "changes")
    if (not isinstance(steps, int | np.integer) or isinstance(steps, bool) or steps < 1):
        raise ConfigError(f"steps (--steps) must be a positive integer (first-order steps of "
                          f"the counterfactual path), got {steps!r}; the default is {STEPS}")
    if not _number(support_margin) or support_margin < 0:
        raise ConfigError(f"support_margin must be a non-negative share of each feature's "
                          f"range, got {support_margin!r}; the default is {SUPPORT_MARGIN}")
    if verdict == "effect" and fail_above is not None:
        raise ConfigError("fail_above (--fail-above) gates on a score, which only decides "
                          "flagged under verdict='score' (--verdict score); under the effect "
                          "verdict gate with max_flagged_rate (--max-flagged-rate)")


def summary(verdict: str, st: Settings, effects: dict, passes, *, n_rows: int,
            primary: str) -> dict:
    """summary["verdict"]: the rule that decided ``flagged``, its settings and its cost, and
    under the effect verdict the expected false flags of the first attribute (measured under
    the permuted-attribute aux models)."""
    if verdict == "score":
        return {"rule": "score", "text": f"{primary} above its threshold decides flagged "
                "(the score verdict)", "model_calls_per_row": 0}
    first = passes[0]
    crit = (f"its decision at {st.decision_threshold:g} changes"
            if st.materiality is None else
            f"its predicted probability moves by at least {st.materiality:g} (one sign)")
    calls = 1 + len(first.auxes) * first.directions
    text = (f"a row is flagged when, at its counterfactual ({first.name} and what the aux "
            f"models read it from moved to the other group's values; {st.steps} first-order "
            f"steps), {crit} under every one of the {len(first.auxes)} aux models; "
            f"{calls} model calls per row for {first.name}")
    ef = effects[first.name]["expected_false_flags"]
    return {"rule": "effect", "decision_threshold": st.decision_threshold,
            "materiality": st.materiality, "steps": st.steps,
            "support_margin": st.support_margin, "model_calls_per_row": calls,
            "aux_models": len(first.auxes), "directions": first.directions,
            "expected_false_flags": ef["count"], "text": text,
            "headlines": [e["headline"] for e in effects.values()]}
