"""The audit's stages, in the order ``faux.audit.core._audit`` runs them. Each is a function
of what the stages before it returned, and returns a frozen result of its own:

1. ``faux.audit.inputs.plan``: what the settings decide before anything is opened (``Plan``);
2. ``faux.audit.inputs.open_inputs``: the data source, its columns, the model (loaded, split
   at a Pipeline's encoders), the output folder checked, before any row is read (``Inputs``);
3. ``scan_rows``: the scan (rows, protected attributes, sample), checked against the model
   (``Scanned``);
4. ``fit``: the aux models, the thresholds, the group views and the effect passes, on the
   sample (``Fitted``);
5. ``open_staging``, then ``score``: the staging folder, the pass over every row
   (``faux.audit.passes.score_pass``; ``Scored``);
6. ``settle``: what is known once every row is scored (the Benjamini-Hochberg cut, the top
   rows, the plot sample, the baselines; ``Settled``);
7. ``faux.audit.report.summary.build``: summary.json's content and the gate.

The results may hold objects that change as the rows stream past (the group views and the
effect passes count every batch, the outcome counts are fed it): those are the pass's
observers; no stage assigns onto another's result. One audit's black-box gradients are
memoised by its scorer (``faux.audit.scores.scoring.GradientMemo``), and go with it.

``scan_rows``, ``fit``, ``score`` and ``settle`` run torch on one intra-op thread, the caller's
count restored after (``faux.audit.scores.aux_family.one_thread``, as the aux models train): the
audit's torch work is many small operations (aux models 64 units wide, a counterfactual path
of ``steps`` gradients per aux model and row), which two threads handing each one off ran
3-5x slower than one on a shared 2-core machine (docs/notebook/audit_speed.md); a model on
the GPU is not affected, nor are the threads of a black box's own library (scikit-learn,
LightGBM).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from faux.audit.inputs import (
    RULE_BH,
    RULE_MANUAL,
    Inputs,
    Plan,
    check_model_on_sample,
    check_output,
)
from faux.audit.interrupts import AuditInterrupted
from faux.audit.loaders.missing import Missing, NanTarget
from faux.audit.passes.outcome_pass import OutcomePass, positive_class
from faux.audit.passes.score_pass import (
    PLOT_SAMPLE,
    BatchState,
    Observers,
    PassResult,
    Reading,
    rewrite_flagged,
    sample_scores,
    score_all,
    top_frame,
)
from faux.audit.report.outputs import Staging
from faux.audit.scores.calibration import NullSettings, null_quantile, null_scores
from faux.audit.scores.methods import threshold as default_threshold
from faux.audit.scores.ranking import feature_groups, feature_ranking
from faux.audit.settings import AuditSettings
from faux.audit.sources.data_scan import scan
from faux.audit.verdict.flagged_rows import RowValues
from faux.errors import ConfigError


@dataclass(frozen=True)
class Scanned:
    """The scan (``sc``: rows, protected attributes, the sample), the sample's NaN filled in
    (``missing``; None: none), the sample standardised (``z_sample``), each feature's column
    group (``feature_of``) and the label's positive class (None: no label, or a
    regressor)."""

    sc: Any
    missing: Missing | None
    z_sample: np.ndarray
    feature_of: Any
    positive: dict | None


@dataclass(frozen=True)
class Fitted:
    """What is fitted on the sample: the primary aux model (``aux_z``) and its ``quality``,
    the features' ``ranking``, the primary ``scorer`` (its gradient memo the audit's), the
    null scores (None: a manual threshold) and each method's ``thresholds`` (before the
    Benjamini-Hochberg cut), the group views (``faux.audit.passes.groups``, the primary
    first: their aux models, scorers and thresholds; they count every batch of the pass),
    the effect ``passes`` (empty under the score verdict) and the sample's diagnostic scores
    when the pass computes none (``sampled``; else None)."""

    views: list
    aux_z: Any
    quality: dict
    ranking: Any
    scorer: Any
    null: dict | None
    thresholds: dict
    passes: list
    sampled: Any


@dataclass(frozen=True)
class Scored:
    """The pass over every row: the outcome counts, the described rows' values and the
    pass's counts, top rows and plot sample (``tally``)."""

    outcome: OutcomePass
    row_values: RowValues
    tally: PassResult


