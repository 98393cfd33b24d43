"""Sweeps that never stall on their own files, leave no worker behind, and cache entries that
are a pure function of their key.

* a ``result.json`` that is valid JSON but not an object is treated like a truncated one: the
  job reruns, with one warning line;
* a full disk (ENOSPC) under a sweep folder stops the sweep with one line naming the path and
  the free space, leaves no partial file, and the summary accounts for every job;
* the joblib launcher's worker processes end with the launching process (SIGKILL or SIGINT);
* a generator entry (GMM mode encoder + CVAE) has the same bytes under one and two BLAS
  threads, and a target/aux MLP entry the same bytes on every build (no timings inside).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from faux.harness import results

ROOT = Path(__file__).resolve().parents[1]
TINY = ["-m", "experiment=table1", "profile=tiny", "column=Synthetic-1"]


def _env(cache: Path, **extra) -> dict:
    env = {**os.environ, "FAUX_CACHE_DIR": str(cache), "FAUX_PROGRESS": "plain",
           "PYTHONPATH": str(ROOT / "src"), **extra}
    env.setdefault("FAUX_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    return env


def _sweep(sweep: Path, cache: Path, *extra, launcher="basic", driver=None, timeout=600):
    """``python -m faux.run`` (or a driver script that ends by calling its ``main``)."""
    args = [*TINY, f"hydra/launcher={launcher}", f"hydra.sweep.dir={sweep}", *extra]
    cmd = [sys.executable, *(["-c", driver] if driver else ["-m", "faux.run"]), *args]
    return subprocess.run(cmd, cwd=ROOT, env=_env(cache), capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One private cache for the sweeps of this module (the first builds, the rest load)."""
    return tmp_path_factory.mktemp("cache")


# --------------------------------------------------------------------------- result.json
@pytest.mark.parametrize("text", ["[1, 2]", "null", '"ok"', "3.5"])
def test_a_result_json_that_is_not_an_object_is_not_finished(tmp_path, caplog, text):
    (tmp_path / results.RESULT).write_text(text)
    with caplog.at_level(logging.WARNING, logger="faux.run"):
        assert results.finished(tmp_path, "abc") is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    line = warnings[0].getMessage()
    assert "\n" not in line and str(tmp_path / results.RESULT) in line and "rerun" in line


def test_a_truncated_result_json_is_still_not_finished(tmp_path):
    (tmp_path / results.RESULT).write_text('{"status": "ok", "config_ha')
    assert results.finished(tmp_path, "abc") is None


def test_a_sweep_reruns_the_job_whose_result_json_is_not_an_object(tmp_path, cache_dir):
    sweep = tmp_path / "sweep"
    first = _sweep(sweep, cache_dir, "method=lic_ub,fta")
    assert first.returncode == 0, first.stderr[-3000:]
    paths = sorted(sweep.rglob(results.RESULT))
    assert len(paths) == 2
    paths[0].write_text("[1, 2]")
    again = _sweep(sweep, cache_dir, "method=lic_ub,fta")
    out = again.stdout + again.stderr
    assert again.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "AttributeError" not in out
    assert sum(str(paths[0]) in line for line in out.splitlines()) == 1
    for p in paths:
        res = json.loads(p.read_text())
        assert isinstance(res, dict) and res["status"] == "ok"
    assert "[sweep] 2/2 jobs" in again.stderr and "1 cached, 1 ok" in again.stderr


