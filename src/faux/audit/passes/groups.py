"""Group views of an audit: one per protected attribute and one for the intersection of the
categorical ones, each with its own aux model, scores, threshold and per-group statistics.

A view's rows are its groups (an attribute's values; a continuous attribute's two halves
at its mean; the intersection's cells). Per group: rows, rows flagged by the view's own
score (the first method with the view's aux, above the view's threshold), their rate, the
mean score, the top features of the view's aux on the group's sample rows, and two
intervals for the rate and the mean score:

- over rows (``*_ci``): a percentile bootstrap, ``BOOTSTRAP`` resamples of each group's
  rows with replacement (group sizes fixed), from streaming statistics of all rows: the
  flagged count is resampled as Binomial(rows, rate), the mean score from the counts and
  sums of the scores in ``SCORE_BINS`` bins (quantiles of the sample's scores);
- over aux seeds (``*_seed_ci``): the sample rows are scored with ``aux_seeds`` aux models
  trained with different seeds; the interval is the full-data estimate shifted by the
  smallest and largest change of the sample statistic from the first aux's (the only one
  that scores every row). None for a group without sample rows.

Then, as fairlearn's ``MetricFrame`` does for a metric: the largest difference (max - min)
and ratio (min / max; 1 when every rate is 0) of the flagged rate between the groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from faux.audit.scores.calibration import NullSettings
from faux.audit.sources.data_scan import Scan
from faux.audit.sources.intersection import intersection_of
from faux.audit.sources.protected import ProtectedInfo
from faux.errors import ConfigError

BOOTSTRAP = 200  # bootstrap resamples of the rows
LEVEL = 0.95  # interval level
SCORE_BINS = 1024  # bins of a score's streaming histogram per group (bootstrap of the mean)
AUX_SEEDS = 3  # default number of aux models per view (intervals over seeds)
MIN_CELL = 50  # default smallest intersection cell, in sample rows
N_TOP_FEATURES = 5
SEED_STEP = 1_000_003  # aux seed i of an audit with seed s: s + i * SEED_STEP (mod 2**32)


def check_settings(aux_seeds, min_cell, intersection) -> None:
    """The group settings, one line each, before anything is read."""
    if not isinstance(aux_seeds, int | np.integer) or isinstance(aux_seeds, bool) \
            or aux_seeds < 1:
        raise ConfigError(f"aux_seeds (--aux-seeds) must be a positive integer, got "
                          f"{aux_seeds!r}; the default {AUX_SEEDS} trains that many aux models "
                          "per view for the intervals over seeds")
    if not isinstance(min_cell, int | np.integer) or isinstance(min_cell, bool) \
            or min_cell < 0:
        raise ConfigError(f"min_cell (--min-cell) must be a non-negative integer, got "
                          f"{min_cell!r}; the default is {MIN_CELL} sample rows")
    if not isinstance(intersection, bool):
        raise ConfigError(f"intersection must be True or False, got {intersection!r}")


def aux_seed(seed: int, i: int) -> int:
    """The seed of a view's i-th aux model (i = 0: the audit's seed)."""
    return (seed + i * SEED_STEP) % 2**32


@dataclass
class _Group:
    nb: int
    nh: int  # null scores + 1 (Benjamini-Hochberg), or 0
    rows: int = 0
    flagged: int = 0
    bin_n: np.ndarray = field(init=False)
    bin_sum: np.ndarray = field(init=False)
    bh: np.ndarray | None = field(init=False)

    def __post_init__(self):
        self.bin_n = np.zeros(self.nb, dtype=np.int64)
        self.bin_sum = np.zeros(self.nb)
        self.bh = np.zeros(self.nh, dtype=np.int64) if self.nh else None


class GroupStats:
    """Streaming per-group statistics of one view: rows, flagged, score histogram, and with
    ``bh_null`` the rows' exceedance counts (for the Benjamini-Hochberg cut at the end)."""

    def __init__(self, edges: np.ndarray, bh_null: np.ndarray | None = None):
        self.edges = np.asarray(edges, dtype=np.float64)
        self.bh_null = bh_null
        self.groups: dict[str, _Group] = {}

    def add(self, labels: np.ndarray, scores: np.ndarray, flagged: np.ndarray,
            exceed: np.ndarray | None = None) -> None:
        g_vals, g_inv = np.unique(np.asarray(labels).astype(str), return_inverse=True)
        g_inv = g_inv.reshape(-1)
        fin = np.isfinite(scores)
        b = np.searchsorted(self.edges, np.where(fin, scores, 0.0))
        nb, nh = len(self.edges) + 1, 0 if self.bh_null is None else len(self.bh_null) + 1
        for j, g in enumerate(g_vals):
            st = self.groups.setdefault(str(g), _Group(nb, nh))
            mask = g_inv == j
            st.rows += int(mask.sum())
            st.flagged += int(flagged[mask].sum())
            mf = mask & fin
            st.bin_n += np.bincount(b[mf], minlength=nb)
            st.bin_sum += np.bincount(b[mf], weights=scores[mf], minlength=nb)
            if st.bh is not None:
                st.bh += np.bincount(exceed[mask], minlength=nh)

    def fresh(self) -> GroupStats:
        """Statistics of the same bins and null with nothing counted yet: one batch's, for
        ``merge_counts``."""
        return GroupStats(self.edges, self.bh_null)

    def counted(self) -> dict:
        """What was counted: per group, its rows, flagged rows and histograms."""
        return self.groups

    def merge_counts(self, counts: dict) -> None:
        """Add the ``counts`` of the next batch (``fresh().counted()`` after it): the same
        sums, in the same order, as when that batch is counted here."""
        nb, nh = len(self.edges) + 1, 0 if self.bh_null is None else len(self.bh_null) + 1
        for g, part in counts.items():
            st = self.groups.setdefault(g, _Group(nb, nh))
            st.rows += part.rows
            st.flagged += part.flagged
            st.bin_n += part.bin_n
            st.bin_sum += part.bin_sum
            if st.bh is not None:
                st.bh += part.bh

    def bh_cut(self, n_rows: int, alpha: float) -> int:
        from faux.audit.scores.calibration import bh_cut

        hist = sum(st.bh for st in self.groups.values())
        return bh_cut(hist, n_rows, alpha)

    def apply_bh(self, cut: int) -> None:
        for st in self.groups.values():
            st.flagged = int(st.bh[:cut + 1].sum())


