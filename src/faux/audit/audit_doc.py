"""The words of the audit's settings and the reference part of ``faux.audit(...)``'s
documentation. ``help_text`` renders a setting's help (``faux.audit.settings.AuditSettings``'
metadata) for a reader: the CLI (``faux.audit.cli``) names other settings by their flags,
the Python documentation by their keywords; ``python_words`` maps each flag to its keyword
for error lines (``faux.audit.api_words``). The reference is every parameter, what the call
returns and what it raises, in numpy style: the inputs are written here, the settings read
from the fields (each one's type, default and help). ``document`` appends the reference to the function's own
docstring (what the audit does), and ``module_doc`` makes it the callable package's
docstring after the call's signature, so that ``help(faux.audit)`` opens with the signature
and the parameters while the function's source stays short."""

from __future__ import annotations

import dataclasses
import inspect
import re
import string
import textwrap

WIDTH = 88
_REF = re.compile(r"`(\w+)`")

INPUTS = """\
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
out_dir : str or path, optional
    Where scores.parquet, summary.json, report.html and the marker
    ``.faux-audit.json`` are written (default ``outputs/audit/<name>`` for a ``data``
    file; nothing is written for in-memory data without it). Must be new, empty or an
    earlier audit's output (see ``force``); the files appear together or not at all.
name : str, optional
    The audit's name (default: the data file's stem, or ``"data"``).
settings : AuditSettings, optional
    The settings below as one object (``faux.audit.settings.AuditSettings``); a setting
    also given by keyword replaces its value there.
**overrides
    The settings, by keyword (an unknown keyword is a ``TypeError`` naming the closest
    setting):
"""

RETURNS = """\
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
TypeError
    A keyword that is not a setting.
"""


def values() -> dict[str, str]:
    """The ``$name`` values of the help texts, read when the text is shown (the registry's
    methods may change)."""
    from faux.audit.scores.methods import audit_methods, thresholds_text

    torch_only = sorted(set(audit_methods()) - set(audit_methods(differentiable=False)))
    note = (f" {' and '.join(torch_only)} need{'s' if len(torch_only) == 1 else ''} a torch "
            "model." if torch_only else "")
    return {"torch_only": note, "thresholds": thresholds_text()}


def help_text(f: dataclasses.Field, ref) -> str:
    """The setting ``f``'s help with its values filled in and each `name` written as
    ``ref(name)``."""
    text = string.Template(f.metadata["help"]).substitute(values())
    return _REF.sub(lambda m: ref(m.group(1)), text)


def shown_default(f: dataclasses.Field):
    """The value the setting ``f``'s default stands for (``methods`` None: the default
    methods)."""
    stands_for = f.metadata["stands_for"]
    return stands_for() if f.default is None and stands_for is not None else f.default


def python_words() -> dict[str, str]:
    """Each settings flag (without ``--``) -> the keyword a Python caller writes for it:
    ``no-exact`` -> ``exact=False``, ``force`` -> ``force=True``, ``trust-type`` ->
    ``trusted_types``."""
    from faux.audit.settings import AuditSettings

    out = {}
    for f in dataclasses.fields(AuditSettings):
        flag = f.metadata["flag"]
        if flag is None:
            continue
        if f.type.startswith("bool"):
            out[flag[2:]] = f"{f.name}={not flag.startswith('--no-')}"
        else:
            out[flag[2:]] = f.name
    return out


def kind(f: dataclasses.Field) -> str:
    """The type words of a setting: ``{"a", "b"}`` for a choice, else its metadata's
    ``kind`` or its annotation (``float | None`` -> ``float``)."""
    choices = f.metadata["cli"].get("choices")
    if f.metadata["kind"] is not None:
        return f.metadata["kind"]
    if choices is not None:
        return "{" + ", ".join(f'"{c}"' for c in choices) + "}"
    return f.type.removesuffix(" | None")


def setting_doc(f: dataclasses.Field) -> str:
    """``name : type, default X`` (``optional`` for None) and the help below it."""
    v = shown_default(f)
    head = f"{f.name} : {kind(f)}, " + ("optional" if v is None else f"default {v!r}")
    body = textwrap.fill(help_text(f, lambda name: f"``{name}``"), WIDTH,
                         initial_indent="    ", subsequent_indent="    ")
    return head + "\n" + body + "\n"


def reference() -> str:
    """The parameters (the inputs, then every setting), what the call returns and raises."""
    from faux.audit.settings import AuditSettings

    settings = "".join(setting_doc(f) for f in dataclasses.fields(AuditSettings))
    return "Parameters\n----------\n" + INPUTS + settings + "\n" + RETURNS


def signature(fn, name: str, width: int = WIDTH) -> str:
    """``name(model, X=None, ..., **overrides) -> AuditResult``, the defaults as values,
    wrapped at ``width``."""
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            parts.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    text = f"{name}(" + ", ".join(parts) + ")\xa0->\xa0AuditResult"  # kept on one line
    return textwrap.fill(text, width, subsequent_indent=" " * (len(name) + 1),
                         break_on_hyphens=False).replace("\xa0", " ")


def document(fn):
    """``fn`` with the reference after its docstring's own paragraphs."""
    fn.__doc__ = inspect.cleandoc(fn.__doc__ or "") + "\n\n" + reference()
    return fn


def module_doc(fn, package_doc: str) -> str:
    """The docstring of the callable package ``faux.audit``: what ``help(faux.audit)`` opens
    with: the call's signature and its documentation (parameters, then every setting with
    its default), then the package's own text."""
    return (signature(fn, "faux.audit") + "\n\n" + inspect.cleandoc(fn.__doc__ or "")
            + "\n\n" + inspect.cleandoc(package_doc))
