"""Sweep progress for every multirun: ``[k/N] <cell> <status> <seconds>s <headline>``.

One Hydra callback (registered in ``conf/harness.yaml``) serves every study and every
launcher. Where a job ends depends on the launcher: the basic launcher runs ``run_job`` (and
so ``on_job_end``) in the launching process, joblib runs it in a loky worker, Ray and
submitit on other machines. So the two halves talk through the file system:

* in the job's process, ``on_job_end`` writes one small event file,
  ``<sweep dir>/.progress/<job num>.json`` (status, seconds, headline metric), by writing a
  temporary file and renaming it. A rename is atomic, also on NFS, so no lock is needed and a
  reader never sees half an event; one file per job means concurrent jobs never touch the
  same file (an append-under-lock log would need ``flock``, which NFS does not honour).
* in the launching process, ``on_multirun_start`` counts the jobs from the sweeper's
  expanded overrides (N), clears events of an earlier sweep into the same folder, and starts
  a thread that lists ``.progress/`` a few times a second and prints each new event to
  stderr; ``on_multirun_end`` reads the last events and prints the summary line.

A job that finds its finished ``result.json`` (same config hash) returns at once: its event
says ``cached`` and it counts as done immediately; the estimate of time left uses only the
durations of jobs that computed. On a terminal the display is a live ``rich`` progress bar
(each finished job printed above it); in a log or CI it is one plain line per job. Set
``FAUX_PROGRESS=plain|rich|off`` to choose. Nothing here writes into a job's result files.
On Ctrl-C, ``python -m faux.run`` stops the display without its summary (:func:`stop_for_interrupt`)
and prints one line instead.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from faux.harness.disk import is_full, raise_if_full
from faux.harness.files import write_json_atomic

EVENTS_DIR = ".progress"
MODES = ("auto", "rich", "plain", "off")


# --------------------------------------------------------------------------- headline
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


# --------------------------------------------------------------------------- counting
def expand_sweep(cfg: DictConfig) -> tuple[list[list[str]] | None, list[str]]:
    """The jobs' overrides as the basic sweeper expands them, and the swept keys.

    ``(None, [])`` for another sweeper (its number of jobs is not known up front, except
    ``n_trials`` of optimising sweepers, which :func:`job_count` reads).
    """
    sweeper = OmegaConf.select(cfg, "hydra.sweeper._target_", default="") or ""
    if not sweeper.endswith(("BasicSweeper", "CoveringSweeper")):
        return None, []
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        # as Hydra does: the sweeper's params resolved (instantiate resolves them, e.g. a
        # resolver listing the methods), the command line's overrides as typed
        params = OmegaConf.select(cfg, "hydra.sweeper.params", default=None)
        params = OmegaConf.to_container(params, resolve=True) if params is not None else {}
        args = [f"{k}={v}" for k, v in params.items()]
        args += list(OmegaConf.to_container(cfg.hydra.overrides.task, resolve=False))
        overrides = OverridesParser.create().parse_overrides(args)
        jobs = BasicSweeper.split_arguments(overrides, None)[0]
    except Exception:       # e.g. glob() sweeps need Hydra's config loader: count as unknown
        return None, []
    swept = []
    for o in overrides:
        key = o.get_key_element()
        if o.is_sweep_override():
            if key not in swept:
                swept.append(key)
        elif key in swept:          # a later plain value replaces an earlier sweep
            swept.remove(key)
    return jobs, swept


def job_count(cfg: DictConfig) -> int | None:
    jobs, _ = expand_sweep(cfg)
    if jobs is not None:
        return len(jobs)
    n = OmegaConf.select(cfg, "hydra.sweeper.n_trials", default=None)
    return int(n) if isinstance(n, int) else None


def parallelism(cfg: DictConfig) -> int | None:
    """Jobs running at once for the local launchers; None when unknown (Ray, SLURM)."""
    target = OmegaConf.select(cfg, "hydra.launcher._target_", default="") or ""
    if target.endswith("BasicLauncher"):
        return 1
    if "joblib" in target.lower():
        try:
            n = int(OmegaConf.select(cfg, "hydra.launcher.n_jobs", default=-1))
        except (TypeError, ValueError):
            return None
        cpus = os.cpu_count() or 1
        return max(1, n if n > 0 else cpus + 1 + n)
    return None


def cell_name(overrides: list[str], swept: list[str]) -> str:
    """``Synthetic-1/faux`` from the job's overrides: the values of the swept keys."""
    kv = dict(o.split("=", 1) for o in overrides if "=" in o)
    keys = [k.lstrip("+~") for k in swept]
    kv = {k.lstrip("+~"): v for k, v in kv.items()}
    vals = [kv[k] for k in keys if k in kv]
    return "/".join(vals) if vals else " ".join(overrides) or "(no overrides)"