def bootstrap_rate(rows: int, flagged: int, rng, b: int = BOOTSTRAP,
                   level: float = LEVEL) -> list[float]:
    """Percentile interval of a rate from ``b`` resamples of ``rows`` rows with replacement."""
    if rows == 0:
        return [math.nan, math.nan]
    draws = rng.binomial(rows, flagged / rows, size=b) / rows
    return _percentiles(draws, level)


def bootstrap_mean(bin_n: np.ndarray, bin_sum: np.ndarray, rng, b: int = BOOTSTRAP,
                   level: float = LEVEL) -> list[float]:
    """Percentile interval of a mean from ``b`` resamples of the rows with replacement, the
    rows given as counts and sums per bin (a resampled row takes its bin's mean)."""
    n = int(bin_n.sum())
    if n == 0:
        return [math.nan, math.nan]
    means = np.divide(bin_sum, bin_n, out=np.zeros(len(bin_n)), where=bin_n > 0)
    draws = rng.multinomial(n, bin_n / n, size=b) @ means / n
    return _percentiles(draws, level)


def _percentiles(draws: np.ndarray, level: float) -> list[float]:
    q = 100 * (1 - level) / 2
    lo, hi = np.percentile(draws, [q, 100 - q])
    return [float(lo), float(hi)]


def seed_interval(point: float, per_seed: list[float], clip: bool = False):
    """``point`` shifted by the smallest and largest change of ``per_seed`` from its first
    value; None when there are no values."""
    v = np.asarray(per_seed, dtype=np.float64)
    if v.size == 0 or not np.isfinite(v).all() or not math.isfinite(point):
        return None
    lo, hi = point + float((v - v[0]).min()), point + float((v - v[0]).max())
    if clip:
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return [lo, hi]


