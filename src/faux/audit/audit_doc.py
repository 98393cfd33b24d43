"""The reference part of ``faux.audit(...)``'s documentation: every parameter, what it
returns and what it raises, in numpy style, each default written as its value (filled in
from ``faux.audit.settings``). ``document`` appends it to the function's own docstring (what
the audit does), and ``module_doc`` makes it the callable package's docstring after the
call's signature, so that ``help(faux.audit)`` opens with the signature and the parameters
while the function's source stays short."""

from __future__ import annotations

import inspect
import string

REFERENCE = """\
Parameters
----------
model : torch.nn.Module, estimator, callable or path
    The model under test: a torch module returning logits, a fitted scikit-learn-like
    classifier or regressor (a ``Pipeline`` that encodes its own string columns is audited
    after its encoders), a function ``x -> probability``, or a model file (of a format
    ``faux audit --help`` lists under ``--model``: ``faux.audit.loaders.formats``). A model that
    stores the columns it was fitted on (scikit-learn's ``feature_names_in_``, a LightGBM
    Booster's ``feature_name()`` other than ``Column_0, ...``) is fed them by name: the
    data's column order does not matter, and a column it lacks is refused.
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
    and label columns; for a model that stores its feature names, those names). Leave
    out for a Pipeline that reads its own columns; for a model with stored names they
    must be those names (refused otherwise).
methods : list of str, optional
    Scorers (default ${methods}); the first one decides
    ``flagged`` under ``verdict="score"``; diagnostic columns otherwise.
aux : {"mlp", "adel"}, default ${aux}
    The aux model predicting the protected attribute from the features (``"adel"``:
    kept from reading the label; needs a label, binary attributes only).
aux_epochs : int, default ${aux_epochs}
    Training epochs of each aux model.
aux_width : int, default ${aux_width}
    Hidden width of the aux MLP.
aux_depth : int, default ${aux_depth}
    Hidden layers of the aux MLP (0: linear).
sample : int, default ${sample}
    Rows drawn uniformly for training the aux models and the calibration.
batch_size : int, default ${batch_size}
    Rows read and scored at a time.
threshold : float, optional
    A manual threshold on the first method's score (default: calibrated).
fail_above : float, optional
    A manual threshold that is also a gate: the audit fails (``passed`` False, exit
    code 1) when rows score above it (beyond ``max_flagged_rate``). Score verdict only.
max_flagged_rate : float in [0, 1], optional
    Gate: the audit fails when a larger share of rows is flagged.
protected_type : str or list of str, default ${protected_type}
    ``"auto"``, ``"binary"``, ``"categorical"`` or ``"continuous"``: one for every
    attribute, or a list with one per attribute.
fd_step : float, default ${fd_step}
    Black boxes' finite-difference step, in standard deviations of the features, in
    (0, ${fd_step_max}]; a warning above ${fd_step_warn} or below ${fd_step_low_warn}.
fd_scores : {"sample", "all"}, default ${fd_scores}
    Black boxes under the effect verdict: the finite-difference scores (diagnostics,
    2k + 2d model calls per row) of the ``sample`` rows only (NaN for the other rows;
    the counts above thresholds, top rows and plots are the sample's), or of ``all``
    rows. Torch and converted models, and ``verdict="score"``, score every row.
seed : int, default ${seed}
    Seed of the sample, the aux models and the intervals.
out_dir : str or path, optional
    Where scores.parquet, summary.json, report.html and the marker
    ``.faux-audit.json`` are written (default ``outputs/audit/<name>`` for a ``data``
    file; nothing is written for in-memory data without it). Must be new, empty or an
    earlier audit's output (see ``force``); the files appear together or not at all.
name : str, optional
    The audit's name (default: the data file's stem, or ``"data"``).
trust_pickle : bool, default ${trust_pickle}
    Allow a pickle / joblib model file (it runs code when loaded).
trusted_types : sequence of str, default ${trusted_types}
    Extra classes a skops model file may hold.
progress : bool, optional
    A progress bar (default: when stderr is a terminal; otherwise periodic lines).
report : bool, default ${report}
    Write report.html.
force : bool, default ${force}
    Write into an ``out_dir`` that holds other files, beside them (never replacing or
    deleting them).
alpha : float in (0, 1), default ${alpha}
    False-flag rate of the calibrated score thresholds (the null quantile), or the
    false discovery rate with ``fdr``.
null_permutations : int, default ${null_permutations}
    Aux models trained on a permuted protected attribute (the null for the thresholds,
    the expected false flags and the model-level test).
fdr : bool, default ${fdr}
    Benjamini-Hochberg at level ``alpha`` over the rows for the first method's
    threshold, instead of the null quantile.
aux_seeds : int, default ${aux_seeds}
    Aux models per attribute (different seeds): a row is flagged only when its
    decision changes under every one; the intervals over seeds.
min_cell : int, default ${min_cell}
    Smallest intersection cell, in sample rows (smaller cells are merged).
intersection : bool, default ${intersection}
    Audit the intersection of the categorical attributes as a view of its own.
exact : bool, default ${exact}
    Score a scikit-learn linear model, MLP or scaler pipeline by autograd through its
    checked torch conversion (``faux.audit.loaders.exact``); False keeps it a black box.
verdict : {"effect", "score"}, default ${verdict}
    ``"effect"``: the counterfactual effect decides ``flagged``; ``"score"``: the
    first method's score above its threshold (the scores are diagnostic otherwise).
counterfactual : {"transport", "aux"}, default ${counterfactual}
    How the effect verdict builds each row's counterfactual. ``"transport"``
    (``faux.audit.counterfactual.transport``): the features whose distribution does not depend on the
    protected attribute are held fixed, the others carried to the other group in order,
    each person keeping their residual (additive noise) or rank, categories by the maximal
    coupling; a row is flagged when its decision changes under every one of ``aux_seeds``
    fits (the first on the sample, the others on bootstrap resamples). ``"aux"``
    (``faux.audit.counterfactual.effects``): what the aux models read the attribute from is moved to the
    other group's values. A continuous attribute needs ``"aux"``.
hold : list of str, default ${hold}
    With the transport: feature columns the attribute cannot cause, held fixed whatever
    the dependence test says (for a Pipeline that encodes its columns: its raw columns).
max_excess_flags : float, optional
    A gate of the transport's verdict: it fails (``AuditResult.passed`` False, exit 1) when
    an attribute's flags exceed the upper end of the 95 % interval of what chance flags
    (the null transports) by more than this share of the rows; 0 fails on any excess.
direct_only : bool, default ${direct_only}
    For a model that reads the protected column itself (it is among its features): flip
    that column alone, nothing it causes (the classic flip test). By default the column is
    flipped together with what the transport carries.
null_transports : int, default ${null_transports}
    With the transport: transports fitted with the attribute permuted; their flags on the
    sample are the expected false flags (mean and 95 % interval, scaled to the rows) and
    the model-level test's null.
decision_threshold : float, default ${decision_threshold}
    The model's decision threshold on its probability (the effect verdict and the
    group outcomes use ``p >= decision_threshold``). A classifier whose probability is
    on one side of it for every sample row is warned about. Not used for a regressor.
materiality : float, optional
    Flag when the output moves by at least this much under every aux model with one
    sign, instead of a decision change: a change of probability in (0, 1] for a
    classifier; for a regressor a change of its predicted value in the output's own
    units, which a regressor's effect verdict requires (no default).
steps : int, default ${steps}
    First-order steps along the path to the counterfactual.
support_margin : float, default ${support_margin}
    Widening of the sample's per-feature [min, max] box, as a share of its range on
    each side, beyond which a counterfactual is marked off support.
task : {"auto", "classification", "regression"}, default ${task}
    What the model's output is. ``"auto"`` reads it from the model: scikit-learn's
    ``is_classifier`` / ``is_regressor``, a LightGBM Booster's objective (``binary``,
    ``cross_entropy``: a classifier; ``regression``, ``huber``, ...: a regressor), an ONNX
    model's outputs (class labels or probabilities); a torch model (logits) and a function
    (a probability) are classifiers. A regressor is audited on its predicted value (see
    ``materiality``); a given task that contradicts the model's is refused, as is
    ``"auto"`` for a model that says nothing.
positive_label : str, int, float or bool, optional
    The label value that is the positive class (the model's probability is of it), for
    the outcome metrics. Default: 1 for a 0/1 (or boolean) label; for any other label the
    model's ``classes_[1]`` (what ``predict_proba``'s column 1 means) when it has
    ``classes_`` matching the label's values, else refused (one line asking for it). It
    must agree with ``classes_[1]`` when that is known.
model_version : str, optional
    The model's own version (a version number, a commit, a registry tag; one line of at
    most ${model_version_max} characters), recorded in summary.json's provenance and shown
    in the report.

Returns
-------
AuditResult
    ``summary`` (what summary.json holds: flagged rows, effects, groups, outcomes,
    provenance, warnings), ``scores``, ``by_group()``, ``passed``, ``warnings``,
    ``save(folder)``, ``to_html()`` (the report); its repr states the conclusion.

Raises
------
faux.errors.ConfigError, faux.errors.DataError
    A bad setting or bad data, in one line naming the fix.
OutputError
    The disk filled while the outputs were written (nothing left behind).
"""


