"""Counterfactuals by transport: the same person in the other group, keeping who they are.

The paper's Definition 1 writes an individual as ``x = f(z⊥, ψ(c))``: what does not depend on
``c`` (``z⊥``) is kept and ``c`` changed. :class:`Transport` learns that map from the audit's
sample, with ``c``, in three steps:

1. **What does not depend on c is held fixed.** Each feature (a continuous column, or a
   categorical block of one-hot or ordinal columns) is tested for dependence on ``c``: a
   Kolmogorov–Smirnov two-sample test between the groups for a continuous feature, a
   chi-square test of the contingency table for a categorical one, Holm's rule over the
   features at level ``alpha``. A feature the test does not reject (``fixed``) never moves.
2. **The rest move in order, each given what came before.** The dependent features
   (``moved``) are ordered by how much ``c`` adds to predicting them from the fixed ones
   (R² gained, strongest first: along a chain c -> a -> b, ``a`` carries more of ``c`` than
   ``b``), and each is modelled given ``c`` and every feature before it: a linear regression
   for a continuous feature (per-group slopes where they lower the BIC against slopes the
   groups share), a multinomial logistic regression with group intercepts and shared slopes
   (L2-penalised) for a categorical one.
3. **Each person keeps their rank.** A continuous feature becomes the other group's
   prediction at the person's transported predecessors plus the person's residual: the
   same residual when the groups' residuals share one distribution (additive noise:
   abduction, then prediction), else mapped to the same quantile of the other group's.
   A categorical feature follows the maximal coupling of the
   two conditional distributions: a person keeps their category when the other group, given
   the same predecessors, has it at least half as often as their own; otherwise they take
   the category the other group has most in excess (never the category that merely moves a
   model furthest).

:func:`null_transports` refits step 2 and 3 with ``c`` permuted (the same features in the
same order): transports that cannot know ``c``, whose flags measure what estimation noise
alone flags. Everything here is numpy and scikit-learn on the rows in the model's units.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

#: the dependence test's family-wise level (Holm) below which a feature depends on ``c``
ALPHA = 0.001
#: the level below which the groups' residuals of a feature differ (then rank-mapped)
RESIDUAL_ALPHA = 0.01
#: ridge penalty of the per-group regressions (on standardised inputs)
RIDGE = 1e-3
#: rows a transport carries at a time (its temporaries: this many rows x about twice the
#: features, a couple of MB)
ROWS_AT_ONCE = 2048



@dataclass(frozen=True)
class Feature:
    """One feature of the model's input: a continuous column, or a categorical block (its
    columns and each level's code in them)."""

    name: str
    columns: tuple[int, ...]
    codes: np.ndarray | None = None  # (levels, len(columns)) for a categorical feature
    levels: tuple[str, ...] = ()  # their names

    @property
    def categorical(self) -> bool:
        return self.codes is not None

    def levels_of(self, x: np.ndarray) -> np.ndarray:
        """Each row's level: the nearest code."""
        d = ((x[:, None, list(self.columns)] - self.codes[None]) ** 2).sum(axis=2)
        return d.argmin(axis=1)


def features_of(n_features: int, layout=None, names=None) -> list[Feature]:
    """The features of rows with ``n_features`` columns: ``layout``'s categorical blocks
    (``faux.audit.sources.layout.Layout``), every other column continuous."""
    names = list(names) if names is not None else [f"x{j}" for j in range(n_features)]
    out, used = [], set()
    for b in (layout.blocks if layout is not None else ()):
        out.append(Feature(b.name, tuple(b.columns), np.asarray(b.codes, dtype=np.float64),
                           tuple(str(v) for v in b.levels)))
        used.update(b.columns)
    out += [Feature(names[j], (j,)) for j in range(n_features) if j not in used]
    return sorted(out, key=lambda f: f.columns[0])


def _holm(p: np.ndarray, alpha: float) -> np.ndarray:
    """Which hypotheses Holm's step-down rule rejects at family-wise level ``alpha``."""
    order = np.argsort(p)
    m = len(p)
    reject = np.zeros(m, dtype=bool)
    for rank, i in enumerate(order):
        if p[i] > alpha / (m - rank):
            break
        reject[i] = True
    return reject


