"""The audit's pass over the data (``faux.audit.stages.score``): every batch scored, flagged
and fed to the views, the effect passes and the outcome counts (``score_batch``, which
writes nothing), its rows appended to ``scores.parquet`` (``_Writer``), and its result
merged, in the batches' order, into the counts per group, the top rows and the plot sample
(``Tally``); and what is settled once every row is scored (the Benjamini-Hochberg cut, the
top rows' contributions)."""

from __future__ import annotations

import heapq
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faux.audit.scores.calibration import bh_cut

N_TOP = 50  # flagged rows shown with their contributions
PLOT_SAMPLE = 200_000  # scores kept for the plots


@dataclass(frozen=True)
class Reading:
    """Where the pass reads its batches: ``source``'s columns ``feats``, its protected
    columns ``c_cols`` and the label column ``label`` (None: not read), ``batch_size`` rows
    at a time."""

    source: Any
    feats: list
    c_cols: list
    label: str | None
    batch_size: int

    def batches(self):
        return self.source.batches(self.feats, self.c_cols, self.label, self.batch_size)


@dataclass(frozen=True)
class Observers:
    """What watches every batch as read: the outcome counts (``OutcomePass``) and the
    described rows' values (``faux.audit.verdict.flagged_rows.RowValues``)."""

    outcome: Any
    row_values: Any


@dataclass(frozen=True)
class BatchState:
    """What every batch needs, the same for all of them: the ``scorer`` of ``methods`` (the
    first decides), their ``thresholds``, the level ``alpha``, the first attribute's
    ``protected`` values (a row's group), the group views (``faux.audit.passes.groups``) and
    the effect passes (``faux.audit.counterfactual.effect_pass``: with them the first
    attribute's effect verdict is ``flagged``, each attribute's view counts its own and the
    effects are score columns). ``bh_null``: the first method's sorted null scores (the rows'
    null exceedances are counted for the Benjamini-Hochberg cut, and ``flagged`` holds the
    rows with p <= alpha meanwhile, a superset). ``sampled`` (``SampleScores``): the scores are
    the sample rows' (computed before the pass), NaN for every other row, and no score is
    computed here but the views' that flag by their score (the intersection). ``proba``: the
    model's probability (the outcomes' decisions when no pass computes it); ``missing``
    (``faux.audit.loaders.missing``): the batches' NaN filled in for everything but the
    model's own calls; ``observers``: fed every batch as read."""

    scorer: Any
    methods: tuple
    thresholds: dict
    alpha: float
    protected: Any
    views: tuple = ()
    passes: tuple = ()
    bh_null: np.ndarray | None = None
    sampled: SampleScores | None = None
    proba: Callable | None = None
    missing: Any = None
    observers: Observers | None = None


@dataclass(frozen=True)
class BatchResult:
    """One batch scored: its ``scores`` per method, ``flagged``, the null ``exceed``ances
    (Benjamini-Hochberg, else None), the rows with scores (``scored``; None: all), each row's
    group, the rows above each method's threshold, the effects' plot columns (none without
    effect passes), the batch's flagged rows that may enter the top ``N_TOP`` (score, row
    id, row, group) and its rows of scores.parquet (``frame``: the scores, ``flagged``, the
    effect passes' columns, the other views' scores)."""

    scores: dict
    flagged: np.ndarray
    exceed: np.ndarray | None
    scored: np.ndarray | None
    groups: np.ndarray
    above: dict
    effect_plot: dict
    top: tuple
    frame: pd.DataFrame


@dataclass(frozen=True)
class PassResult:
    """The pass over every row: flagged rows (``n_flag``, ``per_group``: rows, flagged, rate
    per group), the top flagged rows (score, row id, row, group; highest first), the plot
    sample, the score frames in memory (None: not kept), its ``seconds``, the rows above
    each method's threshold, the Benjamini-Hochberg cut (``bh``; None without one) and the
    rows with scores."""

    n_flag: int
    per_group: dict
    top: list
    plot_scores: dict
    scores: pd.DataFrame | None
    seconds: float
    above: dict
    bh: dict | None
    n_scored: int


def score_all(state: BatchState, reading: Reading, *, n_rows: int, seed: int, keep: bool,
              out, bar) -> PassResult:
    """One pass over the ``n_rows`` rows ``reading`` reads: each batch scored
    (``score_batch``), written to ``out``/scores.parquet (``out`` None: not written) and
    merged into the counts, the top rows and the plot sample (``Tally``; ``seed``: its
    draws; ``keep``: the score frames kept in memory)."""
    tally = Tally(state.methods, n_rows, seed, state.bh_null, keep,
                  None if state.sampled is None else len(state.sampled.rows))
    writer = _Writer(out)
    advance = bar.start("scoring", n_rows)
    t0 = time.perf_counter()
    try:
        for raw in reading.batches():
            result = score_batch(state, raw)
            writer.write(result.frame)
            tally.add(result)
            advance(len(result.flagged))
    finally:
        writer.close()
    return tally.finish(time.perf_counter() - t0, state.alpha)


