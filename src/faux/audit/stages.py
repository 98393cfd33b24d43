"""The audit's stages, in the order ``faux.audit.core._audit`` runs them on one ``Run``:

1. ``open_inputs``: the data source, its columns, the model (loaded, split at a Pipeline's
   encoders), the output folder checked, before any row is read;
2. ``fit``: the scan (rows, protected attributes, sample), the aux models, the thresholds,
   the group views and the effect passes, on the sample;
3. ``score``: the pass over every row (``faux.audit.passes.score_pass``);
4. ``settle``: what is known once every row is scored (the Benjamini-Hochberg cut, the top
   rows, the plot sample, the baselines);
5. ``faux.audit.report.summary.build``: summary.json's content and the gate.

``fit``, ``score`` and ``settle`` run torch on one intra-op thread, the caller's count restored
after (``faux.audit.scores.aux_family.one_thread``, as the aux models train): the audit's torch work
is many small operations (aux models 64 units wide, a counterfactual path of ``steps``
gradients per aux model and row), which two threads handing each one off ran 3-5x slower
than one on a shared 2-core machine (docs/notebook/audit_speed.md); a model on the GPU is
not affected, nor are the threads of a black box's own library (scikit-learn, LightGBM).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from pathlib import Path

import numpy as np

from faux.audit.interrupts import AuditInterrupted
from faux.audit.loaders.missing import Missing, NanTarget
from faux.audit.notices import warn
from faux.audit.passes.outcome_pass import OutcomePass, positive_class
from faux.audit.passes.score_pass import (
    PLOT_SAMPLE,
    rewrite_flagged,
    sample_scores,
    score_all,
    top_frame,
)
from faux.audit.progress import Progress
from faux.audit.report.outputs import OUTPUT_FILES, Staging, inspect_out
from faux.audit.scores.calibration import null_quantile, null_scores
from faux.audit.scores.methods import threshold as default_threshold
from faux.audit.scores.ranking import feature_groups, feature_ranking
from faux.audit.settings import AuditSettings, check_fd_step_for
from faux.audit.sources.array_source import ArraySource
from faux.audit.sources.columns import check_columns, protected_list, refuse_repeated, suggestion
from faux.audit.sources.data import open_source
from faux.audit.sources.data_scan import scan
from faux.audit.verdict.flagged_rows import RowValues
from faux.audit.verdict.rule import Settings as EffectSettings
from faux.audit.verdict.rule import check_for_task
from faux.errors import ConfigError, DataError

RULE_MANUAL, RULE_QUANTILE, RULE_BH = "manual threshold", "null quantile", "benjamini-hochberg"
#: how far outside [0, 1] a classifier's probability may round (a float32 softmax's 1 + 1e-7)
PROBA_SLACK = 1e-6


class Run:
    """One audit's state, filled in stage by stage."""

    def __init__(self, st: AuditSettings):
        self.st, self.t_start = st, time.perf_counter()
        self.methods = list(st.methods)
        self.primary = self.methods[0]
        self.eff = EffectSettings(st.decision_threshold, st.materiality, st.steps,
                                  st.support_margin)
        self.files = [f for f in OUTPUT_FILES if st.report or f != "report.html"]
        self.thr = st.fail_above if st.fail_above is not None else st.threshold
        self.rule = (RULE_MANUAL if self.thr is not None else RULE_BH if st.fdr
                     else RULE_QUANTILE)
        self.bar = Progress(st.progress)
        self.staging = None
        self.batch = min(int(st.batch_size), 65_536)  # rows per scoring batch
        self.sampled = None  # the sample's diagnostic scores when the pass computes none
        from faux.audit.scores.scoring import FD_MEMO  # torch loads only when an audit runs

        FD_MEMO.clear()  # a model's finite-difference gradients are this audit's own


def _encodes_itself(model) -> bool:
    """True for an in-memory Pipeline whose first steps encode its columns (the data's
    columns are then checked after the split); a file is loaded first and checked after."""
    from faux.audit.loaders.encoders import split

    return not isinstance(model, str | Path) and split(model) is not None


