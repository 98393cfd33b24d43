"""The summary printed at the end of every ``make <table>``: ours beside the paper's.

``render_summary(title, rows, paper=..., claims=..., paths=..., missing=...)`` returns text:
a table of our values with the paper's value beside each (where the paper has one), the
claims line, the files written, and each failed or missing cell with its log path. On a
terminal the table is a ``rich`` table; otherwise (logs, CI, pipes) it is plain aligned text.

``rows`` is a DataFrame (e.g. ``outputs/results/table1.csv``) or a list of dicts. By default
the label columns are the usual keys (column, dataset, method, ...), ours is the first
``*_mean`` column with its ``*_std``, and the paper's is the column ``paper`` or
``paper_<value>`` (with ``paper_<std>``); each can be named explicitly.
"""

from __future__ import annotations

import io
import math
import shutil
import sys
from collections.abc import Mapping, Sequence
from numbers import Number

import pandas as pd

#: label columns picked by default, in this order, when present
LABEL_KEYS = ("study", "column", "dataset", "pair", "method", "model", "reading")
DASH = "—"


def _num(v) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, Number):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


def fmt_value(v, std=None, digits: int = 3) -> str:
    """``0.876 ± 0.015``; a missing value is a dash; text is kept as it is."""
    if isinstance(v, (tuple, list)) and len(v) == 2:
        v, std = v
    if isinstance(v, str):
        return v.strip() or DASH
    m = _num(v)
    if m is None:
        return DASH
    s = _num(std)
    return f"{m:.{digits}f}" if s is None else f"{m:.{digits}f} ± {s:.{digits}f}"


def _frame(rows) -> pd.DataFrame:
    if isinstance(rows, pd.DataFrame):
        return rows.reset_index(drop=True)
    return pd.DataFrame(list(rows or []))


def _pick_value(frame: pd.DataFrame, labels: list[str]) -> str | None:
    means = [c for c in frame.columns if str(c).endswith("_mean") and not str(c).startswith("paper")]
    if means:
        return means[0]
    nums = [c for c in frame.columns if c not in labels and not str(c).startswith("paper")
            and pd.api.types.is_numeric_dtype(frame[c])]
    return nums[0] if nums else None


def _paper_cells(frame, labels, paper, paper_std, value, std) -> list[str] | None:
    """The paper's value per row, formatted; None when there is no paper column."""
    if paper is None:
        for cand in ("paper", f"paper_{value}", "paper_mean"):
            if value and cand in frame.columns:
                paper = cand
                break
    if paper is None:
        return None
    if isinstance(paper, Mapping):
        keys = [tuple(r) if len(labels) > 1 else r[0]
                for r in frame[labels].itertuples(index=False)]
        return [fmt_value(paper.get(k)) for k in keys]
    if paper not in frame.columns:
        raise KeyError(f"paper column {paper!r} not in the table's columns {list(frame.columns)}")
    if paper_std is None:
        for cand in (f"paper_{std}" if std else None, f"{paper}_std".replace("_mean_std", "_std")):
            if cand and cand != paper and cand in frame.columns:
                paper_std = cand
                break
    sds = frame[paper_std] if paper_std else [None] * len(frame)
    return [fmt_value(v, s) for v, s in zip(frame[paper], sds)]


def table_cells(rows, *, labels=None, value=None, std=None, paper=None, paper_std=None,
                extra=()) -> tuple[list[str], list[list[str]]]:
    """The header and the formatted rows of the summary table (long form)."""
    frame = _frame(rows)
    if labels is None:
        labels = [c for c in LABEL_KEYS if c in frame.columns]
        if not labels:
            labels = [c for c in frame.columns if frame[c].dtype == object
                      and not str(c).startswith("paper")][:3]
    labels = list(labels)
    value = value or _pick_value(frame, labels)
    if std is None and value and str(value).endswith("_mean"):
        cand = str(value)[:-5] + "_std"
        std = cand if cand in frame.columns else None
    head = list(labels)
    cols: list[list[str]] = [[str(v) for v in frame[c]] for c in labels]
    if value is not None:
        head.append(f"ours ({value.removesuffix('_mean')})" if value != "ours" else "ours")
        sds = frame[std] if std else [None] * len(frame)
        cols.append([fmt_value(v, s) for v, s in zip(frame[value], sds)])
    pcells = _paper_cells(frame, labels, paper, paper_std, value, std)
    if pcells is not None:
        head.append("paper")
        cols.append(pcells)
    for c in extra:
        head.append(str(c))
        cols.append([fmt_value(v) for v in frame[c]])
    body = [list(r) for r in zip(*cols)] if cols else []
    return head, body


