"""The groups' outcomes under the model, counted in the audit's pass over the data
(``faux.audit.outcomes`` computes the metrics): per view (each protected attribute, and the
intersection when there is one) the rows counted per (group, label, decision), the decision
being ``p >= decision_threshold``. Without a label only the decisions are counted (the
selection rate per group and the demographic-parity gaps).

Also here: the flagged rate of each group view with Wilson's interval (which does not
collapse at 0 flagged) and its largest difference and ratio between groups with a bootstrap
interval over rows (``group_outcomes`` on the (group, flagged) counts)."""

from __future__ import annotations

import warnings

import numpy as np

from faux.audit.outcomes import OutcomeCounts, group_outcomes, performance, wilson

NO_LABEL = "no label given: outcome metrics that need the label are omitted"
_NEED_LABEL = ("tpr", "fpr", "accuracy")


def _levels(v) -> list[str]:
    if v.info.kind == "continuous":
        return ["below mean", "above mean"]
    return [str(g) for g in v.info.group_labels(np.asarray(v.info.levels, dtype=object))] \
        if v.kind == "attribute" else [str(g) for g in v.info.levels]


class OutcomePass:
    """Counts per view; ``add`` each batch with the model's probabilities, then ``finish``.

    ``label_sample``: the label's values on the audit's sample (None: no label). The
    positive class is the larger of its two values as text (as the Adel aux reads it)."""

    def __init__(self, views, label_sample, decision_threshold: float):
        self.views = [(v.name, v.labels_of, _levels(v)) for v in views]
        self.threshold = float(decision_threshold)
        self.counts = {name: OutcomeCounts() for name, _, _ in self.views}
        self.note = None
        self.values = None
        self.unknown = 0
        if label_sample is None:
            self.note = NO_LABEL
        else:
            vals = sorted(np.unique(np.asarray(label_sample).astype(str)).tolist())
            if len(vals) == 2:
                self.values = vals
            else:
                self.note = (f"the label takes {len(vals)} values in the sample, not 2: outcome "
                             "metrics that need a binary label are omitted")

    @property
    def has_label(self) -> bool:
        return self.values is not None

    def add(self, b, p: np.ndarray) -> None:
        decision = (np.asarray(p, dtype=np.float64) >= self.threshold).astype(int)
        if self.has_label and b.y is not None:
            ys = np.asarray(b.y).astype(str)
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
        common = {"decision": f"p >= {self.threshold:g}", "label": self.has_label,
                  "note": self.note}
        if self.has_label:
            common["positive_label"] = self.values[1]
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


def flagged_by_group(by_group: dict) -> None:
    """Wilson's interval on ``summary["flagged"]["by_group"]`` (in place)."""
    for v in by_group.values():
        v["interval"] = wilson(int(v["flagged"]), int(v["rows"]))
