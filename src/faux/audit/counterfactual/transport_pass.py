"""The effect verdict by transport (``faux.audit.counterfactual.transport``): per protected attribute, each
row carried to the other group keeping who the person is, and the model's decision at the
row against its decision at the carried row.

Fitted on the audit's sample: ``refits`` transports (the first on the sample, the others on
bootstrap resamples of it; their spread is the effect's interval) and ``nulls`` transports
fitted on the whole sample with the attribute permuted (c-blind: they hold fixed what the
real ones hold fixed and move the rest by estimation noise alone). A row is flagged when its
decision changes under every refit (with ``materiality`` δ: ``|p_cf - p| >= δ`` with one
sign). From the nulls, measured on the sample:

- the expected false flags: each null's flagged sample rows (one fit each: at least as many
  as a family of ``refits`` fits would agree on, so the count errs high), scaled to all
  rows, with their mean and a 95 % interval (a negative binomial with the nulls' mean and
  dispersion);
- the model-level test: the flagged sample rows against the nulls' counts under that same
  distribution (its resolution is not limited by the number of nulls), beside the rank of
  the observed count among them;
- each row's p-value: the share of the pooled null |effects| at or above its |effect|.

A categorical attribute with more than two groups is carried to each other group; a row's
effect is the one of largest size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from faux.audit.counterfactual import transport as tp
from faux.audit.counterfactual.counts import N_ROWS, BatchCounts
from faux.audit.counterfactual.top_rows import enters_top, push_top
from faux.audit.verdict.words import moved_word, tidy
from faux.errors import ConfigError

COLUMNS = ("p_cf", "effect", "effect_lo", "effect_hi", "decision_changes", "off_support",
           "unreachable", "p_value")


def _verdict(p, p_cf, threshold, materiality):
    from faux.audit.counterfactual.effects import verdict

    return verdict(p, p_cf, threshold, materiality)


def count_test(observed: int, null_counts) -> dict:
    """How unusual ``observed`` flags are among ``null_counts``: a negative binomial with the
    nulls' mean (one added count, so that all-zero nulls still give a rate) and their
    dispersion (at least Poisson's); its upper-tail p-value and the 95 % interval of a null
    count."""
    from scipy import stats

    c = np.asarray(null_counts, dtype=float)
    mean = (c.sum() + 1.0) / len(c)
    var = max(float(c.var(ddof=1)) if len(c) > 1 else 0.0, mean)
    if var > mean * (1 + 1e-9):
        n_nb = mean * mean / (var - mean)
        dist = stats.nbinom(n_nb, n_nb / (n_nb + mean))
    else:
        dist = stats.poisson(mean)
    p = float(dist.sf(observed - 1)) if observed > 0 else 1.0
    lo, hi = dist.ppf(0.025), dist.ppf(0.975)
    rank_p = (1 + int((c >= observed).sum())) / (1 + len(c))
    return {"p_value": p, "rank_p": rank_p, "null_mean": float(c.mean()),
            "interval": [float(lo), float(hi)]}


def _own_values(f, info) -> np.ndarray:
    """Per group of the attribute, the values its own feature ``f`` takes: the code of the
    level named as the group (a category, or a 0/1 column), else the group's value itself."""
    if f.categorical:
        names = [str(v) for v in f.levels]
        missing = [str(v) for v in info.levels if str(v) not in names]
        if missing:
            raise ConfigError(f"the model reads {f.name!r} itself, but its levels {names[:8]} "
                              f"lack the group(s) {missing[:4]}; pass the attribute's column "
                              "as the model was fitted on it")
        return np.stack([f.codes[names.index(str(v))] for v in info.levels])
    try:
        return np.array([[float(v)] for v in info.levels])
    except (TypeError, ValueError):
        raise ConfigError(f"the model reads {f.name!r} itself as a number, but its groups "
                          f"{[str(v) for v in info.levels][:4]} are not numbers") from None


def _names(feature: str, column: str) -> bool:
    """Whether a feature of the model's input is the column ``column`` (itself, or a
    Pipeline's encoding of it: ``numbers__age`` for ``age``)."""
    return feature == column or feature.endswith(f"__{column}")


def held(features, hold) -> list[int]:
    """The indices of ``features`` that the columns ``hold`` name; ConfigError for a name
    that is none of them."""
    unknown = [h for h in hold if not any(_names(f.name, h) for f in features)]
    if unknown:
        shown = ", ".join(f.name for f in features[:12]) + (", ..." if len(features) > 12
                                                           else "")
        raise ConfigError(f"hold (--hold) names {unknown} that the model does not read; its "
                          f"features are {shown}")
    return [i for i, f in enumerate(features) if any(_names(f.name, h) for h in hold)]


def carried(view) -> bool:
    """Whether the transport can carry a view's rows: an attribute with groups (binary or
    categorical; a continuous one is left to the aux counterfactual)."""
    return view.kind == "attribute" and view.info.kind != "continuous"


@dataclass(frozen=True)
class TransportSettings:
    """The transports of each attribute: ``refits`` fits (the first on the sample, the others
    on bootstrap resamples drawn from ``seed``), ``nulls`` c-blind fits, the columns ``hold``
    names held fixed (``direct_only``: every feature held fixed, the attribute alone set)."""

    refits: int = 3
    nulls: int = 10
    seed: int = 0
    hold: tuple = ()
    direct_only: bool = False


def prepare(views, target, sc, feats, *, settings, layout=None,
            transport: TransportSettings | None = None) -> list[TransportPass]:
    """A ``TransportPass`` per attribute view that is ``carried`` (the first view is the
    primary one). ``layout``: the features' categorical blocks when known
    (``faux.audit.loaders.encoders``), else inferred from the sample (``Layout.infer``: one-hot
    blocks, 0/1 columns); ``transport``: how each attribute's transports are fitted (None:
    ``TransportSettings``' defaults)."""
    from faux.audit.sources.layout import Layout

    layout = layout if layout is not None else Layout.infer(sc.x, feats)
    attributes = [v.name for v in views if v.kind == "attribute"]
    out = []
    for i, v in enumerate(views):
        if not carried(v):
            continue
        # the other protected attributes the model reads stay as they are: one attribute
        # changes at a time (their intersection is a view of its own)
        keep = [a for a in attributes if a != v.name]
        out.append(TransportPass(v, sc, feats, settings=settings, proba=target.proba,
                                 primary=i == 0, layout=layout, transport=transport,
                                 keep=keep))
    return out


class TransportPass(BatchCounts):
    """One protected attribute's effects by transport: fitted on the sample, then fed every
    batch (the interface of ``faux.audit.counterfactual.effect_pass.EffectPass``). ``view``:
    the attribute's group view (its ``name``, ``info`` and ``sample_c``); ``keep``: the
    other protected attributes, held fixed."""

    def __init__(self, view, sc, feats, *, settings, proba, primary: bool, layout=None,
                 transport: TransportSettings | None = None, keep=()):
        name, info, sample_c = view.name, view.info, view.sample_c
        transport = TransportSettings() if transport is None else transport
        refits, nulls, seed = transport.refits, transport.nulls, transport.seed
        hold, direct_only = transport.hold, transport.direct_only
        self.name, self.info, self.kind = name, info, info.kind
        self.st, self.proba, self.primary = settings, proba, primary
        self.feats = list(feats)
        self.k = len(info.levels)
        self.sample_rows, self.n_sample = sc.sample_rows, len(sc.x)
        every = tp.features_of(sc.x.shape[1], layout, feats)
        # the attribute itself among the model's features: set to the other group's value,
        # never transported; the rest carried (none of it with ``direct_only``)
        self.own = [f for f in every if f.name == name]
        self.own_values = [_own_values(f, info) for f in self.own]
        self.features = [f for f in every if f.name != name]
        self.direct_only = bool(direct_only)
        self.layout = layout
        x, g = np.asarray(sc.x, dtype=np.float64), info.index(sample_c)
        rng = np.random.default_rng(seed)
        fixed = list(range(len(self.features))) if direct_only else held(self.features, hold) + [
            i for i, f in enumerate(self.features) if f.name in set(keep)]
        first = tp.fit_transport(x, g, self.k, self.features, hold=fixed)
        self.transports = [first] + [self._refit(first, x, g, rng.integers(len(x), size=len(x)))
                                     for _ in range(refits - 1)]
        from faux.methods.first_order import widened_range

        # the sample's range per feature, widened as the aux counterfactual's is
        self.lo, self.hi = widened_range(x.min(axis=0), x.max(axis=0),
                                         settings.support_margin)
        self.lo, self.hi = self.lo - 1e-9, self.hi + 1e-9
        self.null_counts, null_dp = [], []
        p0 = None
        for _ in range(nulls):
            perm = rng.permutation(g)
            p0, p_cf, _, _ = self._effects([self._refit(first, x, perm, None)], x, g, p0)
            v = _verdict(p0, p_cf, settings.decision_threshold, settings.materiality)
            self.null_counts.append(int(v["flagged"].sum()))
            null_dp.append(p_cf - p0[None])
        self.pool = np.sort(np.abs(np.concatenate(null_dp).reshape(-1))) if null_dp else \
            np.zeros(0)
        self.plausibility = self._plausibility(first, x, g, seed)
        self._zero()

    def _zero(self) -> None:
        """The running counts, before the first batch."""
        super()._zero()
        self.s_flag = np.zeros(self.n_sample, dtype=bool)
        self.moved_n = np.zeros(len(self.transports[0].moved), dtype=np.int64)  # per moved
        # feature: the flagged rows whose counterfactual changed it

    def counted(self) -> dict:
        return {**self.counted_sums(), "moved_n": self.moved_n,
                "sample": np.flatnonzero(self.s_flag)}

    def merge_counts(self, c: dict) -> None:
        """Add the ``counts`` of the next batch (``fresh().counted()`` after it): the sums
        and the top rows those of counting the batch here."""
        self.add_counts(c)
        self.moved_n += c["moved_n"]
        self.s_flag[c["sample"]] = True

    def _carry(self, t, x, g, g_to) -> tp.Transported:
        """``t``'s transport of rows ``x``, the attribute's own columns set to ``g_to``."""
        out = t.transport(x, g, g_to)
        for f, values in zip(self.own, self.own_values, strict=True):
            out.x[:, list(f.columns)] = values[g_to]
        return out

    def _plausibility(self, t, x, g, seed) -> dict:
        """Per group h, how well a classifier tells the sample rows carried to h from the
        real rows of h (``faux.audit.counterfactual.transport.two_sample_auc``; near 0.5: alike), and the
        same for the rows as they are (the attribute's own separation, for scale)."""
        out = {}
        for h in range(self.k):
            src = g != h
            if src.sum() < 10 or (g == h).sum() < 10:
                continue
            moved = self._carry(t, x[src], g[src], np.full(int(src.sum()), h)).x
            out[str(self.info.levels[h])] = {
                "carried": tp.two_sample_auc(moved, x[g == h], seed),
                "as_they_are": tp.two_sample_auc(x[src], x[g == h], seed)}
        return out

    @staticmethod
    def _refit(first, x, g, rows):
        rows = slice(None) if rows is None else rows
        return tp.fit_transport(x[rows], g[rows], first.k, first.features, fixed=first.fixed,
                                order=first.moved)

    def _targets(self, g):
        """Per other group: the rows' target group (binary: the other one)."""
        if self.k == 2:
            return [1 - g]
        return [np.full_like(g, h) for h in range(self.k)]

    def _effects(self, transports, x, g, p=None):
        """The model at rows ``x`` (``p``, computed unless given) and at their transports
        (``p_cf``: (refits, n), the target group of largest median |effect| per row), the
        transported rows of the first refit, and each row's target group."""
        n = len(x)
        best_cf, best_x, best_to = None, None, None
        for g_to in self._targets(g):
            outs = [self._carry(t, x, g, g_to) for t in transports]
            calls = [x] if p is None else []
            vals = self.proba(np.concatenate(calls + [o.x for o in outs]))
            if p is None:
                p, vals = vals[:n], vals[n:]
            p_cf = vals.reshape(len(transports), n)
            p_cf = np.where((g_to == g)[None], p[None], p_cf)
            if best_cf is None:
                best_cf, best_x, best_to = p_cf, outs[0], g_to.copy()
                continue
            bigger = np.abs(np.median(p_cf - p[None], axis=0)) > np.abs(
                np.median(best_cf - p[None], axis=0))
            best_cf = np.where(bigger[None], p_cf, best_cf)
            best_x.x[bigger] = outs[0].x[bigger]
            best_x.moved[bigger] = outs[0].moved[bigger]
            best_to[bigger] = g_to[bigger]
        return p, best_cf, best_x, best_to

    def suffix(self, col: str) -> str:
        return col if self.primary else f"{col}:{self.name}"

    def batch(self, b) -> tuple[np.ndarray, dict]:
        """The flags and the score columns of a batch."""
        st = self.st
        c_raw = b.cs[self.name] if b.cs is not None else b.c
        g = self.info.index(c_raw)
        p, p_cf, moved, to = self._effects(self.transports, np.asarray(b.x, np.float64), g)
        v = _verdict(p, p_cf, st.decision_threshold, st.materiality)
        thr = st.decision_threshold
        # a regressor makes no decision: no decision_changes column
        changes = None if st.regression else ((p_cf >= thr) != (p >= thr)[None]).all(axis=0)
        a = np.abs(v["effect"])
        pval = (1 + len(self.pool) - np.searchsorted(self.pool, a, side="left")) / (
            1 + len(self.pool))
        off = ((moved.x < self.lo) | (moved.x > self.hi)).any(axis=1)
        cols = {"p_cf": p + v["effect"], "effect": v["effect"], "effect_lo": v["effect_lo"],
                "effect_hi": v["effect_hi"], "decision_changes": changes, "off_support": off,
                "unreachable": np.zeros(len(p), dtype=bool), "p_value": pval}
        out = {self.suffix(k): cols[k] for k in COLUMNS if cols[k] is not None}
        if self.primary:
            out = {"p": p, **out}
        else:
            out[self.suffix("flagged")] = v["flagged"]
        self._count(b, p, cols, v["flagged"], moved, to, c_raw)
        return v["flagged"], out

    def _count(self, b, p, cols, flagged, moved, to, c_raw):
        ids = b.start + np.arange(len(flagged))
        pos = np.minimum(np.searchsorted(self.sample_rows, ids), len(self.sample_rows) - 1)
        hit = self.sample_rows[pos] == ids
        self.s_flag[pos[hit]] = flagged[hit]
        self.n += len(flagged)
        self.n_flag += int(flagged.sum())
        if cols["decision_changes"] is not None:
            self.n_change += int(cols["decision_changes"].sum())
        self.n_off += int(cols["off_support"].sum())
        self.abs_sum += float(np.abs(cols["effect"]).sum())
        self.moved_n += moved.moved[flagged].sum(axis=0)
        cand = np.flatnonzero(flagged)
        if len(cand) > N_ROWS:
            cand = cand[np.argpartition(-np.abs(cols["effect"][cand]), N_ROWS)[:N_ROWS]]
        for i in cand:
            key = (float(abs(cols["effect"][i])), -int(ids[i]))
            if enters_top(self.top, key, N_ROWS):
                push_top(self.top, (*key, self._record(b, i, p, cols, moved, to, c_raw)),
                         N_ROWS)

    def _name(self, i: int) -> str:
        """Feature ``i``'s name in the user's words: a continuous column known to be an
        affine function of a user's column (a Pipeline's scaler) by that column's name."""
        f = self.features[i]
        u = None if f.categorical or self.layout is None else self.layout.units_of(
            f.columns[0])
        return f.name if u is None else u.name

    def _changes(self, x_row, cf_row, moved_row) -> list[dict]:
        """What the row's counterfactual changed, in the user's units where they are known
        (``Layout.units``): ``{"feature", "from", "to"}`` per moved feature."""
        out = []
        for f in self.own:  # the attribute itself, as the model reads it
            if f.categorical:
                a, b = f.levels_of(x_row[None])[0], f.levels_of(cf_row[None])[0]
                out.append({"feature": f.name, "from": f.levels[a], "to": f.levels[b]})
            else:
                j = f.columns[0]
                out.append({"feature": f.name, "from": tidy(float(x_row[j])),
                            "to": tidy(float(cf_row[j]))})
        for pos, i in enumerate(self.transports[0].moved):
            if not moved_row[pos]:
                continue
            f = self.features[i]
            if f.categorical:
                a = f.levels_of(x_row[None])[0]
                b = f.levels_of(cf_row[None])[0]
                out.append({"feature": f.name, "from": f.levels[a], "to": f.levels[b]})
                continue
            j = f.columns[0]
            u = None if self.layout is None else self.layout.units_of(j)
            a, b = (float(x_row[j]), float(cf_row[j])) if u is None else (
                u.raw(x_row[j]), u.raw(cf_row[j]))
            out.append({"feature": self._name(i), "from": tidy(a), "to": tidy(b)})
        return out

    def _record(self, b, i, p, cols, moved, to, c_raw) -> dict:
        own = self.info.group_labels(np.asarray([c_raw[i]]))[0]
        rec = {"row_id": int(b.start + i), "group": str(own), "p": float(p[i]),
               "p_cf": float(cols["p_cf"][i]), "effect": float(cols["effect"][i]),
               "interval": [float(cols["effect_lo"][i]), float(cols["effect_hi"][i])],
               "decision_changes": (None if cols["decision_changes"] is None
                                    else bool(cols["decision_changes"][i])),
               "off_support": bool(cols["off_support"][i]), "unreachable": False,
               "p_value": float(cols["p_value"][i])}
        rec["changes"] = self._changes(b.x[i], moved.x[i], moved.moved[i])
        rec["moved"] = [moved_word(c) for c in rec["changes"]]
        what = "predicted value" if self.st.regression else "predicted probability"
        rec["to"] = str(self.info.levels[int(to[i])])
        rec["text"] = (f"the same person with {self.name} {own} → {rec['to']}: {what} "
                       f"{rec['p']:.3g} → {rec['p_cf']:.3g} ({rec['effect']:+.3g}; "
                       f"[{rec['interval'][0]:+.3g}, {rec['interval'][1]:+.3g}] over "
                       f"{len(self.transports)} fits)")
        return rec

    def finish(self, n_rows: int) -> dict:
        """summary["effects"][attribute]."""
        t = self.transports[0]
        observed = int(self.s_flag.sum())
        test = count_test(observed, self.null_counts)
        scale = n_rows / max(self.n_sample, 1)
        lo, hi = test["interval"]
        ef = {"count": test["null_mean"] * scale, "interval": [lo * scale, hi * scale],
              "null_rows_flagged": self.null_counts, "sample_rows": int(self.n_sample),
              "text": (f"under {len(self.null_counts)} c-blind transports (fitted with "
                       f"{self.name} permuted), {test['null_mean']:.1f} of the "
                       f"{self.n_sample:,} sample rows are flagged on average (95 % "
                       f"interval {lo:.0f}–{hi:.0f}); scaled to the {n_rows:,} rows: about "
                       f"{test['null_mean'] * scale:.1f}")}
        rows = [r[2] for r in sorted(self.top, key=lambda r: (-r[0], -r[1]))]
        model_test = {"statistic": observed, "null_statistics": self.null_counts,
                      "p_value": test["p_value"], "rank_p": test["rank_p"],
                      "resolution": None, "wilcoxon_p": math.nan, "rows": int(self.n_sample),
                      "text": (f"{observed} of the {self.n_sample:,} sample rows flagged "
                               f"against {test['null_mean']:.1f} on average under "
                               f"{len(self.null_counts)} c-blind transports: p = "
                               f"{test['p_value']:.3g} (negative binomial); rank p = "
                               f"{test['rank_p']:.3g}")}
        from faux.audit.verdict.words import headline, moved_counts

        out = {"attribute": self.name, "kind": self.kind, "counterfactual": "transport",
                "rows_scored": self.n, "flagged": self.n_flag,
                "rate": self.n_flag / max(self.n, 1),
                "decision_changes": None if self.st.regression else self.n_change,
                "off_support": self.n_off, "unreachable": 0,
                "mean_abs_effect": self.abs_sum / max(self.n, 1),
                "fits": len(self.transports),
                "reads_attribute": bool(self.own), "direct_only": self.direct_only,
                "held_fixed": [t.features[i].name for i in t.fixed],
                "moved": [t.features[i].name for i in t.moved],
                "moved_counts": moved_counts(
                    (self._name(i), int(k)) for i, k in zip(t.moved, self.moved_n, strict=True)),
                "model_test": model_test, "expected_false_flags": ef, "rows": rows,
                "plausibility": {
                    "groups": self.plausibility,
                    "text": "; ".join(
                        f"rows carried to {h}: a classifier tells them from the real {h} rows "
                        f"with AUROC {v['carried']:.2f} ({v['as_they_are']:.2f} before they "
                        "are carried; 0.5: alike)" for h, v in self.plausibility.items())}}
        out["headline"] = headline(out, self.st)
        return out
