"""Which sweep, profile and command made a table: ``outputs/results/<name>.provenance.json``.

Aggregation calls :func:`write` beside the tables it writes; ``make docs``
(scripts/make_docs.py) reads it to name the command and profile under each table and figure.
"""

from __future__ import annotations

import json
from pathlib import Path

#: overrides the make targets set themselves (PROFILE, LOGGER, the experiment)
MAKE_SET = ("experiment", "profile", "logger")


def profile_names(results: list[dict]) -> str:
    """The profile of the job results (``config.profile.name``); several joined by ``+``."""
    names = {str(((r.get("config") or {}).get("profile") or {}).get("name", "?"))
             for r in results}
    return "+".join(sorted(names)) or "?"


def sweep_overrides(folder: Path) -> list[str] | None:
    """The command line's overrides of the sweep in ``folder`` (Hydra's ``multirun.yaml``,
    ``hydra.overrides.task``); None without one."""
    try:
        from omegaconf import OmegaConf

        cfg = OmegaConf.load(Path(folder) / "multirun.yaml")
        return [str(o) for o in OmegaConf.select(cfg, "hydra.overrides.task", default=[])]
    except Exception:          # no multirun.yaml (a single run) or an unreadable one
        return None


def make_command(target: str, profile: str, overrides: list[str]) -> str:
    """``make <target> PROFILE=<p> [ARGS='...']``: ARGS are the overrides beyond those the
    target sets itself."""
    import shlex

    extra = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in MAKE_SET]
    cmd = f"make {target} PROFILE={profile}"
    if extra:
        cmd += f" ARGS={shlex.quote(' '.join(extra))}"
    return cmd


def merge_overrides(lists: list[list[str]]) -> list[str]:
    """One command line for the jobs of several sweeps: each key once, in order of first
    appearance, its distinct values joined as a Hydra sweep (``seed=0,1`` and ``seed=2,3,4``
    give ``seed=0,1,2,3,4``; equal values are kept once)."""
    order: list[str] = []
    values: dict[str, list[str]] = {}
    for ovr in lists:
        for o in ovr:
            key, eq, val = o.partition("=")
            if key not in values:
                order.append(key)
                values[key] = []
            if not eq:
                continue
            for v in ([val] if "[" in val or "(" in val else val.split(",")):
                if v not in values[key]:
                    values[key].append(v)
    return [f"{k}={','.join(values[k])}" if values[k] else k for k in order]


def write(results_dir: Path, name: str, sweep_dirs, results: list[dict]) -> Path:
    """``<results_dir>/<name>.provenance.json``: profile, sweeps, their command-line
    overrides and the number of job results the table was made from."""
    sweep_dirs = [Path(d) for d in sweep_dirs]
    overrides = merge_overrides([o for o in map(sweep_overrides, sweep_dirs) if o is not None])
    record = {"study": name, "profile": profile_names(results),
              "sweeps": [str(d) for d in sweep_dirs], "overrides": overrides,
              "n_jobs": len(results)}
    path = Path(results_dir) / f"{name}.provenance.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def read(results_dir: Path, name: str) -> dict | None:
    path = Path(results_dir) / f"{name}.provenance.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
