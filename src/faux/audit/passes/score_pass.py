"""The audit's pass over the data (``faux.audit.core``'s scoring stage): every batch scored,
flagged and counted (per group, per view, the outcomes, the top rows, the plot sample),
its scores appended to ``scores.parquet``; and what is settled once every row is scored
(the Benjamini-Hochberg cut, the top rows' contributions)."""

from __future__ import annotations

import heapq
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from faux.audit.scores.calibration import bh_cut

N_TOP = 50  # flagged rows shown with their contributions
PLOT_SAMPLE = 200_000  # scores kept for the plots


def score_all(source, feats, c_cols, sc, scorer, methods, thresholds, tmp, bar, *,
               batch_size, seed, keep, bh_null=None, alpha, views=(), passes=(),
               label=None, observers=None, sampled=None):
    """One pass over the data: scores, flags, counts per group, the top rows, the plot
    sample, the group views' statistics and scores (``faux.audit.passes.groups``). With ``bh_null``
    (the first method's sorted null scores) the rows' p-values are counted per exceedance
    count, the Benjamini-Hochberg cut is taken at the end and ``flagged`` holds the rows
    with p <= alpha meanwhile (a superset). With ``passes`` (``faux.audit.counterfactual.effect_pass``, the
    effect verdict) the first attribute's effect verdict is ``flagged``, each attribute's
    view counts its own, and the effects are score columns. ``observers``: (an
    ``OutcomePass``, a ``RowValues``, the model's probability function, a ``Missing`` or
    None), fed every batch (``label``: the label column to read for the outcomes, or None);
    with a ``Missing`` the batches' NaN are filled in for everything but the model's own
    calls (``faux.audit.loaders.missing``). ``sampled`` (a ``SampleScores``): the scores are the
    sample rows' (computed before the pass), NaN for every other row, and no score is computed
    here but the views' that flag by their score (the intersection)."""
    from faux.audit.passes.groups import add_batch

    tally = _Tally(methods, sc.n_rows, seed, bh_null, keep,
                   None if sampled is None else len(sampled.rows))
    writer = _Writer(tmp)
    advance = bar.start("scoring", sc.n_rows)
    t0 = time.perf_counter()
    try:
        for raw in source.batches(feats, c_cols, label, batch_size):
            missing = observers[3] if observers is not None else None
            b = raw if missing is None else missing.batch(raw)
            given = None
            if sampled is None:
                s = scorer.score(b.x)
            else:
                given = sampled.of(b)
                s = given.pop(views[0].name)
            groups = sc.protected.group_labels(b.c)
            e, flagged = tally.flags(s, thresholds, alpha)
            eff_cols, view_flags = {}, {}
            for ps in passes:
                view_flags[ps.name], cols = ps.batch(b)
                eff_cols.update(cols)
            if passes:
                flagged = view_flags[passes[0].name]
            if observers is not None:
                outcome, row_values, proba, _ = observers
                outcome.add(raw, eff_cols["p"] if "p" in eff_cols else proba(raw.x))
                row_values.add(raw)
            extra = add_batch(views, b, s, flagged, e, groups, methods, alpha,
                              view_flags, scores=given) if views else {}
            tally.add(b, s, groups, flagged, e, thresholds)
            tally.add_effects(b, eff_cols, passes)
            frame = pd.DataFrame({"row_id": np.arange(b.start, b.start + len(flagged)),
                                  **{m: s[m] for m in methods}, "flagged": flagged,
                                  **eff_cols, **extra})
            tally.keep_frame(frame, groups)
            writer.write(frame)
            advance(len(flagged))
    finally:
        writer.close()
    return tally.finish(time.perf_counter() - t0, alpha)


class SampleScores:
    """Every view's diagnostic scores of the sample rows (``row ids``, sorted), for a pass
    that computes none itself: a batch's rows in the sample get theirs, the others NaN."""

    def __init__(self, rows: np.ndarray, scores: dict[str, dict[str, np.ndarray]]):
        self.rows, self.scores = np.asarray(rows), scores

    def of(self, b) -> dict[str, dict[str, np.ndarray]]:
        """``{view: {method: (len(b),) scores}}`` of batch ``b`` (rows from ``b.start``)."""
        ids = b.start + np.arange(len(b.x))
        pos = np.minimum(np.searchsorted(self.rows, ids), len(self.rows) - 1)
        hit = self.rows[pos] == ids
        out = {}
        for view, by_method in self.scores.items():
            out[view] = {}
            for m, v in by_method.items():
                a = np.full(len(ids), np.nan)
                a[hit] = v[pos[hit]]
                out[view][m] = a
        return out


