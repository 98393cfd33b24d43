"""The effect verdict's pass over the data (``faux.audit.verdict.rule`` states the rule): per
protected attribute, the aux models' group gaps and the null effects on the sample, then
each batch's effects, flags, p-values and score columns, and at the end the attribute's
summary (counts, the model-level test, the expected false flags, the top rows in words)."""

from __future__ import annotations

import math

import numpy as np
import torch

from faux.audit.counterfactual import effects as fx
from faux.audit.counterfactual.counts import N_ROWS, BatchCounts
from faux.audit.counterfactual.top_rows import enters_top, push_top
from faux.audit.verdict.rule import Settings

#: rows whose counterfactuals are computed at a time: a batch's are computed in chunks of
#: this many, which bounds the paths' and the model call's working memory (each row's
#: effect is its own, whatever rows share its chunk)
EFFECT_ROWS = 16_384
N_MOVED = 3  # continuous features named per row (the largest standardised moves)
COLUMNS = ("p_cf", "effect", "effect_lo", "effect_hi", "decision_changes", "off_support",
           "unreachable", "p_value")


def c_index(info, c_raw) -> torch.Tensor:
    """The attribute as ``faux.audit.counterfactual.effects`` reads it: 0/1 (binary), the level's index
    (categorical), the standardised value (continuous)."""
    if info.kind == "continuous":
        return torch.as_tensor(info.encode(c_raw), dtype=torch.float32)
    return torch.as_tensor(info.index(c_raw), dtype=torch.float32)