def _encoded(model, source, features, exact: bool):
    """A Pipeline that encodes its own (string) columns: the model after its encoders, the
    data as the encoders output them, their column names as the features and their
    categorical blocks (``faux.audit.loaders.encoders``); anything else as it is (no blocks known)."""
    from faux.audit.loaders.encoders import EncodedSource, split
    from faux.audit.loaders.models import as_target
    from faux.audit.loaders.target import TargetModel

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


def _short(names) -> str:
    names = [repr(n) for n in names]
    return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")


def fed_by_name(target, feats, given, columns, prot, label, what: str) -> list[str]:
    """The feature columns of a model that stores the names of the columns it was fitted on
    (``TargetModel.feature_names``): those names, in the model's order, read from the data
    by name (in any order). One line for a name the data lack (the close ones suggested),
    for ``given`` features (``--features``) that are not the model's names, and for the
    label column among them (a protected column among them is the attribute the model reads
    itself). A model without stored names: ``feats``."""
    names = target.feature_names
    if names is None:
        return feats
    if label is not None and label in names:
        raise ConfigError(f"the model was fitted on the label column {label!r} (its stored "
                          "feature names include it); audit a model that does not read it")
    if given is not None and list(given) != list(names) and set(given) != set(names):
        lacks = [n for n in names if n not in given]
        extra = [f for f in given if f not in names]
        raise ConfigError(
            f"--features disagree with the columns the model was fitted on "
            f"({_short(names)}, its stored feature names): "
            + "; ".join(t for t in (f"it also reads {_short(lacks)}" if lacks else "",
                                    f"it does not read {_short(extra)}" if extra else "")
                        if t)
            + "; leave --features out (the model's names are read) or pass those")
    absent = [n for n in names if n not in columns]
    if absent:
        others = [col for col in columns if col not in names and col not in prot
                  and col != label]
        more = f" (and {len(absent) - 1} more: {_short(absent[1:])})" if len(absent) > 1 else ""
        raise DataError(f"the model was fitted on the column {absent[0]!r}, which is not in "
                        f"{what}{more}; the model reads its columns by name: rename the data's "
                        "column to the model's name (or refit the model); "
                        f"{suggestion(absent[0], others or list(columns))}")
    refuse_repeated(list(columns), set(names), what)
    return list(names)


def _source(r: Run, X, c, data, protected, y, label, features):
    """The data source, the protected and label columns, and the features when named."""
    if data is not None:
        if protected is None:
            raise ConfigError("pass protected=<column name> with data=<file>")
        source = open_source(data)
        return source, protected_list(protected), label, features, []
    if X is None or c is None:
        raise ConfigError("pass X and c (in memory) or data and protected (a file)")
    source = ArraySource(X, c, y)
    c_cols, y_col = source.c_names, source.y_name
    drop = [v for v in [*c_cols, y_col] if v in source.columns]  # named columns of X
    if drop and features is None:
        features = [f for f in source.columns if f not in drop]
    extra = [v for v in [*c_cols, y_col] if v is not None and v not in source.columns]
    return source, c_cols, y_col, features, extra


def open_inputs(r: Run, model, X, c, *, data, protected, y, label, features, out_dir,
                name) -> None:
    """Stage 1: everything checked that can be before a row is read."""
    from faux.audit.loaders.models import as_target, load_model
    from faux.audit.scores.scoring import check_methods_for

    st = r.st
    if out_dir is not None:  # before the data are opened: a bad --out fails fast
        inspect_out(Path(os.path.abspath(out_dir)), r.files, st.force)
    given = features  # the features as the caller named them (None: not named)
    source, r.c_cols, r.y_col, features, extra = _source(r, X, c, data, protected, y, label,
                                                         features)
    r.raw_source = source  # the data as given: its hash goes into the provenance
    feats = None if _encodes_itself(model) else check_columns(
        source.columns + extra, r.c_cols, r.y_col, features, source.name)
    if isinstance(model, str | Path):  # before the data pass: a bad model fails fast
        model = load_model(model, None if feats is None else len(feats),
                           trust_pickle=st.trust_pickle, trusted_types=st.trusted_types,
                           exact=st.exact)
    model, r.source, features, r.layout = _encoded(model, source, features, st.exact)
    if r.layout is not None or feats is None:
        feats = check_columns(r.source.columns + extra, r.c_cols, r.y_col, features,
                              r.source.name)
    r.feats, r.in_memory = feats, data is None
    r.name = name or r.source.name
    r.out = None
    if out_dir is not None or data is not None:
        r.out = Path(out_dir) if out_dir is not None else Path("outputs") / "audit" / r.name
        if out_dir is None:
            inspect_out(Path(os.path.abspath(r.out)), r.files, st.force)
    r.target = as_target(model, len(feats), exact=st.exact)
    if getattr(r.source, "named", True):  # an array without column names: read in order
        r.feats = feats = fed_by_name(r.target, feats, None if r.layout is not None else given,
                                      r.source.columns + extra, r.c_cols, r.y_col,
                                      r.source.name)
    _settle_task(r)
    check_methods_for(r.target, r.methods)
    check_fd_step_for(r.target, st.fd_step)


