"""The audit's settings: ``AuditSettings``, one frozen dataclass and the only list of them.

Each field carries, in its metadata (``setting(...)``), its help text, its command-line flag
and the flag's argparse details, so that ``faux.audit(...)``'s keywords, the CLI's flags and
help (``faux.audit.cli``) and ``help(faux.audit)`` (``faux.audit.audit_doc``) are all read
from here. A help text names another setting or input as `name` (backquoted): the CLI shows
its flag, the Python documentation its keyword; ``$name`` is a value filled in when the text
is shown (``faux.audit.audit_doc.help_text``). ``check`` checks every setting that needs no data, in one line each,
before anything is read."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
from dataclasses import dataclass

import numpy as np

from faux.audit.loaders.task import TASKS
from faux.audit.notices import warn
from faux.audit.passes.groups import AUX_SEEDS, MIN_CELL
from faux.audit.scores.calibration import SEED_MAX
from faux.audit.scores.methods import audit_methods, default_methods
from faux.audit.sources.protected import PROTECTED_TYPES
from faux.audit.verdict.rule import (
    DECISION_THRESHOLD,
    MATERIALITY,
    STEPS,
    SUPPORT_MARGIN,
    VERDICT,
    VERDICTS,
)
from faux.audit.verdict.rule import check_settings as check_verdict
from faux.errors import ConfigError

# --fd-step, in standard deviations of the features: a step of a whole standard deviation
# or more is no longer a derivative (a 1e6 step scores every row about 0, flagging nobody);
# above FD_STEP_WARN the difference quotient averages the model over a wide interval, below
# FD_STEP_LOW_WARN a float32 model's rounding can swamp the difference
FD_STEP_MAX = 1.0
FD_STEP_WARN = 0.25
FD_STEP_LOW_WARN = 1e-4
ALPHA = 0.01  # default false-flag rate of the calibrated thresholds
NULL_PERMUTATIONS = 3  # default number of aux models trained on a permuted protected attribute
#: how the effect verdict builds each row's counterfactual: "transport" (faux.audit.counterfactual.transport:
#: what c does not cause held fixed, the rest carried keeping the person's rank) or "aux"
#: (what the aux models read c from moved to the other group's values, faux.audit.counterfactual.effects)
COUNTERFACTUALS = ("transport", "aux")
COUNTERFACTUAL = "transport"
NULL_TRANSPORTS = 10  # transports fitted with c permuted: the expected false flags, the test
#: which rows a black box's finite-difference scores are computed for under the effect verdict
FD_SCORES = ("sample", "all")
#: the aux models (faux.audit.scores.aux.AUX_KINDS, which loads torch)
AUX_CHOICES = ("mlp", "adel")
#: the longest ``model_version`` (a version string, a commit, a registry tag: one line)
MODEL_VERSION_MAX = 200
#: where the pass over the rows runs: in this process, or on Ray (faux.audit.engine)
ENGINES = ("local", "ray")


# ------------------------------------------------------------- the flags' value types
def _parser(convert, ok, what: str):
    """A flag's value type: ``convert`` the text, refused unless ``ok`` (``must be what``)."""
    def parse(v: str):
        try:
            x = convert(v)
        except ValueError:
            x = None
        if x is None or not ok(x):
            raise argparse.ArgumentTypeError(f"must be {what}, got {v!r}")
        return x

    return parse


_positive_int = _parser(int, lambda n: n >= 1, "a positive integer")
_nonneg_float = _parser(float, lambda x: x >= 0, "a non-negative number")
_number = _parser(float, lambda x: True, "a number")
_int = _parser(int, lambda n: True, "an integer")


def setting(default, help: str, flag: str | None = None, *, kind: str | None = None,
            stands_for=None, **cli):
    """A field of ``AuditSettings``: its ``default``, its ``help`` text, its command-line
    ``flag`` (None: a Python keyword only) with the flag's argparse details in ``cli``
    (``type``, ``choices`` (a tuple, or a function giving one when the parser is built),
    ``nargs``, ``metavar``, ``action``). ``kind``: the type in the Python documentation
    (default: the field's annotation); ``stands_for``: for a None default, the function
    giving the value it stands for."""
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "kind": kind, "stands_for": stands_for, "cli": cli})