@dataclass(frozen=True)
class Settled:
    """What is known once every row is scored: each method's ``thresholds`` (the primary's
    ``thr``) and rows ``above`` them, the flagged rows (``n_flag``, ``per_group``), the top
    rows with their contributions (``top_df``), the score frame in memory (``scores``; None
    for a file), the plot sample and the baselines."""

    thresholds: dict
    thr: float
    above: dict
    n_flag: int
    per_group: dict
    top_df: Any
    scores: Any
    plot_scores: dict
    baselines: dict


def _one_torch_thread(stage):
    """``stage(...)`` with torch on one intra-op thread."""
    @functools.wraps(stage)
    def run(*args, **kwargs):
        from faux.audit.scores.aux_family import (
            one_thread,  # torch loads only when an audit runs
        )

        with one_thread():
            return stage(*args, **kwargs)
    return run


@_one_torch_thread
def scan_rows(plan: Plan, inputs: Inputs) -> Scanned:
    """Stage 3: the scan, the sample checked against the model."""
    from faux.audit.scores.scoring import check_methods_for
    from faux.audit.sources.layout import Layout

    st, target, feats = plan.st, inputs.target, inputs.feats
    sc = scan(inputs.source, feats, inputs.c_cols, inputs.y_col, sample=int(st.sample),
              batch_size=int(st.batch_size), seed=st.seed, protected_type=st.protected_type,
              progress=plan.bar.start("checking", inputs.source.n_rows),
              allow_nan=not target.differentiable)
    missing = None
    if sc.nan_rows:  # a black box that reads NaN: the aux side reads the mean
        missing = Missing(sc.x)
        sc.x = missing.fill_in(sc.x)
    feature_of = feature_groups(feats, inputs.layout if inputs.layout is not None
                                else Layout.infer(sc.x, feats))
    positive = None if sc.y is None or target.regressor else positive_class(
        sc.y, st.positive_label, target.classes, inputs.y_col)
    check_model_on_sample(target, sc.x)
    if not target.verify_exact(sc.x):  # a conversion that differs on the data
        check_methods_for(target, plan.methods)
    check_output(target, sc.x, inputs.eff.decision_threshold)
    return Scanned(sc=sc, missing=missing, z_sample=(sc.x - sc.mean) / sc.scale,
                   feature_of=feature_of, positive=positive)


def _null_settings(st: AuditSettings) -> NullSettings:
    return NullSettings(aux=st.aux, aux_width=st.aux_width, aux_depth=st.aux_depth,
                        aux_epochs=int(st.aux_epochs), n_perm=st.null_permutations,
                        seed=st.seed)


def _thresholds(plan: Plan, scanned: Scanned, primary_view, scorer,
                aux_z) -> tuple[dict | None, dict]:
    """The primary view's null scores (None: a manual threshold) and each method's
    threshold."""
    st, methods = plan.st, plan.methods
    if plan.rule == RULE_MANUAL:
        return None, {plan.primary: plan.manual,
                      **{m: default_threshold(m) for m in methods[1:]}}
    null = null_scores(scorer, aux_z, scanned.sc, scanned.z_sample, _null_settings(st),
                       plan.bar, nets=primary_view.null_nets)
    return null, {m: null_quantile(null["scores"][m], st.alpha) for m in methods}