def pivot_cells(rows, index: str, columns: str, **kw) -> tuple[list[str], list[list[str]]]:
    """Wide form: one row per ``index`` value, one column per ``columns`` value, each cell
    ``ours / paper`` (or ours alone where the paper has no value)."""
    frame = _frame(rows)
    head, body = table_cells(frame, labels=[index, columns], **kw)
    i_paper = head.index("paper") if "paper" in head else None
    col_vals = list(dict.fromkeys(frame[columns].astype(str)))
    row_vals = list(dict.fromkeys(frame[index].astype(str)))
    # body rows: index, columns, ours, [paper]
    grid = {(r[0], r[1]): r[2] + (f" / {r[i_paper]}" if i_paper is not None else "")
            for r in body}
    out = [[rv] + [grid.get((rv, cv), DASH) for cv in col_vals] for rv in row_vals]
    corner = f"{index} \\ {columns}" + (" (ours / paper)" if i_paper is not None else "")
    return [corner] + col_vals, out


def _claims_text(claims) -> str | None:
    if not claims:
        return None
    if isinstance(claims, str):
        return f"Claims: {claims}"
    if isinstance(claims, Mapping):
        parts = [f"{k} ({'holds' if ok else 'does not hold'})" if isinstance(ok, bool)
                 else f"{k}: {ok}" for k, ok in claims.items()]
        return "Claims: " + "; ".join(parts)
    return "Claims: " + "; ".join(str(c) for c in claims)


def _missing_lines(missing) -> list[str]:
    items = list(missing or [])
    if not items:
        return []
    out = [f"Failed or missing ({len(items)}):"]
    for m in items:
        if isinstance(m, (tuple, list)) and len(m) == 2:
            out.append(f"  {m[0]}: {m[1]}")
        else:
            out.append(f"  {m}")
    return out


def _plain_table(head: list[str], body: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in body]


def render_summary(title: str, rows, *, paper=None, claims=None, paths: Sequence = (),
                   missing: Sequence = (), labels=None, value=None, std=None,
                   paper_std=None, extra: Sequence = (), pivot: tuple[str, str] | None = None,
                   tty: bool | None = None, width: int | None = None) -> str:
    """The end-of-run summary as text (rich table when ``tty``, plain text otherwise).

    rows: DataFrame or list of dicts. paper: the column with the paper's value, or a
    mapping from the row's labels (a tuple when several) to a value or (mean, std); by
    default ``paper`` or ``paper_<value>``. claims: a string, a list of strings, or a mapping
    claim -> holds (bool). paths: files written. missing: (cell, where) pairs or strings,
    ``where`` naming the log. pivot: (index, columns) for a wide table of ``ours / paper``.
    tty: default whether stdout is a terminal.
    """
    if tty is None:
        tty = sys.stdout.isatty()
    kw = dict(value=value, std=std, paper=paper, paper_std=paper_std, extra=extra)
    frame = _frame(rows)
    if frame.empty:
        head, body = [], []
    elif pivot is not None:
        head, body = pivot_cells(frame, pivot[0], pivot[1], **kw)
    else:
        head, body = table_cells(frame, labels=labels, **kw)
    tail = []
    if (c := _claims_text(claims)) is not None:
        tail.append(c)
    if paths:
        tail.append("Wrote: " + ", ".join(str(p) for p in paths))
    tail += _missing_lines(missing)
    if not tty:
        lines = [f"== {title} =="]
        lines += _plain_table(head, body) if body else ["(no finished cells)"]
        return "\n".join(lines + tail) + "\n"
    return _rich_text(title, head, body, tail, width)


def _rich_text(title, head, body, tail, width) -> str:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="standard",
                      width=width or shutil.get_terminal_size((120, 24)).columns)
    table = Table(title=title, title_style="bold", header_style="bold")
    for h in head:
        table.add_column(h, style="cyan" if h == "paper" else None,
                         justify="right" if h.startswith("ours") or h == "paper" else "left")
    for r in body:
        table.add_row(*[Text(str(x)) for x in r])
    console.print(table if body else Text(f"{title}: no finished cells"))
    for line in tail:
        style = {"Failed": "bold red", "Wrote": "green"}.get(line.split(" ")[0])
        console.print(Text(line, style=style), soft_wrap=True)
    return buf.getvalue()


def print_summary(title: str, rows, file=None, **kw) -> None:
    """:func:`render_summary` written to ``file`` (stdout), TTY-detected on that stream."""
    file = file or sys.stdout
    kw.setdefault("tty", getattr(file, "isatty", lambda: False)())
    file.write(render_summary(title, rows, **kw))
    file.flush()


#: how :func:`render_report` lays out the known tables (anything else: long form)
REPORT_LAYOUT = {"table1": {"pivot": ("method", "column")},
                 "table3": {"pivot": ("method", "dataset")}}


def render_report(name: str, report, *, title: str | None = None, claims=None, **kw) -> str:
    """:func:`render_summary` of an aggregation ``Report`` (its frame, files and missing
    cells), laid out per :data:`REPORT_LAYOUT` unless ``kw`` says otherwise."""
    layout = {**REPORT_LAYOUT.get(name, {}), **kw}
    frame = report.frame
    piv = layout.get("pivot")
    if piv and not set(piv) <= set(getattr(frame, "columns", [])):
        layout.pop("pivot")                 # a frame without those columns: long form
    return render_summary(title or name, frame, claims=claims, paths=report.files,
                          missing=report.missing, **layout)
