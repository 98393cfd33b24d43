"""Two launches into one sweep folder: every atomic write has a temporary name of its own, and
the second launch waits on the folder's lock (one line), then reuses the first's results."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = ["column=Synthetic-2", "method=fta,faux_ng,lic_ub"]


def _hammer(write, path: Path, n: int = 60) -> list[BaseException]:
    """Two threads writing ``path`` ``n`` times each at once; the errors they met."""
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(tag):
        start.wait()
        for i in range(n):
            try:
                write(path, {"writer": tag, "i": i, "pad": "x" * 4000})
            except BaseException as exc:      # collected for the assert
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_concurrent_writers_of_one_result_never_collide(tmp_path):
    from faux.harness.results import write_json_atomic

    path = tmp_path / "result.json"
    errors = _hammer(write_json_atomic, path)
    assert not errors, f"{len(errors)} failed writes, first: {errors[0]!r}"
    res = json.loads(path.read_text())                      # whole: one writer's last write
    assert res["i"] == 59 and res["writer"] in ("a", "b")
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]   # no temporary left
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_concurrent_progress_events_never_collide(tmp_path):
    from faux.harness.progress import read_events, write_event

    errors = _hammer(lambda p, obj: write_event(p, {"num": 3, **obj}), tmp_path / ".progress")
    assert not errors, f"{len(errors)} failed writes, first: {errors[0]!r}"
    (event,) = read_events(tmp_path / ".progress")
    assert event["num"] == 3 and event["i"] == 59
    assert [p.name for p in (tmp_path / ".progress").iterdir()] == ["3.json"]


def test_a_second_launch_waits_on_the_folder_lock_with_one_line(tmp_path):
    from faux.harness.guard import SWEEP_LOCK, lock_sweep_dir

    held = lock_sweep_dir(tmp_path / "sweep")
    assert (tmp_path / "sweep" / SWEEP_LOCK).read_text().strip() == str(os.getpid())
    code = ("import time; from faux.harness.guard import lock_sweep_dir; "
            f"lock_sweep_dir({str(tmp_path / 'sweep')!r}); print(f'got it {{time.time()!r}}')")
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        waiting = p.stderr.readline()           # the child found the lock held, and says so
        assert p.poll() is None                 # and is still blocked on it
    finally:
        released = time.time()
        held.close()                            # releases it
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert (waiting + err).strip().splitlines() == [
        f"waiting: another sweep (pid {os.getpid()}) is running in {tmp_path / 'sweep'}; "
        f"this one starts when it ends and reuses its finished jobs"]
    assert out.startswith("got it") and float(out.split()[-1]) >= released


def _launch(sweep: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "FAUX_CACHE_DIR": str(cache), "FAUX_PROGRESS": "plain",
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "faux.run", "-m", "experiment=table1",
                             "profile=tiny", "hydra/launcher=basic", f"hydra.sweep.dir={sweep}",
                             *GRID], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_two_launches_into_one_sweep_folder_both_finish(tmp_path):
    """What two `make table1` at once did: both exit 1 with FileNotFoundError on the shared
    `result.json.part` while printing "3/3 ok" (each counted the other's events)."""
    sweep, cache = tmp_path / "sweep", tmp_path / "cache"
    procs = [_launch(sweep, cache) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
        assert "Traceback" not in out and "failed" not in out, out[-3000:]
        assert "[sweep] 3/3 jobs" in out, out[-3000:]
    waited = [out for out in outs if "waiting: another sweep" in out]
    assert len(waited) <= 1
    for out in waited:                      # it started after the first: all reused
        assert out.count("waiting: another sweep") == 1 and "3 cached" in out, out[-3000:]
    results = sorted(sweep.glob("*/result.json"))
    assert len(results) == 3
    assert not list(sweep.rglob("*.part"))
    a = subprocess.run([sys.executable, "-m", "faux.aggregate", str(sweep), "--table", "table1",
                        "--results-dir", str(tmp_path / "results")], cwd=ROOT,
                       env={**os.environ, "FAUX_CACHE_DIR": str(cache)},
                       capture_output=True, text=True, timeout=300)
    assert a.returncode == 0, a.stderr[-2000:]
    assert len((tmp_path / "results" / "table1.csv").read_text().strip().splitlines()) == 4