def sample_scores(views, sc, batch_size: int) -> SampleScores:
    """The diagnostic scores of the sample rows ``sc.x`` by the scorer of every view whose
    flags are not its scores' (each attribute's: the effect verdict flags its rows)."""
    from faux.audit.scores.scoring import score_rows

    return SampleScores(sc.sample_rows, {v.name: score_rows(v.scorer, sc.x, batch_size)
                                         for v in views if v.kind == "attribute"})


class _Writer:
    """scores.parquet in the staging folder ``tmp`` (None: not written), batch by batch."""

    def __init__(self, tmp):
        self.tmp, self.writer = tmp, None

    def write(self, frame: pd.DataFrame) -> None:
        if self.tmp is None:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp / "scores.parquet", table.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class _Tally:
    """What the pass keeps across batches: rows above each threshold, flagged rows per
    group (and their null exceedances for Benjamini-Hochberg), the top flagged rows, the
    plot sample and, in memory, the score frames."""

    def __init__(self, methods, n_rows: int, seed: int, bh_null, keep: bool,
                 n_sample: int | None = None):
        self.methods, self.primary, self.n_rows = list(methods), methods[0], n_rows
        # the sample's scores only (NaN elsewhere): counts, top rows and plots over those
        self.sampled = n_sample is not None
        self.n_scored = 0
        self.bh_null = bh_null
        self.n_null = 0 if bh_null is None else len(bh_null)
        self.hist = np.zeros(self.n_null + 1, dtype=np.int64)
        self.group_hist: dict[str, np.ndarray] = {}
        self.above = dict.fromkeys(methods, 0)
        self.rng = np.random.default_rng(seed + 1)
        self.keep_p = min(1.0, PLOT_SAMPLE / (n_rows if n_sample is None else max(n_sample, 1)))
        self.plot = {m: [] for m in methods}
        self.plot["group"] = []
        # the effects' plot sample: every row may be drawn (the scores' may be the sample's)
        self.rng_fx = np.random.default_rng(seed + 2)
        self.keep_fx = min(1.0, PLOT_SAMPLE / max(n_rows, 1))
        self.mem = [] if keep else None
        self.n_flag = 0
        self.per_group: dict[str, list[int]] = {}
        self.heap: list = []  # (score, row_id, x, group) of the N_TOP highest flagged

    def flags(self, s, thresholds, alpha):
        """The rows' null exceedances (Benjamini-Hochberg, else None) and score flags."""
        scored = self._scored(s)
        self.n_scored += len(s[self.primary]) if scored is None else int(scored.sum())
        if self.bh_null is None:
            return None, s[self.primary] > thresholds[self.primary]
        # exceedances: null scores at or above each row's
        e = self.n_null - np.searchsorted(self.bh_null, s[self.primary], side="left")
        self.hist += np.bincount(e if scored is None else e[scored], minlength=self.n_null + 1)
        flagged = (1 + e) / (self.n_null + 1) <= alpha
        return e, flagged if scored is None else flagged & scored

    def _scored(self, s):
        """The rows with scores (None: all, outside a sampled pass)."""
        return ~np.isnan(s[self.primary]) if self.sampled else None

    def add(self, b, s, groups, flagged, e, thresholds) -> None:
        scored = self._scored(s)
        for m in self.methods:
            self.above[m] += int((s[m] > thresholds[m]).sum())
        self.n_flag += int(flagged.sum())
        g_vals, g_inv = np.unique(groups.astype(str), return_inverse=True)
        for j, g in enumerate(g_vals):
            cnt = self.per_group.setdefault(g, [0, 0])
            cnt[0] += int((g_inv == j).sum())
            cnt[1] += int(flagged[g_inv == j].sum())
            if self.bh_null is not None:
                gh = self.group_hist.setdefault(g, np.zeros(self.n_null + 1, dtype=np.int64))
                here = g_inv == j if scored is None else (g_inv == j) & scored
                gh += np.bincount(e[here], minlength=self.n_null + 1)
        self._top(b, s[self.primary], groups, flagged if scored is None else flagged & scored)
        sel = self.rng.random(len(flagged)) < self.keep_p
        if scored is not None:
            sel &= scored
        for m in self.methods:
            self.plot[m].append(s[m][sel])
        self.plot["group"].append(groups[sel].astype(str))

    def add_effects(self, b, cols: dict, passes) -> None:
        """The plot sample of each attribute's effects: the model's output (``effect.p``),
        at the counterfactual (``effect.p_cf:<attribute>``) and the row's group
        (``effect.group:<attribute>``)."""
        if not passes:
            return
        sel = self.rng_fx.random(len(cols["p"])) < self.keep_fx
        part = {"effect.p": cols["p"]}
        for ps in passes:
            c_raw = b.cs[ps.name] if b.cs is not None else b.c
            part[f"effect.p_cf:{ps.name}"] = cols[ps.suffix("p_cf")]
            part[f"effect.group:{ps.name}"] = np.asarray(
                ps.info.group_labels(np.asarray(c_raw))).astype(str)
        for k, v in part.items():
            self.plot.setdefault(k, []).append(np.asarray(v)[sel])

    def _top(self, b, score, groups, flagged) -> None:
        cand = np.flatnonzero(flagged)
        if len(cand) > N_TOP:  # only a batch's N_TOP highest can enter the top N_TOP
            cand = cand[np.argpartition(-score[cand], N_TOP)[:N_TOP]]
        for i in cand:
            item = (float(score[i]), int(b.start + i), b.x[i].copy(), str(groups[i]))
            if len(self.heap) < N_TOP:
                heapq.heappush(self.heap, item)
            elif item[0] > self.heap[0][0]:
                heapq.heapreplace(self.heap, item)

    def keep_frame(self, frame, groups) -> None:
        if self.mem is not None:
            self.mem.append(frame.assign(group=groups))

    def finish(self, t_score: float, alpha: float):
        by_group = {g: {"rows": v[0], "flagged": v[1], "rate": v[1] / max(v[0], 1)}
                    for g, v in sorted(self.per_group.items())}
        plot_scores = {k: np.concatenate(v) if v else np.empty(0) for k, v in self.plot.items()}
        scores = pd.concat(self.mem, ignore_index=True) if self.mem is not None else None
        top = sorted(self.heap, key=lambda t: -t[0])
        bh = None
        if self.bh_null is not None:
            cut = bh_cut(self.hist, self.n_scored, alpha)
            t_bh = float(self.bh_null[self.n_null - cut - 1]) if cut >= 0 else math.inf
            flagged = {g: int(self.group_hist[g][:cut + 1].sum()) for g in by_group}
            bh_groups = {g: {"rows": v["rows"], "flagged": flagged[g],
                             "rate": flagged[g] / max(v["rows"], 1)}
                         for g, v in by_group.items()}
            bh = {"threshold": t_bh, "flagged": int(self.hist[:cut + 1].sum()),
                  "by_group": bh_groups}
        return (self.n_flag, by_group, top, plot_scores, scores, t_score, self.above, bh,
                self.n_scored)


def rewrite_flagged(path: Path, primary: str, threshold: float) -> None:
    """Set ``flagged`` of a staged scores.parquet to ``primary > threshold``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.exists():
        return
    tmp = path.with_name(path.name + ".flagged")
    writer = None
    try:
        for rb in pq.ParquetFile(path).iter_batches():
            frame = rb.to_pandas()
            frame["flagged"] = frame[primary].to_numpy() > threshold
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, path)


def top_frame(top, scorer, feats, n_features: int = 5) -> pd.DataFrame:
    cols = ["row_id", "score", "group", "top_features"]
    if not top:
        return pd.DataFrame(columns=cols)
    x = np.stack([t[2] for t in top])
    contrib = scorer.contributions(x)
    rows = []
    for (s, rid, _, g), cvec in zip(top, contrib):
        order = np.argsort(-np.abs(cvec))[:n_features]
        rows.append({"row_id": rid, "score": s, "group": g,
                     "top_features": [(feats[j], float(cvec[j])) for j in order]})
    return pd.DataFrame(rows, columns=cols)