class EffectPass(BatchCounts):
    """One protected attribute's effects: prepared on the sample, then fed every batch.
    ``view``: the attribute's group view (its ``name``, ``info``, ``sample_c`` and aux
    models ``auxes``); ``null_nets``: its permuted-attribute aux models."""

    def __init__(self, view, null_nets, sc, z_sample, feats, *, settings: Settings, proba,
                 primary: bool, batch_size: int, layout=None):
        name, info, sample_c = view.name, view.info, view.sample_c
        self.name, self.info, self.kind = name, info, info.kind
        self.auxes, self.st, self.proba, self.primary = list(view.auxes), settings, proba, primary
        self.mean, self.scale, self.feats = sc.mean, sc.scale, list(feats)
        self.sample_rows, self.n_sample = sc.sample_rows, len(sc.x)
        # the sample's rows as read, for the model's calls (rebuilt from z where they hold NaN)
        self.x_sample = sc.x if np.isfinite(sc.x).all() else None
        # the encoders' own blocks for a Pipeline that encodes its columns, else inferred
        self.layout = layout if layout is not None else fx.Layout.infer(sc.x, feats)
        self.lo, self.hi = fx.support_box(z_sample, settings.support_margin)
        zt = torch.as_tensor(z_sample, dtype=torch.float32)
        ci = c_index(info, sample_c)
        self.gaps = [fx.group_gaps(a, zt, ci.numpy(), self.kind) for a in self.auxes]
        self.contrasts = fx.level_contrasts(zt, ci.numpy(), self.kind, self.layout, self.mean,
                                            self.scale)
        self.reach = fx.group_reach(zt, ci.numpy(), self.kind, self.layout)
        self.space = fx.Space(self.kind, self.layout, self.mean, self.scale,
                              steps=settings.steps, lo=self.lo, hi=self.hi,
                              contrasts=self.contrasts, reach=self.reach)
        null_gaps = [fx.group_gaps(a, zt, ci.numpy(), self.kind) for a in null_nets]
        p, p_cf = self._run(null_nets, null_gaps, zt, ci, batch_size)
        self.null_dp = p_cf - p[None]  # (n_null, n_sample)
        self.pool = np.sort(np.abs(self.null_dp).reshape(-1))
        self.null_flags = fx.verdict(p, p_cf, settings.decision_threshold,
                                     settings.materiality)["flagged"]
        self.directions = len(fx.directions(zt[:1], ci[:1], self.kind, self.gaps[0]))
        self._zero()

    SUMS = (*BatchCounts.SUMS, "n_unreach")

    def _zero(self) -> None:
        """The running counts, before the first batch."""
        super()._zero()
        self.s_effect = np.full(self.n_sample, np.nan)
        self.moved_n: dict[str, int] = {}  # per feature: the flagged rows whose counterfactual
        # moved it

    def counted(self) -> dict:
        hit = np.flatnonzero(~np.isnan(self.s_effect))
        return {**self.counted_sums(), "moved_n": self.moved_n,
                "sample": (hit, self.s_effect[hit])}

    def merge_counts(self, c: dict) -> None:
        """Add the ``counts`` of the next batch (``fresh().counted()`` after it): the sums
        and the top rows those of counting the batch here."""
        self.add_counts(c)
        for name, k in c["moved_n"].items():
            self.moved_n[name] = self.moved_n.get(name, 0) + k
        hit, values = c["sample"]
        self.s_effect[hit] = values

    def _effects(self, auxes, gaps, z, ci, x) -> dict:
        """``faux.audit.counterfactual.effects.effects`` of rows ``z`` (their protected levels
        ``ci``, the rows as read ``x`` or None), computed ``EFFECT_ROWS`` rows at a time."""
        parts = []
        for s in range(0, z.shape[0], EFFECT_ROWS):
            e = slice(s, s + EFFECT_ROWS)
            parts.append(fx.effects(self.proba, auxes, gaps, z[e], ci[e], self.space,
                                    x=None if x is None else x[e]))
        if len(parts) == 1:
            return parts[0]
        return {k: (None if parts[0][k] is None else
                    np.concatenate([r[k] for r in parts], axis=1 if k == "p_cf" else 0))
                for k in parts[0]}

    def _run(self, nets, gaps, zt, ci, batch_size):
        ps, pcs = [], []
        for s in range(0, zt.shape[0], batch_size):
            r = self._effects(nets, gaps, zt[s:s + batch_size], ci[s:s + batch_size],
                              None if self.x_sample is None else self.x_sample[s:s + batch_size])
            ps.append(r["p"])
            pcs.append(r["p_cf"])
        return np.concatenate(ps), np.concatenate(pcs, axis=1)

    def suffix(self, col: str) -> str:
        return col if self.primary else f"{col}:{self.name}"

    def batch(self, b) -> tuple[np.ndarray, dict]:
        """The flags and the score columns of a batch."""
        st = self.st
        c_raw = b.cs[self.name] if b.cs is not None else b.c
        z = torch.as_tensor((b.x - self.mean) / self.scale, dtype=torch.float32)
        r = self._effects(self.auxes, self.gaps, z, c_index(self.info, c_raw), b.x)
        v = fx.verdict(r["p"], r["p_cf"], st.decision_threshold, st.materiality)
        thr = st.decision_threshold
        # a regressor makes no decision: no decision_changes column
        changes = None if st.regression else (
            (r["p_cf"] >= thr) != (r["p"] >= thr)[None]).all(axis=0)
        a = np.abs(v["effect"])
        pval = (1 + len(self.pool) - np.searchsorted(self.pool, a, side="left")) / (
            1 + len(self.pool))
        flagged = v["flagged"]
        cols = {"p_cf": r["p"] + v["effect"], "effect": v["effect"],
                "effect_lo": v["effect_lo"], "effect_hi": v["effect_hi"],
                "decision_changes": changes, "off_support": r["off_support"].astype(bool),
                "unreachable": r["unreachable"].astype(bool), "p_value": pval}
        out = {self.suffix(k): cols[k] for k in COLUMNS if cols[k] is not None}
        if self.primary:
            out = {"p": r["p"], **out}
        else:
            out[self.suffix("flagged")] = flagged
        self._count(b, r, v, cols, flagged)
        return flagged, out

    def _count(self, b, r, v, cols, flagged):
        ids = b.start + np.arange(len(flagged))
        pos = np.minimum(np.searchsorted(self.sample_rows, ids), len(self.sample_rows) - 1)
        hit = self.sample_rows[pos] == ids
        self.s_effect[pos[hit]] = v["effect"][hit]
        self.n += len(flagged)
        self.n_flag += int(flagged.sum())
        if cols["decision_changes"] is not None:
            self.n_change += int(cols["decision_changes"].sum())
        self.n_off += int(cols["off_support"].sum())
        self.n_unreach += int(cols["unreachable"].sum())
        self.abs_sum += float(np.abs(v["effect"]).sum())
        if flagged.any():
            from faux.audit.verdict.words import moved_per_feature

            z = (np.asarray(b.x, dtype=np.float64) - self.mean) / self.scale
            for name, k in moved_per_feature(self.layout, self.feats, z, r["z_cf"],
                                             r["moved"], flagged):
                self.moved_n[name] = self.moved_n.get(name, 0) + k
        cand = np.flatnonzero(flagged)
        if len(cand) > N_ROWS:
            cand = cand[np.argpartition(-np.abs(v["effect"][cand]), N_ROWS)[:N_ROWS]]
        c_raw = b.cs[self.name] if b.cs is not None else b.c
        for i in cand:
            key = (float(abs(v["effect"][i])), -int(ids[i]))
            if enters_top(self.top, key, N_ROWS):
                push_top(self.top, (*key, self._record(b, i, r, cols, c_raw)), N_ROWS)

    def _record(self, b, i, r, cols, c_raw) -> dict:
        from faux.audit.verdict.words import moved_changes, moved_word, row_text

        p, p_cf = float(r["p"][i]), float(cols["p_cf"][i])
        eff = float(cols["effect"][i])
        lo, hi = float(cols["effect_lo"][i]), float(cols["effect_hi"][i])
        own = self.info.group_labels(np.asarray([c_raw[i]]))[0]
        changes = moved_changes(self.layout, self.feats, b.x[i], r["z_cf"][i], r["moved"][i],
                                self.mean, self.scale, N_MOVED)
        level = None if r["level"] is None else self.info.levels[int(r["level"][i])]
        decided = cols["decision_changes"]
        rec = {"row_id": int(b.start + i), "group": str(own), "p": p, "p_cf": p_cf,
               "effect": eff, "interval": [lo, hi],
               "decision_changes": None if decided is None else bool(decided[i]),
               "off_support": bool(cols["off_support"][i]),
               "unreachable": bool(cols["unreachable"][i]), "p_value": float(cols["p_value"][i]),
               "changes": changes, "moved": [moved_word(c) for c in changes]}
        rec["text"] = row_text(self.name, self.info, own, level, rec, len(self.auxes), self.st)
        return rec

    def finish(self, n_rows: int) -> dict:
        """summary["effects"][attribute]."""
        from faux.audit.verdict.words import headline, moved_counts

        test = self.model_test()
        n_null = self.null_dp.shape[0]
        k = int(self.null_flags.sum())
        expected = k / max(self.n_sample, 1) * n_rows
        ef = {"count": expected, "null_rows_flagged": k, "sample_rows": int(self.n_sample),
              "text": (f"under {n_null} permuted-{self.name} (c-blind) aux models, {k} of the "
                       f"{self.n_sample:,} sample rows would be flagged by this verdict; "
                       f"scaled to the {n_rows:,} rows: about {expected:.1f} expected false "
                       "flags")}
        rows = [t[2] for t in sorted(self.top, key=lambda t: (-t[0], -t[1]))]
        out = {"attribute": self.name, "kind": self.kind, "rows_scored": self.n,
               "flagged": self.n_flag, "rate": self.n_flag / max(self.n, 1),
               "decision_changes": None if self.st.regression else self.n_change,
               "off_support": self.n_off,
               "unreachable": self.n_unreach, "mean_abs_effect": self.abs_sum / max(self.n, 1),
               "aux_models": len(self.auxes), "directions": self.directions,
               "gaps": [_gap_value(g) for g in self.gaps],
               "moved_counts": moved_counts(self.moved_n.items()),
               "model_test": test, "expected_false_flags": ef, "rows": rows}
        out["headline"] = headline(out, self.st)
        return out

    def model_test(self) -> dict:
        """Mean |effect| over the sample rows under the real aux models against each null
        aux's (permutation p-value), and the paired one-sided Wilcoxon test of each row's
        |effect| against its mean |effect| over the null aux models."""
        from scipy.stats import wilcoxon

        real = np.abs(self.s_effect)
        ok = np.isfinite(real)
        t_real = float(real[ok].mean()) if ok.any() else math.nan
        t_null = np.abs(self.null_dp).mean(axis=1)
        n_null = len(t_null)
        p = (1 + int((t_null >= t_real).sum())) / (1 + n_null)
        # paired with each row's mean |effect| over the null aux models: one null aux alone
        # can be nearly flat (its effects ~0), which makes any model look significant
        d = real[ok] - np.abs(self.null_dp[:, ok]).mean(axis=0)
        if not np.any(d != 0):
            w = 1.0
        else:
            w = float(wilcoxon(d, alternative="greater").pvalue)
        text = (f"mean |effect| over the {int(ok.sum()):,} sample rows {t_real:.4f} under the "
                f"real aux models against {', '.join(f'{t:.4f}' for t in t_null)} under "
                f"{n_null} permuted-{self.name} (c-blind) aux models: p = {p:.3g} (its "
                f"resolution is 1/(1+{n_null}) = {1 / (1 + n_null):.3g}); paired Wilcoxon "
                f"signed-rank test over the rows against their mean under the null aux models: "
                f"p = {w:.3g}")
        return {"statistic": t_real, "null_statistics": [float(t) for t in t_null],
                "p_value": p, "resolution": 1 / (1 + n_null), "wilcoxon_p": w,
                "rows": int(ok.sum()), "text": text}


