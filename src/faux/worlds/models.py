"""The models each world is scored on, trained on the world's own rows (the rows audited).

Trained WITHOUT c (``X`` only): ``logistic`` (scaler + logistic regression), ``mlp`` (scaler +
scikit-learn ``MLPClassifier``), ``trees`` (``HistGradientBoostingClassifier``). Fair by
construction (c-blind: they read every column of X and give exactly zero weight to c's
descendants): ``fair_logistic`` (a logistic regression fitted on the non-descendants,
embedded in a full-width one whose descendant coefficients are 0) and ``fair_mlp`` (a torch
MLP whose first-layer weights on the descendant columns are 0, held there by a mask while it
trains). ``with_c`` reads c directly (X plus c as a last column named ``c``), for later use.

Each is a :class:`FittedModel`: ``obj`` is what ``faux.audit`` takes (a fitted Pipeline or
estimator, or the torch module returning logits), ``proba(X)`` gives P(y = 1) for a
DataFrame or array in X's column order (``with_c``: X's columns then ``c``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: every model, in table order
MODELS = ("logistic", "mlp", "trees", "fair_logistic", "fair_mlp", "with_c")
#: the models fair by construction: every flag on them is false
FAIR = ("fair_logistic", "fair_mlp")
#: the models that read c (X plus a last column c): the audit, which reads X alone, skips them
READS_C = ("with_c",)


@dataclass
class FittedModel:
    """``name``; ``obj`` (what ``faux.audit`` audits); ``proba`` (rows -> P(y = 1));
    ``fair``: zero weight on c's descendants; ``reads_c``: X plus a last column ``c``."""

    name: str
    obj: Any
    proba: Callable[[Any], np.ndarray]
    fair: bool = False
    reads_c: bool = False


def with_c(X, c) -> pd.DataFrame:
    """X with c appended as its last column ``c`` (the input of a model that reads c)."""
    out = pd.DataFrame(X).copy()
    out["c"] = np.asarray(c, dtype=float)
    return out


def _array(X) -> np.ndarray:
    return np.asarray(X.to_numpy() if isinstance(X, pd.DataFrame) else X, dtype=np.float64)


def _sklearn_proba(est) -> Callable[[Any], np.ndarray]:
    return lambda X: est.predict_proba(_array(X))[:, 1]


def fit_logistic(X, y):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline([("scale", StandardScaler()),
                     ("model", LogisticRegression(max_iter=1000))]).fit(_array(X), y)


def fit_mlp(X, y, seed: int = 0):
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    mlp = MLPClassifier((32, 32), max_iter=200, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter
        return Pipeline([("scale", StandardScaler()), ("model", mlp)]).fit(_array(X), y)


def fit_trees(X, y, seed: int = 0):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=100, early_stopping=False,
                                          random_state=seed).fit(_array(X), y)


def fit_fair_logistic(X: pd.DataFrame, y, descendants):
    """A scaler over every column and a logistic regression fitted on the scaled
    non-descendants, then given the full width with 0 on the descendant columns (exactly:
    the coefficients are set, not learnt)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    x = _array(X)
    keep = np.array([col not in descendants for col in X.columns])
    scaler = StandardScaler().fit(x)
    part = LogisticRegression(max_iter=1000).fit(scaler.transform(x)[:, keep], y)
    full = LogisticRegression(max_iter=1000)
    full.coef_ = np.zeros((1, x.shape[1]))
    full.coef_[0, keep] = part.coef_[0]
    full.intercept_, full.classes_ = part.intercept_.copy(), part.classes_.copy()
    full.n_features_in_, full.n_iter_ = x.shape[1], part.n_iter_.copy()
    pipe = Pipeline([("scale", scaler), ("model", full)])
    return pipe


def train_models(world, seed: int = 0, names=MODELS) -> dict[str, FittedModel]:
    """The models ``names`` (default: all of MODELS) fitted on ``world``'s rows."""
    from faux.worlds.torch_models import fit_fair_mlp

    X, y, desc = world.X, world.y, world.descendants
    out: dict[str, FittedModel] = {}
    for name in names:
        if name == "logistic":
            est = fit_logistic(X, y)
        elif name == "mlp":
            est = fit_mlp(X, y, seed)
        elif name == "trees":
            est = fit_trees(X, y, seed)
        elif name == "fair_logistic":
            est = fit_fair_logistic(X, y, desc)
        elif name == "fair_mlp":
            module, proba = fit_fair_mlp(X, y, desc, seed)
            out[name] = FittedModel(name, module, proba, fair=True)
            continue
        elif name == "with_c":
            est = fit_logistic(with_c(X, world.c), y)
            out[name] = FittedModel(name, est, _sklearn_proba(est), reads_c=True)
            continue
        else:
            raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        out[name] = FittedModel(name, est, _sklearn_proba(est), fair=name in FAIR)
    return out
