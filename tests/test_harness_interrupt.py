"""Ctrl-C in a sweep: one line with the resume hint on stderr, exit 130, no traceback; the
same command then resumes (the finished job is reused)."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the first job (Synthetic-2) finishes; the second (Synthetic-6) then builds two other CVAEs
#: from an empty cache, so Ctrl-C after the first progress line lands inside a running job
GRID = ["column=Synthetic-2,Synthetic-6", "method=fta"]
LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d ")          # a job's logging line (Hydra's format)
PROGRESS = re.compile(r"^\[\d+/\d+\] ")


def _cmd(launcher: str, sweep: Path) -> list[str]:
    return [sys.executable, "-m", "faux.run", "-m", "experiment=table1", "profile=tiny",
            f"hydra/launcher={launcher}", "hydra.launcher.n_jobs=1" if launcher == "joblib" else "",
            f"hydra.sweep.dir={sweep}", *GRID]


def _terminal_sigint():
    """The child takes Ctrl-C as a terminal's foreground process does, also when the test
    runs under a parent that ignores SIGINT (a background job inherits SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_ctrl_c_in_a_sweep_is_one_line_and_exit_130(tmp_path, launcher):
    sweep = tmp_path / "sweep"
    env = {**os.environ, "FAUX_CACHE_DIR": str(tmp_path / "cache"), "FAUX_PROGRESS": "plain",
           "OMP_NUM_THREADS": "1"}
    cmd = [c for c in _cmd(launcher, sweep) if c]
    # a session of its own: Ctrl-C goes to the whole foreground group, as a terminal sends it
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True,
                         preexec_fn=_terminal_sigint)
    before = []
    try:
        for line in p.stdout:
            before.append(line)
            if PROGRESS.match(line):
                os.killpg(p.pid, signal.SIGINT)
                break
        after = p.stdout.read()
        rc = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert any(PROGRESS.match(x) for x in before), "".join(before)[-3000:]
    assert rc == 130, after[-3000:]
    assert "Traceback" not in after and "KeyboardInterrupt" not in after, after[-3000:]
    said = [x for x in after.splitlines()
            if x.strip() and not LOG_LINE.match(x) and not PROGRESS.match(x)]
    assert said == ["interrupted after 1/2 jobs; rerun the same command to resume "
                    "(finished jobs are reused)"], after[-3000:]
    assert len(list(sweep.glob("*/result.json"))) == 1

    # the hint holds: the same command finishes the sweep, the finished job reused
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[sweep] 2/2 jobs" in r.stderr and "1 cached, 1 ok" in r.stderr, r.stderr[-3000:]


def test_interrupt_message_names_the_folder_when_the_sweep_dir_is_a_timestamp(monkeypatch):
    from faux.harness import guard

    monkeypatch.setattr(guard, "_SWEEP", {"dir": Path("outputs/t/multiruns/2026"), "fixed": False})
    monkeypatch.setattr("faux.harness.progress.stop_for_interrupt", lambda: (3, 8))
    assert guard.interrupt_message() == (
        "interrupted after 3/8 jobs; rerun the same command with "
        "hydra.sweep.dir=outputs/t/multiruns/2026 to resume (finished jobs are reused)")
    monkeypatch.setattr(guard, "_SWEEP", {})
    monkeypatch.setattr("faux.harness.progress.stop_for_interrupt", lambda: None)
    assert guard.interrupt_message().startswith("interrupted; rerun the same command")


def test_interrupted_is_not_a_keyboard_interrupt():
    """Lightning's fit turns a KeyboardInterrupt into sys.exit(1) and ignores further Ctrl-C;
    faux's interrupt passes through its `except BaseException: ...; raise`."""
    from faux.harness.guard import Interrupted

    assert issubclass(Interrupted, BaseException)
    assert not issubclass(Interrupted, (Exception, KeyboardInterrupt))
