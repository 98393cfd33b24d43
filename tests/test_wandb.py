"""W&B offline: a job with logger=wandb leaves its metrics in the offline run directory and
sends nothing; every cell of a sweep has exactly one run, named for the cell, with the
training curves of what it trained; training with the curve logger changes nothing."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


# --- offline W&B sends nothing, with the network unreachable ------------------------------

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
    r = subprocess.run(full, cwd=ROOT, env={**env, "FAUX_NET_LOG": str(net_log)},
                       capture_output=True, text=True, timeout=300)
    attempts = net_log.read_text().splitlines()
    if trace.exists():
        attempts += _outbound_connects(trace)
    return r, attempts


def _clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    return {**env, "WANDB_SILENT": "true"}


def test_plain_offline_wandb_phones_home(tmp_path):
    """Control: without faux's settings, an offline wandb run still tries to reach W&B's
    telemetry endpoint (so the test below can fail)."""
    script = tmp_path / "plain_wandb.py"
    script.write_text(_PLAIN_WANDB)
    env = {**_clean_env(), "PYTHONPATH": str(tmp_path)}
    r, attempts = _guarded(["plain_wandb", str(tmp_path)], tmp_path, env, "plain")
    assert r.returncode == 0, r.stderr[-2000:]
    assert attempts, "wandb made no outbound attempt: the control no longer shows the leak"


def test_offline_job_holds_the_metrics_and_makes_no_outbound_connection(tmp_path):
    """logger=wandb (offline by default) with the network unreachable: the job finishes
    without delay, tries no connection (Python or wandb-core), and its offline run holds
    each metric's name and value, and the run labels as tags and as ``by.`` config."""
    job = tmp_path / "job"
    r, attempts = _guarded(
        ["faux.run", "data=wdbc", "logger=wandb", f"hydra.run.dir={job}"], tmp_path,
        _clean_env(), "job")
    assert r.returncode == 0, r.stderr[-2000:]
    assert attempts == []
    (run_file,) = job.glob("wandb/offline-run-*/run-*.wandb")
    blob = run_file.read_bytes()
    res = json.loads((job / "result.json").read_text())
    for key in ("n_rows", "n_features", "positive_rate", "wall_s"):
        assert key.encode() in blob
    assert str(res["metrics"]["n_rows"]).encode() in blob
    assert res["status"] == "ok"
    for tag in (b"study:run", b"dataset:wdbc", b"profile:quick", b"job:summary"):
        assert tag in blob
    for key, value in ((b"by.study", b'"run"'), (b"by.dataset", b'"wdbc"'),
                       (b"by.profile", b'"quick"')):
        assert re.search(re.escape(key) + rb".{1,6}" + re.escape(value), blob, re.S), key


def test_private_env_is_a_default_the_user_can_override():
    from faux.reports.wandb_report import PRIVATE_ENV, private_wandb_env

    env = {"WANDB_ERROR_REPORTING": "true"}
    added = private_wandb_env(env)
    assert env["WANDB_ERROR_REPORTING"] == "true" and "WANDB_ERROR_REPORTING" not in added
    assert env["WANDB_MODE"] == "offline" and env["WANDB_X_DISABLE_STATS"] == "true"
    assert set(env) == set(PRIVATE_ENV)


# --- logger=wandb: one run per cell, its name, reused cells, Lightning curves ----------------

def _offline_run(tmp_path, name="curves"):
    import wandb

    from faux.reports.wandb_report import private_wandb_env

    private_wandb_env()
    return wandb.init(project="faux", name=name, dir=str(tmp_path), mode="offline",
                      reinit="finish_previous")


def _finish_and_read(run):
    import wandb

    from faux.harness.wandb_cells import read_offline_run

    folder = Path(run.dir).parent
    wandb.finish()
    wandb.teardown()          # the service flushes the run file (see the first test)
    return read_offline_run(folder)