@dataclass(frozen=True)
class AuditSettings:
    """Every keyword setting of an audit, with its default, its help and its flag: the
    keywords of ``faux.audit(...)`` and the settings flags of ``faux audit``. A new setting
    is a field here (and, when it needs one, a check called by ``check``)."""

    # the model
    task: str = setting(
        "auto", 'What the model\'s output is. "auto" reads it from the model: scikit-learn\'s '
        "is_classifier / is_regressor, a LightGBM Booster's objective (binary, cross_entropy: "
        "a classifier; regression, huber, ...: a regressor), an ONNX model's outputs (class "
        "labels or probabilities); a torch model (logits) and a function (a probability) are "
        'classifiers. "regression" audits the predicted value itself, flagging a row when it '
        "moves by at least `materiality`, in the output's units. A given task that "
        'contradicts the model\'s is refused, as is "auto" for a model that says nothing.',
        "--task", choices=TASKS)
    positive_label: str | int | float | bool | None = setting(
        None, "The `label` value that is the positive class (the model's probability is of "
        "it), for the outcome metrics (default: 1 for a 0/1 or true/false label; for any "
        "other label the model's classes_[1], what its predict_proba column 1 means, when it "
        "has classes_ matching the label's values; else the audit asks for it). It must agree "
        "with classes_[1] when that is known.",
        "--positive-label", kind="str, int, float or bool", metavar="VALUE")
    model_version: str | None = setting(
        None, "The model's own version (a version number, a commit, a registry tag; one line "
        f"of at most {MODEL_VERSION_MAX} characters), recorded in summary.json's provenance "
        "and shown in the report.", "--model-version", metavar="TEXT")
    exact: bool = setting(
        True, "On, a scikit-learn linear model, MLP or scaler pipeline is scored by autograd "
        "through its checked torch conversion (faux.audit.loaders.exact); off, as a black box "
        "(finite differences).", "--no-exact")
    trust_pickle: bool = setting(
        False, "Allow pickle / joblib / torch.save model files: loading them runs code from "
        "the file, so only for files you trust.", "--trust-pickle")
    trusted_types: tuple = setting(
        (), "Types a .skops model file may instantiate beyond skops' default trust list "
        "(e.g. lightgbm.sklearn.LGBMClassifier); on the command line, one per flag.",
        "--trust-type", kind="sequence of str", action="append", metavar="TYPE")
    # the verdict
    verdict: str = setting(
        VERDICT, 'What flags a row: "effect", its decision changes at its counterfactual '
        'under every aux model; "score", the first method\'s score above its threshold (the '
        "audit's earlier rule; the scores are diagnostic columns otherwise).",
        "--verdict", choices=VERDICTS)
    counterfactual: str = setting(
        COUNTERFACTUAL, "How the effect verdict builds each row's counterfactual. "
        '"transport" (faux.audit.counterfactual.transport): the features whose distribution '
        "does not depend on the protected attribute are held fixed, the others carried to "
        "the other group in order, each person keeping their residual (additive noise) or "
        "rank, categories by the maximal coupling; a row is flagged when its decision "
        "changes under every one of `aux_seeds` fits (the first on the sample, the others on "
        'bootstrap resamples). "aux" (faux.audit.counterfactual.effects): what the aux '
        "models read the attribute from is moved to the other group's values. A continuous "
        'attribute needs "aux".', "--counterfactual", choices=COUNTERFACTUALS)
    hold: tuple = setting(
        (), "With the transport: feature columns the protected attribute cannot cause, held "
        "fixed whatever the data say (for a Pipeline that encodes its columns: its raw "
        "columns) (default: those whose distribution does not depend on it, by a test).",
        "--hold", kind="list of str", nargs="+", metavar="COLUMN")
    direct_only: bool = setting(
        False, "For a model that reads the protected column itself (it is among its "
        "features): flip that column alone, nothing it causes (the classic flip test). By "
        "default the column is flipped together with what the transport carries.",
        "--direct-only")
    null_transports: int = setting(
        NULL_TRANSPORTS, "With the transport: transports fitted with the attribute permuted; "
        "their flags on the sample are the expected false flags (mean and 95 % interval, "
        "scaled to the rows) and the model-level test's null.",
        "--null-transports", type=_int, metavar="N")
    decision_threshold: float = setting(
        DECISION_THRESHOLD, "The model's decision threshold on its probability, above 0 and "
        "below 1 (the effect verdict and the group outcomes use p >= the threshold). A "
        "classifier whose probability is on one side of it for every sample row is warned "
        "about. Not used for a regressor.", "--decision-threshold", type=_number, metavar="T")
    materiality: float | None = setting(
        MATERIALITY, "Flag a row when its output moves by at least this much under every aux "
        "model with one sign, instead of when its decision changes: a change of probability "
        "in (0, 1] for a classifier; for a regressor, whose effect verdict needs it (no "
        "default), a change of its predicted value in the output's own units.",
        "--materiality", type=_number, metavar="D")
    steps: int = setting(STEPS, "First-order steps along the path to each counterfactual "
                         "(at least 1).", "--steps", type=_int, metavar="K")
    support_margin: float = setting(
        SUPPORT_MARGIN, "Widening of the sample's per-feature [min, max] box, as a share of "
        "its range on each side, beyond which a counterfactual is marked off support.")
    # the scores, their thresholds and the gates
    methods: tuple | None = setting(
        None, "Scorers, one score column each; the first decides who is flagged under the "
        "score verdict (diagnostic columns otherwise).$torch_only", "--methods",
        kind="list of str", stands_for=default_methods, nargs="+", choices=audit_methods)
    alpha: float = setting(
        ALPHA, "Calibrated thresholds (the default rule): a row is flagged when its "
        "first-method score exceeds the 1 - alpha quantile of the scores under aux models "
        "trained on a randomly permuted protected attribute, so that about alpha x rows are "
        "flagged for a model that ignores it; with `fdr`, the false discovery rate. Above 0 "
        "and below 1.", "--alpha", kind="float in (0, 1)", type=float, metavar="A")
    null_permutations: int = setting(
        NULL_PERMUTATIONS, "Aux models trained on a permuted protected attribute, each "
        "scoring the `sample` rows: the null for the thresholds, the expected false flags and "
        "the model-level test.", "--null-permutations", type=int, metavar="N")
    fdr: bool = setting(
        False, "Flag by Benjamini-Hochberg over the rows at false discovery rate `alpha` "
        "(p-values from the null scores) for the first method's threshold, instead of the "
        "null quantile.", "--fdr")
    threshold: float | None = setting(
        None, "A manual threshold on the first method's score instead of the calibrated one: "
        "under the score verdict a row is flagged when its first-method score exceeds it "
        "(the other methods then report rows above $thresholds). Not a gate.",
        "--threshold", type=_nonneg_float, metavar="DELTA")
    fail_above: float | None = setting(
        None, "A manual threshold that is also a gate, under the score verdict only: rows "
        "scoring above it are flagged, and the audit fails (passed False, exit 1) if any row "
        "is (or, with `max_flagged_rate`, if more than that share is).",
        "--fail-above", type=_nonneg_float, metavar="DELTA")
    max_flagged_rate: float | None = setting(
        None, "Gate: the audit fails (passed False, exit 1) when the share of flagged rows "
        "exceeds this (0..1).", "--max-flagged-rate", kind="float in [0, 1]", type=float,
        metavar="R")
    max_excess_flags: float | None = setting(
        None, "A gate of the transport's verdict: the audit fails (passed False, exit 1) when "
        "an attribute's flags exceed the upper end of the 95 % interval of what chance flags "
        "(the null transports) by more than this share of the rows; 0 fails on any excess.",
        "--max-excess-flags", type=_number, metavar="R")
    # the aux models and the groups
    aux: str = setting(
        "mlp", 'The aux model of the protected attribute: "mlp", an MLP, or "adel", the Adel '
        "et al. aux kept from reading the label (needs the label, `label`; binary attributes "
        "only).", "--aux", choices=AUX_CHOICES)
    aux_seeds: int = setting(
        AUX_SEEDS, "Aux models per attribute, trained with different seeds: under the effect "
        "verdict each gives every row a counterfactual and a row is flagged only when they "
        "all agree (1 + this many model calls per row for a binary attribute); they also "
        "score the `sample` rows for the intervals over seeds. At least 1.",
        "--aux-seeds", type=int, metavar="N")
    aux_epochs: int = setting(
        30, "Maximum training epochs of each aux model, early stopping on the held-out rows.",
        "--aux-epochs", type=_positive_int, metavar="N")
    aux_width: int = setting(64, "Hidden width of the aux MLP.")
    aux_depth: int = setting(2, "Hidden layers of the aux MLP (0: linear).")
    protected_type: str | tuple = setting(
        "auto", 'How to read the protected attribute(s): "auto", "binary", "categorical" or '
        '"continuous", one for every attribute or one per attribute; "auto" reads 2 values as '
        "binary, up to 20 categorical, more numeric values continuous.", "--protected-type",
        kind="str or list of str", choices=PROTECTED_TYPES, nargs="+")
    min_cell: int = setting(
        MIN_CELL, "Smallest intersection cell, in `sample` rows: smaller cells are merged "
        'into one cell "other" (0 merges none).', "--min-cell", type=int, metavar="N")
    intersection: bool = setting(
        True, "On, two or more categorical protected attributes also get their "
        "intersection as a view of its own; off, no intersection view.", "--no-intersection")
    # the run
    sample: int = setting(
        20_000, "Rows drawn uniformly to train the aux models (80%) and measure their quality "
        "(20%), and for the calibration.", "--sample", type=_positive_int, metavar="N")
    batch_size: int = setting(65_536, "Rows read and scored at a time; bounds memory.",
                              "--batch-size", type=_positive_int, metavar="N")
    fd_step: float = setting(
        0.1, "Black boxes' central finite-difference step, in standard deviations of the "
        f"features: above 0 and at most {FD_STEP_MAX:g}, with a warning above "
        f"{FD_STEP_WARN:g} (coarse) or below {FD_STEP_LOW_WARN:g} (float32 rounding).",
        "--fd-step", type=float, metavar="H")
    fd_scores: str = setting(
        "sample", "Black boxes under the effect verdict: the finite-difference scores "
        "(diagnostics, 2k + 2d model calls per row) of the `sample` rows only (NaN for the "
        "other rows; the counts above thresholds, top rows and plots are the sample's), or of "
        "all rows. Torch and converted models, and the score verdict, score every row.",
        "--fd-scores", choices=FD_SCORES)
    seed: int = setting(0, "Seed of the sample, the aux models and the intervals.", "--seed",
                        type=int)
    progress: bool | None = setting(
        None, "A progress bar on a terminal, a line every 10 s elsewhere (default: by where "
        "stderr goes); off, neither.", "--no-progress")
    report: bool = setting(True, "Write report.html, the self-contained report, beside "
                           "scores.parquet and summary.json.")
    force: bool = setting(
        False, "Write into an output folder (`out_dir`) that holds other files, beside them "
        "(they are never replaced, renamed or deleted).", "--force")
    engine: str = setting(
        "local", 'Where the rows are scored: "local", in this process; "ray", by Ray actors '
        "(faux.audit.engine), the `data` then a Parquet file, a folder of them or a glob "
        "(quoted on the command line), each actor reading its own rows, on the cluster at "
        "RAY_ADDRESS, else on a local Ray with this machine's cores. The aux models are "
        "fitted in this process either way, and the outputs are the same, but for "
        "scores.parquet, then a folder of one file per batch.", "--engine", choices=ENGINES)
    workers: int | None = setting(
        None, 'With `engine` "ray": the Ray actors scoring the rows, each with its own copy '
        "of the model (default: the cluster's CPUs).", "--workers", type=_positive_int,
        metavar="N")

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def resolved(self) -> AuditSettings:
        """The settings as the audit reads them: ``methods`` a tuple (None: the default
        methods), ``hold`` a tuple."""
        methods = default_methods() if self.methods is None else self.methods
        hold = tuple(self.hold) if isinstance(self.hold, list | tuple) else self.hold
        return dataclasses.replace(self, methods=tuple(methods), hold=hold)

    def check(self, has_label: bool) -> None:
        """Every setting that needs no data (``ConfigError``, one line each)."""
        from faux.audit.passes.groups import check_settings as check_groups

        check_groups(self.aux_seeds, self.min_cell, self.intersection)
        for check in (_check_methods, _check_sizes, _check_thresholds, _check_calibration,
                      _check_protected_type):
            check(self)
        _check_aux(self, has_label)
        _check_fd_step(self)
        if self.task not in TASKS:
            raise ConfigError(f"task (--task) must be one of {', '.join(TASKS)}, got "
                              f"{self.task!r}; the default 'auto' reads it from the model")
        check_verdict(self.verdict, self.decision_threshold, self.materiality, self.steps,
                      self.support_margin, self.fail_above, self.task)
        _check_positive_label(self.positive_label, has_label)
        _check_counterfactual(self)
        _check_model_version(self.model_version)
        if self.fd_scores not in FD_SCORES:
            raise ConfigError(f"fd_scores (--fd-scores) must be one of {', '.join(FD_SCORES)}, "
                              f"got {self.fd_scores!r}")
        from faux.audit.engine.session import check_settings as check_engine

        check_engine(self.engine, self.workers, ENGINES)


