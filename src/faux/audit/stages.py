"""The audit's stages, in the order ``faux.audit.core._audit`` runs them on one ``Run``:

1. ``open_inputs``: the data source, its columns, the model (loaded, split at a Pipeline's
   encoders), the output folder checked, before any row is read;
2. ``fit``: the scan (rows, protected attributes, sample), the aux models, the thresholds,
   the group views and the effect passes, on the sample;
3. ``score``: the pass over every row (``faux.audit.score_pass``);
4. ``settle``: what is known once every row is scored (the Benjamini-Hochberg cut, the top
   rows, the plot sample, the baselines);
5. ``faux.audit.summary.build``: summary.json's content and the gate.

``fit``, ``score`` and ``settle`` run torch on one intra-op thread, the caller's count restored
after (``faux.audit.aux_family.one_thread``, as the aux models train): the audit's torch work
is many small operations (aux models 64 units wide, a counterfactual path of ``steps``
gradients per aux model and row), which two threads handing each one off ran 3-5x slower
than one on a shared 2-core machine (docs/notebook/audit_speed.md); a model on the GPU is
not affected, nor are the threads of a black box's own library (scikit-learn, LightGBM).
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import numpy as np

from faux.audit.calibration import null_quantile, null_scores
from faux.audit.data import ArraySource, check_columns, open_source, protected_list, scan
from faux.audit.flagged_rows import RowValues
from faux.audit.interrupts import AuditInterrupted
from faux.audit.methods import threshold as default_threshold
from faux.audit.missing import Missing, NanTarget
from faux.audit.outcome_pass import OutcomePass
from faux.audit.outputs import OUTPUT_FILES, Staging, inspect_out
from faux.audit.progress import Progress
from faux.audit.ranking import feature_groups, feature_ranking
from faux.audit.score_pass import (
    PLOT_SAMPLE,
    rewrite_flagged,
    sample_scores,
    score_all,
    top_frame,
)
from faux.audit.settings import AuditSettings, check_fd_step_for
from faux.audit.verdict import Settings as EffectSettings
from faux.errors import ConfigError, DataError

RULE_MANUAL, RULE_QUANTILE, RULE_BH = "manual threshold", "null quantile", "benjamini-hochberg"


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
        from faux.audit.scoring import FD_MEMO  # torch loads only when an audit runs

        FD_MEMO.clear()  # a model's finite-difference gradients are this audit's own


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
    from faux.audit.models import as_target, load_model
    from faux.audit.scoring import check_methods_for

    st = r.st
    if out_dir is not None:  # before the data are opened: a bad --out fails fast
        inspect_out(Path(os.path.abspath(out_dir)), r.files, st.force)
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
    check_methods_for(r.target, r.methods)
    check_fd_step_for(r.target, st.fd_step)


def _scan(r: Run) -> None:
    from faux.audit.groups import build_views
    from faux.audit.layout import Layout
    from faux.audit.scoring import check_methods_for

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
    r.views = build_views(sc, int(st.min_cell), st.intersection)
    _check_model_on_sample(r.target, sc.x)
    if not r.target.verify_exact(sc.x):  # a conversion that differs on the data
        check_methods_for(r.target, r.methods)
    r.z_sample = (sc.x - sc.mean) / sc.scale


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
        from faux.audit.aux_family import one_thread  # torch loads only when an audit runs

        with one_thread():
            return stage(r)
    return run


@_one_torch_thread
def fit(r: Run) -> None:
    """Stage 2: the scan, then the aux models, thresholds, views and effect passes. The
    primary view's aux, its null models (calibrated thresholds) and its other seeds train
    together, as one stacked network (``faux.audit.groups.train_primary``)."""
    from faux.audit.effect_pass import null_nets_for
    from faux.audit.effect_pass import prepare as prepare_effects
    from faux.audit.groups import train_primary, train_views
    from faux.audit.scoring import Scorer

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
        r.passes = [] if st.verdict != "effect" else prepare_effects(
            r.views, null_nets_for(sc, z, st.null_permutations, seed=st.seed,
                                   **_aux_settings(st)),
            target, sc, z, r.feats, settings=r.eff, batch_size=r.batch, layout=r.layout)
        if sampled_scores(st, r.target):
            r.sampled = sample_scores(r.views, sc, r.batch)
    except SystemExit:
        raise AuditInterrupted from None


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
    r.outcome = OutcomePass(r.views, r.sc.y, r.eff.decision_threshold)
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
    from faux.audit.baselines import sample_baselines

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
    from faux.audit.scoring import FD_MEMO

    FD_MEMO.clear()
