"""Estimated counterfactuals: the interface new ones plug into, and the reference baselines.

A :class:`Transport` is fitted on a sample of rows and their protected values, ``fit(X, c)``,
and then moves rows to another group, ``transport(X, c, c_to) -> X_hat`` (a DataFrame of X's
columns and index). The baselines here are references to judge a new counterfactual
against, not the product:

- :class:`MeanShift`: every feature moves by the difference of its group means,
  ``x + mean(x | c_to) - mean(x | c)``;
- :class:`QuantileMap`: every feature moves to the same quantile in the other group, ``x ->
  F_to^-1(F_from(x))`` (mid-rank ECDF of the row's group; linear interpolation of the other
  group's order statistics, or, for a discrete feature, its inverse CDF, so it stays on
  the feature's values);
- :class:`Oracle`: the world's true counterfactual ``X_cf`` (a sanity check: it must score
  precision = recall = 1).

Today's ``faux audit`` is scored end to end from its result instead
(:func:`faux.worlds.evaluate.score_audit`): its counterfactuals are internal to the audit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import pandas as pd

#: a feature with at most this many distinct values, all integers, is mapped as discrete
DISCRETE_MAX_LEVELS = 20


class Transport(ABC):
    """An estimated counterfactual. Subclasses set ``name`` and implement ``fit`` and
    ``transport``; ``fit`` returns ``self``."""

    name = "transport"

    @abstractmethod
    def fit(self, X: pd.DataFrame, c) -> Transport:
        """Learn what is needed from a sample of rows ``X`` and their protected values ``c``."""

    @abstractmethod
    def transport(self, X: pd.DataFrame, c, c_to) -> pd.DataFrame:
        """Rows ``X`` of groups ``c`` moved to groups ``c_to`` (same columns and index)."""


def _groups(c) -> np.ndarray:
    return np.asarray(c).reshape(-1).astype(int)


class MeanShift(Transport):
    name = "mean_shift"

    def fit(self, X, c) -> MeanShift:
        c = _groups(c)
        self.columns = list(X.columns)
        self.means = {g: X[c == g].mean().to_numpy(float) for g in np.unique(c)}
        return self

    def transport(self, X, c, c_to) -> pd.DataFrame:
        c, c_to = _groups(c), _groups(c_to)
        mu_from = np.stack([self.means[g] for g in c])
        mu_to = np.stack([self.means[g] for g in c_to])
        return pd.DataFrame(X[self.columns].to_numpy(float) + mu_to - mu_from,
                            columns=self.columns, index=X.index)


def is_discrete(values: np.ndarray) -> bool:
    levels = np.unique(values)
    return len(levels) <= DISCRETE_MAX_LEVELS and bool(np.all(levels == np.round(levels)))


class QuantileMap(Transport):
    name = "quantile_map"

    def fit(self, X, c) -> QuantileMap:
        c = _groups(c)
        self.columns = list(X.columns)
        x = X.to_numpy(float)
        self.discrete = [is_discrete(x[:, j]) for j in range(x.shape[1])]
        self.sorted = {g: np.sort(x[c == g], axis=0) for g in np.unique(c)}
        return self

    def _map(self, v: np.ndarray, j: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        n_src, n_dst = len(src), len(dst)
        u = (np.searchsorted(src, v, "left") + np.searchsorted(src, v, "right")) / (2 * n_src)
        if self.discrete[j]:  # inverse CDF: the smallest value with F_to >= u
            idx = np.clip(np.ceil(u * n_dst).astype(int) - 1, 0, n_dst - 1)
            return dst[idx]
        pos = (np.arange(n_dst) + 0.5) / n_dst
        return np.interp(u, pos, dst)

    def transport(self, X, c, c_to) -> pd.DataFrame:
        c, c_to = _groups(c), _groups(c_to)
        x = X[self.columns].to_numpy(float)
        out = x.copy()
        for a in np.unique(c):
            for b in np.unique(c_to):
                rows = (c == a) & (c_to == b)
                if a == b or not rows.any():
                    continue
                for j in range(x.shape[1]):
                    out[rows, j] = self._map(x[rows, j], j, self.sorted[a][:, j],
                                             self.sorted[b][:, j])
        return pd.DataFrame(out, columns=self.columns, index=X.index)


class FauxTransport(Transport):
    """The audit's transport (:mod:`faux.audit.counterfactual.transport`) over the world's columns, every
    one continuous; ``ordering`` names how the dependent features are ordered."""

    def __init__(self, ordering: str = "c_gain"):
        self.ordering = ordering
        self.name = "transport" if ordering == "c_gain" else f"transport_{ordering}"

    def fit(self, X, c) -> FauxTransport:
        from faux.audit.counterfactual import transport as tp

        self.columns = list(X.columns)
        x = X.to_numpy(float)
        self.t = tp.fit_transport(x, _groups(c), 2, tp.features_of(x.shape[1],
                                                                   names=self.columns),
                                  ordering=self.ordering)
        return self

    def transport(self, X, c, c_to) -> pd.DataFrame:
        out = self.t.transport(X[self.columns].to_numpy(float), _groups(c), _groups(c_to))
        return pd.DataFrame(out.x, columns=self.columns, index=X.index)


class Oracle(Transport):
    """The world's exact counterfactual: rows of the world itself, moved to ``1 - c`` only."""

    name = "oracle"

    def __init__(self, world):
        self.world = world

    def fit(self, X, c) -> Oracle:
        return self

    def transport(self, X, c, c_to) -> pd.DataFrame:
        c, c_to = _groups(c), _groups(c_to)
        w = self.world
        if not np.array_equal(c, w.c[w.X.index.get_indexer(X.index)]) or not np.array_equal(
                c_to, 1 - c):
            raise ValueError("the oracle knows the world's own rows under c -> 1 - c only")
        return w.X_cf.loc[X.index].copy()


#: the fitted counterfactuals by name (the oracle also needs the world)
BASELINES = {"transport": FauxTransport,
             "transport_sinks_last": lambda: FauxTransport("sinks_last"),
             "mean_shift": MeanShift, "quantile_map": QuantileMap}


def make_transport(name: str, world) -> Transport:
    """A fresh (unfitted) transport by name: one of BASELINES, or ``oracle``."""
    if name == Oracle.name:
        return Oracle(world)
    if name not in BASELINES:
        raise ValueError(f"unknown counterfactual {name!r}; known: "
                         f"{', '.join([*BASELINES, Oracle.name])}")
    return BASELINES[name]()
