"""W&B offline: a job with logger=wandb leaves its metrics in the offline run directory and
sends nothing (issue 15)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_aggregate_logs_the_table_offline(tmp_path, monkeypatch):
    import pandas as pd

    from faux.reports.base import Report
    from faux.reports.wandb_report import log_report

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    frame = pd.DataFrame({"column": ["Synthetic-1"], "method": ["faux_ng"], "ap_mean": [0.5]})
    run_dir = log_report("table1", Report(frame), tmp_path)
    (run_file,) = run_dir.parent.glob("run-*.wandb")
    # wandb's service process writes the run file on its own schedule: in a process that goes
    # on after wandb.finish() (this test; the aggregate CLI exits, which tears the service
    # down and flushes it) the file held only its header once under two xdist workers. Tear
    # the service down as the CLI's exit does, and wait for the file, up to 30 s.
    import wandb

    wandb.teardown()
    deadline = time.monotonic() + 30
    blob = run_file.read_bytes()
    while not (b"table1" in blob and b"table-file" in blob) and time.monotonic() < deadline:
        time.sleep(0.5)
        blob = run_file.read_bytes()
    assert b"table1" in blob and b"table-file" in blob


# --- issue 15: offline W&B sends nothing, with the network unreachable -----------------------

_GUARD = r'''
import errno, os, socket, sys
_LOG = os.environ["FAUX_NET_LOG"]
_LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "", None}

def _record(what):
    with open(_LOG, "a") as f:
        f.write(f"{what}\n")

def _local(host):
    return host in _LOCAL or str(host).startswith("127.")

_connect, _connect_ex, _gai = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _record(f"connect {address}")
        raise OSError(errno.ENETUNREACH, "network unreachable (test)")
    return _connect(self, address)

def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _record(f"connect_ex {address}")
        return errno.ENETUNREACH
    return _connect_ex(self, address)

def getaddrinfo(host, *args, **kwargs):
    if not _local(host if not isinstance(host, bytes) else host.decode()):
        _record(f"getaddrinfo {host}")
        raise socket.gaierror(socket.EAI_NONAME, "name resolution disabled (test)")
    return _gai(host, *args, **kwargs)

socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
sys.argv = sys.argv[1:]
import runpy
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
'''

_PLAIN_WANDB = r'''
import sys, wandb
run = wandb.init(project="faux", mode="offline", dir=sys.argv[1])
run.log({"a": 1})
wandb.finish()
'''


def _outbound_connects(strace_log: Path) -> list[str]:
    """connect() calls to a non-loopback IPv4/IPv6 address in an strace log (any process)."""
    out = []
    for line in strace_log.read_text().splitlines():
        if "connect(" in line and ("AF_INET" in line) and not any(
                a in line for a in ('inet_addr("127.', '"::1"', "::ffff:127.")):
            out.append(line.strip())
    return out


def _guarded(cmd, tmp_path, env, name):
    """``cmd`` (a module and its args) with Python's network refused and recorded, and under
    strace (every process: the Go wandb-core service too) when strace is installed."""
    import shutil
    guard = tmp_path / f"guard_{name}.py"
    guard.write_text(_GUARD)
    net_log, trace = tmp_path / f"net_{name}.log", tmp_path / f"strace_{name}.log"
    net_log.write_text("")
    full = [sys.executable, str(guard), *cmd]
    if shutil.which("strace"):
        full = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *full]
    t0 = time.monotonic()
    r = subprocess.run(full, cwd=ROOT, env={**env, "FAUX_NET_LOG": str(net_log)},
                       capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - t0
    attempts = net_log.read_text().splitlines()
    if trace.exists():
        attempts += _outbound_connects(trace)
    return r, attempts, elapsed


def _clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    return {**env, "WANDB_SILENT": "true"}


def test_plain_offline_wandb_phones_home(tmp_path):
    """Control: without faux's settings, an offline wandb run still tries to reach W&B's
    telemetry endpoint (so the test below can fail)."""
    script = tmp_path / "plain_wandb.py"
    script.write_text(_PLAIN_WANDB)
    env = {**_clean_env(), "PYTHONPATH": str(tmp_path)}
    r, attempts, _ = _guarded(["plain_wandb", str(tmp_path)], tmp_path, env, "plain")
    assert r.returncode == 0, r.stderr[-2000:]
    assert attempts, "wandb made no outbound attempt: the control no longer shows the leak"


def test_offline_job_holds_the_metrics_and_makes_no_outbound_connection(tmp_path):
    """logger=wandb (offline by default) with the network unreachable: the job finishes
    without delay, tries no connection (Python or wandb-core), and its offline run holds
    each metric's name and value."""
    job = tmp_path / "job"
    r, attempts, elapsed = _guarded(
        ["faux.run", "data=wdbc", "logger=wandb", f"hydra.run.dir={job}"], tmp_path,
        _clean_env(), "job")
    assert r.returncode == 0, r.stderr[-2000:]
    assert attempts == []
    assert elapsed < 120  # no network retries or telemetry timeouts (the job itself: seconds)
    (run_file,) = job.glob("wandb/offline-run-*/run-*.wandb")
    blob = run_file.read_bytes()
    res = json.loads((job / "result.json").read_text())
    for key in ("n_rows", "n_features", "positive_rate", "wall_s"):
        assert key.encode() in blob
    assert str(res["metrics"]["n_rows"]).encode() in blob


def test_private_env_is_a_default_the_user_can_override():
    from faux.reports.wandb_report import PRIVATE_ENV, private_wandb_env

    env = {"WANDB_ERROR_REPORTING": "true"}
    added = private_wandb_env(env)
    assert env["WANDB_ERROR_REPORTING"] == "true" and "WANDB_ERROR_REPORTING" not in added
    assert env["WANDB_MODE"] == "offline" and env["WANDB_X_DISABLE_STATS"] == "true"
    assert set(env) == set(PRIVATE_ENV)