# --------------------------------------------------------------------------- full disk
#: runs ``faux.run``'s main with every write under the sweep folder failing with ENOSPC from
#: the moment the second job writes its result.json (a disk that fills up and stays full)
ENOSPC_DRIVER = textwrap.dedent("""
    import builtins, errno, io, os, sys
    SWEEP = os.path.realpath([a for a in sys.argv if a.startswith("hydra.sweep.dir=")][0][16:])
    state = {"results": 0, "full": False}

    class Full:
        def __init__(self, f, path):
            self._f, self._path = f, path
        def write(self, data):
            if os.path.basename(self._path) == "result.json" or ".result.json." in self._path:
                state["results"] += 1
                if state["results"] >= 2:
                    state["full"] = True
            if state["full"]:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self._f.write(data)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self._f.close()
        def __getattr__(self, name):
            return getattr(self._f, name)

    def under_sweep(path):
        return os.path.realpath(path).startswith(SWEEP + os.sep)

    def writing(mode):
        return any(ch in mode for ch in "wax+")

    real_open, real_fdopen = builtins.open, os.fdopen

    def fake_open(file, mode="r", *a, **k):
        f = real_open(file, mode, *a, **k)
        if isinstance(file, (str, os.PathLike)) and writing(mode) and under_sweep(file):
            return Full(f, os.fspath(file))
        return f

    def fake_fdopen(fd, mode="r", *a, **k):
        path = os.readlink(f"/proc/self/fd/{fd}")
        f = real_fdopen(fd, mode, *a, **k)
        return Full(f, path) if writing(mode) and under_sweep(path) else f

    builtins.open, os.fdopen = fake_open, fake_fdopen
    from faux.run import main
    main()
""")