def dependence_pvalue(f: Feature, x: np.ndarray, g: np.ndarray, k: int) -> float:
    """The p-value of "feature ``f`` has the same distribution in every group of ``g``": the
    smallest of the Kolmogorov–Smirnov and Welch t-tests over pairs of groups, Bonferroni-
    corrected (continuous), or the chi-square test of the levels x groups table
    (categorical)."""
    from scipy import stats

    if f.categorical:
        lev = f.levels_of(x)
        table = np.array([[np.sum((lev == a) & (g == b)) for b in range(k)]
                          for a in range(len(f.codes))], dtype=float)
        table = table[table.sum(axis=1) > 0]
        if table.shape[0] < 2:
            return 1.0
        return float(stats.chi2_contingency(table, correction=False)[1])
    v = x[:, f.columns[0]]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)
             if (g == a).sum() > 1 and (g == b).sum() > 1]
    if not pairs or v.std() == 0:
        return 1.0
    with warnings.catch_warnings():  # a group of nearly equal values: the t-test says so
        warnings.simplefilter("ignore", RuntimeWarning)
        p = min(min(stats.ks_2samp(v[g == a], v[g == b]).pvalue,
                    np.nan_to_num(stats.ttest_ind(v[g == a], v[g == b],
                                                  equal_var=False).pvalue, nan=1.0))
                for a, b in pairs)
    return float(min(1.0, 2 * p * len(pairs)))


def _design(s: np.ndarray, g: np.ndarray, k: int, interact: bool = True) -> np.ndarray:
    """Group indicators and the predecessors ``s``, with (``interact``) their products with
    the indicators: a linear model on it is one linear model per group; without, the groups
    share the slopes and differ by their intercepts."""
    onehot = np.eye(k)[g]
    if s.shape[1] == 0:
        return onehot
    if not interact:
        return np.hstack([onehot, s])
    return np.hstack([onehot, (onehot[:, :, None] * s[:, None, :]).reshape(len(s), -1)])


@dataclass
class _Continuous:
    coef: np.ndarray  # on _design(s, g, k, interact)
    resid: list[np.ndarray] | None  # per group its sorted residuals; None: one distribution
    interact: bool = True

    def predict(self, s, g, k):
        return _design(s, g, k, self.interact) @ self.coef

    def carry(self, r: np.ndarray, g: np.ndarray, g_to: np.ndarray) -> np.ndarray:
        """Residuals ``r`` of groups ``g`` at the same quantile of groups ``g_to``'s (the
        same residual where the groups' residuals share one distribution)."""
        if self.resid is None:
            return r
        out = r.copy()
        for a in np.unique(g):
            for b in np.unique(g_to[g == a]):
                rows = (g == a) & (g_to == b)
                if a == b or len(self.resid[a]) < 2 or len(self.resid[b]) < 2:
                    continue
                src, dst = self.resid[a], self.resid[b]
                q = np.interp(r[rows], src, np.linspace(0, 1, len(src)))
                out[rows] = np.interp(q, np.linspace(0, 1, len(dst)), dst)
        return out


@dataclass
class _Categorical:
    model: object  # a fitted multinomial logistic regression on _design(s, g, k, False)
    classes: np.ndarray  # the levels it knows, in its column order

    def proba(self, s, g, k, n_levels: int) -> np.ndarray:
        p = np.zeros((len(s), n_levels))
        p[:, self.classes] = self.model.predict_proba(_design(s, g, k, interact=False))
        return p


def _fit_continuous(y, s, g, k, interact=None) -> _Continuous:
    """A linear model of ``y`` per group (``interact``), or with slopes shared by the groups,
    or (None) whichever has the smaller BIC."""
    from sklearn.linear_model import Ridge

    fits = []
    for inter in ([interact] if interact is not None else [False, True]):
        d = _design(s, g, k, inter)
        coef = Ridge(alpha=RIDGE, fit_intercept=False).fit(d, y).coef_
        r = y - d @ coef
        bic = len(y) * np.log(max(float(r.var()), 1e-300)) + d.shape[1] * np.log(len(y))
        fits.append((bic, inter, coef, r))
    _, inter, coef, r = min(fits, key=lambda f: f[0])
    return _Continuous(coef, _residuals(r, g, k), inter)


def _residuals(r, g, k) -> list[np.ndarray] | None:
    """Each group's sorted residuals when their distributions differ (a Kolmogorov–Smirnov
    test of some pair at ``RESIDUAL_ALPHA``, Bonferroni over the pairs), else None: additive
    noise the groups share, which abduction carries as it is."""
    from scipy import stats

    by = [np.sort(r[g == a]) for a in range(k)]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)
             if len(by[a]) > 1 and len(by[b]) > 1]
    if not pairs:
        return None
    p = min(stats.ks_2samp(by[a], by[b]).pvalue for a, b in pairs) * len(pairs)
    return by if p < RESIDUAL_ALPHA else None


#: the inverse L2 penalty of a categorical feature's logistic model (standardised inputs)
LOGISTIC_C = 1.0


def _fit_categorical(lev, s, g, k) -> _Categorical | None:
    """A multinomial logistic model of a feature's level on group intercepts per level and
    slopes (of the standardised predecessors) the groups share."""
    from sklearn.linear_model import LogisticRegression

    classes = np.unique(lev)
    if len(classes) < 2:
        return None
    m = LogisticRegression(C=LOGISTIC_C, max_iter=300).fit(_design(s, g, k, interact=False),
                                                           lev)
    return _Categorical(m, m.classes_)


