"""Reading a multirun: the checked job results, the unfinished or rejected job folders, and
the cells of the sweep's grid that never started.

Aggregation reads only the ``result.json`` files of the jobs. Each is checked before it is
used, and a file that fails a check is one line (``Sweep.reasons``), never a traceback:

* it parses as a JSON object with ``status: ok``, a ``job`` and a ``config_hash``;
* its ``config_hash`` is the hash of the job's ``.hydra/config.yaml`` (with the data checksum
  the job recorded): a result left by another config in the same folder is rejected;
* every ``*.npz`` beside it is a complete archive (a truncated ``records.npz`` is rejected).

The sweep's grid is what its ``multirun.yaml`` launched (``hydra.sweeper.params`` and the
command line's overrides, expanded as Hydra's basic sweeper does) together with every job
folder found; each cell of it without a checked result is missing (``Sweep.never_started``
for those without a folder). Two folders holding the same cell (same overrides, e.g. an old
numbered folder and its hash-named successor): the newer result is used, the other named in
``Sweep.notes``.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from faux.errors import FauxError
from faux.harness.results import digest_problem


@dataclass
class Sweep:
    results: list[dict] = field(default_factory=list)
    unfinished: list[Path] = field(default_factory=list)   # job folders without a good result
    reasons: dict[str, str] = field(default_factory=dict)  # str(folder) -> why it was rejected
    never_started: list[tuple[str, str]] = field(default_factory=list)  # grid cells, no folder
    notes: list[str] = field(default_factory=list)


def _overrides_list(job_dir: Path) -> list[str] | None:
    try:
        import yaml

        ovr = yaml.safe_load((Path(job_dir) / ".hydra" / "overrides.yaml").read_text())
        return [str(o) for o in ovr] if isinstance(ovr, list) else None
    except Exception:
        return None


def stored_config_hash(job_dir: Path, data_sha256: str | None) -> str | None:
    """The config hash of the job's ``.hydra/config.yaml`` (as the job computes it: ``faux.studies.job.config_hash``);
    None when the folder has no such file. Raises ValueError when it cannot be resolved."""
    path = Path(job_dir) / ".hydra" / "config.yaml"
    if not path.is_file():
        return None
    # resolving a job's config costs ~0.1-0.2 s: the hash is memoised in the cache by the bytes
    # of config.yaml, the data checksum and the faux code (another config gives another
    # entry); the job itself records it (faux.harness.results.remember_config_hash), so a fresh sweep's
    # aggregation resolves nothing
    from faux.harness.cache import Cache, json_dumps, json_loads
    from faux.harness.identity import config_yaml_key

    return Cache().get_or_build("config_hash", config_yaml_key(path, data_sha256),
                                lambda: _config_hash_of(path, data_sha256),
                                dumps=json_dumps, loads=json_loads)


def _config_hash_of(path: Path, data_sha256: str | None) -> str:
    from omegaconf import OmegaConf

    from faux.harness.identity import VOLATILE
    from faux.studies.job import config_hash, register_resolvers

    register_resolvers()
    cfg = OmegaConf.load(path)
    for key in {k.split(".")[0] for k in VOLATILE if "." not in k}:
        if key in cfg:
            del cfg[key]          # paths/logger interpolate ${hydra:...} and env vars
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:
        raise ValueError(f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}") from None
    return config_hash(plain, data_sha256)


def check_result(job_dir: Path) -> tuple[dict | None, str | None]:
    """``(result, None)`` for a good result of ``job_dir``, else ``(None, reason)``."""
    path = Path(job_dir) / "result.json"
    if not path.exists():
        stale = (Path(job_dir) / "result.stale.json").exists()
        return None, "rerun started, never finished (old result marked stale)" if stale \
            else "unfinished (no result.json)"
    try:
        res = json.loads(path.read_text())
    except OSError as exc:
        return None, f"result.json unreadable ({type(exc).__name__})"
    except ValueError:
        return None, "result.json is not valid JSON (truncated?)"
    if not isinstance(res, dict):
        return None, f"result.json holds a {type(res).__name__}, not a JSON object"
    if res.get("status") != "ok":
        return None, f"result.json has status {res.get('status')!r}"
    for key in ("job", "config_hash", "metrics"):
        if key not in res:
            return None, f"result.json has no {key!r}"
    if not isinstance(res["metrics"], dict):
        return None, "result.json's metrics are not a JSON object"
    why = digest_problem(res)
    if why is not None:
        return None, f"{why}; rerun the job"
    try:
        expected = stored_config_hash(job_dir, res.get("data_sha256"))
    except ValueError as exc:
        return None, f".hydra/config.yaml cannot be resolved ({exc})"
    if expected is not None and expected != res["config_hash"]:
        return None, (f"result.json is of another config (hash {res['config_hash']}, "
                      f".hydra/config.yaml gives {expected}); rerun the job")
    for npz in sorted(Path(job_dir).glob("*.npz")):
        try:
            with zipfile.ZipFile(npz) as zf:
                bad = zf.testzip()
        except (zipfile.BadZipFile, EOFError, OSError) as exc:
            return None, f"{npz.name} is truncated or corrupt ({type(exc).__name__}); rerun the job"
        if bad is not None:
            return None, f"{npz.name} is corrupt (member {bad}); rerun the job"
    return res, None


def expected_jobs(root: Path) -> list[list[str]] | None:
    """The override lists of every job the sweep in ``root`` launched (its ``multirun.yaml``:
    ``hydra.sweeper.params`` and the command line's overrides, expanded as Hydra's basic
    sweeper does); None without a readable ``multirun.yaml``."""
    path = Path(root) / "multirun.yaml"
    if not path.is_file():
        return None
    try:
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from omegaconf import OmegaConf

        from faux.studies.job import register_resolvers

        register_resolvers()
        cfg = OmegaConf.load(path)
        params = OmegaConf.select(cfg, "hydra.sweeper.params", default=None) or {}
        # keys are override paths ("model.gan.transport_weight"): read them as keys, not as
        # nested paths (OmegaConf.select would split them at the dots and find nothing)
        args = [f"{k}={params[k]}" for k in params]
        args += [str(o) for o in OmegaConf.select(cfg, "hydra.overrides.task", default=[])]
        overrides = OverridesParser.create().parse_overrides(args)
        (batch,) = BasicSweeper.split_arguments(overrides, None)
        return [list(job) for job in batch]
    except Exception:
        return None


def read_sweep(root: Path) -> Sweep:
    """The checked job results under ``root`` (recursively), the rejected or unfinished job
    folders with the reason, and the grid cells that never started."""
    from faux.harness.identity import job_key

    root = Path(root)
    if not root.is_dir():
        raise FauxError(f"{root} is not a folder; pass a multirun folder "
                        f"(outputs/<task>/multiruns/<stamp>)")
    sweep = Sweep()
    job_dirs = {p.parent for p in root.rglob(".hydra")} | {p.parent for p in root.rglob("result.json")}
    by_cell: dict[tuple, tuple[float, dict]] = {}
    seen: set[tuple] = set()
    for d in sorted(job_dirs):
        ovr = _overrides_list(d)
        cell = job_key(ovr) if ovr is not None else ("dir", str(d))
        seen.add(cell)
        res, why = check_result(d)
        if res is None:
            sweep.unfinished.append(d)
            sweep.reasons[str(d)] = why
            continue
        res["_dir"], res["_cell"] = str(d), list(cell)
        mtime = (d / "result.json").stat().st_mtime
        if cell in by_cell:
            old_t, old = by_cell[cell]
            keep, drop = (res, old) if mtime >= old_t else (old, res)
            sweep.notes.append(f"{drop['_dir']} holds the same cell as {keep['_dir']} "
                               f"(overrides {' '.join(cell)}); the newer result is used")
            by_cell[cell] = (max(mtime, old_t), keep)
        else:
            by_cell[cell] = (mtime, res)
    # a cell of the latest launch (multirun.yaml) comes before one an earlier sweep into this
    # folder left with other overrides: where both give the same table cell (results_of
    # keeps the first), the latest launch's result is the one used
    latest = {job_key(j) for j in expected_jobs(root) or []}
    sweep.results = sorted((r for _, r in by_cell.values()),
                           key=lambda r: (tuple(r.get("_cell", ())) not in latest, r["_dir"]))
    for job in expected_jobs(root) or []:
        if job_key(job) not in seen:
            sweep.never_started.append((f"job {' '.join(job_key(job))}",
                                        f"never started (no job folder under {root})"))
    if not sweep.results and not sweep.unfinished and not sweep.never_started:
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
        sweep.reasons.update(s.reasons)
        sweep.never_started += s.never_started
        sweep.notes += s.notes
    return sweep


def job_log(job_dir: Path) -> Path:
    logs = sorted(Path(job_dir).glob("*.log"))
    return logs[0] if logs else Path(job_dir)


def overrides(job_dir) -> str:
    """The job's command-line overrides (its name in a missing-cell line)."""
    ovr = _overrides_list(job_dir)
    return " ".join(ovr) if ovr is not None else Path(job_dir).name


