"""``audit``: score every row of a data set for individual unfairness w.r.t. one or more
protected attributes, with the model under test and aux models trained here; write the
outputs. The first attribute decides ``flagged``; every attribute and the intersection of
the categorical ones get a group view (``faux.audit.passes.groups``).

Two passes over the data, each in batches (a file is never loaded whole): the scan (count
rows, describe the protected attributes, draw a uniform sample), then, with the aux models
trained on the sample, the scoring pass. ``_audit`` runs the stages of
``faux.audit.stages`` in order; the settings are ``faux.audit.settings.AuditSettings``, the
summary is built by ``faux.audit.report.summary``, the result is ``faux.audit.result``.

Where it writes (``faux.audit.report.outputs``): ``out_dir`` must be absent, empty, or an earlier
audit's output; anything else is refused unless ``force``, which writes beside the files
already there, never replacing them; the outputs appear together or not at all.
Every setting (and ``out_dir``'s writability) is checked before the data are read. A
Ctrl-C anywhere raises ``KeyboardInterrupt``, a SIGTERM ``Terminated`` (a ``SystemExit`` with
status 143), after removing what the audit had created (``faux.audit.interrupts``). A disk
that fills while the outputs are written raises ``OutputError``, again with nothing left
behind.
"""
from __future__ import annotations

import dataclasses

from faux.audit import stages
from faux.audit.audit_doc import document
from faux.audit.interrupts import (
    AuditInterrupted,
    AuditTerminated,
    Terminated,
    check_signals,
    interruptible,
)
from faux.audit.notices import collecting, warn
from faux.audit.notices import current as _current_warnings
from faux.audit.report.outputs import disk_full, move_into_place, write_staged
from faux.audit.report.summary import build as build_summary
from faux.audit.report.summary import result_warnings as _result_warnings
from faux.audit.result import AuditResult
from faux.audit.scores.methods import default_methods
from faux.audit.settings import DEFAULTS, AuditSettings


@document  # the parameters, returns and raises: faux.audit.audit_doc.REFERENCE
def audit(model, X=None, c=None, *, data=None, protected=None, y=None,
          label: str | None = None, features=None, out_dir=None, name: str | None = None,
          methods=DEFAULTS.methods, aux: str = DEFAULTS.aux,
          aux_epochs: int = DEFAULTS.aux_epochs, aux_width: int = DEFAULTS.aux_width,
          aux_depth: int = DEFAULTS.aux_depth, sample: int = DEFAULTS.sample,
          batch_size: int = DEFAULTS.batch_size, threshold: float | None = DEFAULTS.threshold,
          fail_above: float | None = DEFAULTS.fail_above,
          max_flagged_rate: float | None = DEFAULTS.max_flagged_rate,
          protected_type: str = DEFAULTS.protected_type, fd_step: float = DEFAULTS.fd_step,
          fd_scores: str = DEFAULTS.fd_scores,
          seed: int = DEFAULTS.seed, trust_pickle: bool = DEFAULTS.trust_pickle,
          trusted_types=DEFAULTS.trusted_types, progress: bool | None = DEFAULTS.progress,
          report: bool = DEFAULTS.report, force: bool = DEFAULTS.force,
          alpha: float = DEFAULTS.alpha, null_permutations: int = DEFAULTS.null_permutations,
          fdr: bool = DEFAULTS.fdr, aux_seeds: int = DEFAULTS.aux_seeds,
          min_cell: int = DEFAULTS.min_cell, intersection: bool = DEFAULTS.intersection,
          exact: bool = DEFAULTS.exact, verdict: str = DEFAULTS.verdict,
          decision_threshold: float = DEFAULTS.decision_threshold,
          materiality: float | None = DEFAULTS.materiality, steps: int = DEFAULTS.steps,
          support_margin: float = DEFAULTS.support_margin, task: str = DEFAULTS.task,
          positive_label=DEFAULTS.positive_label, counterfactual: str = DEFAULTS.counterfactual,
          hold=DEFAULTS.hold, null_transports: int = DEFAULTS.null_transports,
          direct_only: bool = DEFAULTS.direct_only,
          max_excess_flags: float | None = DEFAULTS.max_excess_flags,
          model_version: str | None = DEFAULTS.model_version) -> AuditResult:
    """Audit ``model`` for individual unfairness with respect to protected attributes.

    Every row is scored; by default a row is flagged when the model's decision changes at
    its counterfactual, the same person carried to the other group (what the attribute does
    not change held fixed, the rest keeping the person's rank: ``counterfactual``), under
    every one of the ``aux_seeds`` fits (a regressor's, when its predicted value moves by
    at least ``materiality``). A model that stores the names of the columns it was fitted
    on reads them by name. The result's repr states the conclusion (PASS, REVIEW or FAIL,
    with one sentence per attribute); ``report.html`` shows it first.
    Every setting is checked (``ConfigError``, one line) before the data are read; a
    Ctrl-C raises ``KeyboardInterrupt`` and a SIGTERM ``Terminated`` with nothing left
    behind. What weakens the result (an aux model near chance, unreachable or off-support
    counterfactuals, a Pipeline audited after its encoders, an unusual ``fd_step``) is
    raised as a ``FauxAuditWarning`` and listed in ``AuditResult.warnings``.
    """
    given = locals()
    st = AuditSettings(**{k: given[k] for k in AuditSettings.names()})
    st = dataclasses.replace(st, methods=tuple(default_methods() if methods is None
                                               else methods),
                             hold=tuple(hold) if isinstance(hold, list | tuple) else hold)
    with collecting(), interruptible():
        try:
            return _audit(model, X, c, data=data, protected=protected, y=y, label=label,
                          features=features, out_dir=out_dir, name=name, st=st)
        except AuditTerminated:
            raise Terminated from None
        except AuditInterrupted:
            raise KeyboardInterrupt from None


def _audit(model, X, c, *, data, protected, y, label, features, out_dir, name,
           st: AuditSettings) -> AuditResult:
    """The stages (``faux.audit.stages``) in order; nothing partial is left behind."""
    st.check(has_label=label is not None if data is not None else y is not None)
    r = stages.Run(st)
    stages.open_inputs(r, model, X, c, data=data, protected=protected, y=y, label=label,
                       features=features, out_dir=out_dir, name=name)
    try:
        try:
            for stage in (stages.fit, stages.score):
                check_signals()
                stage(r)
        finally:
            r.bar.stop()
        check_signals()
        stages.settle(r)
        summary = build_summary(r)
        late = _result_warnings(summary, encoded=r.layout is not None)
        summary["warnings"] = [*_current_warnings(), *late]
        result = AuditResult(summary, r.ranking, r.top_df, r.mem_scores, None, not r.gate,
                             r.plot_scores)
        if r.staging is not None:
            write_staged(result, r.staging.dir, st.report)
            move_into_place(r.staging)
            result.out_dir = r.out
    except BaseException as err:  # nothing partial is left behind
        full = disk_full(err, r.staging)
        if r.staging is not None:
            r.staging.discard()
        if full is not None:
            raise full() from err
        raise
    for msg in late:
        warn(msg)
    return result
