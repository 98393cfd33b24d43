"""What an audit returns (``AuditResult``); how it warns (``FauxAuditWarning``) is
``faux.audit.notices``.

Warnings that concern the result (an aux model near chance, rows the counterfactual could
not reach or that left the data's support, a Pipeline audited after its encoders, an unusual
finite-difference step) are raised with ``warnings.warn(..., FauxAuditWarning)``, kept in
``summary["warnings"]`` and listed by the result's repr; the CLI prints each as one
``faux audit: warning: ...`` line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


class AuditResult:
    """What an audit found. ``scores``: a DataFrame (row_id, one column per method, flagged;
    in memory also group), kept when the audit ran in memory and otherwise read from
    ``out_dir/scores.parquet`` on first access; ``summary``: the dict written to
    ``summary.json``; ``top_flagged``: the highest-scoring flagged rows with their top
    contributing features; ``feature_ranking``: feature -> importance for the protected
    attribute (aux transparency report, one-hot groups aggregated), highest first;
    ``passed``: False when a gate (fail_above / max_flagged_rate) failed; ``out_dir``: where
    the outputs were written (or None); ``warnings``: the audit's warnings (one line each,
    also raised as ``FauxAuditWarning``). ``save(folder)`` writes the outputs as the CLI does;
    ``to_html()`` returns the report (a notebook shows it)."""

    def __init__(self, summary: dict, feature_ranking: dict, top_flagged: pd.DataFrame,
                 scores: pd.DataFrame | None = None, out_dir: Path | None = None,
                 passed: bool = True, plot_scores: dict | None = None):
        self.summary = summary
        self.feature_ranking = feature_ranking
        self.top_flagged = top_flagged
        self._scores = scores
        self.out_dir = out_dir
        self.passed = passed
        self.plot_scores = {} if plot_scores is None else plot_scores

    @property
    def scores(self) -> pd.DataFrame | None:
        if self._scores is None and self.out_dir is not None:
            self._scores = pd.read_parquet(Path(self.out_dir) / "scores.parquet")
        return self._scores

    @scores.setter
    def scores(self, value: pd.DataFrame | None) -> None:
        self._scores = value

    def by_group(self, view: str | None = None) -> pd.DataFrame:
        """A group view (default: the first attribute's) as a DataFrame indexed by group:
        rows, flagged, rate, mean_score, their intervals, top_features."""
        from faux.audit.passes.groups import by_group_frame

        return by_group_frame(self.summary, view)

    def difference(self, view: str | None = None) -> float:
        """Largest difference of the flagged rate between a view's groups (max - min)."""
        from faux.audit.passes.groups import difference_ratio

        return difference_ratio(self.by_group(view)["rate"])[0]

    def ratio(self, view: str | None = None) -> float:
        """Smallest ratio of the flagged rate between a view's groups (min / max)."""
        from faux.audit.passes.groups import difference_ratio

        return difference_ratio(self.by_group(view)["rate"])[1]

    @property
    def warnings(self) -> list[str]:
        return list(self.summary.get("warnings") or [])

    def save(self, out_dir, *, force: bool = False, report: bool = True) -> Path:
        """Write scores.parquet, summary.json, report.html (unless ``report`` is False) and
        the marker ``.faux-audit.json`` into ``out_dir``, as ``faux audit --out`` does and
        under its rules: ``out_dir`` must be new, empty or an earlier audit's output
        (``force``: write beside other files, never replacing them); the files appear
        together or not at all. Returns the folder; ``out_dir`` is set to it."""
        from faux.audit.api_words import speaks_python
        from faux.audit.report.outputs import save_result

        return speaks_python(save_result, AuditResult.save)(self, out_dir, force=force,
                                                            report=report)

    @property
    def flagged_rate(self) -> float:
        return float(self.summary["flagged"]["rate"])

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_html(self) -> str:
        """The report (``report.html``'s page) as a string."""
        from faux.audit.report.page import render

        return render(self)

    def _repr_html_(self) -> str:
        """The report, shown by a notebook (its styles apply inside the report only)."""
        return self.to_html()

    def __repr__(self) -> str:
        from faux.audit.report.conclusion import conclude

        s = self.summary
        st = s["settings"]
        q = s.get("aux_quality", {})
        qual = (f"R2 {q['r2']:.3f}" if "r2" in q else
                f"AUROC {q['auroc']:.3f}" if "auroc" in q else "?")
        rates = ", ".join(f"{m} {v['rate_above']:.2%}" for m, v in s.get("thresholds", {}).items())
        where = (f"out_dir: {self.out_dir}" if self.out_dir is not None else
                 "out_dir: None (scores in memory)")
        gate = ("no gate" if all(st.get(k) is None for k in (
            "fail_above", "max_flagged_rate", "max_excess_flags"))
                else "gate passed" if self.passed else "gate FAILED")
        if st.get("verdict", "score") == "effect":
            v = s.get("verdict") or {}
            moves = (f"predicted value moves by at least {st.get('materiality'):g}"
                     if v.get("task") == "regression" else
                     f"predicted probability moves by at least {st.get('materiality'):g}"
                     if st.get("materiality") is not None else "decision changes")
            each = "fit" if v.get("counterfactual") == "transport" else "aux model"
            rule = (f"by the effect verdict ({moves} with {s['data']['protected']} "
                    f"under every {each})")
            rates = f"{rates} (diagnostic)"
        else:
            rule = f"with {st['primary']} > {st['threshold']:.4g}"
        c = conclude(s)
        said = "".join(f"\n  {a['sentence']}" for a in c["attributes"])
        warned = "".join(f"\n  warning: {w}" for w in self.warnings)
        attrs = (s.get("groups") or {}).get("attributes") or [s["data"]["protected"]]
        return (f"AuditResult({s['data']['rows']:,} rows, protected "
                f"{', '.join(repr(a) for a in attrs)}, "
                f"methods {', '.join(st['methods'])}; aux {qual})\n"
                f"  {c['badge']}: {c['why']}{said}\n"
                f"  flagged: {s['flagged']['count']:,} ({s['flagged']['rate']:.2%}) {rule}; "
                f"{gate}\n"
                f"  rows above each threshold: {rates}\n"
                f"  {where}{warned}")
