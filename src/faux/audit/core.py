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

from faux.audit import inputs, stages
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
from faux.audit.report.outputs import (
    disk_full,
    move_into_place,
    write_staged,
)
from faux.audit.report.summary import build as build_summary
from faux.audit.report.summary import result_warnings as _result_warnings
from faux.audit.result import AuditResult
from faux.audit.settings import (
    AuditSettings,
    from_keywords,
)


@document  # the parameters, returns and raises: faux.audit.audit_doc
def audit(model, X=None, c=None, *, data=None, protected=None, y=None,
          label: str | None = None, features=None, out_dir=None, name: str | None = None,
          settings: AuditSettings | None = None, **overrides) -> AuditResult:
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
    st = from_keywords(settings, overrides)
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
    """The stages (``faux.audit.inputs``, ``faux.audit.stages``) in order, each on what the
    ones before it returned; nothing partial is left behind."""
    st.check(has_label=label is not None if data is not None else y is not None)
    plan = inputs.plan(st)
    dataset = None
    if st.engine == "ray":  # a Parquet file, folder or glob, checked before it is read
        from faux.audit.engine.dataset import open_dataset

        dataset = open_dataset(data)
        data = dataset.source
    given = inputs.open_inputs(plan, model, X, c, data=data, protected=protected, y=y,
                               label=label, features=features, out_dir=out_dir, name=name)
    staging = session = None
    try:
        try:
            if dataset is not None:
                from faux.audit.engine.session import start

                session = start(st, dataset.files)
            check_signals()
            scanned = stages.scan_rows(plan, given)
            check_signals()
            fitted = stages.fit(plan, given, scanned)
            check_signals()
            staging = stages.open_staging(plan, given)
            scored = stages.score(plan, given, scanned, fitted, staging, session)
        finally:
            plan.bar.stop()
            if session is not None:  # a Ray the audit started ends with the pass
                session.stop()
        check_signals()
        settled = stages.settle(plan, given, scanned, fitted, scored, staging)
        summary = build_summary(plan, given, scanned, fitted, scored, settled)
        if session is not None:
            summary.content["scoring"]["engine"] = session.describe()
        late = _result_warnings(summary.content, encoded=given.layout is not None)
        summary.content["warnings"] = [*_current_warnings(), *late]
        result = AuditResult(summary.content, fitted.ranking, settled.top_df, settled.scores,
                             None, not summary.gate, settled.plot_scores)
        if staging is not None:
            write_staged(result, staging.dir, st.report)
            move_into_place(staging)
            result.out_dir = given.out
    except BaseException as err:  # nothing partial is left behind
        full = disk_full(err, staging)
        if staging is not None:
            staging.discard()
        if full is not None:
            raise full() from err
        raise
    for msg in late:
        warn(msg)
    return result