def _settle_task(r: Run) -> None:
    """The model's task (``--task`` against what the model says), and the verdict's and the
    label's settings that depend on it, before a row is read."""
    st, target = r.st, r.target
    target.use_task(st.task)
    check_for_task(st.verdict, st.materiality, target.task, target.task_from)
    if target.regressor and st.positive_label is not None:
        raise ConfigError(f"positive_label (--positive-label) names a classifier's positive "
                          f"class; the model is a regressor ({target.task_from}): leave it out")
    r.eff = dataclasses.replace(r.eff, task=target.task)


def _scan(r: Run) -> None:
    from faux.audit.passes.groups import build_views
    from faux.audit.scores.scoring import check_methods_for
    from faux.audit.sources.layout import Layout

    st = r.st
    r.sc = sc = scan(r.source, r.feats, r.c_cols, r.y_col, sample=int(st.sample),
                     batch_size=int(st.batch_size), seed=st.seed,
                     protected_type=st.protected_type,
                     progress=r.bar.start("checking", r.source.n_rows),
                     allow_nan=not r.target.differentiable)
    r.missing = None
    if sc.nan_rows:  # a black box that reads NaN: the aux side reads the mean
        r.missing = Missing(sc.x)
        sc.x = r.missing.fill_in(sc.x)
    r.feature_of = feature_groups(r.feats, r.layout if r.layout is not None
                                  else Layout.infer(sc.x, r.feats))
    r.positive = None if sc.y is None or r.target.regressor else positive_class(
        sc.y, st.positive_label, r.target.classes, r.y_col)
    r.views = build_views(sc, int(st.min_cell), st.intersection)
    _check_model_on_sample(r.target, sc.x)
    if not r.target.verify_exact(sc.x):  # a conversion that differs on the data
        check_methods_for(r.target, r.methods)
    _check_output(r.target, sc.x, r.eff.decision_threshold)
    r.z_sample = (sc.x - sc.mean) / sc.scale


def _check_output(target, x: np.ndarray, threshold: float) -> None:
    """A classifier's output on the sample rows ``x`` must be a probability (else one line
    asking for ``--task regression``), and is warned about when it stays on one side of the
    decision threshold (no decision can change, every row gets the same one)."""
    if target.regressor:
        return
    p = target.proba(x)
    lo, hi = float(p.min()), float(p.max())
    if lo < -PROBA_SLACK or hi > 1 + PROBA_SLACK:
        raise DataError(f"the model is read as a classifier ({target.task_from}) but its output "
                        f"on the {len(p):,} sample rows runs from {lo:.4g} to {hi:.4g}, outside "
                        "[0, 1]: it is not a probability; for a regressor pass "
                        "task='regression' (--task regression) with materiality "
                        "(--materiality) in its output's units")
    if lo >= threshold or hi < threshold:
        side = "at or above" if lo >= threshold else "below"
        warn(f"the model's probability is {side} the decision threshold {threshold:g} on "
             f"every one of the {len(p):,} sample rows (from {lo:.4g} to {hi:.4g}): every row "
             f"gets the same decision, so no decision can change at a counterfactual; check "
             "that the model outputs the probability of the positive class (a regressor: "
             "--task regression) or set --decision-threshold")


