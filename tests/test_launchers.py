"""The cluster launchers run a real sweep: a tiny Table 1 sweep on a local Ray cluster
(``hydra/launcher=ray``, Hydra's Ray plugin attaching to a ``ray start --head``) and through
submitit's local executor (``hydra/launcher=submitit_local``) gives the very ``table1.csv`` of the
joblib run. Each sweep starts from its own empty cache, so its jobs build the column (CVAEs,
target) in the launcher's workers. Skipped when the plugins are not installed
(``pip install -e '.[cluster]'``)."""

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GRID = ["column=Synthetic-2", "method=fta,lic_ub"]

pytestmark = pytest.mark.slow


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:       # a missing parent package
        return False


def _needs(*modules):
    missing = [m for m in modules if not _installed(m)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[cluster]')")


def _sweep(base: Path, launcher: str, env: dict | None = None) -> str:
    """Run the tiny sweep with ``launcher`` into base/sweep (cache base/cache), aggregate it
    into base/results; returns the sweep's output."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "FAUX_CACHE_DIR": str(base / "cache"),
           **(env or {})}
    r = subprocess.run([sys.executable, "-m", "faux.run", "-m", "experiment=table1",
                        "profile=tiny", f"hydra/launcher={launcher}",
                        f"hydra.sweep.dir={base / 'sweep'}", *GRID],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert len(list((base / "sweep").glob("*/result.json"))) == 2, out[-4000:]
    a = subprocess.run([sys.executable, "-m", "faux.aggregate", str(base / "sweep"), "--table",
                        "table1", "--results-dir", str(base / "results")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert a.returncode == 0, a.stdout[-2000:] + a.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def joblib_table(tmp_path_factory) -> str:
    base = tmp_path_factory.mktemp("joblib")
    _sweep(base, "joblib")
    return (base / "results" / "table1.csv").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head():
    """A one-node Ray cluster of our own (`ray start --head --block`), stopped by signalling
    the process we started (never `ray stop`, which stops every Ray on the machine). Its
    environment has no FAUX_* variables: jobs get the data and cache folders from
    conf/hydra/launcher/ray.yaml's runtime_env."""
    _needs("ray", "hydra_plugins.hydra_ray_launcher")
    exe = Path(sys.executable).with_name("ray")
    if not exe.exists():
        pytest.skip("the `ray` command is not beside this Python")
    port = _free_port()
    tmp = Path(tempfile.mkdtemp(prefix="faux-ray-", dir="/tmp"))  # short: socket paths
    log = tmp / "head.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAUX_", "RAY_"))}
    with open(log, "w") as f:
        p = subprocess.Popen([str(exe), "start", "--head", "--block", f"--port={port}",
                              "--node-ip-address=127.0.0.1", "--num-cpus=2",
                              "--object-store-memory=200000000", "--include-dashboard=false",
                              "--disable-usage-stats", f"--temp-dir={tmp}"],
                             stdout=f, stderr=subprocess.STDOUT, env=env, cwd=tmp,
                             start_new_session=True)
    try:
        deadline = time.time() + 180
        while "Ray runtime started" not in log.read_text():
            assert p.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline, "ray head did not start: " + log.read_text()[-3000:]
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        p.send_signal(signal.SIGTERM)          # --block: stops the node's processes
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)   # whatever of our group is left
        except ProcessLookupError:
            pass
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def test_ray_launcher_sweep_equals_joblib(joblib_table, ray_head, tmp_path):
    out = _sweep(tmp_path, "ray", {"RAY_ADDRESS": ray_head})
    assert "Ray Launcher is launching 2 jobs" in out and f"{ray_head}" in out
    # the workers (started without FAUX_CACHE_DIR) built into the driver's cache folder
    assert any((tmp_path / "cache").rglob("*.bin")), sorted((tmp_path / "cache").rglob("*"))
    assert (tmp_path / "results" / "table1.csv").read_text() == joblib_table


def test_submitit_local_launcher_sweep_equals_joblib(joblib_table, tmp_path):
    _needs("submitit", "hydra_plugins.hydra_submitit_launcher")
    _sweep(tmp_path, "submitit_local")
    assert len(list((tmp_path / "sweep" / ".submitit").glob("*/*_result.pkl"))) == 2
    assert (tmp_path / "results" / "table1.csv").read_text() == joblib_table