def test_a_full_disk_stops_the_sweep_in_one_line_with_every_job_counted(tmp_path, cache_dir):
    sweep = tmp_path / "sweep"
    r = _sweep(sweep, cache_dir, "method=fta,lic_ub,faux_ng", driver=ENOSPC_DRIVER)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]
    assert "Traceback" not in out and "Logging error" not in out, out[-4000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.stderr[-3000:]
    assert "no space left on device" in errors[0] and str(sweep) in errors[0]
    assert " free" in errors[0] and "rerun" in errors[0]
    # the summary adds up: 1 ok + 1 failed + 1 not run = 3
    summary = [line for line in r.stderr.splitlines() if line.startswith("[sweep]")]
    assert len(summary) == 1, r.stderr[-3000:]
    assert "1 failed" in summary[0] and "1 ok" in summary[0] and "1 not run" in summary[0]
    # nothing half-written: no temporary file, one finished result, no partial one
    assert not [p for p in sweep.rglob("*") if p.name.endswith((".part", ".tmp"))]
    done = sorted(sweep.rglob(results.RESULT))
    assert len(done) == 1 and json.loads(done[0].read_text())["status"] == "ok"
    # with space again, the same command finishes the sweep (the finished job reused)
    again = _sweep(sweep, cache_dir, "method=fta,lic_ub,faux_ng")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "[sweep] 3/3 jobs" in again.stderr and "1 cached, 2 ok" in again.stderr


def test_disk_full_error_names_the_path_and_the_free_space(tmp_path):
    from faux.harness import disk

    exc = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert disk.is_full(exc) and not disk.is_full(OSError(errno.EACCES, "denied"))
    line = disk.message(exc, tmp_path / "job" / "result.json")
    assert str(tmp_path / "job" / "result.json") in line and " free on " in line
    assert "\n" not in line


def test_write_json_atomic_leaves_nothing_on_a_full_disk(tmp_path, monkeypatch):
    from faux.harness import disk

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(results.os, "fsync", full)
    with pytest.raises(disk.DiskFull) as info:
        results.write_json_atomic(tmp_path / results.RESULT, {"status": "ok"})
    assert info.value.path == tmp_path / results.RESULT
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- workers
def _children(pid: int) -> dict[int, str]:
    """{pid: start time} of every process whose parent is ``pid`` (Linux /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            out[int(entry)] = fields[19]
    return out


def _alive(procs: dict[int, str]) -> dict[int, str]:
    left = {}
    for pid, start in procs.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[19] == start and fields[0] != "Z":      # the same process, not a zombie
            left[pid] = start
    return left


def _default_sigint():
    """The child takes SIGINT as Ctrl-C, also when the test runs under a parent that ignores
    SIGINT (a pytest-xdist worker, a background job: the child would inherit SIG_IGN, ignore
    the signal and simply finish its sweep)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_no_worker_outlives_an_interrupted_joblib_sweep(tmp_path, sig):
    sweep, cache = tmp_path / "sweep", tmp_path / "cache"     # a cold cache: jobs take seconds
    cmd = [sys.executable, "-m", "faux.run", *TINY, "hydra/launcher=joblib",
           f"hydra.sweep.dir={sweep}", "method=fta,lic_ub"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(cache, FAUX_JOBS="2"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_default_sigint)
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            kids = _children(proc.pid)
            for pid in list(kids):
                kids.update(_children(pid))
            seen.update(kids)
            if list(sweep.glob("*/.hydra/config.yaml")) and len(seen) >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the sweep ended before a job started"
        time.sleep(1.0)                        # both workers inside their jobs
        for pid in list(seen):
            seen.update(_children(pid))
        os.kill(proc.pid, sig)
        proc.wait(timeout=60)
        # the signal ended the sweep (Ctrl-C: faux's exit 130), not the sweep's own end
        assert proc.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 130)
        deadline = time.monotonic() + 10
        while _alive(seen) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(seen), f"left behind: {sorted(_alive(seen))}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _alive(seen):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --------------------------------------------------------------------------- pure entries
GENERATOR_BUILD = textwrap.dedent("""
    import sys
    from faux.harness.cache import Cache
    from faux.synth.sampler import build_dataset_generator
    cache = Cache(sys.argv[1])
    build_dataset_generator("magic", {"epochs": 1, "max_steps": 5, "hidden": 16, "depth": 1},
                            cache=cache)
    assert cache.builds == 1
""")


def test_a_generator_entry_has_the_same_bytes_under_one_and_two_blas_threads(tmp_path):
    blobs = {}
    for n in (1, 2):
        env = _env(tmp_path / "unused", OMP_NUM_THREADS=str(n), OPENBLAS_NUM_THREADS=str(n),
                   MKL_NUM_THREADS=str(n))
        r = subprocess.run([sys.executable, "-c", GENERATOR_BUILD, str(tmp_path / f"c{n}")],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        entries = list((tmp_path / f"c{n}" / "generator").glob("*.bin"))
        assert len(entries) == 1
        blobs[n] = (entries[0].name, entries[0].read_bytes())
    assert blobs[1][0] == blobs[2][0]              # the same key
    assert blobs[1][1] == blobs[2][1]              # the same bytes


def test_two_builds_of_a_target_entry_are_byte_identical(tmp_path):
    import torch

    from faux.harness.cache import Cache
    from faux.models.mlp import MLPSpec
    from faux.studies.column import cached_mlp, cached_mlp_stacked

    g = torch.Generator().manual_seed(0)
    x, xv = torch.randn(200, 4, generator=g), torch.randn(50, 4, generator=g)
    t, tv = (x[:, 0] > 0).float(), (xv[:, 0] > 0).float()
    spec = MLPSpec(width=8, depth=1, max_epochs=3, patience=None, batch_size=64)
    blobs = []
    for i in range(2):
        cache = Cache(tmp_path / str(i))
        net, info = cached_mlp(cache, "target", {"what": "t"}, spec, x, t, xv, tv, seed=0,
                               accelerator="cpu")
        assert info["train_time_s"] >= 0          # the build's time, kept beside the entry
        cached_mlp_stacked(cache, "aux", {"what": "a"}, spec, x, t, xv, tv, seed=0,
                           seeds=[0, 1], accelerator="cpu")
        blobs.append({p.relative_to(cache.root).as_posix(): p.read_bytes()
                      for p in sorted(cache.root.glob("*/*.bin"))})
        # a hit reports the time the build took (from the sidecar), not a new one
        again = Cache(tmp_path / str(i))
        _, hit = cached_mlp(again, "target", {"what": "t"}, spec, x, t, xv, tv, seed=0,
                            accelerator="cpu")
        assert again.builds == 0 and hit["train_time_s"] == info["train_time_s"]
    assert len(blobs[0]) == 3 and blobs[0].keys() == blobs[1].keys()
    for name in blobs[0]:
        assert blobs[0][name] == blobs[1][name], name
        assert b"train_time" not in blobs[0][name]