DEFAULTS = AuditSettings()


def from_keywords(settings: AuditSettings | None, overrides: dict,
                  caller: str = "audit") -> AuditSettings:
    """``settings`` (default ``AuditSettings()``) with ``overrides`` (setting name -> value)
    in place, resolved. An unknown name is a ``TypeError``, as Python's own for a keyword
    the function lacks, naming the closest setting."""
    if settings is None:
        settings = DEFAULTS
    elif not isinstance(settings, AuditSettings):
        raise TypeError(f"{caller}() settings must be an AuditSettings, got "
                        f"{type(settings).__name__}")
    names = AuditSettings.names()
    for key in overrides:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = (f"did you mean {close[0]!r}?" if close
                    else "the settings are AuditSettings' fields, see help(faux.audit)")
            raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}; {hint}")
    return dataclasses.replace(settings, **overrides).resolved()


# ------------------------------------------------------------- the checks
def _is_int(v) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)


def _share(v) -> bool:
    return _is_number(v) and math.isfinite(v) and 0 <= v <= 1


def _check_methods(st: AuditSettings) -> None:
    methods = list(st.methods or ())
    if not methods:
        raise ConfigError(f"no methods given; pass at least one of {', '.join(audit_methods())}")
    unknown = [m for m in methods if m not in audit_methods()]
    if unknown:
        raise ConfigError(f"unknown method(s) {unknown}; choose from "
                          f"{', '.join(audit_methods())}")
    if len(set(methods)) != len(methods):
        raise ConfigError(f"methods are repeated: {methods}")