def _tiny_data(n=240, d=5, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    t = (x[:, 0] + 0.5 * torch.randn(n, generator=g) > 0).float()
    c = (x[:, 1] > 0).float()
    return x, t, c


def test_curves_change_nothing_trained_and_land_under_their_role(tmp_path):
    """A tiny MLP, a stack of two MLPs and FlipTest's GANs, trained with and without the job's
    curve logger: bit-identical weights, the same RNG state after, and the curves in the run
    as ``<role>/s<seed>/<metric>`` with one point per epoch."""
    import random

    import numpy as np
    import torch

    from faux.harness.wandb_cells import curve_factory
    from faux.models.mlp import train_mlp
    from faux.models.stacked import train_mlp_stack
    from faux.models.training import curves_to, training_role
    from faux.models.wgan import GANSpec, train_fliptest_gans

    x, t, c = _tiny_data()
    spec = GANSpec(width=8, depth=1, gen_steps=12, batch_size=32)

    def train():
        torch.manual_seed(123)
        with training_role("target"):
            net, info = train_mlp(x[:180], t[:180], x[180:], t[180:], width=8, depth=1,
                                  seed=3, max_epochs=4, patience=None, accelerator="cpu")
        with training_role("aux"):
            stack = train_mlp_stack(x[:180], c[:180], x[180:], c[180:], seeds=[10, 20], width=8,
                                    depth=1, max_epochs=3, patience=None, accelerator="cpu")
        g01, g10, _ = train_fliptest_gans(x, c, spec, seed=5, accelerator="cpu")
        states = [m.state_dict() for m in (net, *(s[0] for s in stack), g01, g10)]
        rng = (torch.random.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
        return states, rng, info

    plain, rng_plain, info = train()
    run = _offline_run(tmp_path)
    with curves_to(curve_factory(run)):
        logged, rng_logged, _ = train()
    got = _finish_and_read(run)

    for a, b in zip(plain, logged, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            assert torch.equal(a[k], b[k]), k
    assert torch.equal(rng_plain[0], rng_logged[0])
    assert (rng_plain[1] == rng_logged[1]).all() and rng_plain[2] == rng_logged[2]

    def points(key):
        return [h[key] for h in got["history"] if key in h]

    assert len(points("target/s3/val_loss")) == info["epochs"] == 4
    assert len(points("target/s3/train_loss")) == 4
    assert points("target/s3/val_loss")[info["best_epoch"]] == pytest.approx(
        info["best_val_loss"], rel=1e-6)
    for s in (10, 20):            # the stack: one curve per member
        assert len(points(f"aux/s{s}/val_loss")) == 3 and len(points(f"aux/s{s}/train_loss")) == 3
    assert len(points("gan/s5/critic_loss_epoch")) == 1     # one epoch of GAN steps
    assert all(np.isfinite(points("gan/s5/generator_loss_epoch")))


def test_cell_run_name_and_id():
    from faux.harness.joblog import run_labels
    from faux.harness.wandb_cells import cell_run_id, cell_run_name

    cfg = {"task_name": "table1", "job": "table1_cell", "seed": 0, "column": "Synthetic-3",
           "method": "faux_ng", "data": {"name": "magic"}}
    assert cell_run_name(run_labels(cfg)) == "table1/Synthetic-3/faux_ng/s0"
    real = {"task_name": "real", "job": "real_cell", "seed": 2, "data": {"name": "adult"}}
    assert cell_run_name(run_labels(real)) == "real/adult/-/s2"
    assert cell_run_name(run_labels(real), {"transport_weight": "1e-3", "gan_seed": "1"}) == \
        "real/adult/-/s2/gan_seed=1,transport_weight=1e-3"
    a, b = cell_run_id("/x/sweep/j0123"), cell_run_id("/x/sweep/j0124")
    assert a != b and a == cell_run_id("/x/sweep/../sweep/j0123") and len(a) <= 64


def test_supersede_offline_keeps_one_folder_per_run(tmp_path):
    from faux.harness.wandb_cells import supersede_offline

    names = ["offline-run-20260101_000000-cell-aa", "offline-run-20260101_000001-cell-aa-1",
             "offline-run-20260101_000002-cell-aab", "offline-run-20260101_000003-cell-aa"]
    for n in names:
        (tmp_path / n).mkdir()
    moved = supersede_offline(tmp_path, "cell-aa", keep=tmp_path / names[3])
    assert sorted(p.name for p in moved) == ["superseded-" + names[0], "superseded-" + names[1]]
    assert sorted(p.name for p in tmp_path.glob("offline-run-*")) == sorted(names[2:])


SWEEP_GRID = ["experiment=table1", "profile=tiny", "hydra/launcher=basic", "column=Synthetic-2",
              "method=fta,lic_ub"]
CELL_NAMES = {"table1/Synthetic-2/fta/s0", "table1/Synthetic-2/lic_ub/s0"}


def _sweep_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    return {**env, "WANDB_SILENT": "true", "OMP_NUM_THREADS": "1",
            "FAUX_CACHE_DIR": str(tmp_path / "cache"), "FAUX_PROGRESS": "off"}


def _sweep(tmp_path, sweep: Path, logger: str):
    r = subprocess.run([sys.executable, "-m", "faux.run", "-m", *SWEEP_GRID, f"logger={logger}",
                        f"hydra.sweep.dir={sweep}"], cwd=ROOT, env=_sweep_env(tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert len(list(sweep.glob("*/result.json"))) == 2
    return r


def _runs(sweep: Path) -> dict:
    """name -> what the sweep's offline run folders hold (one folder per name asserted)."""
    from faux.harness.wandb_cells import read_offline_run

    runs = [read_offline_run(d) for d in sorted(sweep.glob("*/wandb/offline-run-*"))]
    names = [r["name"] for r in runs]
    assert len(names) == len(set(names)), names
    return {r["name"]: r for r in runs}


@pytest.mark.slow
def test_every_cell_of_a_sweep_has_exactly_one_run(tmp_path):
    """A tiny Table 1 sweep (2 cells) with logger=wandb, offline: one run per cell, named
    study/column/method/seed, with the training curves of what it trained. The same sweep
    again (every cell finished): still one run per cell, the same ones. A new sweep folder
    whose results come from the result cache, and one run first with logger=csv then with
    logger=wandb: one run per cell each, tagged ``reused``. The summary run of
    ``faux.aggregate --wandb`` lists the cells' runs."""
    first = tmp_path / "first"
    _sweep(tmp_path, first, "wandb")
    runs = _runs(first)
    assert set(runs) == CELL_NAMES
    assert all("reused" not in r["tags"] for r in runs.values())
    assert {r["summary"].get("ap_mean") is not None for r in runs.values()} == {True}
    curves = {k for r in runs.values() for h in r["history"] for k in h}
    # the first cell trains the column's CVAEs, target and bias-0 reference (the second loads them)
    for role in ("cvae/", "target/s0/val_loss", "reference/s0/val_loss"):
        assert any(k.startswith(role) for k in curves), role
    for cell in first.glob("j*"):
        res = json.loads((cell / "result.json").read_text())
        rec = json.loads((cell / "wandb_run.json").read_text())
        assert runs[rec["name"]]["id"] == rec["id"] and rec["config_hash"] == res["config_hash"]
        assert runs[rec["name"]]["summary"]["ap_mean"] == pytest.approx(res["metrics"]["ap_runs"][0])
    ids = {n: r["id"] for n, r in runs.items()}

    _sweep(tmp_path, first, "wandb")             # every cell finished: nothing new
    again = _runs(first)
    assert {n: r["id"] for n, r in again.items()} == ids
    assert len(list(first.glob("*/wandb/offline-run-*"))) == 2

    cached = tmp_path / "cached"                 # results from the result cache
    _sweep(tmp_path, cached, "wandb")
    runs = _runs(cached)
    assert set(runs) == CELL_NAMES and all("reused" in r["tags"] for r in runs.values())
    assert not {k for r in runs.values() for h in r["history"] for k in h if "/s0/" in k}
    assert set(r["id"] for r in runs.values()).isdisjoint(ids.values())   # another sweep

    resumed = tmp_path / "resumed"               # finished under logger=csv, then wandb
    _sweep(tmp_path, resumed, "csv")
    assert not list(resumed.glob("*/wandb"))
    _sweep(tmp_path, resumed, "wandb")
    runs = _runs(resumed)
    assert set(runs) == CELL_NAMES and all("reused" in r["tags"] for r in runs.values())
    assert all(r["summary"]["reused_from"].endswith("result.json") for r in runs.values())

    a = subprocess.run([sys.executable, "-m", "faux.aggregate", str(first), "--table", "table1",
                        "--results-dir", str(tmp_path / "out" / "results"), "--wandb"],
                       cwd=ROOT, env=_sweep_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert "W&B summary run failed" not in a.stderr, a.stderr[-2000:]
    from faux.harness.wandb_cells import read_offline_run

    (summary,) = (tmp_path / "out" / "wandb").glob("offline-run-*")
    got = read_offline_run(summary)
    assert sorted(got["config"]["cell_run_ids"]) == sorted(ids.values())
    table = [json.loads(p.read_text()) for p in summary.rglob("*.table.json")
             if "cell_runs" in p.name]
    assert len(table) == 1
    cols = table[0]["columns"]
    rows = [dict(zip(cols, row)) for row in table[0]["data"]]
    assert {r["name"] for r in rows} == CELL_NAMES
    assert {r["id"] for r in rows} == set(ids.values())