def _gap_value(g: dict):
    if "gap" in g:
        return float(g["gap"])
    if "slope" in g:
        return float(g["slope"])
    return np.asarray(g["margin"]).tolist()


def prepare(views, null_of, target, sc, z_sample, feats, *, settings: Settings,
            batch_size: int, layout=None, which=None) -> list[EffectPass]:
    """An ``EffectPass`` per attribute view (the first is the primary one; ``which(v)``:
    only the views it accepts). ``null_of(v)``: the view's permuted-attribute aux models;
    ``layout``: the features' categorical blocks when known (``faux.audit.loaders.encoders``), else
    inferred from the sample."""
    out = []
    for i, v in enumerate(views):
        if v.kind != "attribute" or (which is not None and not which(v)):
            continue
        out.append(EffectPass(v, null_of(v), sc, z_sample, feats, settings=settings,
                              proba=target.proba, primary=i == 0, batch_size=batch_size,
                              layout=layout))
    return out


def null_nets_for(sc, z_sample, null):
    """``view -> its permuted-attribute aux models``: those the calibrated thresholds
    trained, else (a manual threshold) trained here the same way (``null``:
    ``faux.audit.scores.calibration.NullSettings``)."""
    from faux.audit.scores.calibration import null_auxes

    def null_of(v):
        if v.null is not None and v.null.get("nets"):
            return v.null["nets"]
        return list(null_auxes(z_sample, v.sample_c, v.info, sc.y, null))

    return null_of