def _check_sizes(st: AuditSettings) -> None:
    for v, what in ((st.sample, "sample"), (st.batch_size, "batch_size"),
                    (st.aux_epochs, "aux_epochs")):
        if not _is_number(v) or int(v) != v or v < 1:
            raise ConfigError(f"{what} must be a positive integer, got {v!r}")
    if not _is_int(st.aux_width) or st.aux_width < 1:
        raise ConfigError(f"aux_width must be a positive integer, got {st.aux_width!r}")
    if not _is_int(st.aux_depth) or st.aux_depth < 0:
        raise ConfigError(f"aux_depth must be a non-negative integer, got {st.aux_depth!r}")
    if not _is_int(st.seed) or not 0 <= st.seed <= SEED_MAX:
        raise ConfigError(f"seed (--seed) must be an integer from 0 to {SEED_MAX}, got "
                          f"{st.seed!r}")


def _check_thresholds(st: AuditSettings) -> None:
    for v, what in ((st.threshold, "threshold (--threshold)"),
                    (st.fail_above, "fail_above (--fail-above)")):
        if v is not None and (not _is_number(v) or not math.isfinite(v) or v < 0):
            raise ConfigError(f"{what} must be a finite non-negative number, got {v!r}")
    rate = st.max_flagged_rate
    if rate is not None and (not _is_number(rate) or not 0 <= rate <= 1):
        raise ConfigError(f"max_flagged_rate must be in [0, 1], got {rate}")
    if st.threshold is not None and st.fail_above is not None and st.threshold != st.fail_above:
        raise ConfigError("threshold and fail_above differ; pass one of them (fail_above is "
                          "the threshold and a gate)")


