"""The model under audit behind one interface, ``TargetModel``: raw feature rows ``x`` (numpy
float, ``(n, d)``) to the probability of the positive class, plus, for a differentiable
model, a torch ``module`` returning logits that the audit scores by autograd. Made from what
the user passes in memory: a torch module (``from_torch``), a scikit-learn-like estimator
(``from_estimator``; converted to torch and checked where ``faux.audit.loaders.exact`` can), a
function (``from_callable``), or any of these (``from_object``; ``as_target`` in
``faux.audit.loaders.models`` also loads a path)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from faux.audit.loaders.task import TASKS
from faux.errors import ConfigError, DataError

#: LightGBM objectives whose prediction is a probability of class 1 (aliases included)
LGBM_BINARY = ("binary", "cross_entropy", "xentropy", "cross_entropy_lambda", "xentlambda")
LGBM_MULTICLASS = ("multiclass", "softmax", "multiclassova", "multiclass_ova", "ova", "ovr")
LGBM_UNKNOWN = ("custom", "none", "null", "na")


def one_line(err: BaseException) -> str:
    """The error's last non-empty line (TorchScript puts its traceback first), shortened."""
    lines = [ln for ln in str(err).splitlines() if ln.strip()] or [type(err).__name__]
    return " ".join(lines[-1].split())[:200]