def values() -> dict[str, str]:
    """The values ``REFERENCE`` names: each setting's default as Python writes it, the
    default methods and the finite-difference step's limits."""
    from faux.audit.scores.methods import default_methods
    from faux.audit.settings import (
        DEFAULTS,
        FD_STEP_LOW_WARN,
        FD_STEP_MAX,
        FD_STEP_WARN,
        MODEL_VERSION_MAX,
        AuditSettings,
    )

    out = {name: repr(getattr(DEFAULTS, name)) for name in AuditSettings.names()}
    out.update(methods=repr(list(default_methods())), fd_step_max=f"{FD_STEP_MAX:g}",
               fd_step_warn=f"{FD_STEP_WARN:g}", fd_step_low_warn=f"{FD_STEP_LOW_WARN:g}",
               model_version_max=str(MODEL_VERSION_MAX))
    return out


def signature(fn, name: str, width: int = 88) -> str:
    """``name(model, X=None, ..., model_version=None) -> AuditResult``, the defaults as
    values, wrapped at ``width``."""
    import textwrap

    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    text = f"{name}(" + ", ".join(parts) + ") -> AuditResult"
    return textwrap.fill(text, width, subsequent_indent=" " * (len(name) + 1),
                         break_on_hyphens=False)


def reference() -> str:
    """``REFERENCE`` with its values filled in."""
    return string.Template(REFERENCE).substitute(values())


def document(fn):
    """``fn`` with the reference (``REFERENCE``, its values filled in) after its docstring's
    own paragraphs."""
    fn.__doc__ = inspect.cleandoc(fn.__doc__ or "") + "\n\n" + reference()
    return fn


def module_doc(fn, package_doc: str) -> str:
    """The docstring of the callable package ``faux.audit``: what ``help(faux.audit)`` opens
    with: the call's signature and its documentation (parameters included), then the
    package's own text."""
    return (signature(fn, "faux.audit") + "\n\n" + inspect.cleandoc(fn.__doc__ or "")
            + "\n\n" + inspect.cleandoc(package_doc))