def fmt_time(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


@dataclass
class Tally:
    """What the launching process knows: events seen so far, and the time left estimate."""

    total: int | None
    parallel: int | None = None
    started: float = field(default_factory=time.monotonic)
    events: dict[int, dict] = field(default_factory=dict)

    @property
    def done(self) -> int:
        return len(self.events)

    def computed(self) -> list[float]:
        return [e["seconds"] for e in self.events.values() if e["status"] != "cached"]

    def eta(self, now: float | None = None) -> float | None:
        """Time left: jobs left x mean duration of the jobs that computed / jobs at once.

        ``jobs at once`` is the launcher's parallelism when known (basic 1, joblib n_jobs),
        else the observed one (sum of durations / elapsed)."""
        if self.total is None:
            return None
        left = self.total - self.done
        if left <= 0:
            return 0.0
        d = self.computed()
        if not d:
            return None
        elapsed = (now or time.monotonic()) - self.started
        par = self.parallel or max(1.0, sum(d) / max(elapsed, 1e-9))
        return left * (sum(d) / len(d)) / min(par, left)

    def line(self, ev: dict, now: float | None = None) -> str:
        now = now or time.monotonic()
        n = "?" if self.total is None else str(self.total)
        text = f"[{self.done}/{n}] {ev['cell']} {ev['status']} {ev['seconds']:.1f}s"
        if ev.get("headline"):
            text += f" {ev['headline']}"
        if ev["status"] == "failed":
            text += f" ({ev.get('error', '')}; log: {ev.get('log')})"
        return text + f" | elapsed {fmt_time(now - self.started)}, left ~{fmt_time(self.eta(now))}"

    def summary(self, cells: dict[int, str] | None = None) -> list[str]:
        counts: dict[str, int] = {}
        for e in self.events.values():
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        n = "?" if self.total is None else str(self.total)
        missing = [c for num, c in sorted((cells or {}).items()) if num not in self.events]
        parts = [f"{v} {k}" for k, v in sorted(counts.items())]
        if missing:            # every job counted: finished ones by status, the rest not run
            parts.append(f"{len(missing)} not run")
        lines = [f"[sweep] {self.done}/{n} jobs in {fmt_time(time.monotonic() - self.started)}: "
                 + (", ".join(parts) or "none finished")]
        for num in sorted(self.events):
            e = self.events[num]
            if e["status"] == "failed":
                lines.append(f"  failed: {e['cell']} (log: {e.get('log')})")
        if missing:
            lines.append(f"  not finished ({len(missing)}): " + ", ".join(missing))
        return lines


# --------------------------------------------------------------------------- display
class _Plain:
    def __init__(self, stream):
        self.stream = stream

    def start(self, total):
        pass

    def job(self, line: str, tally: Tally):
        print(line, file=self.stream, flush=True)

    def stop(self, lines: list[str]):
        for line in lines:
            print(line, file=self.stream, flush=True)


class _Rich:
    def __init__(self, stream):
        from rich.console import Console

        self.console = Console(file=stream)
        self.progress = None

    def start(self, total):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("left ~{task.fields[eta]}"),
                                 console=self.console, transient=False)
        self.task = self.progress.add_task("sweep", total=total, eta="?")
        self.progress.start()

    def job(self, line: str, tally: Tally):
        self.progress.console.print(line, highlight=False, markup=False, soft_wrap=True)
        self.progress.update(self.task, completed=tally.done, eta=fmt_time(tally.eta()))

    def stop(self, lines: list[str]):
        self.progress.stop()
        for line in lines:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)


