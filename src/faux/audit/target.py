"""The model under audit behind one interface, ``TargetModel``: raw feature rows ``x`` (numpy
float, ``(n, d)``) to the probability of the positive class, plus, for a differentiable
model, a torch ``module`` returning logits that the audit scores by autograd. Made from what
the user passes in memory: a torch module (``from_torch``), a scikit-learn-like estimator
(``from_estimator``; converted to torch and checked where ``faux.audit.exact`` can), a
function (``from_callable``), or any of these (``as_target``, which also loads a path through
``faux.audit.models.load_model``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from faux.errors import ConfigError, DataError


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
    (absolute path), ``sha256`` (of the file's bytes), ``loader`` (``torch.jit``,
    ``torch.export``, ``skops``, ``onnxruntime``, ``lightgbm`` or ``pickle``) and, for
    pickles and skops files, ``obj_class`` (the loaded object's class).
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
    twin: object | None = None  # the faux.audit.exact.Twin behind a converted module
    estimator: object | None = None  # the scikit-learn-like object behind ``proba_fn``

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
        from faux.audit.exact import mismatch

        err = safe_mismatch(mismatch, self.twin, self.proba_fn(x), x)
        if twin_ok(self.twin, err, what):
            return True
        self.module, self.twin, self.exact_from, self.output = None, None, None, "logit"
        return False

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
            z = mod(torch.as_tensor(np.asarray(x, dtype=np.float32)))
        return torch.sigmoid(z.reshape(-1)).double().numpy()

    return TargetModel(proba, "torch", source, module=mod, n_features=width)


def twin_ok(twin, err: float, what: str) -> bool:
    from faux.audit.exact import TOLERANCE

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
    outputs on probe rows (``faux.audit.exact``); else ``tm`` stays a black box."""
    from faux.audit.exact import convert, mismatch, probe

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


def from_estimator(est, source: str = "estimator", exact: bool = True) -> TargetModel:
    """A scikit-learn-like classifier (``predict_proba``) or regressor (``predict``);
    ``exact``: scored by autograd through its torch conversion where there is one
    (``faux.audit.exact``), else (or with ``exact=False``) a black box."""
    width = getattr(est, "n_features_in_", None)
    if width is None and hasattr(est, "num_feature"):  # a LightGBM Booster
        width = int(est.num_feature())
    if hasattr(est, "predict_proba"):
        classes = getattr(est, "classes_", None)
        if classes is not None and len(classes) != 2:
            raise ConfigError(f"the model has {len(classes)} classes; audit tests binary "
                              "classifiers (or regressors)")

        def proba(x):
            return np.asarray(est.predict_proba(x))[:, 1]
        kind = "classifier"
    elif hasattr(est, "predict"):
        def proba(x):
            return np.asarray(est.predict(x)).reshape(-1)
        kind = "regressor" if not hasattr(est, "num_feature") else "lightgbm booster"
    else:
        raise ConfigError(f"{type(est).__name__} has neither predict_proba nor predict; pass a "
                          "fitted classifier, a torch module or a model file")
    tm = TargetModel(proba, f"{type(est).__module__.split('.')[0]} {kind}", source,
                     n_features=None if width is None else int(width), estimator=est)
    if exact:
        attach_twin(tm, est)
    return tm


def from_callable(fn: Callable, source: str = "function") -> TargetModel:
    """A plain function ``x -> probability (n,)`` (black box)."""
    return TargetModel(fn, "function", source)