def score_batch(state: BatchState, raw) -> BatchResult:
    """Batch ``raw`` scored, flagged and fed to the views, the effect passes and the
    observers of ``state`` (their running counts are all it changes; it writes nothing)."""
    from faux.audit.passes.groups import add_batch

    methods, primary = state.methods, state.methods[0]
    b = raw if state.missing is None else state.missing.batch(raw)
    given = None
    if state.sampled is None:
        s = state.scorer.score(b.x)
    else:
        given = state.sampled.of(b)
        s = given.pop(state.views[0].name)
    scored = ~np.isnan(s[primary]) if state.sampled is not None else None
    groups = state.protected.group_labels(b.c)
    e, flagged = score_flags(s[primary], state.thresholds[primary], state.alpha,
                             state.bh_null, scored)
    eff_cols, view_flags = {}, {}
    for ps in state.passes:
        view_flags[ps.name], cols = ps.batch(b)
        eff_cols.update(cols)
    if state.passes:
        flagged = view_flags[state.passes[0].name]
    if state.observers is not None:
        state.observers.outcome.add(raw, eff_cols["p"] if "p" in eff_cols
                                    else state.proba(raw.x))
        state.observers.row_values.add(raw)
    extra = add_batch(state.views, b, s, flagged, e, groups, methods, state.alpha,
                      view_flags, scores=given) if state.views else {}
    frame = pd.DataFrame({"row_id": np.arange(b.start, b.start + len(flagged)),
                          **{m: s[m] for m in methods}, "flagged": flagged,
                          **eff_cols, **extra})
    return BatchResult(
        scores=s, flagged=flagged, exceed=e, scored=scored, groups=groups,
        above={m: int((s[m] > state.thresholds[m]).sum()) for m in methods},
        effect_plot=_effect_plot(b, eff_cols, state.passes),
        top=_top_rows(b, s[primary], groups, flagged if scored is None else flagged & scored),
        frame=frame)


def score_flags(score: np.ndarray, threshold: float, alpha: float, bh_null, scored):
    """The rows' null exceedances (with ``bh_null``, else None) and score flags: p <= alpha
    (p from the exceedances), else ``score > threshold``; only ``scored`` rows (None: all)."""
    if bh_null is None:
        return None, score > threshold
    n_null = len(bh_null)
    e = n_null - np.searchsorted(bh_null, score, side="left")  # null scores at or above
    flagged = (1 + e) / (n_null + 1) <= alpha
    return e, flagged if scored is None else flagged & scored


def _effect_plot(b, cols: dict, passes) -> dict:
    """The effects' plot columns of a batch: the model's output (``effect.p``), at each
    attribute's counterfactual (``effect.p_cf:<attribute>``) and the row's group there
    (``effect.group:<attribute>``); none without effect passes."""
    if not passes:
        return {}
    part = {"effect.p": cols["p"]}
    for ps in passes:
        c_raw = b.cs[ps.name] if b.cs is not None else b.c
        part[f"effect.p_cf:{ps.name}"] = cols[ps.suffix("p_cf")]
        part[f"effect.group:{ps.name}"] = np.asarray(
            ps.info.group_labels(np.asarray(c_raw))).astype(str)
    return part


def _top_rows(b, score, groups, flagged) -> tuple:
    """The flagged rows of batch ``b`` that may enter the top ``N_TOP`` (only its ``N_TOP``
    highest can): (score, row id, row, group) each."""
    cand = np.flatnonzero(flagged)
    if len(cand) > N_TOP:
        cand = cand[np.argpartition(-score[cand], N_TOP)[:N_TOP]]
    return tuple((float(score[i]), int(b.start + i), b.x[i].copy(), str(groups[i]))
                 for i in cand)


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


@dataclass(frozen=True)
class TallyPart:
    """What one batch adds to the ``Tally``, without its rows: the rows with scores, the
    null exceedances' histogram (Benjamini-Hochberg, else None), the rows above each
    threshold, the flagged rows, per group (in sorted order) its rows, flagged rows and
    exceedances' histogram (or None), the top rows and the plot sample's drawn values."""

    n_scored: int
    hist: np.ndarray | None
    above: dict
    n_flag: int
    per_group: dict
    top: tuple
    plot: dict


#: the plot samples' streams of draws: the generators seeded ``seed`` + these
PLOT_STREAM, EFFECT_PLOT_STREAM = 1, 2


