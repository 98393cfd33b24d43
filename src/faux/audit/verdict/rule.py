"""The audit's effect verdict: per protected attribute, the model's probability at each row
and at its counterfactual (``faux.audit.counterfactual.effects``: the attribute, and what the aux reads it
from, moved to the other group's values), under every aux model of the attribute's view.

A row is flagged when its decision at ``decision_threshold`` changes under every aux model
(or, with ``materiality`` δ, when ``|p_cf - p| >= δ`` under every aux model with one sign).
A regressor makes no decision: its row is flagged when its predicted value moves by at least
``materiality`` (in the output's units, which the user must give) under every aux model with
one sign.
The model is called once per batch for the rows and all their counterfactuals:
``1 + aux_seeds x directions`` rows per row (directions: 1 for a binary attribute, 2 for a
continuous one, k for a categorical one with k levels).

The null: aux models trained on a permuted attribute (``faux.audit.scores.calibration``) read
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

from faux.audit.verdict.effect_defaults import STEPS, SUPPORT_MARGIN
from faux.errors import ConfigError

VERDICTS = ("effect", "score")
VERDICT = "effect"  # the default: the counterfactual effect decides ``flagged``
DECISION_THRESHOLD = 0.5  # the model's own decision threshold on its probability
MATERIALITY = None  # None: a decision change; a number δ in (0, 1]: |Δp| >= δ (a
# regressor: δ > 0 in its output's units, |Δ output| >= δ; it has no default)
__all__ = ["STEPS", "SUPPORT_MARGIN", "VERDICT", "VERDICTS", "DECISION_THRESHOLD",
           "MATERIALITY", "MATERIALITY_NEEDED", "Settings", "check_settings", "check_for_task",
           "criterion"]


@dataclass(frozen=True)
class Settings:
    decision_threshold: float = DECISION_THRESHOLD
    materiality: float | None = MATERIALITY
    steps: int = STEPS
    support_margin: float = SUPPORT_MARGIN
    task: str = "classification"  # the model's task, once known: or "regression"

    @property
    def regression(self) -> bool:
        return self.task == "regression"


def _number(v) -> bool:
    return (isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
            and math.isfinite(v))


def check_settings(verdict, decision_threshold, materiality, steps, support_margin,
                   fail_above, task: str = "auto") -> None:
    """The verdict's settings, one line each, before anything is read. ``task``: the
    model's task as given (``"auto"``: read from the model once it is loaded,
    ``check_for_task``); a regressor's materiality is in its output's units, any positive
    number, a classifier's a change of probability in (0, 1]."""
    if verdict not in VERDICTS:
        raise ConfigError(f"verdict (--verdict) must be one of {', '.join(VERDICTS)}, got "
                          f"{verdict!r}; the default {VERDICT!r} flags rows whose decision "
                          "changes with the protected attribute")
    if not _number(decision_threshold) or not 0 < decision_threshold < 1:
        raise ConfigError(f"decision_threshold (--decision-threshold) must be a probability "
                          f"above 0 and below 1, got {decision_threshold!r}; the default is "
                          f"{DECISION_THRESHOLD} (the model's own threshold)")
    if materiality is not None and (not _number(materiality) or not 0 < materiality):
        raise ConfigError(f"materiality (--materiality) must be a positive number (a change "
                          f"of probability in (0, 1], or of a regressor's predicted value), got "
                          f"{materiality!r}; leave it unset to flag decision changes")
    if materiality is not None and materiality > 1 and task != "regression":
        raise ConfigError(f"materiality (--materiality) must be a change of probability in "
                          f"(0, 1], got {materiality!r}; for a regressor, whose materiality is "
                          "in its output's units, pass task='regression' (--task regression) "
                          "with it")
    if task == "regression" and verdict == "effect" and materiality is None:
        raise ConfigError(MATERIALITY_NEEDED.format(why="task='regression' (--task regression)"))
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


