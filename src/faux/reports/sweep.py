"""Reading a multirun: the finished job results, the unfinished job folders and their logs.

Aggregation reads only the ``result.json`` files of the jobs (and notes jobs that left a
folder but no finished result: crashed or interrupted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from faux.errors import FauxError


@dataclass
class Sweep:
    results: list[dict] = field(default_factory=list)
    unfinished: list[Path] = field(default_factory=list)   # job folders without a good result


def read_sweep(root: Path) -> Sweep:
    """All finished job results under ``root`` (recursively), and the unfinished job folders."""
    root = Path(root)
    if not root.is_dir():
        raise FauxError(f"{root} is not a folder; pass a multirun folder "
                        f"(outputs/<task>/multiruns/<stamp>)")
    sweep = Sweep()
    job_dirs = {p.parent for p in root.rglob(".hydra")} | {p.parent for p in root.rglob("result.json")}
    for d in sorted(job_dirs):
        res_path = d / "result.json"
        try:
            res = json.loads(res_path.read_text())
        except (OSError, ValueError):
            sweep.unfinished.append(d)
            continue
        if res.get("status") == "ok" and "config_hash" in res:
            res["_dir"] = str(d)
            sweep.results.append(res)
        else:
            sweep.unfinished.append(d)
    if not sweep.results and not sweep.unfinished:
        raise FauxError(f"no faux jobs under {root} (no result.json or .hydra folders); "
                        f"pass the folder a `python -m faux.run -m ...` sweep wrote")
    return sweep


def read_sweeps(roots) -> Sweep:
    """Several multirun folders as one sweep (results in the order given)."""
    sweep = Sweep()
    for d in roots:
        s = read_sweep(d)
        sweep.results += s.results
        sweep.unfinished += s.unfinished
    return sweep


def job_log(job_dir: Path) -> Path:
    logs = sorted(Path(job_dir).glob("*.log"))
    return logs[0] if logs else Path(job_dir)


def overrides(job_dir) -> str:
    """The job's command-line overrides (its name in a missing-cell line)."""
    try:
        import yaml

        return " ".join(yaml.safe_load((Path(job_dir) / ".hydra" / "overrides.yaml").read_text()))
    except Exception:
        return Path(job_dir).name


def unfinished_cells(sweep: Sweep) -> list[tuple[str, str]]:
    """``(cell, where)`` of every job folder that never finished, with its log."""
    return [(f"job {overrides(d)}", f"unfinished; log: {job_log(d)}") for d in sweep.unfinished]


def results_of(sweep: Sweep, job: str, key) -> list[dict]:
    """The results of ``job`` jobs, the first of each ``key(metrics)`` (a cell given twice,
    from two sweeps, is kept once)."""
    out, seen = [], set()
    for res in sweep.results:
        if res.get("job") != job:
            continue
        k = key(res["metrics"])
        if k in seen:
            continue
        seen.add(k)
        out.append(res)
    return out
