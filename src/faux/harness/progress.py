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
On Ctrl-C, ``python -m faux.run`` stops the display without its summary
(:func:`stop_for_interrupt`) and prints one line instead.

Here: the callback and the event files. A job's headline is :mod:`faux.harness.headlines`,
the sweep's jobs and cells :mod:`faux.harness.sweep_jobs`, the count and its display
:mod:`faux.harness.tally`.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from faux.harness.disk import is_full, raise_if_full
from faux.harness.files import write_json_atomic
from faux.harness.headlines import headline
from faux.harness.sweep_jobs import cell_name, expand_sweep, job_count, parallelism
from faux.harness.tally import Tally, display_for

EVENTS_DIR = ".progress"
MODES = ("auto", "rich", "plain", "off")


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
        display = display_for(self.mode, sys.stderr)
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