@dataclass
class Transported:
    """A batch's counterfactual rows and, per row, which features moved."""

    x: np.ndarray
    moved: np.ndarray  # (n, len(Transport.moved)) bool


@dataclass
class Transport:
    """The counterfactual of :mod:`this module <faux.audit.counterfactual.transport>`, fitted on a sample.

    ``features``: every feature; ``fixed`` / ``moved``: indices into it (``moved`` in the
    order of transport); ``pvalues``: each feature's dependence test."""

    features: list[Feature]
    k: int
    fixed: list[int]
    moved: list[int]
    pvalues: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    fits: list = field(default_factory=list)

    def _inputs(self, x: np.ndarray, upto: int) -> np.ndarray:
        """The standardised columns a moved feature is modelled on: the fixed features and
        the moved ones before position ``upto``."""
        cols = [j for i in self.fixed + self.moved[:upto] for j in self.features[i].columns]
        return (x[:, cols] - self.mean[cols]) / self.scale[cols]

    def transport(self, x: np.ndarray, g: np.ndarray, g_to: np.ndarray) -> Transported:
        """Rows ``x`` of groups ``g`` carried to groups ``g_to`` (int arrays), ``ROWS_AT_ONCE``
        rows at a time (every step is row by row: a block's temporaries stay in the CPU's
        cache, where a batch's would stream through memory)."""
        x = np.asarray(x, dtype=np.float64)
        g, g_to = np.asarray(g, dtype=np.int64), np.asarray(g_to, dtype=np.int64)
        out = x.copy()
        moved = np.zeros((len(x), len(self.moved)), dtype=bool)
        for a in range(0, len(x), ROWS_AT_ONCE):
            rows = slice(a, a + ROWS_AT_ONCE)
            self._carry_rows(x[rows], g[rows], g_to[rows], out[rows], moved[rows])
        return Transported(out, moved)

    def _carry_rows(self, x, g, g_to, out, moved) -> None:
        """``transport`` of rows ``x`` into ``out`` and ``moved`` (views, filled in place)."""
        for pos, (i, fit) in enumerate(zip(self.moved, self.fits, strict=True)):
            f = self.features[i]
            if fit is None:
                continue
            s, s_to = self._inputs(x, pos), self._inputs(out, pos)
            if f.categorical:
                cur = f.levels_of(x)
                n_lev = len(f.codes)
                p = fit.proba(s, g, self.k, n_lev)
                q = fit.proba(s_to, g_to, self.k, n_lev)
                new = _coupled(cur, p, q)
                out[:, list(f.columns)] = f.codes[new]
                moved[:, pos] = new != cur
            else:
                j = f.columns[0]
                r = x[:, j] - fit.predict(s, g, self.k)
                out[:, j] = fit.predict(s_to, g_to, self.k) + fit.carry(r, g, g_to)
                moved[:, pos] = out[:, j] != x[:, j]
        same = g == g_to
        out[same], moved[same] = x[same], False