@dataclass
class View:
    name: str
    kind: str  # attribute | intersection
    info: ProtectedInfo
    sample_c: np.ndarray  # each sample row's value (an intersection: its cell)
    labels_of: object  # batch's protected values (dict) -> group label per row
    min_cell: int | None = None
    merged: list = field(default_factory=list)
    aux: object = None
    quality: dict | None = None
    scorer: object = None
    thresholds: dict | None = None
    null: dict | None = None
    seed_scores: list = field(default_factory=list)  # first method's sample scores per seed
    auxes: list = field(default_factory=list)  # the aux model of each seed (the first: aux)
    stats: GroupStats | None = None
    null_nets: list | None = None  # null aux models trained ahead (``train_primary``)
    seed_nets: list | None = None  # aux models of seeds 1 .. aux_seeds - 1 trained ahead
    #: an intersection's: per cell, [rows, rows the audit flags] (the first attribute's
    #: verdict, ``flagged``), beside the view's own flags by its score
    verdict_counts: dict = field(default_factory=dict)

    def fresh(self) -> View:
        """This view with nothing counted yet (one batch's counts, for ``merge_counts``)."""
        return replace(self, stats=self.stats.fresh(), verdict_counts={})

    def counted(self) -> dict:
        return {"stats": self.stats.counted(), "verdict": self.verdict_counts}

    def merge_counts(self, counts: dict) -> None:
        """Add the ``counts`` of the next batch (``fresh().counted()`` after it)."""
        self.stats.merge_counts(counts["stats"])
        for g, (n, k) in counts["verdict"].items():
            cnt = self.verdict_counts.setdefault(g, [0, 0])
            cnt[0] += n
            cnt[1] += k


def build_views(sc: Scan, min_cell: int, intersection: bool = True) -> list[View]:
    """A view per protected attribute (the first one is the primary view) and one for the
    intersection of the categorical ones; DataError (one line) for a bad intersection."""
    views = []
    for a, info in sc.attrs.items():
        views.append(View(a, "attribute", info, sc.cs[a],
                          lambda cs, a=a, info=info: info.group_labels(cs[a])))
    inter = intersection_of(sc, min_cell, intersection)
    if inter is not None:
        views.append(View(inter.name, "intersection", inter.info, inter.labels(sc.cs),
                          inter.labels, inter.min_cell, inter.merged))
    return views


def train_primary(view: View, z_sample: np.ndarray, y, *, kind: str, width: int, depth: int,
                  epochs: int, seed: int, null_permutations: int, aux_seeds: int):
    """The primary view's aux model and quality, its ``null_permutations`` null aux models
    (0: a manual threshold, none) and the aux models of its other seeds, all trained
    together as one stacked network (``train_aux_family``; each model as it would be alone).
    The null models are left in ``view.null_nets`` (for ``null_scores(..., nets=)``), the
    other seeds' in ``view.seed_nets`` (``train_views`` uses them)."""
    from faux.audit.scores.aux import train_aux_family
    from faux.audit.scores.calibration import null_targets

    nulls = null_targets(view.sample_c, null_permutations, seed) if null_permutations else []
    targets = [(view.sample_c, seed), *nulls,
               *[(view.sample_c, aux_seed(seed, s)) for s in range(1, aux_seeds)]]
    fam = train_aux_family(z_sample, targets, view.info, y, kind=kind, width=width,
                           depth=depth, epochs=epochs)
    view.null_nets = [net for net, _ in fam[1:1 + len(nulls)]] if nulls else None
    view.seed_nets = [net for net, _ in fam[1 + len(nulls):]]
    return fam[0]


