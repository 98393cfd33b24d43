"""The groups' outcomes under the model, counted in the audit's pass over the data
(``faux.audit.verdict.outcomes`` computes the metrics): per view (each protected attribute, and the
intersection when there is one) the rows counted per (group, label, decision), the decision
being ``p >= decision_threshold``. Without a label only the decisions are counted (the
selection rate per group and the demographic-parity gaps).

Also here: the flagged rate of each group view with Wilson's interval (which does not
collapse at 0 flagged) and its largest difference and ratio between groups with a bootstrap
interval over rows (``group_outcomes`` on the (group, flagged) counts)."""

from __future__ import annotations

import copy
import warnings

import numpy as np

from faux.audit.verdict.outcomes import OutcomeCounts, group_outcomes, performance, wilson
from faux.errors import ConfigError

NO_LABEL = "no label given: outcome metrics that need the label are omitted"
REGRESSOR = ("the model is a regressor: it makes no decision, so there are no selection "
             "rates or outcome metrics by group")
_NEED_LABEL = ("tpr", "fpr", "accuracy")
_BOOL = ({"0", "1"}, {"False", "True"}, {"false", "true"}, {"FALSE", "TRUE"})


def label_key(v) -> str:
    """A label value as the audit compares it: numbers by value (``1``, ``1.0`` and ``"1"``
    are ``"1"``), booleans as ``"True"`` / ``"False"``, anything else as its text."""
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    text = str(v)
    try:
        f = float(text) if not isinstance(v, int | float | np.number) else float(v)
    except (TypeError, ValueError):
        return text
    if not np.isfinite(f):
        return text
    return str(int(f)) if f.is_integer() else repr(f)


def _keys(values) -> np.ndarray:
    """``label_key`` of every value (computed once per distinct text)."""
    uniq, inv = np.unique(np.asarray(values).astype(str), return_inverse=True)
    return np.asarray([label_key(u) for u in uniq], dtype=object)[inv.reshape(-1)]


def positive_class(label_sample, given, classes, label: str | None) -> dict | None:
    """The label's positive class, never guessed: ``given`` (``--positive-label``) when set;
    else the model's ``classes_[1]`` (what its ``predict_proba`` column 1 means) when its
    classes are the label's values; else 1 of a 0/1 (or true/false) label; else
    ``ConfigError`` (one line asking for ``--positive-label``). ``given`` must agree with
    ``classes_[1]`` when that is known. Returns ``{"values": [negative, positive] (keys),
    "positive": the value as the data write it, "from": how it was chosen}``, or None for a
    label that does not take two values in the sample (its outcome metrics are omitted)."""
    keys = _keys(label_sample)
    values = sorted(set(keys.tolist()))
    if len(values) != 2:
        return None
    shown = {k: str(v) for k, v in zip(keys.tolist(), np.asarray(label_sample).tolist())}
    name = f"label column {label!r}" if label else "the label"
    cls = None if classes is None else [label_key(v) for v in classes]
    cls_known = cls is not None and len(cls) == 2 and set(cls) == set(values)
    if given is not None:
        key = label_key(given)
        if key not in values:
            low = [v for v in values if v.casefold() == key.casefold()]
            if len(low) != 1:
                raise ConfigError(f"positive_label (--positive-label) {given!r} is not a value "
                                  f"of the {name}; its values are {shown[values[0]]!r} and "
                                  f"{shown[values[1]]!r}")
            key = low[0]
        if cls_known and key != cls[1]:
            raise ConfigError(f"positive_label (--positive-label) {given!r} contradicts the "
                              f"model: its classes_ are {list(classes)}, so its probability "
                              f"(predict_proba column 1) is of {classes[1]!r}; pass "
                              f"{classes[1]!r} (or leave it out)")
        how = f"positive_label={given!r} (--positive-label)"
    elif cls_known:
        key = cls[1]
        how = (f"the model's classes_[1] ({classes[1]!r} of {list(classes)}): what its "
               "predict_proba column 1 means")
    elif set(values) in _BOOL and cls is None:
        key = values[1] if values[1] in ("1", "True", "true", "TRUE") else values[0]
        how = f"the label takes the values {shown[values[0]]!r} and {shown[values[1]]!r}: " \
              f"{shown[key]!r} is the positive class"
    else:
        why = (f"the model's classes_ {list(classes)} are not the label's values"
               if cls is not None else "the model does not state its classes (classes_)")
        raise ConfigError(f"the {name} takes the values {shown[values[0]]!r} and "
                          f"{shown[values[1]]!r} and {why}: which one is the positive class "
                          "(the model's probability is of it) cannot be told; pass "
                          f"positive_label (--positive-label), e.g. --positive-label "
                          f"{shown[values[1]]!r}")
    other = values[0] if key == values[1] else values[1]
    return {"values": [other, key], "positive": shown[key], "from": how}


def _levels(v) -> list[str]:
    if v.info.kind == "continuous":
        return ["below mean", "above mean"]
    return [str(g) for g in v.info.group_labels(np.asarray(v.info.levels, dtype=object))] \
        if v.kind == "attribute" else [str(g) for g in v.info.levels]


