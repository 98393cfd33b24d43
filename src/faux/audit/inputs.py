"""The audit's first two stages (``faux.audit.core._audit`` runs them, then those of
``faux.audit.stages``): ``plan``, what the settings decide before anything is opened
(``Plan``), and ``open_inputs``, the data source, its columns and the model (loaded, split
at a Pipeline's encoders), the output folder checked, all before a row is read
(``Inputs``). Also the model's checks on the sample rows, once the scan has drawn them
(``check_model_on_sample``, ``check_output``)."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from faux.audit.notices import warn
from faux.audit.progress import Progress
from faux.audit.report.outputs import OUTPUT_FILES, inspect_out
from faux.audit.settings import AuditSettings, check_fd_step_for
from faux.audit.sources.array_source import ArraySource
from faux.audit.sources.columns import check_columns, protected_list, refuse_repeated, suggestion
from faux.audit.sources.data import open_source
from faux.audit.verdict.rule import Settings as EffectSettings
from faux.audit.verdict.rule import check_for_task
from faux.errors import ConfigError, DataError

RULE_MANUAL, RULE_QUANTILE, RULE_BH = "manual threshold", "null quantile", "benjamini-hochberg"
#: how far outside [0, 1] a classifier's probability may round (a float32 softmax's 1 + 1e-7)
PROBA_SLACK = 1e-6


@dataclass(frozen=True)
class Plan:
    """What the settings ``st`` decide before anything is opened: the ``methods`` (the first
    decides), the effect verdict's settings (``eff``, the model's task not yet known), the
    output ``files``, the ``manual`` threshold (``--fail-above``, else ``--threshold``; None:
    calibrated) and the threshold ``rule``, the progress ``bar``, the rows per scoring batch
    (``batch``) and when the audit started (``t_start``)."""

    st: AuditSettings
    methods: tuple
    eff: EffectSettings
    files: tuple
    manual: float | None
    rule: str
    bar: Progress
    batch: int
    t_start: float

    @property
    def primary(self) -> str:
        return self.methods[0]


@dataclass(frozen=True)
class Inputs:
    """The data and the model, checked (``open_inputs``): the ``source`` the model reads (a
    Pipeline's: after its encoders) and the data as given (``raw_source``, hashed into the
    provenance), the protected columns ``c_cols`` and label column ``y_col``, the model's
    features ``feats`` and their ``layout`` (a Pipeline's encoders' blocks; None: inferred),
    the model (``target``), the effect settings with its task (``eff``), the audit's
    ``name``, its output folder (``out``; None: no files) and whether the data are arrays
    (``in_memory``: the scores are kept in the result)."""

    source: Any
    raw_source: Any
    c_cols: list
    y_col: str | None
    feats: list
    layout: Any
    target: Any
    eff: EffectSettings
    name: str
    out: Path | None
    in_memory: bool


def plan(st: AuditSettings) -> Plan:
    """Stage 1: what the (checked) settings decide."""
    manual = st.fail_above if st.fail_above is not None else st.threshold
    return Plan(st=st, methods=tuple(st.methods),
                eff=EffectSettings(st.decision_threshold, st.materiality, st.steps,
                                   st.support_margin),
                files=tuple(f for f in OUTPUT_FILES if st.report or f != "report.html"),
                manual=manual,
                rule=(RULE_MANUAL if manual is not None else RULE_BH if st.fdr
                      else RULE_QUANTILE),
                bar=Progress(st.progress), batch=min(int(st.batch_size), 65_536),
                t_start=time.perf_counter())


def _encodes_itself(model) -> bool:
    """True for an in-memory Pipeline whose first steps encode its columns (the data's
    columns are then checked after the split); a file is loaded first and checked after."""
    from faux.audit.loaders.encoders import split

    return not isinstance(model, str | Path) and split(model) is not None


def _encoded(model, source, features, exact: bool):
    """A Pipeline that encodes its own (string) columns: the model after its encoders, the
    data as the encoders output them, their column names as the features and their
    categorical blocks (``faux.audit.loaders.encoders``); anything else as it is (no blocks
    known)."""
    from faux.audit.loaders.encoders import EncodedSource, split
    from faux.audit.loaders.models import TargetModel, as_target

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


def check_model_on_sample(target, x: np.ndarray) -> None:
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


def _source(X, c, data, protected, y, label, features):
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


def open_inputs(plan: Plan, model, X, c, *, data, protected, y, label, features, out_dir,
                name) -> Inputs:
    """Stage 2: everything checked that can be before a row is read."""
    from faux.audit.loaders.models import as_target, load_model
    from faux.audit.scores.scoring import check_methods_for

    st = plan.st
    if out_dir is not None:  # before the data are opened: a bad --out fails fast
        inspect_out(Path(os.path.abspath(out_dir)), plan.files, st.force)
    given = features  # the features as the caller named them (None: not named)
    raw_source, c_cols, y_col, features, extra = _source(X, c, data, protected, y, label,
                                                         features)
    feats = None if _encodes_itself(model) else check_columns(
        raw_source.columns + extra, c_cols, y_col, features, raw_source.name)
    if isinstance(model, str | Path):  # before the data pass: a bad model fails fast
        model = load_model(model, None if feats is None else len(feats),
                           trust_pickle=st.trust_pickle, trusted_types=st.trusted_types,
                           exact=st.exact)
    model, source, features, layout = _encoded(model, raw_source, features, st.exact)
    if layout is not None or feats is None:
        feats = check_columns(source.columns + extra, c_cols, y_col, features, source.name)
    name = name or source.name
    out = None
    if out_dir is not None or data is not None:
        out = Path(out_dir) if out_dir is not None else Path("outputs") / "audit" / name
        if out_dir is None:
            inspect_out(Path(os.path.abspath(out)), plan.files, st.force)
    target = as_target(model, len(feats), exact=st.exact)
    if getattr(source, "named", True):  # an array without column names: read in order
        feats = fed_by_name(target, feats, None if layout is not None else given,
                            source.columns + extra, c_cols, y_col, source.name)
    eff = _settle_task(st, target, plan.eff)
    check_methods_for(target, plan.methods)
    check_fd_step_for(target, st.fd_step)
    return Inputs(source=source, raw_source=raw_source, c_cols=c_cols, y_col=y_col,
                  feats=feats, layout=layout, target=target, eff=eff, name=name, out=out,
                  in_memory=data is None)


def _settle_task(st: AuditSettings, target, eff: EffectSettings) -> EffectSettings:
    """The model's task (``--task`` against what the model says), and the verdict's and the
    label's settings that depend on it, before a row is read: ``eff`` with the task."""
    target.use_task(st.task)
    check_for_task(st.verdict, st.materiality, target.task, target.task_from)
    if target.regressor and st.positive_label is not None:
        raise ConfigError(f"positive_label (--positive-label) names a classifier's positive "
                          f"class; the model is a regressor ({target.task_from}): leave it out")
    return dataclasses.replace(eff, task=target.task)


def check_output(target, x: np.ndarray, threshold: float) -> None:
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
