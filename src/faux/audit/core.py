"""``audit``: score every row of a data set for individual unfairness w.r.t. a protected
attribute, with the model under test and an aux model trained here; write the outputs.

Two passes over the data, each in batches (a file is never loaded whole):

1. ``scan``: count rows, refuse NaN/inf features, describe the protected attribute (binary,
   categorical, continuous), draw a uniform sample of ``sample`` rows;
2. train the aux on the sample, check the model's width and output on it, then score every
   batch, append the scores to ``scores.parquet`` and keep running counts (flagged per group),
   a bounded sample of scores for the plots, and the top flagged rows.

Outputs are written into a temporary folder beside ``out_dir`` and renamed to it at the
end, so a folder named ``out_dir`` is always complete (an earlier one is replaced).
"""

from __future__ import annotations

import heapq
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from faux.audit.data import ArraySource, check_columns, open_source, scan
from faux.errors import ConfigError, DataError

DEFAULT_THRESHOLDS = {"faux": 0.05, "faux_ng": 0.5, "faux_ig": 0.05, "fta": 0.1}
N_TOP = 50  # flagged rows shown with their contributions
PLOT_SAMPLE = 200_000  # scores kept for the plots


@dataclass
class AuditResult:
    """What an audit found. ``scores``: a DataFrame (row_id, one column per method, flagged,
    group) when the audit ran in memory without ``out_dir`` (else read ``scores.parquet``);
    ``summary``: the dict written to ``summary.json``; ``top_flagged``: the highest-scoring
    flagged rows with their top contributing features; ``feature_ranking``: feature ->
    importance for the protected attribute (aux transparency report, one-hot groups
    aggregated), highest first; ``passed``: False when a gate (fail_above /
    max_flagged_rate) failed; ``out_dir``: where the outputs were written (or None)."""

    summary: dict
    feature_ranking: dict
    top_flagged: pd.DataFrame
    scores: pd.DataFrame | None = None
    out_dir: Path | None = None
    passed: bool = True
    plot_scores: dict = field(default_factory=dict, repr=False)

    @property
    def flagged_rate(self) -> float:
        return float(self.summary["flagged"]["rate"])

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def feature_groups(features) -> list[str]:
    """Original feature of each column: the part before '=' of one-hot names ('sex=Male')."""
    return [f.split("=", 1)[0] if "=" in f else f for f in features]


def _ranking(aux_z, z_sample: np.ndarray, features) -> dict:
    import torch

    from faux.methods.transparency import aggregate_groups, faux_report

    r = faux_report(aux_z, torch.as_tensor(z_sample, dtype=torch.float32), "faux")
    if r.ndim == 2:  # k outputs: a feature matters if it matters for any of them
        r = r.amax(dim=0)
    agg = aggregate_groups(r, feature_groups(features))
    return dict(sorted(agg.items(), key=lambda kv: -kv[1]))


class _Progress:
    """A rich progress bar with rows/s on a terminal; silent otherwise."""

    def __init__(self, enabled: bool | None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.bar = None

    def start(self, label: str, total: int | None):
        if not self.enabled:
            return lambda m: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        if self.bar is None:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]} rows/s"), TimeRemainingColumn(),
                                transient=False)
            self.bar.start()
        task = self.bar.add_task(label, total=total, rate="-")
        t0 = time.perf_counter()
        done = [0]

        def advance(m):
            done[0] += m
            rate = done[0] / max(time.perf_counter() - t0, 1e-9)
            self.bar.update(task, advance=m, rate=f"{rate:,.0f}")

        return advance

    def stop(self):
        if self.bar is not None:
            self.bar.stop()


def _check_model_on_sample(target, x: np.ndarray) -> None:
    if target.n_features is not None and target.n_features != x.shape[1]:
        raise DataError(f"the model reads {target.n_features} features but the data has "
                        f"{x.shape[1]}; pass the columns it was trained on, in order "
                        "(--features)")
    try:
        target.proba(x[:8])
    except (DataError, ConfigError):
        raise
    except Exception as err:
        msg = " ".join(str(err).split())[:160]
        raise DataError(f"the model failed on rows of {x.shape[1]} features ({msg}); pass the "
                        "columns it was trained on, in order (--features)") from err