def _check_calibration(st: AuditSettings) -> None:
    if not _is_number(st.alpha) or not math.isfinite(st.alpha) or not 0 < st.alpha < 1:
        raise ConfigError(f"alpha (--alpha) must be a number above 0 and below 1, got "
                          f"{st.alpha!r}; the default {ALPHA:g} flags about {ALPHA:.0%} of "
                          "rows of a model that ignores the protected attribute")
    if not _is_int(st.null_permutations) or st.null_permutations < 1:
        raise ConfigError(f"null_permutations (--null-permutations) must be a positive "
                          f"integer, got {st.null_permutations!r}; the default is "
                          f"{NULL_PERMUTATIONS}")
    if not isinstance(st.fdr, bool):
        raise ConfigError(f"fdr must be True or False, got {st.fdr!r}")
    if st.fdr and (st.threshold is not None or st.fail_above is not None):
        raise ConfigError("--fdr applies to the calibrated thresholds; drop it, or drop "
                          "--threshold / --fail-above (a manual threshold)")


def _protected_types(st: AuditSettings) -> list:
    t = st.protected_type
    return [t] if isinstance(t, str) else list(t)


def _check_protected_type(st: AuditSettings) -> None:
    for t in _protected_types(st):
        if t not in PROTECTED_TYPES:
            raise ConfigError(f"protected_type={t!r} is not one of {PROTECTED_TYPES}")


