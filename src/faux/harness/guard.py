"""The launch guard, the sweep folder lock and Ctrl-C.

:class:`SweepGuard` (a Hydra callback of conf/harness.yaml) checks the harness table in the
launching process before anything is written (the config, and each swept value of a sweep's
jobs: :func:`check_launch`), then holds ``<sweep dir>/.sweep.lock`` (``flock``) while its
sweep runs, so a second launch into the same folder says so in one line, waits, and then
finds the first one's results (skipped).

Ctrl-C raises :class:`Interrupted` (:func:`install_interrupt_handler`, in the launching
process and in each job's); ``python -m faux.run`` turns it into one line on stderr
(:func:`interrupt_message`: the jobs finished and how to resume), exit 130, no traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from faux.errors import FauxError

#: the lock file of a sweep folder (``fcntl.flock``; held by the launching process)
SWEEP_LOCK = ".sweep.lock"

#: the sweep this process launched (for the resume hint after Ctrl-C)
_SWEEP: dict = {}

#: the top-level config keys ``faux.harness.validate.RULES`` reads
_CHECKED = ("method", "seed", "gan_seed", "draw", "profile", "reading", "synthetic", "model", "real_study",
            "fig8")


def lock_sweep_dir(sweep_dir: Path, stream=None):
    """Hold ``<sweep_dir>/.sweep.lock`` for this process (exclusive ``flock``; the open file
    is returned, the lock goes with it or with the process). A second launch into the same
    folder waits here, after one line on ``stream`` (stderr) naming the holder's pid; its
    jobs then find the first launch's results and skip them."""
    import fcntl

    sweep_dir = Path(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    fh = open(sweep_dir / SWEEP_LOCK, "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "?"
        print(f"waiting: another sweep (pid {holder}) is running in {sweep_dir}; this one "
              f"starts when it ends and reuses its finished jobs",
              file=stream or sys.stderr, flush=True)
        fcntl.flock(fh, fcntl.LOCK_EX)
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def _sections(config: DictConfig) -> dict:
    """The resolved parts of ``config`` that the harness table checks (a part that does not
    resolve here is left to the job, which resolves it again)."""
    out = {}
    for key in _CHECKED:
        if key not in config:
            continue
        try:
            node = config[key]
            out[key] = (OmegaConf.to_container(node, resolve=True)
                        if isinstance(node, DictConfig) else node)
        except Exception:
            continue
    return out


def check_launch(config: DictConfig, sweep: bool) -> None:
    """The harness table over the launch's config and, for a sweep, over every swept value
    of its expanded jobs (``seed=-1,0``). Raises a one-line ConfigError."""
    from faux.harness import validate

    validate.check(_sections(config))
    if not sweep:
        return
    from faux.harness.sweep_jobs import expand_sweep

    jobs, _ = expand_sweep(config)
    texts = sorted({o for job in jobs or [] for o in job})
    if not texts:
        return
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(texts)
    except Exception:          # Hydra reports a malformed override itself
        return
    for o in parsed:
        if o.is_sweep_override() or o.is_delete():
            continue
        try:
            value = o.value()
        except Exception:
            continue
        validate.check_override(o.key_or_group, value)


class SweepGuard(Callback):
    """Hydra callback (``conf/harness.yaml``, before the progress display), in the
    launching process: :func:`check_launch` before a run or a sweep starts (a bad value is
    ``error: <key>=<value>: <expected>`` on stderr, exit 2, nothing written, no job run);
    :func:`lock_sweep_dir` on the sweep folder until the sweep ends; in each job's process,
    Ctrl-C as :class:`Interrupted` (:func:`install_interrupt_handler`)."""

    def __init__(self) -> None:
        self._lock = None
        self._launcher_pid: int | None = None      # set in the launching process of a sweep
        self._local_workers = False                 # its jobs run in local child processes

    def __getstate__(self):
        # travels to joblib/Ray/submitit workers inside Hydra's context; the lock stays here
        state = dict(self.__dict__)
        state["_lock"] = None
        return state

    def _check(self, config: DictConfig, sweep: bool) -> None:
        try:
            check_launch(config, sweep)
        except FauxError as exc:
            # Hydra turns a callback's exception into a warning and goes on; SystemExit is
            # not an Exception, so it stops the launch here
            print(f"error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config, sweep=False)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config, sweep=True)
        sweep_dir = Path(str(config.hydra.sweep.dir))
        raw = OmegaConf.to_container(config.hydra.sweep, resolve=False).get("dir", "")
        _SWEEP.update(dir=sweep_dir, fixed="${now:" not in str(raw))
        self._lock = lock_sweep_dir(sweep_dir)
        launcher = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        self._launcher_pid = os.getpid()
        self._local_workers = "joblib" in launcher.lower()

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if self._lock is not None:
            self._lock.close()          # closing the file releases the flock
            self._lock = None

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        from faux.harness import disk

        install_interrupt_handler()
        disk.quiet_log_files()
        # a joblib worker ends with the launching process (never the launching process
        # itself, whose parent is the user's shell)
        if self._local_workers and self._launcher_pid not in (None, os.getpid()):
            from faux.harness.workers import end_with_parent

            end_with_parent(self._launcher_pid)

    def on_job_end(self, config: DictConfig, job_return=None, **kwargs) -> None:
        """A job that failed on a full disk stops the sweep (every later job would fail the
        same way): :class:`faux.harness.disk.SweepStopped`, after the progress callback
        counted the job (Hydra runs ``on_job_end`` callbacks in reverse order)."""
        from faux.harness import disk

        failed = getattr(getattr(job_return, "status", None), "name", "") == "FAILED"
        err = getattr(job_return, "_return_value", None) if failed else None
        if failed and disk.is_full(err):
            raise disk.SweepStopped(disk.message(err, Path(str(config.hydra.runtime.output_dir))))


class Interrupted(BaseException):
    """Ctrl-C in a faux process. Not a KeyboardInterrupt: Lightning's ``fit`` turns that into
    ``sys.exit(1)`` and ignores further Ctrl-C; this one it tears down and re-raises."""


_interrupts = 0


def _on_sigint(signum, frame) -> None:
    global _interrupts
    _interrupts += 1
    if _interrupts > 1:             # a second Ctrl-C while the first unwinds: leave at once
        os._exit(130)
    raise Interrupted()


def install_interrupt_handler() -> bool:
    """Ctrl-C raises :class:`Interrupted` in this process (main thread, where Python's
    default handler is still set). True when installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _on_sigint)
    return True


def interrupt_message() -> str:
    """The one line printed on Ctrl-C: what finished, and how to resume."""
    from faux.harness import progress

    counts = progress.stop_for_interrupt()
    head = "interrupted"
    if counts is not None:
        done, total = counts
        head += f" after {done}/{'?' if total is None else total} jobs"
    if _SWEEP:
        again = ("rerun the same command" if _SWEEP.get("fixed")
                 else f"rerun the same command with hydra.sweep.dir={_SWEEP['dir']}")
        return f"{head}; {again} to resume (finished jobs are reused)"
    return f"{head}; rerun the same command to resume (models already built are reused)"