def _default_out(name: str) -> Path:
    return Path("outputs") / "audit" / name


def audit(model, X=None, c=None, *, data=None, protected: str | None = None, y=None,
          label: str | None = None, features=None, methods=("faux", "faux_ng"),
          aux: str = "mlp", aux_epochs: int = 30, aux_width: int = 64, aux_depth: int = 2,
          sample: int = 20_000, batch_size: int = 65_536, threshold: float | None = None,
          fail_above: float | None = None, max_flagged_rate: float | None = None,
          protected_type: str = "auto", fd_step: float = 0.1, seed: int = 0,
          out_dir=None, name: str | None = None, trust_pickle: bool = False,
          trusted_types=(), progress: bool | None = None, report: bool = True) -> AuditResult:
    """Audit ``model`` for individual unfairness with respect to a protected attribute.

    Data: in memory (``X`` a DataFrame or array, ``c`` the protected values or the name of a
    column of ``X``, optional ``y``), or a file (``data`` a CSV/Parquet path and
    ``protected`` its column name, optional ``label``). ``model``: a torch module returning
    logits, a fitted scikit-learn-like classifier, a function x -> probability, or a model
    file (see ``faux.audit.models``). ``methods``: scorers, the first one decides
    ``flagged`` (score > threshold; ``fail_above`` is that threshold and a gate).
    Returns an ``AuditResult``; writes ``scores.parquet``, ``summary.json`` and
    ``report.html`` into ``out_dir`` when given.
    """
    from faux.audit.aux import train_aux
    from faux.audit.models import as_target, load_model
    from faux.audit.scoring import Scorer

    t_start = time.perf_counter()
    methods = list(methods)
    if not methods:
        raise ConfigError("no methods given; pass at least one of faux, faux_ng, fta, faux_ig")
    unknown = [m for m in methods if m not in DEFAULT_THRESHOLDS]
    if unknown:
        raise ConfigError(f"unknown method(s) {unknown}; choose from "
                          f"{', '.join(DEFAULT_THRESHOLDS)}")
    if len(set(methods)) != len(methods):
        raise ConfigError(f"methods are repeated: {methods}")
    for v, what in ((sample, "sample"), (batch_size, "batch_size"), (aux_epochs, "aux_epochs")):
        if int(v) != v or v < 1:
            raise ConfigError(f"{what} must be a positive integer, got {v!r}")
    if max_flagged_rate is not None and not 0 <= max_flagged_rate <= 1:
        raise ConfigError(f"max_flagged_rate must be in [0, 1], got {max_flagged_rate}")
    if data is not None:
        if protected is None:
            raise ConfigError("pass protected=<column name> with data=<file>")
        source = open_source(data)
        c_col, y_col = protected, label
    else:
        if X is None or c is None:
            raise ConfigError("pass X and c (in memory) or data and protected (a file)")
        source = ArraySource(X, c, y)
        c_col, y_col = source.c_name, source.y_name
        if isinstance(c, str) or isinstance(y, str):
            drop = [v for v in (c, y) if isinstance(v, str)]
            if features is None:
                features = [f for f in source.columns if f not in drop]
    if c_col in source.columns or data is not None:
        feats = check_columns(source.columns, c_col, y_col, features, source.name)
    else:
        feats = check_columns(source.columns + [c_col] + ([y_col] if y_col else []), c_col,
                              y_col, features, source.name)
    name = name or source.name
    if threshold is not None and fail_above is not None and threshold != fail_above:
        raise ConfigError("threshold and fail_above differ; pass one of them (fail_above is "
                          "the threshold and a gate)")
    thr = fail_above if fail_above is not None else threshold
    primary = methods[0]
    if thr is None:
        thr = DEFAULT_THRESHOLDS[primary]
    if isinstance(model, str | Path):  # before the data pass: a bad model fails fast
        target = load_model(model, len(feats), trust_pickle=trust_pickle,
                            trusted_types=trusted_types)
    else:
        target = as_target(model, len(feats))

    bar = _Progress(progress)
    try:
        sc = scan(source, feats, c_col, y_col, sample=int(sample), batch_size=int(batch_size),
                  seed=seed, protected_type=protected_type,
                  progress=bar.start("checking", source.n_rows))
        _check_model_on_sample(target, sc.x)
        z_sample = (sc.x - sc.mean) / sc.scale
        aux_z, quality = train_aux(z_sample, sc.c, sc.protected, sc.y, kind=aux,
                                   width=aux_width, depth=aux_depth, epochs=int(aux_epochs),
                                   seed=seed)
        ranking = _ranking(aux_z, z_sample, feats)
        scorer = Scorer(target, aux_z, sc.mean, sc.scale, methods, fd_step=fd_step,
                        batch_size=min(int(batch_size), 65_536))
        k = 1 if sc.protected.kind != "categorical" else len(sc.protected.levels)
        tmp = None
        if out_dir is not None or data is not None:
            out = Path(out_dir) if out_dir is not None else _default_out(name)
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            thresholds = {m: DEFAULT_THRESHOLDS[m] for m in methods[1:]}
            thresholds = {primary: thr, **thresholds}
            res = _score_all(source, feats, c_col, sc, scorer, methods, thresholds, tmp, bar,
                             batch_size=int(batch_size), seed=seed, keep=data is None)
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        bar.stop()
    try:
        n_flag, per_group, top, plot_scores, mem_scores, t_score, above = res
        top_df = _top_frame(top, scorer, feats)
        rate = n_flag / sc.n_rows
        gate_reasons = []
        if fail_above is not None:
            limit = max_flagged_rate if max_flagged_rate is not None else 0.0
            if rate > limit:
                gate_reasons.append(f"{n_flag} rows ({rate:.4%}) score above {fail_above} with "
                                    f"{primary}; allowed rate {limit:.4%}")
        elif max_flagged_rate is not None and rate > max_flagged_rate:
            gate_reasons.append(f"flagged rate {rate:.4%} exceeds {max_flagged_rate:.4%} "
                                f"(threshold {thr})")
        summary = {
            "name": name,
            "model": {"source": target.source, "kind": target.kind,
                      "differentiable": target.differentiable},
            "data": {"rows": sc.n_rows, "features": feats, "protected": c_col, "label": y_col},
            "protected": {"kind": sc.protected.kind, "levels": [str(v) for v in sc.protected.levels],
                          "counts": sc.protected.counts},
            "settings": {"methods": methods, "primary": primary, "threshold": thr,
                         "fail_above": fail_above, "max_flagged_rate": max_flagged_rate,
                         "sample": int(len(sc.sample_rows)), "batch_size": int(batch_size),
                         "seed": seed, "aux": aux, "standardisation":
                             "features divided by their sample std after centring; 0/1 columns "
                             "unscaled", "faux_ng_reading": "sample (per-row unit vectors)"},
            "scoring": {"mode": "autograd" if target.differentiable else "finite differences",
                        "device": str(scorer.device),
                        "fd_step_std": None if target.differentiable else fd_step,
                        "model_calls_per_row": scorer.calls_per_row(k, len(feats)),
                        "seconds": round(t_score, 3),
                        "rows_per_s": round(sc.n_rows / max(t_score, 1e-9), 1)},
            "aux_quality": quality,
            "flagged": {"count": int(n_flag), "rate": rate, "by_group": per_group},
            "thresholds": {m: {"threshold": t, "rows_above": int(above[m]),
                               "rate_above": above[m] / sc.n_rows} for m, t in thresholds.items()},
            "top_features": [{"feature": f, "importance": float(v)}
                             for f, v in list(ranking.items())[:10]],
            "gate": {"passed": not gate_reasons, "reasons": gate_reasons,
                     "exit_code": 0 if not gate_reasons else 1},
            "seconds_total": round(time.perf_counter() - t_start, 3),
        }
        result = AuditResult(summary, ranking, top_df, mem_scores, None, not gate_reasons,
                             plot_scores)
        if tmp is not None:
            _finish(result, tmp, out, report)
    except BaseException:  # nothing partial is left behind
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def _score_all(source, feats, c_col, sc, scorer, methods, thresholds, tmp, bar, *, batch_size,
               seed,
               keep):
    primary = methods[0]
    thr = thresholds[primary]
    above = dict.fromkeys(methods, 0)
    writer = None
    rng = np.random.default_rng(seed + 1)
    keep_p = min(1.0, PLOT_SAMPLE / sc.n_rows)
    plot = {m: [] for m in methods}
    plot["group"] = []
    mem = [] if keep else None
    n_flag = 0
    per_group: dict[str, list[int]] = {}
    heap: list = []  # (score, row_id, x) of the N_TOP highest flagged
    advance = bar.start("scoring", sc.n_rows)
    t0 = time.perf_counter()
    try:
        for b in source.batches(feats, c_col, None, batch_size):
            s = scorer.score(b.x)
            groups = sc.protected.group_labels(b.c)
            flagged = s[primary] > thr
            for m in methods:
                above[m] += int((s[m] > thresholds[m]).sum())
            n_flag += int(flagged.sum())
            g_vals, g_inv = np.unique(groups.astype(str), return_inverse=True)
            for j, g in enumerate(g_vals):
                cnt = per_group.setdefault(g, [0, 0])
                cnt[0] += int((g_inv == j).sum())
                cnt[1] += int(flagged[g_inv == j].sum())
            cand = np.flatnonzero(flagged)
            if len(cand) > N_TOP:  # only a batch's N_TOP highest can enter the top N_TOP
                cand = cand[np.argpartition(-s[primary][cand], N_TOP)[:N_TOP]]
            for i in cand:
                item = (float(s[primary][i]), int(b.start + i), b.x[i].copy(), str(groups[i]))
                if len(heap) < N_TOP:
                    heapq.heappush(heap, item)
                elif item[0] > heap[0][0]:
                    heapq.heapreplace(heap, item)
            sel = rng.random(len(flagged)) < keep_p
            for m in methods:
                plot[m].append(s[m][sel])
            plot["group"].append(groups[sel].astype(str))
            frame = pd.DataFrame({"row_id": np.arange(b.start, b.start + len(flagged)),
                                  **{m: s[m] for m in methods}, "flagged": flagged})
            if mem is not None:
                mem.append(frame.assign(group=groups))
            if tmp is not None:
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pandas(frame, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp / "scores.parquet", table.schema)
                writer.write_table(table)
            advance(len(flagged))
    finally:
        if writer is not None:
            writer.close()
    t_score = time.perf_counter() - t0
    by_group = {g: {"rows": v[0], "flagged": v[1], "rate": v[1] / max(v[0], 1)}
                for g, v in sorted(per_group.items())}
    plot_scores = {k: np.concatenate(v) if v else np.empty(0) for k, v in plot.items()}
    scores = pd.concat(mem, ignore_index=True) if mem is not None else None
    top = sorted(heap, key=lambda t: -t[0])
    return n_flag, by_group, top, plot_scores, scores, t_score, above


def _top_frame(top, scorer, feats, n_features: int = 5) -> pd.DataFrame:
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


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def _finish(result: AuditResult, tmp: Path, out: Path, report: bool) -> None:
    summary = dict(result.summary)
    summary["top_flagged"] = [
        {"row_id": int(r.row_id), "score": float(r.score), "group": r.group,
         "top_features": [{"feature": f, "contribution": v} for f, v in r.top_features]}
        for r in result.top_flagged.itertuples()]
    summary["feature_ranking"] = result.feature_ranking
    if not (tmp / "scores.parquet").exists() and result.scores is not None:
        result.scores.to_parquet(tmp / "scores.parquet", index=False)
    with open(tmp / "summary.json", "w") as f:
        json.dump(_jsonable(summary), f, indent=2)
    if report:
        from faux.audit.report import write_report

        write_report(result, tmp / "report.html")
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    result.out_dir = out