MATERIALITY_NEEDED = (
    "the model is a regressor ({why}): its output is a predicted value, not a probability, "
    "so there is no decision to change; pass materiality (--materiality D), the change of "
    "the predicted value, in its own units, that flags a row")


def check_for_task(verdict: str, materiality, task: str, task_from: str) -> None:
    """The verdict's settings against the model's task once it is known (one line)."""
    if task == "regression" and verdict == "effect" and materiality is None:
        raise ConfigError(MATERIALITY_NEEDED.format(why=task_from))
    if task == "classification" and materiality is not None and materiality > 1:
        raise ConfigError(f"materiality (--materiality) {materiality:g} is more than a change "
                          f"of probability can be: the model is a classifier ({task_from}); "
                          "pass a number in (0, 1]")


def criterion(st: Settings) -> str:
    """What flags a row, in words: ``changes the decision at 0.5``, ``moves the predicted
    probability by at least 0.1 (one sign)``, a regressor's ``moves the predicted value by
    at least 2 (one sign)``."""
    if st.regression:
        return f"moves the predicted value by at least {st.materiality:g} (one sign)"
    if st.materiality is None:
        return f"changes the decision at {st.decision_threshold:g}"
    return f"moves the predicted probability by at least {st.materiality:g} (one sign)"


def _transport_summary(st: Settings, effects: dict, first) -> dict:
    crit = ("its predicted value moves by at least "
            f"{st.materiality:g} (one sign)" if st.regression else
            f"its decision at {st.decision_threshold:g} changes"
            if st.materiality is None else
            f"its predicted probability moves by at least {st.materiality:g} (one sign)")
    fits = len(first.transports)
    calls = 1 + fits * max(1, first.k - 1)
    text = (f"a row is flagged when, carried to the other {first.name} group (what "
            f"{first.name} does not change held fixed, the rest moved keeping the person's "
            f"rank: faux.audit.counterfactual.transport), {crit} under every one of the {fits} fits; "
            f"{calls} model calls per row for {first.name}")
    ef = effects[first.name]["expected_false_flags"]
    return {"rule": "effect", "counterfactual": "transport", "task": st.task,
            "decision_threshold": None if st.regression else st.decision_threshold,
            "materiality": st.materiality, "model_calls_per_row": calls, "fits": fits,
            "null_transports": len(first.null_counts),
            "expected_false_flags": ef["count"], "text": text,
            "headlines": [e["headline"] for e in effects.values()]}


def summary(verdict: str, st: Settings, effects: dict, passes, *, n_rows: int,
            primary: str) -> dict:
    """summary["verdict"]: the rule that decided ``flagged``, its settings and its cost, and
    under the effect verdict the expected false flags of the first attribute (measured under
    the permuted-attribute aux models)."""
    if verdict == "score":
        return {"rule": "score", "text": f"{primary} above its threshold decides flagged "
                "(the score verdict)", "model_calls_per_row": 0}
    first = passes[0]
    if getattr(first, "transports", None) is not None:
        return _transport_summary(st, effects, first)
    crit = ("its predicted value moves by at least "
            f"{st.materiality:g} (one sign)" if st.regression else
            f"its decision at {st.decision_threshold:g} changes"
            if st.materiality is None else
            f"its predicted probability moves by at least {st.materiality:g} (one sign)")
    calls = 1 + len(first.auxes) * first.directions
    text = (f"a row is flagged when, at its counterfactual ({first.name} and what the aux "
            f"models read it from moved to the other group's values; {st.steps} first-order "
            f"steps), {crit} under every one of the {len(first.auxes)} aux models; "
            f"{calls} model calls per row for {first.name}")
    ef = effects[first.name]["expected_false_flags"]
    return {"rule": "effect", "task": st.task,
            "decision_threshold": None if st.regression else st.decision_threshold,
            "materiality": st.materiality, "steps": st.steps,
            "support_margin": st.support_margin, "model_calls_per_row": calls,
            "aux_models": len(first.auxes), "directions": first.directions,
            "expected_false_flags": ef["count"], "text": text,
            "headlines": [e["headline"] for e in effects.values()]}