def _coupled(cur: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The maximal coupling of ``p`` to ``q`` (rows: distributions over levels), read
    deterministically: a row keeps its level ``cur`` when ``q`` gives it at least half of
    ``p``'s mass, else takes the level ``q`` has most in excess of ``p``."""
    rows = np.arange(len(cur))
    keep = q[rows, cur] >= 0.5 * p[rows, cur]
    excess = np.clip(q - p, 0, None)
    return np.where(keep, cur, excess.argmax(axis=1))


def _order(features, fixed, dependent, x, g, k, mean, scale) -> list[int]:
    """``dependent`` ordered by the R² (continuous) or log-loss share (categorical) that
    ``c`` adds to a linear model of the feature on the fixed features, largest first."""
    cols = [j for i in fixed for j in features[i].columns]
    s = (x[:, cols] - mean[cols]) / scale[cols]
    gain = {}
    for i in dependent:
        f = features[i]
        if f.categorical:
            lev = f.levels_of(x)
            without = _fit_categorical(lev, s, np.zeros_like(g), 1)
            with_c = _fit_categorical(lev, s, g, k)
            if without is None or with_c is None:
                gain[i] = 0.0
                continue
            n = len(f.codes)
            ll0 = np.log(without.proba(s, np.zeros_like(g), 1, n)[np.arange(len(lev)), lev]
                         + 1e-12).mean()
            ll1 = np.log(with_c.proba(s, g, k, n)[np.arange(len(lev)), lev] + 1e-12).mean()
            gain[i] = float(ll1 - ll0)
        else:
            y = x[:, f.columns[0]]
            var = y.var() or 1.0
            r0 = y - _fit_continuous(y, s, np.zeros_like(g), 1).predict(s, np.zeros_like(g), 1)
            r1 = y - _fit_continuous(y, s, g, k).predict(s, g, k)
            gain[i] = float((r0.var() - r1.var()) / var)
    return sorted(dependent, key=lambda i: -gain[i])


def _unexplained(f: Feature, x, s, g, k) -> float:
    """The share of feature ``f`` a linear model on ``c`` and ``s`` leaves unexplained:
    1 - R² (continuous), the cross-entropy over the entropy of its levels (categorical)."""
    if f.categorical:
        lev = f.levels_of(x)
        fit = _fit_categorical(lev, s, g, k)
        if fit is None:
            return 0.0
        n = len(f.codes)
        ce = -np.log(fit.proba(s, g, k, n)[np.arange(len(lev)), lev] + 1e-12).mean()
        share = np.bincount(lev, minlength=n) / len(lev)
        h = -(share[share > 0] * np.log(share[share > 0])).sum()
        return float(ce / h) if h > 0 else 0.0
    y = x[:, f.columns[0]]
    var = y.var()
    if var == 0:
        return 0.0
    r = y - _fit_continuous(y, s, g, k, interact=False).predict(s, g, k)
    return float(r.var() / var)


def _order_sinks_last(features, fixed, dependent, x, g, k, mean, scale) -> list[int]:
    """``dependent`` ordered from the feature the others explain least to the one they
    explain best (given ``c``, the fixed features and the other dependent ones): a feature
    that is nearly a function of the others (``relationship`` of ``sex`` and
    ``marital-status``) comes after them."""
    z = (x - mean) / scale
    left = {}
    for i in dependent:
        cols = [j for m in fixed + dependent if m != i for j in features[m].columns]
        left[i] = _unexplained(features[i], x, z[:, cols], g, k)
    return sorted(dependent, key=lambda i: -left[i])


#: how the dependent features are ordered, by name (the default first)
ORDERINGS = {"c_gain": _order, "sinks_last": _order_sinks_last}


def fit_transport(x: np.ndarray, g: np.ndarray, k: int, features: list[Feature], *,
                  alpha: float = ALPHA, ordering: str = "c_gain", hold=(), fixed=None,
                  order=None) -> Transport:
    """The transport of rows ``x`` (groups ``g`` in ``0..k-1``) between the groups.
    ``ordering``: a name of :data:`ORDERINGS`; ``hold``: indices of features held fixed
    whatever the test says (what the user knows c cannot cause). ``fixed``/``order``: the
    features held fixed and the order of the others, as found on the real groups (given for
    a null transport or a refit; found here otherwise)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.asarray(g, dtype=np.int64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    pvalues = np.array([dependence_pvalue(f, x, g, k) for f in features])
    if fixed is None:
        dependent = [i for i in np.flatnonzero(_holm(pvalues, alpha)).tolist()
                     if i not in set(hold)]
        fixed = [i for i in range(len(features)) if i not in dependent]
        order = ORDERINGS[ordering](features, fixed, dependent, x, g, k, mean, scale)
    t = Transport(features, k, list(fixed), list(order), pvalues, mean, scale)
    for pos, i in enumerate(t.moved):
        f, s = features[i], t._inputs(x, pos)
        t.fits.append(_fit_categorical(f.levels_of(x), s, g, k) if f.categorical
                      else _fit_continuous(x[:, f.columns[0]], s, g, k))
    return t


def null_transports(t: Transport, x: np.ndarray, g: np.ndarray, n: int, seed: int
                    ) -> list[Transport]:
    """``n`` transports fitted as ``t`` was (its fixed features, its order) with ``g``
    permuted: they cannot know the groups, so what they move is estimation noise."""
    rng = np.random.default_rng(seed)
    return [fit_transport(x, rng.permutation(g), t.k, t.features, fixed=t.fixed,
                          order=t.moved) for _ in range(n)]


def two_sample_auc(a: np.ndarray, b: np.ndarray, seed: int = 0) -> float:
    """How well a classifier tells rows ``a`` from rows ``b``: the cross-validated AUROC of
    gradient-boosted trees (3 folds, the smaller set's size taken from each). Near 0.5: the
    two sets are alike; 1: told apart every time."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import cross_val_predict

    rng = np.random.default_rng(seed)
    m = min(len(a), len(b))
    if m < 10:
        return float("nan")
    a = a[rng.choice(len(a), m, replace=False)]
    b = b[rng.choice(len(b), m, replace=False)]
    x, y = np.vstack([a, b]), np.r_[np.zeros(m), np.ones(m)]
    from sklearn.metrics import roc_auc_score

    clf = HistGradientBoostingClassifier(max_iter=50, max_leaf_nodes=15, random_state=seed)
    p = cross_val_predict(clf, x, y, cv=3, method="predict_proba")[:, 1]
    return float(roc_auc_score(y, p))