@_one_torch_thread
def fit(plan: Plan, inputs: Inputs, scanned: Scanned) -> Fitted:
    """Stage 4: the group views, the aux models, thresholds and effect passes. The primary
    view's aux, its null models (calibrated thresholds) and its other seeds train together,
    as one stacked network (``faux.audit.passes.groups.train_primary``)."""
    from faux.audit.passes.groups import ViewSettings, build_views, train_primary, train_views
    from faux.audit.scores.scoring import Scorer

    st, sc, z = plan.st, scanned.sc, scanned.z_sample
    views = build_views(sc, int(st.min_cell), st.intersection)
    try:  # Lightning's trainer exits (SystemExit) on a KeyboardInterrupt
        aux_z, quality = train_primary(
            views[0], z, sc.y, kind=st.aux, width=st.aux_width, depth=st.aux_depth,
            epochs=int(st.aux_epochs), seed=st.seed, aux_seeds=int(st.aux_seeds),
            null_permutations=0 if plan.rule == RULE_MANUAL else int(st.null_permutations))
        ranking = feature_ranking(aux_z, z, scanned.feature_of)
        scorer = Scorer(inputs.target, aux_z, sc.mean, sc.scale, list(plan.methods),
                        fd_step=st.fd_step, batch_size=plan.batch)
        null, thresholds = _thresholds(plan, scanned, views[0], scorer, aux_z)
        train_views(views, sc, z, bar=plan.bar,
                    primary={"aux": aux_z, "quality": quality, "thresholds": thresholds,
                             "null": null, "scorer": scorer},
                    settings=ViewSettings(
                        null=_null_settings(st), aux_seeds=int(st.aux_seeds), alpha=st.alpha,
                        bh=plan.rule == RULE_BH, effect=st.verdict == "effect",
                        manual=dict(thresholds) if plan.rule == RULE_MANUAL else None))
        target = inputs.target if scanned.missing is None else NanTarget(inputs.target,
                                                                           scanned.missing)
        passes = [] if st.verdict != "effect" else _effect_passes(plan, inputs, scanned,
                                                                   views, target)
        sampled = (sample_scores(views, sc, plan.batch)
                   if sampled_scores(st, inputs.target) else None)
    except SystemExit:
        raise AuditInterrupted from None
    return Fitted(views=views, aux_z=aux_z, quality=quality, ranking=ranking, scorer=scorer,
                  null=null, thresholds=thresholds, passes=passes, sampled=sampled)


def _effect_passes(plan: Plan, inputs: Inputs, scanned: Scanned, views, target) -> list:
    """The effect verdict's pass per protected attribute, in the views' order (the primary
    first): by transport where ``--counterfactual transport`` can carry the rows (an
    attribute with groups), else by the aux counterfactual."""
    from faux.audit.counterfactual.effect_pass import null_nets_for
    from faux.audit.counterfactual.effect_pass import prepare as prepare_effects
    from faux.audit.counterfactual.transport_pass import TransportSettings, carried
    from faux.audit.counterfactual.transport_pass import prepare as prepare_transports

    st, sc = plan.st, scanned.sc

    def by_transport(v) -> bool:
        return st.counterfactual == "transport" and carried(v)

    passes = []
    if any(by_transport(v) for v in views):
        passes += prepare_transports(
            views, target, sc, inputs.feats, settings=inputs.eff, layout=inputs.layout,
            transport=TransportSettings(refits=int(st.aux_seeds), nulls=int(st.null_transports),
                                        seed=st.seed, hold=st.hold,
                                        direct_only=st.direct_only))
    reads = [v.name for v in views if v.kind == "attribute" and not by_transport(v)
             and v.name in scanned.feature_of]
    if reads:
        raise ConfigError(f"the model reads the protected column {reads[0]!r} itself: only the "
                          "transport counterfactual flips it (--counterfactual transport, a "
                          "binary or categorical attribute)")
    if any(v.kind == "attribute" and not by_transport(v) for v in views):
        passes += prepare_effects(
            views, null_nets_for(sc, scanned.z_sample, _null_settings(st)),
            target, sc, scanned.z_sample, inputs.feats, settings=inputs.eff,
            batch_size=plan.batch, layout=inputs.layout, which=lambda v: not by_transport(v))
    order = [v.name for v in views]
    return sorted(passes, key=lambda p: order.index(p.name))