@dataclass(frozen=True)
class ViewSettings:
    """How ``train_views`` fits the views: ``aux_seeds`` aux models each, their null models
    as ``null`` says (``faux.audit.scores.calibration.NullSettings``; its ``seed`` is the
    audit's), the thresholds by the null quantile at ``alpha`` (``bh``: the
    Benjamini-Hochberg cut, counted over the rows) or the ``manual`` ones (None: calibrated),
    and ``effect``: whether the effect verdict flags the attribute views' rows."""

    null: NullSettings
    aux_seeds: int
    alpha: float
    bh: bool = False
    manual: dict | None = None
    effect: bool = False


def train_views(views: list[View], sc: Scan, z_sample: np.ndarray, *, primary: dict,
                settings: ViewSettings, bar) -> None:
    """Aux models, scorers, thresholds and the sample scores of every seed of each view.
    ``primary``: the first view's aux, quality, thresholds, null and scorer (already
    computed); the other views' scorers are like it (``Scorer.like``: the same model,
    methods, standardisation and gradient memo). A view's aux models still to train (its
    aux, its null models, its other seeds) train together (``train_aux_family``: one
    stacked network, each model as it would be alone)."""
    from faux.audit.scores.calibration import null_quantile, null_scores

    st = settings
    methods, batch_size = primary["scorer"].methods, primary["scorer"].batch_size
    for i, v in enumerate(views):
        nets = _view_family(v, i == 0, sc, z_sample, st)
        if i == 0:
            v.aux, v.quality = primary["aux"], primary["quality"]
            v.thresholds, v.null = primary["thresholds"], primary["null"]
            v.scorer = primary["scorer"]
        else:
            v.aux, v.quality = nets["aux"]
            v.scorer = primary["scorer"].like(v.aux)
            if st.manual is not None:
                v.thresholds = dict(st.manual)
            else:
                sv = replace(sc, c=v.sample_c, protected=v.info)
                v.null = null_scores(v.scorer, v.aux, sv, z_sample, st.null, bar,
                                     nets=nets["null"])
                v.thresholds = {m: null_quantile(v.null["scores"][m], st.alpha)
                                for m in methods}
        for s in range(st.aux_seeds):
            if s == 0:
                scorer, net = v.scorer, v.aux
            else:
                net = nets["seeds"][s - 1]
                scorer = primary["scorer"].like(net, methods[:1])
            v.auxes.append(net)
            v.seed_scores.append(_score_rows(scorer, sc.x, methods[0], batch_size))
        edges = _edges(v.seed_scores[0])
        bh_null = v.null["scores"][methods[0]] if st.bh else None
        if st.effect and v.kind == "attribute":  # the effect verdict flags its rows
            bh_null = None
        v.stats = GroupStats(edges, bh_null)


def _view_family(v: View, primary: bool, sc: Scan, z_sample, st: ViewSettings) -> dict:
    """The aux models of view ``v`` not yet trained, trained together: ``aux`` (model,
    quality) and ``null`` (its null models, when thresholds are calibrated) unless ``v`` is
    the primary view (whose aux and null models the audit trained first), and ``seeds``
    (the aux models of seeds 1 .. aux_seeds - 1)."""
    from faux.audit.scores.aux import train_aux_family
    from faux.audit.scores.calibration import null_targets

    aux_seeds, null, seed = st.aux_seeds, st.null, st.null.seed
    if primary and v.seed_nets is not None and len(v.seed_nets) == aux_seeds - 1:
        return {"aux": None, "null": None, "seeds": v.seed_nets}  # trained with its aux
    targets = [] if primary else [(v.sample_c, seed)]
    n_null = 0
    if not primary and st.manual is None:
        nulls = null_targets(v.sample_c, null.n_perm, seed)
        targets, n_null = targets + nulls, len(nulls)
    targets += [(v.sample_c, aux_seed(seed, s)) for s in range(1, aux_seeds)]
    fam = train_aux_family(z_sample, targets, v.info, sc.y, kind=null.aux,
                           width=null.aux_width, depth=null.aux_depth,
                           epochs=null.aux_epochs)
    k = 0 if primary else 1
    return {"aux": None if primary else fam[0],
            "null": [net for net, _ in fam[k:k + n_null]] if n_null else None,
            "seeds": [net for net, _ in fam[k + n_null:]]}


