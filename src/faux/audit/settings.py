"""The audit's settings: ``AuditSettings``, one frozen dataclass whose field defaults are
the defaults of ``faux.audit(...)``'s keywords and of the CLI's flags (and its help), and the
check of every setting that needs no data, in one line each, before anything is read."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from faux.audit.loaders.task import TASKS
from faux.audit.notices import warn
from faux.audit.passes.groups import AUX_SEEDS, MIN_CELL
from faux.audit.scores.calibration import SEED_MAX
from faux.audit.scores.methods import audit_methods
from faux.audit.sources.protected import PROTECTED_TYPES
from faux.audit.verdict.rule import (
    DECISION_THRESHOLD,
    MATERIALITY,
    STEPS,
    SUPPORT_MARGIN,
    VERDICT,
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


@dataclass(frozen=True)
class AuditSettings:
    """Every keyword setting of an audit, with its default (see ``faux.audit.core.audit``
    for what each one does). ``methods`` None: ``faux.audit.scores.methods.default_methods()``."""

    methods: tuple | None = None
    aux: str = "mlp"
    aux_epochs: int = 30
    aux_width: int = 64
    aux_depth: int = 2
    sample: int = 20_000
    batch_size: int = 65_536
    threshold: float | None = None
    fail_above: float | None = None
    max_flagged_rate: float | None = None
    protected_type: str | tuple = "auto"
    fd_step: float = 0.1
    fd_scores: str = "sample"
    seed: int = 0
    trust_pickle: bool = False
    trusted_types: tuple = ()
    progress: bool | None = None
    report: bool = True
    force: bool = False
    alpha: float = ALPHA
    null_permutations: int = NULL_PERMUTATIONS
    fdr: bool = False
    aux_seeds: int = AUX_SEEDS
    min_cell: int = MIN_CELL
    intersection: bool = True
    exact: bool = True
    verdict: str = VERDICT
    decision_threshold: float = DECISION_THRESHOLD
    materiality: float | None = MATERIALITY
    steps: int = STEPS
    support_margin: float = SUPPORT_MARGIN
    task: str = "auto"
    positive_label: str | int | float | bool | None = None
    counterfactual: str = COUNTERFACTUAL
    hold: tuple = ()
    null_transports: int = NULL_TRANSPORTS
    direct_only: bool = False
    max_excess_flags: float | None = None
    model_version: str | None = None

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def check(self, has_label: bool) -> None:
        """Every setting that needs no data (``ConfigError``, one line each)."""
        _check_settings(methods=list(self.methods or ()), aux=self.aux,
                        aux_epochs=self.aux_epochs, aux_width=self.aux_width,
                        aux_depth=self.aux_depth, sample=self.sample,
                        batch_size=self.batch_size, threshold=self.threshold,
                        fail_above=self.fail_above, max_flagged_rate=self.max_flagged_rate,
                        protected_type=self.protected_type, fd_step=self.fd_step,
                        seed=self.seed, has_label=has_label, alpha=self.alpha,
                        null_permutations=self.null_permutations, fdr=self.fdr,
                        aux_seeds=self.aux_seeds, min_cell=self.min_cell,
                        intersection=self.intersection)
        if self.task not in TASKS:
            raise ConfigError(f"task (--task) must be one of {', '.join(TASKS)}, got "
                              f"{self.task!r}; the default 'auto' reads it from the model")
        check_verdict(self.verdict, self.decision_threshold, self.materiality, self.steps,
                      self.support_margin, self.fail_above, self.task)
        _check_positive_label(self.positive_label, has_label)
        _check_counterfactual(self.counterfactual, self.hold, self.null_transports)
        v = self.max_excess_flags
        if v is not None and (not _is_number(v) or not math.isfinite(v) or not 0 <= v <= 1):
            raise ConfigError(f"max_excess_flags (--max-excess-flags) must be a share of the "
                              f"rows from 0 to 1, got {v!r}")
        _check_model_version(self.model_version)
        if self.fd_scores not in FD_SCORES:
            raise ConfigError(f"fd_scores (--fd-scores) must be one of {', '.join(FD_SCORES)}, "
                              f"got {self.fd_scores!r}")


DEFAULTS = AuditSettings()


def _is_int(v) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)


def _check_settings(*, methods, aux, aux_epochs, aux_width, aux_depth, sample, batch_size,
                    threshold, fail_above, max_flagged_rate, protected_type, fd_step, seed,
                    has_label, alpha, null_permutations, fdr, aux_seeds, min_cell,
                    intersection) -> None:
    """Every setting that needs no data, in one line each, before anything is read."""
    from faux.audit.passes.groups import check_settings
    from faux.audit.scores.aux import AUX_KINDS

    check_settings(aux_seeds, min_cell, intersection)

    if not methods:
        raise ConfigError(f"no methods given; pass at least one of {', '.join(audit_methods())}")
    unknown = [m for m in methods if m not in audit_methods()]
    if unknown:
        raise ConfigError(f"unknown method(s) {unknown}; choose from "
                          f"{', '.join(audit_methods())}")
    if len(set(methods)) != len(methods):
        raise ConfigError(f"methods are repeated: {methods}")
    for v, what in ((sample, "sample"), (batch_size, "batch_size"), (aux_epochs, "aux_epochs")):
        if not _is_number(v) or int(v) != v or v < 1:
            raise ConfigError(f"{what} must be a positive integer, got {v!r}")
    if not _is_int(aux_width) or aux_width < 1:
        raise ConfigError(f"aux_width must be a positive integer, got {aux_width!r}")
    if not _is_int(aux_depth) or aux_depth < 0:
        raise ConfigError(f"aux_depth must be a non-negative integer, got {aux_depth!r}")
    if not _is_int(seed) or not 0 <= seed <= SEED_MAX:
        raise ConfigError(f"seed (--seed) must be an integer from 0 to {SEED_MAX}, got {seed!r}")
    for v, what in ((threshold, "threshold (--threshold)"),
                    (fail_above, "fail_above (--fail-above)")):
        if v is not None and (not _is_number(v) or not math.isfinite(v) or v < 0):
            raise ConfigError(f"{what} must be a finite non-negative number, got {v!r}")
    if max_flagged_rate is not None and (not _is_number(max_flagged_rate)
                                         or not 0 <= max_flagged_rate <= 1):
        raise ConfigError(f"max_flagged_rate must be in [0, 1], got {max_flagged_rate}")
    if threshold is not None and fail_above is not None and threshold != fail_above:
        raise ConfigError("threshold and fail_above differ; pass one of them (fail_above is "
                          "the threshold and a gate)")
    if (not _is_number(alpha) or not math.isfinite(alpha) or not 0 < alpha < 1):
        raise ConfigError(f"alpha (--alpha) must be a number above 0 and below 1, got "
                          f"{alpha!r}; the default {ALPHA:g} flags about {ALPHA:.0%} of rows of "
                          "a model that ignores the protected attribute")
    if not _is_int(null_permutations) or null_permutations < 1:
        raise ConfigError(f"null_permutations (--null-permutations) must be a positive integer, "
                          f"got {null_permutations!r}; the default is {NULL_PERMUTATIONS}")
    if not isinstance(fdr, bool):
        raise ConfigError(f"fdr must be True or False, got {fdr!r}")
    if fdr and (threshold is not None or fail_above is not None):
        raise ConfigError("--fdr applies to the calibrated thresholds; drop it, or drop "
                          "--threshold / --fail-above (a manual threshold)")
    types = [protected_type] if isinstance(protected_type, str) else list(protected_type)
    for t in types:
        if t not in PROTECTED_TYPES:
            raise ConfigError(f"protected_type={t!r} is not one of {PROTECTED_TYPES}")
    if aux not in AUX_KINDS:
        raise ConfigError(f"aux={aux!r} is not one of {AUX_KINDS}")
    if aux == "adel" and not has_label:
        raise ConfigError("--aux adel needs --label (the Adel aux is kept from reading y)")
    if aux == "adel" and "continuous" in types:
        raise ConfigError("the Adel aux is a classifier; use --aux mlp for a continuous "
                          "protected attribute")
    if (not _is_number(fd_step) or not math.isfinite(fd_step) or not 0 < fd_step
            <= FD_STEP_MAX):
        raise ConfigError(f"fd_step (--fd-step) must be a finite number of standard deviations "
                          f"of the features, above 0 and at most {FD_STEP_MAX:g}, got "
                          f"{fd_step!r}; the default {DEFAULTS.fd_step:g} suits most models")


def _check_counterfactual(counterfactual, hold, null_transports) -> None:
    if counterfactual not in COUNTERFACTUALS:
        raise ConfigError(f"counterfactual (--counterfactual) must be one of "
                          f"{', '.join(COUNTERFACTUALS)}, got {counterfactual!r}")
    if isinstance(hold, str) or not all(isinstance(h, str) and h for h in hold):
        raise ConfigError(f"hold (--hold) must be a list of column names, got {hold!r}")
    if not _is_int(null_transports) or not 2 <= null_transports <= 1000:
        raise ConfigError(f"null_transports (--null-transports) must be an integer from 2 to "
                          f"1000, got {null_transports!r}; the default is {NULL_TRANSPORTS}")


#: the longest ``model_version`` (a version string, a commit, a registry tag: one line)
MODEL_VERSION_MAX = 200


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
