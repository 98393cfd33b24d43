"""``audit``: score every row of a data set for individual unfairness w.r.t. one or more
protected attributes, with the model under test and aux models trained here; write the
outputs. The first attribute decides ``flagged``; every attribute and the intersection of
the categorical ones get a group view (``faux.audit.groups``).

Two passes over the data, each in batches (a file is never loaded whole): the scan (count
rows, describe the protected attributes, draw a uniform sample), then, with the aux models
trained on the sample, the scoring pass. ``_audit`` runs the stages of
``faux.audit.stages`` in order; the settings are ``faux.audit.settings.AuditSettings``, the
summary is built by ``faux.audit.summary``, the result is ``faux.audit.result``.

Where it writes (``faux.audit.outputs``): ``out_dir`` must be absent, empty, or an earlier
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
from faux.audit.interrupts import (  # noqa: F401 (re-exported)
    EXIT_TERMINATED,
    Terminated,
    _Interrupted,
    _interruptible,
    _Terminated,
)
from faux.audit.methods import default_methods
from faux.audit.outputs import (  # noqa: F401 (re-exported)
    MARKER,
    OUTPUT_FILES,
    SUMMARY_SCHEMA,
    OutputError,
    _disk_full,
    _finish,
    _inspect_out,
    _stage,
    _Staging,
)
from faux.audit.ranking import _ranking, feature_groups  # noqa: F401 (re-exported)
from faux.audit.result import AuditResult, FauxAuditWarning, collecting, warn  # noqa: F401
from faux.audit.result import current as _current_warnings
from faux.audit.score_pass import (  # noqa: F401 (re-exported)
    N_TOP,
    PLOT_SAMPLE,
    _rewrite_flagged,
    _score_all,
    _top_frame,
)
from faux.audit.settings import (  # noqa: F401 (re-exported)
    ALPHA,
    DEFAULTS,
    FD_STEP_LOW_WARN,
    FD_STEP_MAX,
    FD_STEP_WARN,
    NULL_PERMUTATIONS,
    AuditSettings,
    _check_fd_step_for,
)
from faux.audit.summary import (  # noqa: F401 (re-exported)
    OFF_SUPPORT_WARN,
    UNREACHABLE_WARN,
)
from faux.audit.summary import build as build_summary
from faux.audit.summary import result_warnings as _result_warnings
from faux.audit.writing import DISK_FULL
from faux.errors import FauxError

RULE_MANUAL, RULE_QUANTILE, RULE_BH = "manual threshold", "null quantile", "benjamini-hochberg"


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
          support_margin: float = DEFAULTS.support_margin) -> AuditResult:
    """Audit ``model`` for individual unfairness with respect to protected attributes.

    Every row is scored; by default a row is flagged when the model's decision changes at
    its counterfactual (the protected attribute, and what the aux models read it from,
    moved to the other group's values) under every one of the ``aux_seeds`` aux models.
    Every setting is checked (``ConfigError``, one line) before the data are read; a
    Ctrl-C raises ``KeyboardInterrupt`` and a SIGTERM ``Terminated`` with nothing left
    behind. What weakens the result (an aux model near chance, unreachable or off-support
    counterfactuals, a Pipeline audited after its encoders, an unusual ``fd_step``) is
    raised as a ``FauxAuditWarning`` and listed in ``AuditResult.warnings``.

    Parameters
    ----------
    model : torch.nn.Module, estimator, callable or path
        The model under test: a torch module returning logits, a fitted scikit-learn-like
        classifier (a ``Pipeline`` that encodes its own string columns is audited after its
        encoders), a function ``x -> probability``, or a model file (TorchScript,
        torch.export, ONNX, LightGBM, skops, pickle; see ``faux.audit.models``).
    X : pandas.DataFrame or array, optional
        In-memory data: the features (and, when ``c`` or ``y`` name columns, those columns).
    c : array, str, list of str or DataFrame, optional
        With ``X``: the protected values, the name of a column of ``X``, a list of such
        names, or a DataFrame of several attributes. The first attribute decides
        ``flagged``.
    data : str or path, optional
        A CSV or Parquet file, read in batches (never loaded whole); instead of ``X``.
    protected : str or list of str, optional
        With ``data``: the protected column name(s).
    y : array or str, optional
        With ``X``: the true label (or the name of its column). Enables the groups'
        outcome metrics (true/false positive rates, accuracy, equalized odds) and the
        ``"adel"`` aux. Not a model input.
    label : str, optional
        With ``data``: the label column (as ``y``).
    features : list of str, optional
        The model's input columns, in order (default: every column except the protected
        and label columns). Leave out for a Pipeline that reads its own columns.
    methods : list of str, optional
        Scorers (default ``faux.audit.methods.default_methods()``); the first one decides
        ``flagged`` under ``verdict="score"``; diagnostic columns otherwise.
    aux : {"mlp", "adel"}, default "mlp"
        The aux model predicting the protected attribute from the features (``"adel"``:
        kept from reading the label; needs a label, binary attributes only).
    aux_epochs : int, default 30
        Training epochs of each aux model.
    aux_width : int, default 64
        Hidden width of the aux MLP.
    aux_depth : int, default 2
        Hidden layers of the aux MLP (0: linear).
    sample : int, default 20000
        Rows drawn uniformly for training the aux models and the calibration.
    batch_size : int, default 65536
        Rows read and scored at a time.
    threshold : float, optional
        A manual threshold on the first method's score (default: calibrated).
    fail_above : float, optional
        A manual threshold that is also a gate: the audit fails (``passed`` False, exit
        code 1) when rows score above it (beyond ``max_flagged_rate``). Score verdict only.
    max_flagged_rate : float in [0, 1], optional
        Gate: the audit fails when a larger share of rows is flagged.
    protected_type : str or list of str, default "auto"
        ``"auto"``, ``"binary"``, ``"categorical"`` or ``"continuous"``: one for every
        attribute, or a list with one per attribute.
    fd_step : float, default 0.1
        Black boxes' finite-difference step, in standard deviations of the features, in
        (0, ``FD_STEP_MAX``]; a warning above ``FD_STEP_WARN`` or below
        ``FD_STEP_LOW_WARN``.
    fd_scores : {"sample", "all"}, default "sample"
        Black boxes under the effect verdict: the finite-difference scores (diagnostics,
        2k + 2d model calls per row) of the ``sample`` rows only (NaN for the other rows;
        the counts above thresholds, top rows and plots are the sample's), or of ``all``
        rows. Torch and converted models, and ``verdict="score"``, score every row.
    seed : int, default 0
        Seed of the sample, the aux models and the intervals.
    out_dir : str or path, optional
        Where scores.parquet, summary.json, report.html and the marker
        ``.faux-audit.json`` are written (default ``outputs/audit/<name>`` for a ``data``
        file; nothing is written for in-memory data without it). Must be new, empty or an
        earlier audit's output (see ``force``); the files appear together or not at all.
    name : str, optional
        The audit's name (default: the data file's stem, or ``"data"``).
    trust_pickle : bool, default False
        Allow a pickle / joblib model file (it runs code when loaded).
    trusted_types : sequence of str, default ()
        Extra classes a skops model file may hold.
    progress : bool, optional
        A progress bar (default: when stderr is a terminal; otherwise periodic lines).
    report : bool, default True
        Write report.html.
    force : bool, default False
        Write into an ``out_dir`` that holds other files, beside them (never replacing or
        deleting them).
    alpha : float in (0, 1), default 0.01
        False-flag rate of the calibrated score thresholds (the null quantile), or the
        false discovery rate with ``fdr``.
    null_permutations : int, default 3
        Aux models trained on a permuted protected attribute (the null for the thresholds,
        the expected false flags and the model-level test).
    fdr : bool, default False
        Benjamini-Hochberg at level ``alpha`` over the rows for the first method's
        threshold, instead of the null quantile.
    aux_seeds : int, default 3
        Aux models per attribute (different seeds): a row is flagged only when its
        decision changes under every one; the intervals over seeds.
    min_cell : int, default 50
        Smallest intersection cell, in sample rows (smaller cells are merged).
    intersection : bool, default True
        Audit the intersection of the categorical attributes as a view of its own.
    exact : bool, default True
        Score a scikit-learn linear model, MLP or scaler pipeline by autograd through its
        checked torch conversion (``faux.audit.exact``); False keeps it a black box.
    verdict : {"effect", "score"}, default "effect"
        ``"effect"``: the counterfactual effect decides ``flagged``; ``"score"``: the
        first method's score above its threshold (the scores are diagnostic otherwise).
    decision_threshold : float, default 0.5
        The model's decision threshold on its probability (the effect verdict and the
        group outcomes use ``p >= decision_threshold``).
    materiality : float in (0, 1], optional
        Flag when the probability moves by at least this much under every aux model with
        one sign, instead of a decision change.
    steps : int, default 8
        First-order steps along the path to the counterfactual.
    support_margin : float, default 0.1
        Widening of the sample's per-feature [min, max] box, as a share of its range on
        each side, beyond which a counterfactual is marked off support.

    Returns
    -------
    AuditResult
        ``summary`` (what summary.json holds: flagged rows, effects, groups, outcomes,
        provenance, warnings), ``scores``, ``by_group()``, ``passed``, ``warnings``,
        ``save(folder)``.

    Raises
    ------
    faux.errors.ConfigError, faux.errors.DataError
        A bad setting or bad data, in one line naming the fix.
    OutputError
        The disk filled while the outputs were written (nothing left behind).
    """
    given = locals()
    st = AuditSettings(**{k: given[k] for k in AuditSettings.names()})
    st = dataclasses.replace(st, methods=tuple(default_methods() if methods is None
                                               else methods))
    with collecting(), _interruptible():
        try:
            return _audit(model, X, c, data=data, protected=protected, y=y, label=label,
                          features=features, out_dir=out_dir, name=name, st=st)
        except _Terminated:
            raise Terminated from None
        except _Interrupted:
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
            stages.fit(r)
            stages.score(r)
        finally:
            r.bar.stop()
        stages.settle(r)
        summary = build_summary(r)
        late = _result_warnings(summary, encoded=r.layout is not None)
        summary["warnings"] = [*_current_warnings(), *late]
        result = AuditResult(summary, r.ranking, r.top_df, r.mem_scores, None, not r.gate,
                             r.plot_scores)
        if r.staging is not None:
            _stage(result, r.staging.dir, st.report)
            _finish(r.staging)
            result.out_dir = r.out
    except BaseException as err:  # nothing partial is left behind
        staging, staged = r.staging, 0
        if staging is not None:
            staged = staging.size()
            staging.discard()
        if (isinstance(err, OSError) and not isinstance(err, FauxError)
                and err.errno in DISK_FULL and staging is not None):
            raise _disk_full(err, staging, staged) from err
        raise
    for msg in late:
        warn(msg, stacklevel=3)
    return result