def _display(mode: str, stream):
    if mode == "auto":
        mode = "rich" if stream.isatty() else "plain"
    return _Rich(stream) if mode == "rich" else _Plain(stream)


# --------------------------------------------------------------------------- callback
def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _is_multirun(config: DictConfig) -> bool:
    return str(OmegaConf.select(config, "hydra.mode", default="")).endswith("MULTIRUN")


class SweepProgress(Callback):
    """Hydra callback: job-side event files, launcher-side counting and display."""

    def __init__(self, mode: str = "auto", poll_s: float = 0.25) -> None:
        mode = str(mode).lower()
        if mode not in MODES:
            from faux.errors import ConfigError

            raise ConfigError(f"progress mode {mode!r} is not one of {MODES}; "
                              f"set FAUX_PROGRESS to auto, rich, plain or off")
        self.mode = mode
        self.poll_s = float(poll_s)
        self._job_start: dict[str, tuple[float, Any]] = {}   # job side, per output dir
        self._parent: dict | None = None                    # launcher side, never pickled

    def __getstate__(self):
        # the callback travels to joblib/Ray/submitit workers inside Hydra's context;
        # the launcher-side thread and display stay behind
        state = dict(self.__dict__)
        state["_parent"] = None
        return state

    # ---- job side (any process) ----
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if self.mode == "off" or not _is_multirun(config):
            return
        out = Path(str(config.hydra.runtime.output_dir))
        self._job_start[str(out)] = (time.monotonic(), _stat(out / "result.json"))

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if self.mode == "off" or not _is_multirun(config):
            return
        out = Path(str(config.hydra.runtime.output_dir))
        t0, before = self._job_start.pop(str(out), (time.monotonic(), None))
        seconds = time.monotonic() - t0
        res_path = out / "result.json"
        try:
            result = json.loads(res_path.read_text())
        except (OSError, ValueError):
            result = None
        if not isinstance(result, dict):        # e.g. a hand-edited `[1, 2]`: no result
            result = None
        failed = getattr(getattr(job_return, "status", None), "name", "") == "FAILED"
        if failed or result is None:
            # JobReturn.return_value re-raises a failed job's exception; read the field
            err = getattr(job_return, "_return_value", None) if failed else None
            status = "failed"
            error = f"{type(err).__name__}: {str(err)[:120]}" if err is not None else "no result.json"
        elif result.get("status") != "ok":
            status, error = "failed", f"status {result.get('status')}"
        elif before is not None and _stat(res_path) == before:
            status, error = "cached", None
        elif isinstance(result.get("metrics"), dict) and result["metrics"].get("skipped"):
            status, error = "skipped", None
        else:
            status, error = "ok", None
        logs = sorted(out.glob("*.log"))
        event = {"num": int(OmegaConf.select(config, "hydra.job.num", default=-1)),
                 "overrides": list(OmegaConf.to_container(config.hydra.overrides.task)),
                 "status": status, "seconds": seconds,
                 "headline": headline(result) if result and status != "failed" else "",
                 "error": error, "log": str(logs[0] if logs else out), "dir": str(out),
                 "finished": time.time()}
        # the sweep folder as this job resolved it (Hydra copies the launcher's resolved
        # values, ${now:} included, into every job's config)
        try:
            write_event(Path(str(config.hydra.sweep.dir)) / EVENTS_DIR, event)
        except OSError as exc:
            # a full disk: the launching process, when it is this one (basic launcher),
            # counts the job from memory; elsewhere it counts as not run
            if self._parent is None:
                if is_full(exc):
                    return
                raise
        if self._parent is not None:
            self._record(event)

    # ---- launcher side ----
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if self.mode == "off":
            return
        sweep_dir = Path(str(config.hydra.sweep.dir))
        events = sweep_dir / EVENTS_DIR
        if events.is_dir():                  # events of an earlier sweep into this folder
            for p in events.iterdir():
                p.unlink(missing_ok=True)
        jobs, swept = expand_sweep(config)
        total = len(jobs) if jobs is not None else job_count(config)
        tally = Tally(total=total, parallel=parallelism(config))
        display = _display(self.mode, sys.stderr)
        display.start(total)
        cells = {i: cell_name(o, swept) for i, o in enumerate(jobs)} if jobs else {}
        stop = threading.Event()
        lock = threading.Lock()
        self._parent = {"dir": events, "tally": tally, "display": display, "swept": swept,
                        "cells": cells, "stop": stop, "lock": lock, "closed": False}
        thread = threading.Thread(target=self._poll_loop, name="faux-progress", daemon=True)
        self._parent["thread"] = thread
        thread.start()
        _LAUNCHED.append(self)
        atexit.register(self._close)       # a sweep that dies still prints its count

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._close()

    def _poll_loop(self) -> None:
        p = self._parent
        while p is not None and not p["stop"].wait(self.poll_s):
            self._poll()

    def _poll(self) -> None:
        p = self._parent
        if p is None:
            return
        self._show(read_events(p["dir"]))

    def _record(self, event: dict) -> None:
        """A job's event known in this process (its file may not exist: a full disk)."""
        if self._parent is not None and not self._parent["closed"]:
            self._show([dict(event)])

    def _show(self, events: list[dict]) -> None:
        p = self._parent
        with p["lock"]:
            new = [e for e in events if e["num"] not in p["tally"].events]
            for e in sorted(new, key=lambda e: e.get("finished", 0)):
                e["cell"] = cell_name(e["overrides"], p["swept"])
                p["tally"].events[e["num"]] = e
                p["display"].job(p["tally"].line(e), p["tally"])

    def _close(self) -> None:
        p = self._parent
        if p is None or p["closed"]:
            return
        p["stop"].set()
        p["thread"].join(timeout=5)
        self._poll()
        p["closed"] = True
        try:
            p["display"].stop(p["tally"].summary(p["cells"]))
        except (OSError, ValueError):       # stderr already closed at interpreter exit
            pass


    def stop_quietly(self) -> tuple[int, int | None] | None:
        """Stop the display without the summary (the process is leaving on Ctrl-C): the
        events already written are shown, then ``(jobs finished, jobs in the sweep)``."""
        p = self._parent
        if p is None or p["closed"]:
            return None
        p["stop"].set()
        p["thread"].join(timeout=2)
        if p["lock"].acquire(timeout=1):      # not when Ctrl-C came inside a poll
            p["lock"].release()
            try:
                self._poll()
            except (OSError, ValueError):
                pass
        p["closed"] = True
        try:
            p["display"].stop([])
        except (OSError, ValueError):
            pass
        return p["tally"].done, p["tally"].total