class OutcomePass:
    """Counts per view; ``add`` each batch with the model's probabilities, then ``finish``.

    ``label_sample``: the label's values on the audit's sample (None: no label);
    ``positive``: its positive class (``positive_class``; None: decided here, refusing a
    label that is not 0/1). A regressor (``task="regression"``) makes no decision: nothing
    is counted."""

    def __init__(self, views, label_sample, decision_threshold: float, *,
                 positive: dict | None = None, task: str = "classification"):
        self.regression = task == "regression"
        self.views = [] if self.regression else [(v.name, v.labels_of, _levels(v))
                                                 for v in views]
        self.threshold = float(decision_threshold)
        self.counts = {name: OutcomeCounts() for name, _, _ in self.views}
        self.note = None
        self.values = None
        self.positive = None
        self.unknown = 0
        if self.regression:
            self.note = REGRESSOR
        elif label_sample is None:
            self.note = NO_LABEL
        else:
            if positive is None:
                positive = positive_class(label_sample, None, None, None)
            if positive is not None:
                self.values, self.positive = positive["values"], positive
            else:
                n = len(set(_keys(label_sample).tolist()))
                self.note = (f"the label takes {n} values in the sample, not 2: outcome "
                             "metrics that need a binary label are omitted")

    @property
    def has_label(self) -> bool:
        return self.values is not None

    def fresh(self) -> OutcomePass:
        """These settings with nothing counted yet (one batch's counts, for
        ``merge_counts``)."""
        part = copy.copy(self)
        part.counts = {name: OutcomeCounts() for name, _, _ in self.views}
        part.unknown = 0
        return part

    def counted(self) -> dict:
        return {"cells": {name: c.cells for name, c in self.counts.items()},
                "unknown": self.unknown}

    def merge_counts(self, c: dict) -> None:
        """Add the counts of the next batch (``fresh().counted()`` after it)."""
        for name, cells in c["cells"].items():
            mine = self.counts[name].cells
            for key, n in cells.items():
                mine[key] = mine.get(key, 0) + n
        self.unknown += c["unknown"]

    def add(self, b, p: np.ndarray) -> None:
        if self.regression:
            return
        decision = (np.asarray(p, dtype=np.float64) >= self.threshold).astype(int)
        if self.has_label and b.y is not None:
            ys = _keys(b.y)
            self.unknown += int((~np.isin(ys, self.values)).sum())
            y = (ys == self.values[1]).astype(int)
        else:
            y = decision
        for name, labels_of, _ in self.views:
            self.counts[name].add(np.asarray(labels_of(b.cs)).astype(str), y, decision)

    def finish(self) -> tuple[dict, dict | None]:
        """``summary["outcomes"]`` (view -> ``group_outcomes``) and ``summary["performance"]``
        (None without a label)."""
        out = {}
        for name, _, levels in self.views:
            with warnings.catch_warnings():  # a gap of groups without positives: NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                res = group_outcomes(self.counts[name], groups=levels)
            if not self.has_label:
                _strip_label_metrics(res)
            out[name] = res
        if self.regression:
            return {"settings": {"decision": None, "label": False, "task": "regression",
                                 "note": self.note}, "views": {}}, None
        common = {"decision": f"p >= {self.threshold:g}", "label": self.has_label,
                  "note": self.note}
        if self.has_label:
            common["positive_label"] = self.positive["positive"]
            common["positive_label_from"] = self.positive["from"]
            if self.unknown:
                common["note"] = (f"{self.unknown:,} rows have a label value outside "
                                  f"{self.values} (or none): counted as negative")
        out = {"settings": common, "views": out}
        perf = None
        if self.has_label and self.views:
            perf = performance(self.counts[self.views[0][0]])
        return out, perf


def _strip_label_metrics(res: dict) -> None:
    for row in res["by_group"].values():
        for k in _NEED_LABEL:
            row.pop(k, None)
            row.pop(f"{k}_interval", None)
    if res.get("gaps"):
        res["gaps"].pop("equalized_odds_difference", None)


def flagged_intervals(groups: dict) -> None:
    """Replace each group view's flagged-rate interval over rows by Wilson's, and give its
    largest difference and ratio between groups a bootstrap interval over rows (in place).
    A group with no rows is marked empty (no rate, no interval)."""
    for view in groups.get("views", {}).values():
        counts = OutcomeCounts()
        for r in view["rows"]:
            n, k = int(r["rows"]), int(r["flagged"])
            r["rate_ci"] = wilson(k, n)
            if n == 0:
                r["empty"], r["rate"] = True, None
                continue
            counts.cells[(str(r["group"]), 0, 1)] = k
            counts.cells[(str(r["group"]), 0, 0)] = n - k
        gaps = None
        if counts.cells:
            with warnings.catch_warnings():  # no label here: the odds gaps are NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                gaps = group_outcomes(counts, B=1000).get("gaps")
        diff = (gaps or {}).get("demographic_parity_difference") or {}
        ratio = (gaps or {}).get("demographic_parity_ratio") or {}
        view["largest_difference_ci"] = diff.get("interval")
        view["largest_ratio_ci"] = ratio.get("interval")
    interval = groups.setdefault("interval", {})
    interval["rates"] = "Wilson"
    interval["text"] = (interval.get("text", "") + " Flagged rates over rows: Wilson's score "
                        "interval; their largest difference and ratio between groups: "
                        "percentile bootstrap over rows (1000 resamples).").strip()


def flagged_by_group(by_group: dict) -> dict:
    """``summary["flagged"]["by_group"]``: each group of ``by_group`` (rows, flagged, rate)
    with Wilson's interval of its rate."""
    return {g: {**v, "interval": wilson(int(v["flagged"]), int(v["rows"]))}
            for g, v in by_group.items()}
