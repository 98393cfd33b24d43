"""Exact gradients for scikit-learn models: an equivalent torch module ("twin") of a fitted
estimator, so that the audit scores it by autograd instead of finite differences.

Converted (``convert``), anything else stays a black box:

- binary linear classifiers with ``predict_proba`` = sigmoid of ``decision_function``:
  ``LogisticRegression``, ``LogisticRegressionCV``, ``SGDClassifier(loss="log_loss")`` and
  any other ``LinearClassifierMixin`` with ``predict_proba`` (the check below decides);
  the twin returns the logit ``x @ coef_ + intercept_``;
- single-output linear regressors (``LinearRegression``, ``Ridge``, ``Lasso``,
  ``ElasticNet``, ``HuberRegressor``, ... every ``LinearModel``; ``SGDRegressor``): the
  prediction itself;
- ``MLPClassifier`` (binary: the logit before the output sigmoid) and ``MLPRegressor``
  (one output), hidden activations identity, logistic, tanh, relu;
- a ``Pipeline`` of ``StandardScaler`` / ``MinMaxScaler`` / ``MaxAbsScaler`` /
  ``"passthrough"`` steps followed by one of the above.

The twin computes in float64 (its input is cast, its output cast back to the input's dtype)
and is checked against the estimator's own ``predict_proba`` / ``predict`` (``mismatch``):
a twin that differs by more than ``TOLERANCE`` (in probability; for regressors relative to
``max(1, |prediction|)``) is not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

#: the largest difference between the twin and the estimator that is accepted
TOLERANCE = 1e-6
PROBE_ROWS = 64  # rows per block of the probe (``probe``)
_ACTIVATIONS = {"identity": lambda h: h, "logistic": torch.sigmoid, "tanh": torch.tanh,
                "relu": torch.relu}


@dataclass
class Twin:
    """A converted estimator: ``module`` (float input ``(n, d)`` -> ``(n,)``), what it returns
    (``output``: ``"logit"`` of P(class 1), or ``"value"``, the regressor's prediction) and
    ``label`` (``"sklearn LogisticRegression"``, ``"sklearn Pipeline(StandardScaler,
    MLPClassifier)"``)."""

    module: nn.Module
    output: str
    label: str


def _buf(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


class Affine(nn.Module):
    """``x * mul + add`` per column (a fitted scaler)."""

    def __init__(self, mul, add, clip=None):
        super().__init__()
        self.register_buffer("mul", _buf(mul))
        self.register_buffer("add", _buf(add))
        self.clip = None if clip is None else (float(clip[0]), float(clip[1]))

    def forward(self, x):
        h = x * self.mul + self.add
        return h if self.clip is None else h.clamp(*self.clip)


class Dense(nn.Module):
    """``activation(x @ weight + bias)`` with a (d_in, d_out) weight (sklearn's layout)."""

    def __init__(self, weight, bias, activation: str = "identity"):
        super().__init__()
        self.register_buffer("weight", _buf(weight))
        self.register_buffer("bias", _buf(bias).reshape(-1))
        self.activation = activation

    def forward(self, x):
        return _ACTIVATIONS[self.activation](x @ self.weight + self.bias)


class Float64Twin(nn.Module):
    """The layers in float64 on a cast of the input; returns ``(n,)`` in the input's dtype."""

    def __init__(self, layers: list[nn.Module]):
        super().__init__()
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x.to(torch.float64)).reshape(-1).to(x.dtype)


# --------------------------------------------------------------------------- converters


def _scaler(step) -> nn.Module | None:
    """A fitted scaler as an ``Affine`` layer (None for a type that is not converted)."""
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

    if isinstance(step, StandardScaler):
        d = int(step.n_features_in_)
        mean = step.mean_ if step.with_mean else np.zeros(d)
        scale = step.scale_ if step.with_std else np.ones(d)
        return Affine(1.0 / scale, -mean / scale)
    if isinstance(step, MinMaxScaler):
        return Affine(step.scale_, step.min_, step.feature_range if step.clip else None)
    if isinstance(step, MaxAbsScaler):
        return Affine(1.0 / step.scale_, np.zeros_like(step.scale_))
    return None


def _linear_classifier(est) -> tuple[list[nn.Module], str] | None:
    from sklearn.linear_model import SGDClassifier

    if not hasattr(est, "predict_proba") or len(getattr(est, "classes_", ())) != 2:
        return None
    if isinstance(est, SGDClassifier) and est.loss not in ("log_loss", "log"):
        return None  # modified_huber's probability is a clipped line, not a sigmoid
    coef = np.asarray(est.coef_, dtype=np.float64)
    if coef.ndim != 2 or coef.shape[0] != 1:
        return None
    return [Dense(coef.T, np.atleast_1d(est.intercept_))], "logit"


def _linear_regressor(est) -> tuple[list[nn.Module], str] | None:
    coef = np.asarray(getattr(est, "coef_", None), dtype=np.float64)
    if coef.ndim == 2 and coef.shape[0] == 1:
        coef = coef[0]
    if coef.ndim != 1:
        return None  # several targets
    intercept = np.asarray(getattr(est, "intercept_", 0.0), dtype=np.float64).reshape(-1)
    if intercept.size != 1:
        return None
    return [Dense(coef[:, None], intercept)], "value"


def _mlp(est) -> tuple[list[nn.Module], str] | None:
    from sklearn.neural_network import MLPClassifier

    if est.activation not in _ACTIVATIONS or est.n_outputs_ != 1:
        return None
    classifier = isinstance(est, MLPClassifier)
    if classifier and (len(est.classes_) != 2 or est.out_activation_ != "logistic"):
        return None
    if not classifier and est.out_activation_ != "identity":
        return None
    last = len(est.coefs_) - 1
    layers = [Dense(w, b, est.activation if i < last else "identity")
              for i, (w, b) in enumerate(zip(est.coefs_, est.intercepts_))]
    return layers, "logit" if classifier else "value"


def _estimator(est) -> tuple[list[nn.Module], str] | None:
    from sklearn.base import is_classifier, is_regressor
    from sklearn.linear_model._base import LinearClassifierMixin, LinearModel
    from sklearn.linear_model._stochastic_gradient import BaseSGDRegressor
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    if isinstance(est, MLPClassifier | MLPRegressor):
        return _mlp(est)
    if isinstance(est, LinearClassifierMixin) and is_classifier(est):
        return _linear_classifier(est)
    if isinstance(est, LinearModel | BaseSGDRegressor) and is_regressor(est):
        return _linear_regressor(est)
    return None


def convert(est) -> Twin | None:
    """The torch twin of a fitted scikit-learn estimator, or None when its type is not
    converted (or it is not a fitted scikit-learn estimator at all)."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:
        return None
    try:
        if isinstance(est, Pipeline):
            return _pipeline(est)
        got = _estimator(est)
    except (AttributeError, TypeError, ValueError):  # not fitted, or an unexpected layout
        return None
    if got is None:
        return None
    layers, output = got
    return Twin(Float64Twin(layers), output, f"sklearn {type(est).__name__}")


def _pipeline(pipe) -> Twin | None:
    *pre, (_, last) = pipe.steps
    layers, names = [], []
    for _, step in pre:
        if step is None or step == "passthrough":
            continue
        layer = _scaler(step)
        if layer is None:
            return None
        layers.append(layer)
        names.append(type(step).__name__)
    got = _estimator(last)
    if got is None:
        return None
    layers += got[0]
    names.append(type(last).__name__)
    return Twin(Float64Twin(layers), got[1], f"sklearn Pipeline({', '.join(names)})")


# --------------------------------------------------------------------------- the check


def probe(est, d: int, seed: int = 0) -> np.ndarray:
    """Rows to check a twin on when no data are at hand: standard normal rows at three
    scales (0.1, 1, 10) and, for a pipeline starting with a scaler, rows in the range of
    the data it was fitted on."""
    rng = np.random.default_rng(seed)
    blocks = [s * rng.standard_normal((PROBE_ROWS, d)) for s in (0.1, 1.0, 10.0)]
    first = est.steps[0][1] if hasattr(est, "steps") else None
    if hasattr(first, "mean_") and hasattr(first, "with_std"):  # StandardScaler
        mean = first.mean_ if first.mean_ is not None else 0.0
        scale = first.scale_ if first.scale_ is not None else 1.0
        blocks.append(mean + scale * rng.standard_normal((PROBE_ROWS, d)))
    elif hasattr(first, "data_min_"):
        u = rng.uniform(-0.1, 1.1, (PROBE_ROWS, d))
        blocks.append(first.data_min_ + first.data_range_ * u)
    elif hasattr(first, "max_abs_"):
        blocks.append(first.max_abs_ * rng.uniform(-1.0, 1.0, (PROBE_ROWS, d)))
    return np.concatenate(blocks)


def twin_outputs(twin: Twin, x: np.ndarray) -> np.ndarray:
    """What the twin says the estimator returns on ``x``: P(class 1) or the prediction."""
    with torch.no_grad():
        out = twin.module(torch.as_tensor(np.asarray(x, dtype=np.float64)))
    if twin.output == "logit":
        out = torch.sigmoid(out)
    return out.numpy()


def mismatch(twin: Twin, reference: np.ndarray, x: np.ndarray) -> float:
    """The largest difference between the twin and the estimator's own outputs
    ``reference`` on ``x``: in probability, or for a prediction relative to
    ``max(1, |prediction|)``; inf when either is not finite or the shapes differ."""
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    got = twin_outputs(twin, x)
    if got.shape != ref.shape or not (np.isfinite(got).all() and np.isfinite(ref).all()):
        return float("inf")
    diff = np.abs(got - ref)
    if twin.output == "value":
        diff = diff / np.maximum(1.0, np.abs(ref))
    return float(diff.max()) if diff.size else 0.0