def _aux_settings(st: AuditSettings) -> dict:
    return dict(aux=st.aux, aux_width=st.aux_width, aux_depth=st.aux_depth,
                aux_epochs=int(st.aux_epochs))


def _thresholds(r: Run) -> None:
    st, methods = r.st, r.methods
    r.null = None
    if r.rule == RULE_MANUAL:
        r.thresholds = {r.primary: r.thr,
                        **{m: default_threshold(m) for m in methods[1:]}}
        return
    r.null = null_scores(r.target, r.aux_z, r.sc, r.z_sample, methods, **_aux_settings(st),
                         n_perm=st.null_permutations, seed=st.seed, fd_step=st.fd_step,
                         batch_size=r.batch, bar=r.bar, nets=r.views[0].null_nets)
    r.thresholds = {m: null_quantile(r.null["scores"][m], st.alpha) for m in methods}


def _one_torch_thread(stage):
    """``stage(r)`` with torch on one intra-op thread."""
    @functools.wraps(stage)
    def run(r: Run) -> None:
        from faux.audit.scores.aux_family import (
            one_thread,  # torch loads only when an audit runs
        )

        with one_thread():
            return stage(r)
    return run


@_one_torch_thread
def fit(r: Run) -> None:
    """Stage 2: the scan, then the aux models, thresholds, views and effect passes. The
    primary view's aux, its null models (calibrated thresholds) and its other seeds train
    together, as one stacked network (``faux.audit.passes.groups.train_primary``)."""
    from faux.audit.passes.groups import train_primary, train_views
    from faux.audit.scores.scoring import Scorer

    st = r.st
    _scan(r)
    sc, z = r.sc, r.z_sample
    try:  # Lightning's trainer exits (SystemExit) on a KeyboardInterrupt
        r.aux_z, r.quality = train_primary(
            r.views[0], z, sc.y, kind=st.aux, width=st.aux_width, depth=st.aux_depth,
            epochs=int(st.aux_epochs), seed=st.seed, aux_seeds=int(st.aux_seeds),
            null_permutations=0 if r.rule == RULE_MANUAL else int(st.null_permutations))
        r.ranking = feature_ranking(r.aux_z, z, r.feature_of)
        r.scorer = Scorer(r.target, r.aux_z, sc.mean, sc.scale, r.methods, fd_step=st.fd_step,
                          batch_size=r.batch)
        _thresholds(r)
        train_views(r.views, r.target, sc, z, r.methods,
                    primary={"aux": r.aux_z, "quality": r.quality,
                             "thresholds": r.thresholds, "null": r.null, "scorer": r.scorer},
                    aux_seeds=int(st.aux_seeds), bar=r.bar, settings=dict(
                        **_aux_settings(st), seed=st.seed, fd_step=st.fd_step,
                        batch_size=r.batch, rule=r.rule, alpha=st.alpha,
                        null_permutations=st.null_permutations,
                        manual=dict(r.thresholds) if r.rule == RULE_MANUAL else None,
                        effect=st.verdict == "effect"))
        target = r.target if r.missing is None else NanTarget(r.target, r.missing)
        r.passes = [] if st.verdict != "effect" else _effect_passes(r, target)
        if sampled_scores(st, r.target):
            r.sampled = sample_scores(r.views, sc, r.batch)
    except SystemExit:
        raise AuditInterrupted from None