def _score_rows(scorer, x: np.ndarray, method: str, batch_size: int) -> np.ndarray:
    return np.concatenate([scorer.score(x[s:s + batch_size])[method]
                           for s in range(0, len(x), batch_size)])


def _edges(scores: np.ndarray) -> np.ndarray:
    v = scores[np.isfinite(scores)]
    if v.size == 0:
        return np.zeros(0)
    return np.unique(np.quantile(v, np.linspace(0, 1, SCORE_BINS + 1)[1:-1]))


def add_batch(views: list[View], b, s_primary: dict, flagged, exceed, primary_labels,
              methods, alpha: float, view_flags: dict | None = None,
              scores: dict | None = None) -> dict:
    """Count a scored batch into every view; returns the other views' score columns
    (``<method>:<view>``). The primary view reuses the audit's scores, flags and groups;
    ``view_flags``: a view's flags by name where the effect verdict decides them;
    ``scores``: a view's scores by name where they are given (else scored here)."""
    m0 = methods[0]
    cols = {}
    view_flags = view_flags or {}
    for i, v in enumerate(views):
        if i == 0:
            v.stats.add(primary_labels, s_primary[m0], flagged, exceed)
            continue
        s = scores[v.name] if scores and v.name in scores else v.scorer.score(b.x)
        e = None
        if v.name in view_flags:
            f = view_flags[v.name]
        elif v.stats.bh_null is not None:
            n_null = len(v.stats.bh_null)
            e = n_null - np.searchsorted(v.stats.bh_null, s[m0], side="left")
            f = (1 + e) / (n_null + 1) <= alpha
        else:
            f = s[m0] > v.thresholds[m0]
        labels = v.labels_of(b.cs)
        v.stats.add(labels, s[m0], f, e)
        if v.kind == "intersection":
            cells, inv = np.unique(np.asarray(labels).astype(str), return_inverse=True)
            rows = np.bincount(inv.reshape(-1), minlength=len(cells))
            hits = np.bincount(inv.reshape(-1), weights=flagged, minlength=len(cells))
            for g, n, k in zip(cells, rows, hits, strict=True):
                cnt = v.verdict_counts.setdefault(str(g), [0, 0])
                cnt[0] += int(n)
                cnt[1] += int(k)
        cols.update({f"{m}:{v.name}": s[m] for m in methods})
    return cols