def sampled_scores(st: AuditSettings, target) -> bool:
    """Whether the diagnostic scores are the sample rows' only: a black box (each row's
    finite differences cost 2k + 2d model calls) under the effect verdict (the scores decide
    nothing) with ``fd_scores="sample"``."""
    return st.fd_scores == "sample" and st.verdict == "effect" and not target.differentiable


def open_staging(plan: Plan, inputs: Inputs) -> Staging | None:
    """Stage 5a: the staging folder the outputs are written into (None: no files)."""
    if inputs.out is None:
        return None
    return Staging(Path(os.path.abspath(inputs.out)), plan.files, plan.st.force)


@_one_torch_thread
def score(plan: Plan, inputs: Inputs, scanned: Scanned, fitted: Fitted,
          staging: Staging | None, engine=None) -> Scored:
    """Stage 5b: the pass over every row, its scores written into ``staging``; in this
    process, or on the ``engine`` (``faux.audit.engine.session.RaySession``) when given."""
    st, sc = plan.st, scanned.sc
    outcome = OutcomePass(fitted.views, sc.y, inputs.eff.decision_threshold,
                          positive=scanned.positive, task=inputs.eff.task)
    row_values = RowValues(inputs.feats, fitted.passes)
    state = BatchState(
        scorer=fitted.scorer, methods=plan.methods, thresholds=fitted.thresholds,
        alpha=st.alpha, protected=sc.protected, views=tuple(fitted.views),
        passes=tuple(fitted.passes),
        bh_null=fitted.null["scores"][plan.primary] if plan.rule == RULE_BH else None,
        sampled=fitted.sampled, proba=inputs.target.proba, missing=scanned.missing,
        observers=Observers(outcome, row_values))
    reading = Reading(inputs.source, inputs.feats, inputs.c_cols,
                      inputs.y_col if outcome.has_label else None, int(st.batch_size))
    run = score_all if engine is None else engine.score_all
    tally = run(state, reading, n_rows=sc.n_rows, seed=st.seed, keep=inputs.in_memory,
                out=None if staging is None else staging.dir, bar=plan.bar)
    return Scored(outcome=outcome, row_values=row_values, tally=tally)


@_one_torch_thread
def settle(plan: Plan, inputs: Inputs, scanned: Scanned, fitted: Fitted, scored: Scored,
           staging: Staging | None) -> Settled:
    """Stage 6: the Benjamini-Hochberg cut (the staged scores' ``flagged`` rewritten under
    the score verdict), the top rows, the plot sample, the baselines."""
    from faux.audit.scores.baselines import sample_baselines

    t, primary = scored.tally, plan.primary
    thresholds, above = dict(fitted.thresholds), dict(t.above)
    n_flag, per_group, top, scores = t.n_flag, t.per_group, t.top, t.scores
    bh = t.bh
    if bh is not None:  # Benjamini-Hochberg: the cut is known once every row is scored
        thresholds[primary] = bh["threshold"]
        above[primary] = bh["flagged"]
        if not fitted.passes:  # the score verdict: the cut decides flagged
            n_flag, per_group = bh["flagged"], bh["by_group"]
            top = [row for row in top if row[0] > bh["threshold"]]
            if scores is not None:
                scores = scores.assign(flagged=scores[primary].to_numpy() > bh["threshold"])
            if staging is not None:
                rewrite_flagged(staging.dir / "scores.parquet", primary, bh["threshold"])
    thr = thresholds[primary]
    top_df = top_frame(top, fitted.scorer, inputs.feats)
    plot_scores = dict(t.plot_scores)
    if fitted.null is not None:  # every j-th of the sorted null scores: the null's quantiles
        plot_scores.update({f"null:{m}": v[::max(1, len(v) // PLOT_SAMPLE)]
                            for m, v in fitted.null["scores"].items()})
    baselines = sample_baselines(fitted.scorer, fitted.aux_z, scanned.sc,
                                 fitted.views[0].seed_scores[0], thr, seed=plan.st.seed)
    return Settled(thresholds=thresholds, thr=thr, above=above, n_flag=n_flag,
                   per_group=per_group, top_df=top_df, scores=scores,
                   plot_scores=plot_scores, baselines=baselines)