def _effect_passes(r: Run, target) -> list:
    """The effect verdict's pass per protected attribute, in the views' order (the primary
    first): by transport where ``--counterfactual transport`` can carry the rows (an
    attribute with groups), else by the aux counterfactual."""
    from faux.audit.counterfactual.effect_pass import null_nets_for
    from faux.audit.counterfactual.effect_pass import prepare as prepare_effects
    from faux.audit.counterfactual.transport_pass import carried
    from faux.audit.counterfactual.transport_pass import prepare as prepare_transports

    st, sc = r.st, r.sc

    def by_transport(v) -> bool:
        return st.counterfactual == "transport" and carried(v)

    passes = []
    if any(by_transport(v) for v in r.views):
        passes += prepare_transports(
            r.views, target, sc, r.feats, settings=r.eff, layout=r.layout,
            refits=int(st.aux_seeds), nulls=int(st.null_transports), seed=st.seed,
            hold=st.hold, direct_only=st.direct_only)
    reads = [v.name for v in r.views if v.kind == "attribute" and not by_transport(v)
             and v.name in r.feature_of]
    if reads:
        raise ConfigError(f"the model reads the protected column {reads[0]!r} itself: only the "
                          "transport counterfactual flips it (--counterfactual transport, a "
                          "binary or categorical attribute)")
    if any(v.kind == "attribute" and not by_transport(v) for v in r.views):
        passes += prepare_effects(
            r.views, null_nets_for(sc, r.z_sample, st.null_permutations, seed=st.seed,
                                   **_aux_settings(st)),
            target, sc, r.z_sample, r.feats, settings=r.eff, batch_size=r.batch,
            layout=r.layout, which=lambda v: not by_transport(v))
    order = [v.name for v in r.views]
    return sorted(passes, key=lambda p: order.index(p.name))


def sampled_scores(st: AuditSettings, target) -> bool:
    """Whether the diagnostic scores are the sample rows' only: a black box (each row's
    finite differences cost 2k + 2d model calls) under the effect verdict (the scores decide
    nothing) with ``fd_scores="sample"``."""
    return st.fd_scores == "sample" and st.verdict == "effect" and not target.differentiable


@_one_torch_thread
def score(r: Run) -> None:
    """Stage 3: the staging folder, then the pass over every row."""
    st = r.st
    if r.out is not None:
        r.staging = Staging(Path(os.path.abspath(r.out)), r.files, st.force)
    r.outcome = OutcomePass(r.views, r.sc.y, r.eff.decision_threshold, positive=r.positive,
                            task=r.eff.task)
    r.row_values = RowValues(r.feats, r.passes)
    bh_null = r.null["scores"][r.primary] if r.rule == RULE_BH else None
    (r.n_flag, r.per_group, r.top, r.plot_scores, r.mem_scores, r.t_score, r.above,
     r.bh, r.n_scored) = score_all(
        r.source, r.feats, r.c_cols, r.sc, r.scorer, r.methods, r.thresholds,
        None if r.staging is None else r.staging.dir, r.bar, batch_size=int(st.batch_size),
        seed=st.seed, keep=r.in_memory, bh_null=bh_null, alpha=st.alpha, views=r.views,
        passes=r.passes, label=r.y_col if r.outcome.has_label else None,
        observers=(r.outcome, r.row_values, r.target.proba, r.missing), sampled=r.sampled)


@_one_torch_thread
def settle(r: Run) -> None:
    """Stage 4: the Benjamini-Hochberg cut, the top rows, the plot sample, the baselines."""
    from faux.audit.scores.baselines import sample_baselines

    bh, primary = r.bh, r.primary
    if bh is not None:  # Benjamini-Hochberg: the cut is known once every row is scored
        r.thresholds[primary] = bh["threshold"]
        r.above[primary] = bh["flagged"]
        if not r.passes:  # the score verdict: the cut decides flagged
            r.n_flag, r.per_group = bh["flagged"], bh["by_group"]
            r.top = [t for t in r.top if t[0] > bh["threshold"]]
            if r.mem_scores is not None:
                r.mem_scores["flagged"] = r.mem_scores[primary].to_numpy() > bh["threshold"]
            if r.staging is not None:
                rewrite_flagged(r.staging.dir / "scores.parquet", primary, bh["threshold"])
    r.thr = r.thresholds[primary]
    r.top_df = top_frame(r.top, r.scorer, r.feats)
    if r.null is not None:  # every j-th of the sorted null scores: the null's quantiles
        r.plot_scores.update({f"null:{m}": v[::max(1, len(v) // PLOT_SAMPLE)]
                              for m, v in r.null["scores"].items()})
    r.baselines = sample_baselines(r.target, r.aux_z, r.sc, primary,
                                   r.views[0].seed_scores[0], r.thr, fd_step=r.st.fd_step,
                                   batch_size=r.batch, seed=r.st.seed)
    from faux.audit.scores.scoring import FD_MEMO

    FD_MEMO.clear()