def finish_views(views: list[View], sc: Scan, z_sample: np.ndarray, feature_of, methods, *,
                 n_rows: int, alpha: float, seed: int, primary_threshold: float,
                 effect_views=()) -> dict:
    """summary["groups"]: every view's groups with their statistics and intervals. The views
    named in ``effect_views`` count the effect verdict's flags (rows whose decision changes
    under every aux model: no interval over seeds, the flag already needs them all)."""
    from faux.audit.scores.ranking import feature_ranking

    m0 = methods[0]
    out = {}
    for i, v in enumerate(views):
        thr = v.thresholds[m0]
        if i == 0:
            thr = primary_threshold
        elif v.stats.bh_null is not None:
            cut = v.stats.bh_cut(n_rows, alpha)
            v.stats.apply_bh(cut)
            n_null = len(v.stats.bh_null)
            thr = float(v.stats.bh_null[n_null - cut - 1]) if cut >= 0 else math.inf
        if i == 0 and v.stats.bh_null is not None:
            v.stats.apply_bh(v.stats.bh_cut(n_rows, alpha))
        rng = np.random.default_rng([seed, 2, i])
        sample_labels = np.asarray(v.labels_of(sc.cs)).astype(str)
        rows = []
        for g in sorted(v.stats.groups):
            st = v.stats.groups[g]
            n_fin = int(st.bin_n.sum())
            mean = float(st.bin_sum.sum() / n_fin) if n_fin else math.nan
            rate = st.flagged / st.rows if st.rows else math.nan
            mask = sample_labels == g
            rates = [float((s[mask] > thr).mean()) for s in v.seed_scores] \
                if mask.any() and v.name not in effect_views else []
            means = [float(np.nanmean(s[mask])) for s in v.seed_scores] if mask.any() else []
            top = (list(feature_ranking(v.aux, z_sample[mask], feature_of).items())
                   [:N_TOP_FEATURES]
                   if mask.any() else [])
            rows.append({"group": g, "rows": st.rows, "flagged": st.flagged, "rate": rate,
                         "rate_ci": bootstrap_rate(st.rows, st.flagged, rng),
                         "rate_seed_ci": seed_interval(rate, rates, clip=True),
                         "mean_score": mean,
                         "mean_score_ci": bootstrap_mean(st.bin_n, st.bin_sum, rng),
                         "mean_score_seed_ci": seed_interval(mean, means),
                         "sample_rows": int(mask.sum()),
                         "top_features": [[f, float(w)] for f, w in top]})
        diff, ratio = difference_ratio([r["rate"] for r in rows])
        out[v.name] = {"kind": v.kind, "min_cell": v.min_cell, "merged": list(v.merged),
                       "rows": rows, "largest_difference": diff, "largest_ratio": ratio,
                       "metric": "rate", "method": m0, "threshold": thr,
                       "flagged_by": "effect" if v.name in effect_views else "score",
                       "aux_quality": v.quality,
                       "aux_outputs": 1 if v.info.kind != "categorical" else len(v.info.levels)}
        if v.kind == "intersection" and effect_views:
            out[v.name]["verdict"] = _verdict_cells(v, views[0].name)
    n_seeds = len(views[0].seed_scores)
    text = (f"{LEVEL:.0%} intervals. Over rows: percentile bootstrap, {BOOTSTRAP} resamples of "
            f"each group's {n_rows:,} rows in all (flagged counts Binomial, mean scores from "
            f"{SCORE_BINS}-bin score histograms). Over aux seeds: the {len(sc.x):,} sample rows "
            f"scored by {n_seeds} aux models per view (seeds {seed} + i x {SEED_STEP}); the "
            "estimate shifted by the smallest and largest change from the first aux's, which "
            "scores every row.")
    return {"attributes": list(sc.attrs), "primary_view": views[0].name, "views": out,
            "interval": {"level": LEVEL, "bootstrap": BOOTSTRAP, "aux_seeds": n_seeds,
                         "text": text}}


def _verdict_cells(v: View, attribute: str) -> dict:
    """An intersection's cells with the audit's flagged rows (``attribute``'s verdict) and
    Wilson's interval of their rate."""
    from faux.audit.verdict.outcomes import wilson

    rows = [{"group": g, "rows": n, "flagged": k, "rate": k / n if n else None,
             "rate_ci": wilson(k, n)} for g, (n, k) in sorted(v.verdict_counts.items())]
    return {"attribute": attribute, "rows": rows,
            "text": f"rows flagged by the effect verdict for {attribute} (the audit's "
                    f"flagged), per cell of {v.name}; Wilson's 95% interval"}


def difference_ratio(values) -> tuple[float, float]:
    """Largest difference (max - min) and ratio (min / max, 1 when max is 0) of ``values``
    (NaNs left out), as fairlearn's MetricFrame.difference() / ratio()."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    hi, lo = float(v.max()), float(v.min())
    return hi - lo, (lo / hi if hi > 0 else 1.0)


def by_group_frame(summary: dict, view: str | None = None) -> pd.DataFrame:
    """One view of ``summary["groups"]`` as a DataFrame indexed by group (the primary view
    by default)."""
    groups = summary.get("groups")
    if not groups:
        raise ConfigError("this audit has no group views (an audit from an earlier version)")
    name = groups["primary_view"] if view is None else view
    if name not in groups["views"]:
        raise ConfigError(f"no view {name!r}; views are {', '.join(groups['views'])}")
    return pd.DataFrame(groups["views"][name]["rows"]).set_index("group")
