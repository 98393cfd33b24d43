"""``audit``: score every row of a data set for individual unfairness w.r.t. one or more
protected attributes, with the model under test and aux models trained here; write the
outputs. The first attribute decides ``flagged``; every attribute and the intersection of
the categorical ones get a group view (``faux.audit.groups``).

Two passes over the data, each in batches (a file is never loaded whole):

1. ``scan``: count rows, refuse NaN/inf features, describe the protected attribute (binary,
   categorical, continuous), draw a uniform sample of ``sample`` rows;
2. train the aux on the sample, check the model's width and output on it, then score every
   batch, append the scores to ``scores.parquet`` and keep running counts (flagged per group),
   a bounded sample of scores for the plots, and the top flagged rows.

Where it writes: ``out_dir`` must be absent, empty, or an earlier audit's output (recognised
by its marker file ``.faux-audit.json``, which lists the files that audit wrote); anything
else is refused unless ``force``, which writes beside the files already there. The audit
never replaces, renames or deletes a file it did not write. A new ``out_dir`` is staged in a
uniquely named temporary folder beside it and renamed into place at the end, so a folder of
that name is always complete; into an existing one the outputs are staged in a temporary
folder inside it and moved into place file by file only once everything succeeded.

Every setting (and ``out_dir``'s writability) is checked before the data are read. A
Ctrl-C anywhere raises ``KeyboardInterrupt``, a SIGTERM ``Terminated`` (a ``SystemExit`` with
status 143), after removing what the audit had created. A disk that fills while the outputs
are written raises ``OutputError`` (one line: the folder and the space left there), again
with nothing left behind. Folders and files are created with the user's umask.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np

from faux.audit.calibration import (
    _calibration,
    _null_quantile,
    _null_scores,
)
from faux.audit.data import (
    ArraySource,
    check_columns,
    open_source,
    protected_list,
    scan,
)
from faux.audit.flagged_rows import RowValues
from faux.audit.interrupts import (  # noqa: F401 (re-exported)
    EXIT_TERMINATED,
    Terminated,
    _Interrupted,
    _interruptible,
    _Terminated,
)
from faux.audit.methods import default_methods
from faux.audit.methods import threshold as default_threshold
from faux.audit.missing import Missing, NanTarget
from faux.audit.outcome_pass import OutcomePass, flagged_by_group, flagged_intervals
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
from faux.audit.progress import Progress as _Progress
from faux.audit.provenance import provenance
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
from faux.audit.verdict import Settings as EffectSettings
from faux.audit.verdict import summary as verdict_summary
from faux.audit.writing import DISK_FULL
from faux.errors import ConfigError, DataError, FauxError

UNREACHABLE_WARN = 0.01  # a warning when more rows than this share are unreachable
OFF_SUPPORT_WARN = 0.05  # ... or have their counterfactual off the data's support
RULE_MANUAL, RULE_QUANTILE, RULE_BH = "manual threshold", "null quantile", "benjamini-hochberg"


def _encodes_itself(model) -> bool:
    """True for an in-memory Pipeline whose first steps encode its columns (the data's
    columns are then checked after the split); a file is loaded first and checked after."""
    from faux.audit.encoders import split

    return not isinstance(model, str | Path) and split(model) is not None


def _encoded(model, source, features, exact: bool):
    """A Pipeline that encodes its own (string) columns: the model after its encoders, the
    data as the encoders output them, their column names as the features and their
    categorical blocks (``faux.audit.encoders``); anything else as it is (no blocks known)."""
    from faux.audit.encoders import EncodedSource, split
    from faux.audit.models import TargetModel, as_target

    est = model.estimator if isinstance(model, TargetModel) else model
    enc = split(est) if est is not None else None
    if enc is None:
        return model, source, features, None
    if features is not None and list(features) != enc.raw_features:
        raise ConfigError(f"the model is a Pipeline that reads the columns {enc.raw_features[:6]}"
                          f"{' ...' if len(enc.raw_features) > 6 else ''} itself; leave "
                          "--features out")
    rest = as_target(enc.rest, len(enc.names), exact=exact)
    if isinstance(model, TargetModel):  # a file: keep what it was read from
        for k in ("file", "sha256", "loader", "obj_class"):
            setattr(rest, k, getattr(model, k))
    rest.source = f"{getattr(model, 'source', type(est).__name__)} (after its encoders)"
    return rest, EncodedSource(source, enc), list(enc.names), enc.layout


def _check_model_on_sample(target, x: np.ndarray) -> None:
    if target.n_features is not None and target.n_features != x.shape[1]:
        raise DataError(f"the model reads {target.n_features} features but the data has "
                        f"{x.shape[1]}; pass the columns it was trained on, in order "
                        "(--features)")
    try:
        target.proba(x[:8])
    except (DataError, ConfigError):
        raise
    except Exception as err:
        msg = " ".join(str(err).split())[:160]
        raise DataError(f"the model failed on rows of {x.shape[1]} features ({msg}); pass the "
                        "columns it was trained on, in order (--features)") from err


def _default_out(name: str) -> Path:
    return Path("outputs") / "audit" / name


def _warn(msg: str) -> None:
    """A ``FauxAuditWarning`` of the audit under way (``faux.audit.result.warn``)."""
    warn(msg, stacklevel=4)


# --------------------------------------------------------------------------- the audit


def audit(model, X=None, c=None, *, data=None, protected=None, y=None,
          label: str | None = None, features=None, out_dir=None, name: str | None = None,
          methods=DEFAULTS.methods, aux: str = DEFAULTS.aux,
          aux_epochs: int = DEFAULTS.aux_epochs, aux_width: int = DEFAULTS.aux_width,
          aux_depth: int = DEFAULTS.aux_depth, sample: int = DEFAULTS.sample,
          batch_size: int = DEFAULTS.batch_size, threshold: float | None = DEFAULTS.threshold,
          fail_above: float | None = DEFAULTS.fail_above,
          max_flagged_rate: float | None = DEFAULTS.max_flagged_rate,
          protected_type: str = DEFAULTS.protected_type, fd_step: float = DEFAULTS.fd_step,
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
    from faux.audit.aux import train_aux
    from faux.audit.effect_pass import null_nets_for
    from faux.audit.effect_pass import prepare as prepare_effects
    from faux.audit.groups import build_views, finish_views, train_views
    from faux.audit.models import as_target, load_model
    from faux.audit.scoring import Scorer, check_methods_for

    t_start = time.perf_counter()
    st.check(has_label=label is not None if data is not None else y is not None)
    methods = list(st.methods)
    aux, aux_epochs, aux_width, aux_depth = st.aux, st.aux_epochs, st.aux_width, st.aux_depth
    sample, batch_size, seed, fd_step = st.sample, st.batch_size, st.seed, st.fd_step
    threshold, fail_above, max_flagged_rate = st.threshold, st.fail_above, st.max_flagged_rate
    alpha, null_permutations, fdr = st.alpha, st.null_permutations, st.fdr
    aux_seeds, min_cell, intersection = st.aux_seeds, st.min_cell, st.intersection
    report, force, exact, verdict = st.report, st.force, st.exact, st.verdict
    protected_type = st.protected_type
    eff_settings = EffectSettings(st.decision_threshold, st.materiality, st.steps,
                                  st.support_margin)
    files = [f for f in OUTPUT_FILES if report or f != "report.html"]
    if out_dir is not None:  # before the data are opened: a bad --out fails fast
        _inspect_out(Path(os.path.abspath(out_dir)), files, force)
    if data is not None:
        if protected is None:
            raise ConfigError("pass protected=<column name> with data=<file>")
        source = open_source(data)
        c_cols, y_col = protected_list(protected), label
    else:
        if X is None or c is None:
            raise ConfigError("pass X and c (in memory) or data and protected (a file)")
        source = ArraySource(X, c, y)
        c_cols, y_col = source.c_names, source.y_name
        drop = [v for v in [*c_cols, y_col] if v in source.columns]  # named columns of X
        if drop:
            if features is None:
                features = [f for f in source.columns if f not in drop]
    extra = [] if data is not None else [
        v for v in [*c_cols, y_col] if v is not None and v not in source.columns]
    raw_source = source  # the data as given: its hash goes into the provenance
    encodes = _encodes_itself(model)
    feats = None if encodes else check_columns(source.columns + extra, c_cols, y_col,
                                               features, source.name)
    if isinstance(model, str | Path):  # before the data pass: a bad model fails fast
        model = load_model(model, None if feats is None else len(feats),
                           trust_pickle=st.trust_pickle, trusted_types=st.trusted_types,
                           exact=exact)
    model, source, features, layout = _encoded(model, source, features, exact)
    if layout is not None or feats is None:
        feats = check_columns(source.columns + extra, c_cols, y_col, features, source.name)
    c_col = c_cols[0]
    name = name or source.name
    thr = fail_above if fail_above is not None else threshold
    primary = methods[0]
    rule = RULE_MANUAL if thr is not None else RULE_BH if fdr else RULE_QUANTILE
    out = None
    if out_dir is not None or data is not None:
        out = Path(out_dir) if out_dir is not None else _default_out(name)
        if out_dir is None:
            _inspect_out(Path(os.path.abspath(out)), files, force)
    target = as_target(model, len(feats), exact=exact)
    check_methods_for(target, methods)
    _check_fd_step_for(target, fd_step)

    bar = _Progress(st.progress)
    staging = None
    try:
        try:
            sc = scan(source, feats, c_cols, y_col, sample=int(sample),
                      batch_size=int(batch_size), seed=seed, protected_type=protected_type,
                      progress=bar.start("checking", source.n_rows),
                      allow_nan=not target.differentiable)
            missing = None
            if sc.nan_rows:  # a black box that reads NaN: the aux side reads the mean
                missing = Missing(sc.x)
                sc.x = missing.fill_in(sc.x)
            views = build_views(sc, int(min_cell), intersection)
            _check_model_on_sample(target, sc.x)
            if not target.verify_exact(sc.x):  # a conversion that differs on the data
                check_methods_for(target, methods)
            z_sample = (sc.x - sc.mean) / sc.scale
            try:  # Lightning's trainer exits (SystemExit) on a KeyboardInterrupt
                aux_z, quality = train_aux(z_sample, sc.c, sc.protected, sc.y, kind=aux,
                                           width=aux_width, depth=aux_depth,
                                           epochs=int(aux_epochs), seed=seed)
                ranking = _ranking(aux_z, z_sample, feats)
                scorer = Scorer(target, aux_z, sc.mean, sc.scale, methods, fd_step=fd_step,
                                batch_size=min(int(batch_size), 65_536))
                k = 1 if sc.protected.kind != "categorical" else len(sc.protected.levels)
                null = None
                if rule == RULE_MANUAL:
                    thresholds = {primary: thr, **{m: default_threshold(m) for m in methods[1:]}}
                else:
                    null = _null_scores(target, aux_z, sc, z_sample, methods, aux=aux,
                                        aux_width=aux_width, aux_depth=aux_depth,
                                        aux_epochs=int(aux_epochs), n_perm=null_permutations,
                                        seed=seed, fd_step=fd_step,
                                        batch_size=min(int(batch_size), 65_536), bar=bar)
                    thresholds = {m: _null_quantile(null["scores"][m], alpha) for m in methods}
                train_views(views, target, sc, z_sample, methods,
                            primary={"aux": aux_z, "quality": quality, "thresholds": thresholds,
                                     "null": null, "scorer": scorer},
                            aux_seeds=int(aux_seeds), bar=bar, settings=dict(
                                aux=aux, aux_width=aux_width, aux_depth=aux_depth,
                                aux_epochs=int(aux_epochs), seed=seed, fd_step=fd_step,
                                batch_size=min(int(batch_size), 65_536), rule=rule, alpha=alpha,
                                null_permutations=null_permutations,
                                manual=dict(thresholds) if rule == RULE_MANUAL else None,
                                effect=verdict == "effect"))
                passes = [] if verdict != "effect" else prepare_effects(
                    views, null_nets_for(sc, z_sample, null_permutations, seed=seed, aux=aux,
                                      aux_width=aux_width, aux_depth=aux_depth,
                                      aux_epochs=int(aux_epochs)),
                    target if missing is None else NanTarget(target, missing), sc, z_sample,
                    feats, settings=eff_settings,
                    batch_size=min(int(batch_size), 65_536), layout=layout)
            except SystemExit:
                raise _Interrupted from None
            if out is not None:
                staging = _Staging(Path(os.path.abspath(out)), files, force)
            outcome = OutcomePass(views, sc.y, eff_settings.decision_threshold)
            row_values = RowValues(feats, passes)
            res = _score_all(source, feats, c_cols, sc, scorer, methods, thresholds,
                             None if staging is None else staging.dir, bar,
                             batch_size=int(batch_size), seed=seed, keep=data is None,
                             bh_null=null["scores"][primary] if rule == RULE_BH else None,
                             alpha=alpha, views=views, passes=passes,
                             label=y_col if outcome.has_label else None,
                             observers=(outcome, row_values, target.proba, missing))
        finally:
            bar.stop()
        n_flag, per_group, top, plot_scores, mem_scores, t_score, above, bh = res
        if bh is not None:  # Benjamini-Hochberg: the cut is known once every row is scored
            thresholds[primary] = bh["threshold"]
            above[primary] = bh["flagged"]
            if not passes:  # the score verdict: the cut decides flagged
                n_flag = bh["flagged"]
                per_group = bh["by_group"]
                top = [t for t in top if t[0] > bh["threshold"]]
                if mem_scores is not None:
                    mem_scores["flagged"] = mem_scores[primary].to_numpy() > bh["threshold"]
                if staging is not None:
                    _rewrite_flagged(staging.dir / "scores.parquet", primary, bh["threshold"])
        thr = thresholds[primary]
        top_df = _top_frame(top, scorer, feats)
        if null is not None:  # every j-th of the sorted null scores: the null's quantiles
            plot_scores.update({f"null:{m}": v[::max(1, len(v) // PLOT_SAMPLE)]
                                for m, v in null["scores"].items()})
        from faux.audit.baselines import sample_baselines

        baselines = sample_baselines(target, aux_z, sc, primary, views[0].seed_scores[0], thr,
                                     fd_step=fd_step,
                                     batch_size=min(int(batch_size), 65_536), seed=seed)
        rate = n_flag / sc.n_rows
        effects_summary = {ps.name: ps.finish(sc.n_rows) for ps in passes}
        row_values.attach(effects_summary)
        outcomes, performance = outcome.finish()
        flagged_by_group(per_group)
        gate_reasons = []
        if passes:  # the effect verdict: only --max-flagged-rate gates
            if max_flagged_rate is not None and rate > max_flagged_rate:
                gate_reasons.append(f"flagged rate {rate:.4%} exceeds {max_flagged_rate:.4%}: "
                                    f"{n_flag:,} rows flagged by the effect verdict for "
                                    f"{c_col}")
        elif fail_above is not None:
            limit = max_flagged_rate if max_flagged_rate is not None else 0.0
            if rate > limit:
                gate_reasons.append(f"{n_flag} rows ({rate:.4%}) score above {fail_above} with "
                                    f"{primary}; allowed rate {limit:.4%}")
        elif max_flagged_rate is not None and rate > max_flagged_rate:
            gate_reasons.append(f"flagged rate {rate:.4%} exceeds {max_flagged_rate:.4%} "
                                f"(threshold {thr})")
        summary = {
            "schema_version": SUMMARY_SCHEMA,
            "name": name,
            "model": {"source": target.source, "kind": target.kind,
                      "differentiable": target.differentiable, **target.provenance()},
            "data": {"rows": sc.n_rows, "features": feats, "protected": c_col, "label": y_col},
            "protected": {"kind": sc.protected.kind, "levels": [str(v) for v in sc.protected.levels],
                          "counts": sc.protected.counts},
            "settings": {"methods": methods, "primary": primary, "threshold": thr,
                         "fail_above": fail_above, "max_flagged_rate": max_flagged_rate,
                         "sample": int(len(sc.sample_rows)), "batch_size": int(batch_size),
                         "seed": seed, "aux": aux, "verdict": verdict,
                         "decision_threshold": eff_settings.decision_threshold,
                         "materiality": eff_settings.materiality, "steps": eff_settings.steps,
                         "support_margin": eff_settings.support_margin, "standardisation":
                             "features divided by their sample std after centring; 0/1 columns "
                             "unscaled", "faux_ng_reading": "sample (per-row unit vectors)"},
            "scoring": {"mode": target.scoring_mode,
                        "device": str(scorer.device),
                        "fd_step_std": None if target.differentiable else fd_step,
                        "model_calls_per_row": scorer.calls_per_row(k, len(feats)),
                        "seconds": round(t_score, 3),
                        "rows_per_s": round(sc.n_rows / max(t_score, 1e-9), 1)},
            "aux_quality": quality,
            "flagged": {"count": int(n_flag), "rate": rate, "by_group": per_group},
            "calibration": _calibration(rule, alpha, null_permutations, null, methods,
                                        thresholds, sc.n_rows,
                                        above[primary] if passes else n_flag, fdr, verdict),
            "verdict": verdict_summary(verdict, eff_settings, effects_summary, passes,
                                       n_rows=sc.n_rows, primary=primary),
            "effects": effects_summary,
            "thresholds": {m: {"threshold": t, "rows_above": int(above[m]),
                               "rate_above": above[m] / sc.n_rows} for m, t in thresholds.items()},
            "top_features": [{"feature": f, "importance": float(v)}
                             for f, v in list(ranking.items())[:10]],
            "gate": {"passed": not gate_reasons, "reasons": gate_reasons,
                     "exit_code": 0 if not gate_reasons else 1},
            "groups": finish_views(views, sc, z_sample, feats, methods, n_rows=sc.n_rows,
                                   alpha=alpha, seed=seed, primary_threshold=thr,
                                   effect_views=set(effects_summary)),
            "outcomes": outcomes,
            "performance": performance,
            "provenance": provenance(raw_source, target.provenance()),
            "missing": None if missing is None else missing.summary(sc.n_rows),
            "seconds_total": round(time.perf_counter() - t_start, 3),
        }
        flagged_intervals(summary["groups"])
        summary["baselines"] = baselines
        late = _result_warnings(summary, encoded=layout is not None)
        summary["warnings"] = [*_current_warnings(), *late]
        result = AuditResult(summary, ranking, top_df, mem_scores, None, not gate_reasons,
                             plot_scores)
        if staging is not None:
            _stage(result, staging.dir, report)
            _finish(staging)
            result.out_dir = out
    except BaseException as err:  # nothing partial is left behind
        staged = 0
        if staging is not None:
            staged = staging.size()
            staging.discard()
        if (isinstance(err, OSError) and not isinstance(err, FauxError)
                and err.errno in DISK_FULL and staging is not None):
            raise _disk_full(err, staging, staged) from err
        raise
    for msg in late:
        _warn(msg)
    return result


def _result_warnings(summary: dict, encoded: bool = False) -> list[str]:
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
