"""A job's headline in the sweep's progress line: its main metric, read from the content
of its ``result.json`` (``AP 0.412 ± 0.020`` for a Table 1 cell, ``NDCG ...`` for a
real-data cell, the first two numbers otherwise)."""

from __future__ import annotations

import math


def _mean(values) -> float | None:
    v = [float(x) for x in values or [] if isinstance(x, (int, float)) and math.isfinite(x)]
    return sum(v) / len(v) if v else None


def _mean_std(values) -> str | None:
    v = [float(x) for x in values or [] if isinstance(x, (int, float)) and math.isfinite(x)]
    if not v:
        return None
    m = sum(v) / len(v)
    if len(v) == 1:
        return f"{m:.3f}"
    s = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))
    return f"{m:.3f} ± {s:.3f}"


def _table1(m: dict) -> str | None:
    ap = _mean_std(m.get("ap_runs"))
    return f"AP {ap}" if ap else None


def _fig5(m: dict) -> str | None:
    ap = m.get("ap")
    if not isinstance(ap, dict) or not ap:
        return None
    return "AP " + " ".join(f"{k} {v:.3f}" for k, v in ap.items() if isinstance(v, (int, float)))


def _fig11(m: dict) -> str | None:
    parts = [f"{k.upper() if k != 'ap' else 'AP'} {m[k]:.3f}" for k in ("ap", "ks", "mse")
             if isinstance(m.get(k), (int, float))]
    return " ".join(parts) or None


def _real(m: dict) -> str | None:
    ndcg = (m.get("table3") or {}).get("ndcg")
    if isinstance(ndcg, dict) and ndcg:
        return "NDCG " + " ".join(f"{k} {v:.3f}" for k, v in ndcg.items()
                                  if isinstance(v, (int, float)))
    return None


def _summary(m: dict) -> str | None:
    if "n_rows" in m and "n_features" in m:
        pos = m.get("positive_rate")
        return (f"{m['n_rows']} rows x {m['n_features']} features"
                + (f", positive rate {pos:.3f}" if isinstance(pos, (int, float)) else ""))
    return None


def _fig8(m: dict) -> str | None:
    rows = m.get("rows")
    return f"{len(rows)} histograms" if isinstance(rows, list) else None


#: job name -> headline of its metrics (old and new job names)
HEADLINES = {"table1_cell": _table1, "table1": _table1, "fig5_cell": _fig5, "fig5": _fig5,
             "fig11_cell": _fig11, "fig11": _fig11, "real_cell": _real, "real": _real,
             "summary": _summary, "fig8": _fig8}
#: a metric key that identifies the job when its name is not in HEADLINES
SIGNATURES = (("ap_runs", _table1), ("table3", _real), ("ks", _fig11), ("ap", _fig5),
              ("n_rows", _summary), ("rows", _fig8))


def _fallback(m: dict) -> str:
    """The first two numeric metrics (a list of numbers shows its mean)."""
    parts = []
    for k, v in m.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)) and math.isfinite(v):
            parts.append(f"{k} {v:.4g}")
        elif isinstance(v, list) and (mv := _mean(v)) is not None:
            parts.append(f"{k} {mv:.4g}")
        if len(parts) == 2:
            break
    return " ".join(parts)


def headline(result: dict) -> str:
    """A short text of a job's main metric, read from its ``result.json`` content."""
    m = result.get("metrics")
    if not isinstance(m, dict):
        return ""
    if m.get("skipped"):
        return f"skipped: {str(m['skipped'])[:80]}"
    fns = [HEADLINES.get(str(result.get("job")))] + [f for key, f in SIGNATURES if key in m]
    for fn in fns:
        try:
            text = fn(m) if fn else None
        except (TypeError, ValueError, KeyError, AttributeError):
            text = None
        if text:
            return text
    return _fallback(m)