class TwoLogits(nn.Module):
    """A module returning ``(n, 2)`` class logits, read as one logit ``z1 - z0``."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        out = self.inner(x)
        return out[:, 1] - out[:, 0]


class StaticBatch(nn.Module):
    """Calls a program exported with a fixed batch size ``b`` in chunks of ``b`` rows (the
    last chunk padded with copies of its first row; the padding's outputs are dropped)."""

    def __init__(self, inner: nn.Module, b: int):
        super().__init__()
        self.inner = inner
        self.b = int(b)

    def forward(self, x):
        outs = []
        for s in range(0, x.shape[0], self.b):
            xc = x[s:s + self.b]
            m = xc.shape[0]
            if m < self.b:
                xc = torch.cat([xc, xc[:1].expand(self.b - m, -1)], dim=0)
            outs.append(self.inner(xc)[:m])
        return torch.cat(outs, dim=0)


@dataclass
class TargetModel:
    """The model under audit. ``proba(x)``: probability of the positive class, ``(n,)``.

    ``module`` is set for differentiable models: logits ``(n,)`` of float32 input (with
    ``output="value"``: the audited output itself, a regressor's prediction, not a logit).
    ``exact_from`` names the scikit-learn model or ONNX graph a ``module`` was converted from
    (``"sklearn LogisticRegression"``, ``"ONNX graph (Gemm, Relu, Sigmoid)"``), None for a
    torch model or a black box; ``scoring_mode`` says
    how the audit scores it, in words.
    ``n_features`` is the input width when the model states it (else None). ``kind`` and
    ``source`` describe it for the report. A model loaded from a file also has ``file``
    (absolute path), ``sha256`` (of the file's bytes), ``loader`` (the name of its format's
    row in ``faux.audit.loaders.formats.FORMATS``) and, for
    pickles and skops files, ``obj_class`` (the loaded object's class).

    ``task``: ``"classification"`` (``proba`` is a probability), ``"regression"`` (``proba``
    is the predicted value itself) or None (unknown); ``task_from`` says how it is known;
    ``task_default`` marks a task assumed for a kind of model (a torch model or a function
    is a classifier unless told otherwise) rather than read from it (``use_task``).
    ``feature_names``: the columns the model was fitted on, in its order, when it stores
    them (it is then fed them by name); ``classes``: its classes (``classes_``), when known.
    """

    proba_fn: Callable[[np.ndarray], np.ndarray]
    kind: str
    source: str
    module: nn.Module | None = None
    n_features: int | None = None
    file: str | None = None
    sha256: str | None = None
    loader: str | None = None
    obj_class: str | None = None
    exact_from: str | None = None
    output: str = "logit"
    twin: object | None = None  # the faux.audit.loaders.exact.Twin behind a converted module
    estimator: object | None = None  # the scikit-learn-like object behind ``proba_fn``
    task: str | None = "classification"
    task_from: str = "a function x -> probability: a classifier unless task='regression'"
    task_default: bool = True
    feature_names: list | None = None
    classes: list | None = None

    @property
    def differentiable(self) -> bool:
        return self.module is not None

    @property
    def scoring_mode(self) -> str:
        """``"autograd"`` (a torch model), ``"autograd (exact, converted from sklearn
        LogisticRegression)"`` or ``"finite differences"``."""
        if self.module is None:
            return "finite differences"
        if self.exact_from:
            return f"autograd (exact, converted from {self.exact_from})"
        return "autograd"

    def provenance(self) -> dict:
        """``{"class", "file", "sha256", "loader"}`` for a model read from a file (the keys
        that are known), and ``exact_from`` for a converted scikit-learn model; else
        ``{}``."""
        out = {"class": self.obj_class, "file": self.file, "sha256": self.sha256,
               "loader": self.loader, "exact_from": self.exact_from}
        return {k: v for k, v in out.items() if v is not None}

    def verify_exact(self, x: np.ndarray, what: str = "the data sample") -> bool:
        """Check a converted module against the model's own outputs on rows ``x``; on a
        mismatch drop it (finite differences from then on) with one warning line. True
        when the model is scored exactly afterwards."""
        if self.twin is None:
            return self.differentiable
        from faux.audit.loaders.exact import mismatch

        err = safe_mismatch(mismatch, self.twin, self.proba_fn(x), x)
        if twin_ok(self.twin, err, what):
            return True
        self.module, self.twin, self.exact_from, self.output = None, None, None, "logit"
        return False

    def use_task(self, task: str) -> None:
        """Settle the task: ``task`` (``faux.audit.settings.AuditSettings.task``) against
        what the model says. ``"auto"`` takes the model's (refused when it is unknown); a
        given task replaces an assumed one and must agree with a known one (``ConfigError``,
        one line)."""
        if task not in TASKS:
            raise ConfigError(f"task (--task) must be one of {', '.join(TASKS)}, got {task!r}")
        if task == "auto":
            if self.task is None:
                raise ConfigError(f"cannot tell whether the model ({self.source}) is a "
                                  f"classifier or a regressor ({self.task_from}); pass "
                                  "task='classification' or task='regression' (--task)")
            return
        if self.task is not None and self.task != task and not self.task_default:
            what = "a classifier" if self.task == "classification" else "a regressor"
            raise ConfigError(f"task={task!r} (--task {task}) contradicts the model: it is "
                              f"{what} ({self.task_from}); leave it out (or --task auto)")
        if task == "regression" and self.task != "regression" and self.module is not None \
                and self.twin is None:  # a torch model: its output is the value, no sigmoid
            if isinstance(self.module, TwoLogits):
                raise ConfigError("--task regression: the torch model returns two class "
                                  "logits per row, a classifier's output; leave --task out")
            self.output = "value"
        if task == "classification" and self.task != "classification" \
                and self.module is not None and self.twin is None:
            self.output = "logit"
        if self.task != task or self.task_default:
            self.task_from = f"task={task!r} (--task {task})"
        self.task, self.task_default = task, False

    @property
    def regressor(self) -> bool:
        return self.task == "regression"

    def proba(self, x: np.ndarray) -> np.ndarray:
        p = np.asarray(self.proba_fn(x), dtype=np.float64).reshape(-1)
        if p.shape[0] != x.shape[0]:
            raise DataError(f"the model returned {p.shape[0]} outputs for {x.shape[0]} rows; "
                            "it must return one probability (or logit) per row")
        bad = ~np.isfinite(p)
        if bad.any():
            raise DataError(f"the model's output is not finite on {int(bad.sum())} of "
                            f"{x.shape[0]} rows (first row {int(np.flatnonzero(bad)[0])} of the "
                            "batch); check the model and the features it is given")
        return p


def safe_mismatch(mismatch, twin, ref, x) -> float:
    """``mismatch``, inf when the converted module fails on the rows."""
    try:
        return mismatch(twin, ref, x)
    except Exception:
        return float("inf")


def class_name(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


# --------------------------------------------------------------------------- wrappers


def logit_module(module: nn.Module, d: int | None) -> nn.Module:
    """Probe ``module`` with 2 rows and wrap it so that it returns logits ``(n,)``."""
    try:
        module.eval()
    except NotImplementedError:  # torch.export programs have no train/eval switch
        pass
    if d is None:
        return module
    with torch.no_grad():
        try:
            out = module(torch.zeros(2, d))
        except Exception as err:
            raise DataError(f"the torch model fails on rows of {d} features "
                            f"({one_line(err)}); pass the features it was trained on, in its "
                            "column order (--features)") from err
    if not isinstance(out, torch.Tensor):
        raise DataError(f"the torch model returned {type(out).__name__}; it must return a tensor "
                        "of logits (n,) or (n, 1)")
    if out.ndim == 2 and out.shape[1] == 2:
        return TwoLogits(module)
    if not (out.ndim == 1 or (out.ndim == 2 and out.shape[1] == 1)):
        raise DataError(f"the torch model returned shape {tuple(out.shape)} for 2 rows; audit "
                        "needs one logit per row (n,) or (n, 1) (or two class logits (n, 2))")
    return module


def module_width(module: nn.Module) -> int | None:
    for m in module.modules():
        if isinstance(m, nn.Linear):
            return int(m.in_features)
    if isinstance(module, torch.jit.ScriptModule):
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.ndim == 2:
                return int(p.shape[1])
    return None


def from_torch(module: nn.Module, source: str = "torch module", d: int | None = None
               ) -> TargetModel:
    """A torch module returning logits; ``d`` (the data's width) is used to probe it."""
    width = module_width(module)
    if width is not None and d is not None and width != d:
        raise DataError(f"the model reads {width} features but the data has {d}; pass the "
                        "features it was trained on, in its column order (--features)")
    mod = logit_module(module, d if d is not None else width)
    for p in mod.parameters():
        p.requires_grad_(False)

    def proba(x):
        with torch.no_grad():
            z = mod(torch.as_tensor(np.asarray(x, dtype=np.float32))).reshape(-1)
        # a classifier's logit, or with task="regression" the predicted value itself
        return (z if tm.output == "value" else torch.sigmoid(z)).double().numpy()

    tm = TargetModel(proba, "torch", source, module=mod, n_features=width,
                     task_from="a torch model returns logits: a classifier unless "
                     "task='regression'")
    return tm


def twin_ok(twin, err: float, what: str) -> bool:
    from faux.audit.loaders.exact import TOLERANCE

    tol = getattr(twin, "tolerance", TOLERANCE)  # an ONNX graph's depends on its precision
    if err <= tol:
        return True
    ref = "predict_proba" if twin.output == "logit" else "predict"
    if twin.label.startswith("ONNX"):
        ref = "onnxruntime output"
    print(f"faux audit: warning: the torch conversion of {twin.label} differs from its {ref} "
          f"by {err:.2g} on {what} (more than {tol:g}); scoring it by finite "
          "differences", file=sys.stderr)
    return False


def attach_twin(tm: TargetModel, est) -> None:
    """Score ``est`` exactly when it converts to torch and the conversion reproduces its
    outputs on probe rows (``faux.audit.loaders.exact``); else ``tm`` stays a black box."""
    from faux.audit.loaders.exact import convert, mismatch, probe

    twin = convert(est)
    if twin is None or tm.n_features is None:
        return
    x = probe(est, tm.n_features)
    try:
        ref = tm.proba_fn(x)
    except Exception:  # the estimator itself fails on the probe: leave it to the audit
        return
    if twin_ok(twin, mismatch(twin, ref, x), "probe rows"):
        tm.module, tm.output, tm.exact_from, tm.twin = (twin.module, twin.output, twin.label,
                                                        twin)


def estimator_task(est) -> tuple[str | None, str]:
    """``(task, how it is known)`` of a scikit-learn-like model: scikit-learn's
    ``is_classifier`` / ``is_regressor``, a LightGBM Booster's objective, a
    ``predict_proba``; ``(None, why)`` when nothing says."""
    if hasattr(est, "num_feature") and not hasattr(est, "predict_proba"):  # a Booster
        params = getattr(est, "params", None) or {}
        obj = str(params.get("objective") or "").split()
        obj = obj[0] if obj else ""
        if obj in LGBM_BINARY:
            return "classification", f"LightGBM objective {obj}"
        if obj in LGBM_MULTICLASS:
            raise ConfigError(f"the LightGBM model's objective is {obj}; audit tests binary "
                              "classifiers (or regressors)")
        if not obj or obj in LGBM_UNKNOWN or callable(params.get("objective")):
            return None, "a LightGBM Booster whose objective is not stated"
        return "regression", f"LightGBM objective {obj}"
    try:
        from sklearn.base import is_classifier, is_regressor

        if is_regressor(est):
            return "regression", "scikit-learn is_regressor"
        if is_classifier(est):
            return "classification", "scikit-learn is_classifier"
    except Exception:  # not a scikit-learn estimator: its tags cannot be read
        pass
    kind = getattr(est, "_estimator_type", None)
    if kind in ("classifier", "regressor"):
        return ("classification" if kind == "classifier" else "regression",
                f"its _estimator_type {kind!r}")
    if hasattr(est, "predict_proba"):
        return "classification", "it has predict_proba"
    return None, f"a {type(est).__name__} with predict only"


def stored_feature_names(est) -> list[str] | None:
    """The columns a model was fitted on, in its order, when it stores them: scikit-learn's
    ``feature_names_in_``, a LightGBM Booster's ``feature_name()`` (unless LightGBM's
    default ``Column_0, Column_1, ...``); else None."""
    names = getattr(est, "feature_names_in_", None)
    if names is None and hasattr(est, "feature_name") and hasattr(est, "num_feature"):
        try:
            names = list(est.feature_name())
        except Exception:
            names = None
        if names and all(n == f"Column_{j}" for j, n in enumerate(names)):
            names = None
    if names is None:
        return None
    names = [str(n) for n in names]
    return names or None


def _frame_of(est, names):
    """``x -> what est reads``: a DataFrame with the column names a scikit-learn-like model
    was fitted on (it then reads the columns by name and has nothing to warn about), the
    array itself for a model fitted without names."""
    if names is None or getattr(est, "feature_names_in_", None) is None:
        return lambda x: x
    import pandas as pd

    cols = list(est.feature_names_in_)
    return lambda x: pd.DataFrame(np.asarray(x), columns=cols, copy=False)


def from_estimator(est, source: str = "estimator", exact: bool = True) -> TargetModel:
    """A scikit-learn-like classifier (``predict_proba``) or regressor (``predict``);
    ``exact``: scored by autograd through its torch conversion where there is one
    (``faux.audit.loaders.exact``), else (or with ``exact=False``) a black box. A model fitted on
    named columns is fed a DataFrame with its names (``stored_feature_names``)."""
    width = getattr(est, "n_features_in_", None)
    if width is None and hasattr(est, "num_feature"):  # a LightGBM Booster
        width = int(est.num_feature())
    task, task_from = estimator_task(est)
    names = stored_feature_names(est)
    frame = _frame_of(est, names)
    classes = getattr(est, "classes_", None)
    if hasattr(est, "predict_proba"):
        if classes is not None and len(classes) != 2:
            raise ConfigError(f"the model has {len(classes)} classes; audit tests binary "
                              "classifiers (or regressors)")

        def proba(x):
            return np.asarray(est.predict_proba(frame(x)))[:, 1]
        kind = "classifier"
    elif hasattr(est, "predict"):
        def proba(x):
            return np.asarray(est.predict(frame(x))).reshape(-1)
        kind = ("lightgbm booster" if hasattr(est, "num_feature") else
                "classifier" if task == "classification" else "regressor")
    else:
        raise ConfigError(f"{type(est).__name__} has neither predict_proba nor predict; pass a "
                          "fitted classifier, a torch module or a model file")
    tm = TargetModel(proba, f"{type(est).__module__.split('.')[0]} {kind}", source,
                     n_features=None if width is None else int(width), estimator=est,
                     task=task, task_from=task_from, task_default=False,
                     feature_names=names,
                     classes=None if classes is None else list(np.asarray(classes).tolist()))
    if exact:
        attach_twin(tm, est)
    return tm


def from_callable(fn: Callable, source: str = "function") -> TargetModel:
    """A plain function ``x -> probability (n,)`` (black box)."""
    return TargetModel(fn, "function", source)


def from_object(model, d: int | None = None, exact: bool = True) -> TargetModel:
    """A model object (a ``TargetModel``, torch module, fitted estimator or function ``x ->
    probability``) as a ``TargetModel``; ``exact=False`` keeps a convertible scikit-learn
    model a black box."""
    if isinstance(model, TargetModel):
        return model
    if isinstance(model, nn.Module | torch.jit.ScriptModule):
        return from_torch(model, type(model).__name__, d)
    if hasattr(model, "predict_proba") or hasattr(model, "predict"):
        return from_estimator(model, type(model).__name__, exact)
    if callable(model):
        return from_callable(model, getattr(model, "__name__", "function"))
    raise ConfigError(f"cannot audit a {type(model).__name__}: pass a torch module, a fitted "
                      "estimator, a function x -> probability, or a model file path")