def _check_aux(st: AuditSettings, has_label: bool) -> None:
    from faux.audit.scores.aux import AUX_KINDS

    if st.aux not in AUX_KINDS:
        raise ConfigError(f"aux={st.aux!r} is not one of {AUX_KINDS}")
    if st.aux == "adel" and not has_label:
        raise ConfigError("--aux adel needs --label (the Adel aux is kept from reading y)")
    if st.aux == "adel" and "continuous" in _protected_types(st):
        raise ConfigError("the Adel aux is a classifier; use --aux mlp for a continuous "
                          "protected attribute")


def _check_fd_step(st: AuditSettings) -> None:
    h = st.fd_step
    if not _is_number(h) or not math.isfinite(h) or not 0 < h <= FD_STEP_MAX:
        raise ConfigError(f"fd_step (--fd-step) must be a finite number of standard deviations "
                          f"of the features, above 0 and at most {FD_STEP_MAX:g}, got "
                          f"{h!r}; the default {DEFAULTS.fd_step:g} suits most models")


def _check_counterfactual(st: AuditSettings) -> None:
    if st.counterfactual not in COUNTERFACTUALS:
        raise ConfigError(f"counterfactual (--counterfactual) must be one of "
                          f"{', '.join(COUNTERFACTUALS)}, got {st.counterfactual!r}")
    hold = st.hold
    if isinstance(hold, str) or not all(isinstance(h, str) and h for h in hold):
        raise ConfigError(f"hold (--hold) must be a list of column names, got {hold!r}")
    n = st.null_transports
    if not _is_int(n) or not 2 <= n <= 1000:
        raise ConfigError(f"null_transports (--null-transports) must be an integer from 2 to "
                          f"1000, got {n!r}; the default is {NULL_TRANSPORTS}")
    v = st.max_excess_flags
    if v is not None and not _share(v):
        raise ConfigError(f"max_excess_flags (--max-excess-flags) must be a share of the "
                          f"rows from 0 to 1, got {v!r}")


def _check_model_version(value) -> None:
    if value is None:
        return
    if (not isinstance(value, str) or not value.strip() or len(value) > MODEL_VERSION_MAX
            or any(ch in value for ch in "\r\n")):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise ConfigError(f"model_version (--model-version) must be one line of text of at "
                          f"most {MODEL_VERSION_MAX} characters naming the model's version "
                          f"(a version, a commit, a registry tag), got {shown}")


def _check_positive_label(value, has_label: bool) -> None:
    if value is None:
        return
    ok = isinstance(value, str | int | float | bool | np.integer | np.floating | np.bool_)
    if not ok or (isinstance(value, float | np.floating) and not math.isfinite(value)) or (
            isinstance(value, str) and not value.strip()):
        raise ConfigError(f"positive_label (--positive-label) must be one value of the label, "
                          f"got {value!r}")
    if not has_label:
        raise ConfigError("positive_label (--positive-label) names the label's positive class; "
                          "pass the label too (y= / label=, --label)")


def check_fd_step_for(target, fd_step: float) -> None:
    """Warn about a step that is allowed but unusual, for a model it is used on."""
    if target.differentiable:
        return
    if fd_step > FD_STEP_WARN:
        warn(f"--fd-step {fd_step:g} standard deviations is coarse (above {FD_STEP_WARN:g}): "
              "the finite differences average the model over a wide interval and can miss "
              f"local unfairness; the default is {DEFAULTS.fd_step:g}")
    elif fd_step < FD_STEP_LOW_WARN:
        warn(f"--fd-step {fd_step:g} standard deviations is tiny (below {FD_STEP_LOW_WARN:g}): "
              f"a float32 model's rounding can swamp the differences; the default is "
              f"{DEFAULTS.fd_step:g}")