#: the launcher-side callbacks of this process (for :func:`stop_for_interrupt`)
_LAUNCHED: list[SweepProgress] = []


def close_all() -> None:
    """Close every sweep display of this process with its summary (a sweep stopped early,
    e.g. on a full disk: the summary before the one error line)."""
    for cb in _LAUNCHED:
        cb._close()


def stop_for_interrupt() -> tuple[int, int | None] | None:
    """Stop every sweep display of this process without its summary; ``(finished, total)``
    of the last one still shown, None when none is."""
    counts = None
    for cb in _LAUNCHED:
        counts = cb.stop_quietly() or counts
    return counts


def write_event(events_dir: Path, event: dict) -> Path:
    """Write one job's event atomically (``faux.harness.files.write_atomic``: a temporary
    file of its own in the folder, so no two writers share one, then a rename)."""
    path = events_dir / f"{event['num']}.json"
    try:
        events_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise_if_full(exc, path)
        raise
    return write_json_atomic(path, event, indent=None, default=str)


def read_events(events_dir: Path) -> list[dict]:
    """The complete events in ``events_dir`` (temporary files are skipped)."""
    out = []
    try:
        names = [n for n in os.listdir(events_dir) if n.endswith(".json")]
    except OSError:
        return out
    for name in names:
        try:
            out.append(json.loads((events_dir / name).read_text()))
        except (OSError, ValueError):
            continue
    return out
