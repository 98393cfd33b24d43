"""What a validation world is: rows, a binary protected attribute, and each row's exact
counterfactual under ``do(c := 1 - c)``.

A world's features ``X`` never hold ``c``. ``X_cf`` is the same individuals (the same
exogenous noise) with ``c`` flipped: the features ``c`` causes (``descendants``) move, every
other feature keeps its value exactly. ``y`` is a binary label the models are trained on.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class World:
    """One world. ``X``/``X_cf``: DataFrames of the same columns and index (c is not among
    them); ``c``: 0/1 int array; ``descendants``: the columns c causes (the only columns in
    which ``X_cf`` may differ from ``X``); ``y``: 0/1 int label; ``source``: who computed the
    counterfactuals (``dowhy``, ``causal-profiler``, ``planted``); ``meta``: what built it
    (seeds, strengths, the graph)."""

    name: str
    description: str
    X: pd.DataFrame
    c: np.ndarray
    X_cf: pd.DataFrame
    descendants: list[str]
    y: np.ndarray
    source: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.c = np.asarray(self.c).astype(int).reshape(-1)
        self.y = np.asarray(self.y).astype(int).reshape(-1)
        check_world(self)

    @property
    def non_descendants(self) -> list[str]:
        return [col for col in self.X.columns if col not in self.descendants]

    def __repr__(self) -> str:
        return (f"World({self.name!r}, {len(self.X):,} rows, {self.X.shape[1]} features, "
                f"descendants {self.descendants}, P(c=1) {self.c.mean():.2f}, "
                f"P(y=1) {self.y.mean():.2f})")


def check_world(w: World) -> None:
    """The invariants every world keeps; raises ``ValueError`` naming the first broken one."""
    n = len(w.X)
    if "c" in w.X.columns:
        raise ValueError(f"{w.name}: c must not be a feature")
    if list(w.X_cf.columns) != list(w.X.columns) or not w.X_cf.index.equals(w.X.index):
        raise ValueError(f"{w.name}: X_cf must have X's columns and index")
    if len(w.c) != n or len(w.y) != n:
        raise ValueError(f"{w.name}: c and y need one value per row")
    if not set(np.unique(w.c)) <= {0, 1} or not set(np.unique(w.y)) <= {0, 1}:
        raise ValueError(f"{w.name}: c and y must be 0/1")
    unknown = sorted(set(w.descendants) - set(w.X.columns))
    if unknown:
        raise ValueError(f"{w.name}: descendants {unknown} are not features")
    keep = w.non_descendants
    if not np.array_equal(w.X[keep].to_numpy(), w.X_cf[keep].to_numpy()):
        raise ValueError(f"{w.name}: a non-descendant of c moved in X_cf")
    if not np.isfinite(w.X.to_numpy(float)).all() or not np.isfinite(w.X_cf.to_numpy(float)).all():
        raise ValueError(f"{w.name}: features must be finite")


def binary_label(score: np.ndarray) -> np.ndarray:
    """``1[score > median(score)]``: a balanced 0/1 label."""
    score = np.asarray(score, dtype=float).reshape(-1)
    return (score > np.median(score)).astype(int)


@contextlib.contextmanager
def global_seed(seed: int):
    """Seed the global generators the libraries draw from (``random``, ``numpy.random``,
    torch) and restore their states afterwards, so that building a world neither depends on
    nor disturbs the caller's random state."""
    import torch

    py, npy, th = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)
        torch.random.set_rng_state(th)
