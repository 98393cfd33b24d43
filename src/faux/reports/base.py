"""What every report builder returns, and the small formatting helpers they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass
class Report:
    frame: pd.DataFrame
    files: list[Path] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def mean_std(values) -> tuple[float, float]:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def write_tables(frame: pd.DataFrame, md: str, tex: str | None, name: str,
                 results_dir: Path) -> list[Path]:
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    files = [results_dir / f"{name}.csv", results_dir / f"{name}.md"]
    frame.to_csv(files[0], index=False, float_format="%.4f")
    files[1].write_text(md)
    if tex is not None:
        files.append(results_dir / f"{name}.tex")
        files[2].write_text(tex)
    return files


def fmt(m: float, s: float | None) -> str:
    if m is None or not np.isfinite(m):
        return "—"
    return f"{m:.3f}" if s is None or not np.isfinite(s) else f"{m:.3f} ± {s:.3f}"


def done(report: Report, md: str) -> Report:
    """The report's printed lines: its markdown and the files written."""
    report.lines.append(md)
    report.lines.append("wrote " + ", ".join(str(f) for f in report.files))
    return report