class Tally:
    """The merge of the batches' results, in their order: rows above each threshold, flagged
    rows per group (and their null exceedances for Benjamini-Hochberg), the top flagged rows,
    the plot sample and, in memory (``keep``), the score frames. ``n_sample``: the scores are
    the sample's only (NaN elsewhere): counts, top rows and plots over those."""

    def __init__(self, methods, n_rows: int, seed: int, bh_null, keep: bool,
                 n_sample: int | None = None):
        self.methods, self.primary, self.n_rows = list(methods), methods[0], n_rows
        self.seed = seed
        self.n_scored = 0
        self.bh_null = bh_null
        self.n_null = 0 if bh_null is None else len(bh_null)
        self.hist = np.zeros(self.n_null + 1, dtype=np.int64)
        self.group_hist: dict[str, np.ndarray] = {}
        self.above = dict.fromkeys(methods, 0)
        self.keep_p = min(1.0, PLOT_SAMPLE / (n_rows if n_sample is None else max(n_sample, 1)))
        self.plot = {m: [] for m in methods}
        self.plot["group"] = []
        # the effects' plot sample: every row may be drawn (the scores' may be the sample's)
        self.keep_fx = min(1.0, PLOT_SAMPLE / max(n_rows, 1))
        self.mem = [] if keep else None
        self.n_added = 0  # rows of the batches ``add`` has counted
        self.n_flag = 0
        self.per_group: dict[str, list[int]] = {}
        self.heap: list = []  # (score, row_id, x, group) of the N_TOP highest flagged

    def add(self, r: BatchResult) -> None:
        """Batch result ``r``, the next batch, counted in."""
        self.add_part(self.part_at(r, self.n_added))
        self.n_added += len(r.flagged)
        if self.mem is not None:
            self.mem.append(r.frame.assign(group=r.groups))

    def part_at(self, r: BatchResult, start: int) -> TallyPart:
        """``part`` of ``r``, the batch whose first row is row ``start`` of the pass: its
        plot draws are the ``start``-th on of each plot sample's stream (one draw per row,
        from the first), whichever batches were counted before it and wherever."""
        def draws(stream: int, n: int) -> np.ndarray:
            rng = np.random.default_rng(self.seed + stream)
            rng.bit_generator.advance(start)  # one 64-bit step per double drawn
            return rng.random(n)

        fx = draws(EFFECT_PLOT_STREAM, len(r.effect_plot["effect.p"])) if r.effect_plot \
            else None
        return self.part(r, draws(PLOT_STREAM, len(r.flagged)), fx)

    def part(self, r: BatchResult, draws: np.ndarray, fx_draws) -> TallyPart:
        """What batch ``r`` adds to the tally, without its rows (``draws``, ``fx_draws``:
        the plot sample's uniform draws for its rows)."""
        scored, e, flagged, groups = r.scored, r.exceed, r.flagged, r.groups
        g_vals, g_inv = np.unique(groups.astype(str), return_inverse=True)
        per_group = {}
        for j, g in enumerate(g_vals):
            gh = None
            if self.bh_null is not None:
                here = g_inv == j if scored is None else (g_inv == j) & scored
                gh = np.bincount(e[here], minlength=self.n_null + 1)
            per_group[g] = (int((g_inv == j).sum()), int(flagged[g_inv == j].sum()), gh)
        sel = draws < self.keep_p
        if scored is not None:
            sel &= scored
        plot = {m: r.scores[m][sel] for m in self.methods}
        plot["group"] = groups[sel].astype(str)
        if r.effect_plot:
            sel = fx_draws < self.keep_fx
            plot.update({k: np.asarray(v)[sel] for k, v in r.effect_plot.items()})
        return TallyPart(
            n_scored=len(flagged) if scored is None else int(scored.sum()),
            hist=None if e is None else np.bincount(e if scored is None else e[scored],
                                                    minlength=self.n_null + 1),
            above=dict(r.above), n_flag=int(flagged.sum()), per_group=per_group, top=r.top,
            plot=plot)

    def add_part(self, p: TallyPart) -> None:
        """Batch part ``p`` (``part``) counted in, as the batch itself is by ``add``."""
        self.n_scored += p.n_scored
        if p.hist is not None:
            self.hist += p.hist
        for m in self.methods:
            self.above[m] += p.above[m]
        self.n_flag += p.n_flag
        for g, (rows, flagged, gh) in p.per_group.items():
            cnt = self.per_group.setdefault(g, [0, 0])
            cnt[0] += rows
            cnt[1] += flagged
            if gh is not None:
                self.group_hist.setdefault(g, np.zeros(self.n_null + 1, dtype=np.int64))
                self.group_hist[g] += gh
        for item in p.top:
            if len(self.heap) < N_TOP:
                heapq.heappush(self.heap, item)
            elif item[0] > self.heap[0][0]:
                heapq.heapreplace(self.heap, item)
        for k, v in p.plot.items():
            self.plot.setdefault(k, []).append(v)

    def finish(self, t_score: float, alpha: float) -> PassResult:
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
        return PassResult(n_flag=self.n_flag, per_group=by_group, top=top,
                          plot_scores=plot_scores, scores=scores, seconds=t_score,
                          above=self.above, bh=bh, n_scored=self.n_scored)


def rewrite_flagged(path: Path, primary: str, threshold: float) -> None:
    """Set ``flagged`` of a staged scores.parquet to ``primary > threshold`` (a folder of
    them, as the Ray engine writes: each of its files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.is_dir():
        for part in sorted(path.glob("*.parquet")):
            rewrite_flagged(part, primary, threshold)
        return
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