def unfinished_cells(sweep: Sweep) -> list[tuple[str, str]]:
    """``(cell, where)`` of every job folder without a checked result (why, and its log)."""
    return [(f"job {overrides(d)}",
             f"{sweep.reasons.get(str(d), 'unfinished')}; log: {job_log(d)}")
            for d in sweep.unfinished]


def grid_gaps(seen, rows, cols) -> list[tuple[str, str]]:
    """``(row/col, "no finished job")`` for every cell of ``rows`` x ``cols`` not in ``seen``
    (a set of ``(row, col)`` pairs): the missing cells of a table."""
    return [(f"{r}/{c}", "no finished job") for r in rows for c in cols if (r, c) not in seen]


def results_of(sweep: Sweep, job: str, key) -> list[dict]:
    """The results of ``job`` jobs, the first of each ``key(metrics)``: a cell given twice
    (two sweeps into one folder with other overrides) is kept once, the latest launch's
    (:func:`read_sweep` orders it first), and the other is named in ``sweep.notes``."""
    out, seen = [], {}
    for res in sweep.results:
        if res.get("job") != job:
            continue
        k = key(res["metrics"])
        if k in seen:
            sweep.notes.append(f"{res['_dir']} gives the same cell {k} as {seen[k]}, which is "
                               f"used (the latest launch's, else the first)")
            continue
        seen[k] = res["_dir"]
        out.append(res)
    return out
