"""Artifacts are pure functions of their key: a generator (and a target MLP) built in a
fresh process and in one that did unrelated work first (global RNGs seeded otherwise,
another model trained through Lightning, more torch threads, memory allocated) come out
byte-identical. And the harness pins one CPU kernel set (faux.kernels) before torch loads."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faux.kernels import PINS, pin

CHILD = r"""
import hashlib, json, sys
from pathlib import Path
prior, cache_dir = sys.argv[1], sys.argv[2]
import numpy as np, random, torch
if prior == "busy":
    random.seed(7); np.random.seed(7); torch.manual_seed(12345)
    torch.set_num_threads(2)
    keep = [torch.empty(n) for n in (17, 333, 4097, 123457)]
    np.random.rand(1000); torch.rand(1000)
    from faux.models.mlp import MLPSpec
    x = torch.randn(300, 7); y = (x[:, 0] > 0).float()
    MLPSpec(width=8, depth=1, max_epochs=2, batch_size=32).train(x, y, x[:50], y[:50], seed=3)
from faux.harness.cache import Cache
from faux.synth.sampler import build_dataset_generator
from faux.models.mlp import MLPSpec
g = build_dataset_generator("backache", {"epochs": 3, "max_steps": 40, "hidden": 16, "depth": 1},
                            cache=Cache(cache_dir))
x, _ = g.sample(300, seed=1)
yy = (x[:, 0] > x[:, 0].median()).float()
net, _ = MLPSpec(width=8, depth=2, max_epochs=3, batch_size=32).train(x, yy, x[:60], yy[:60],
                                                                      seed=0, accelerator="cpu")
h = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in net.state_dict().values()))
files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
         for p in sorted(Path(cache_dir).glob("generator/*.bin"))}
print(json.dumps({"generator_files": files, "target": h.hexdigest()}))
"""


def _child(prior: str, cache_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    if prior == "busy":
        env["PYTHONHASHSEED"] = "123"
    r = subprocess.run([sys.executable, "-c", CHILD, prior, str(cache_dir)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_generator_and_a_target_do_not_depend_on_what_the_process_did_before(tmp_path):
    fresh = _child("fresh", tmp_path / "a")
    busy = _child("busy", tmp_path / "b")
    assert len(fresh["generator_files"]) == 1
    assert fresh["generator_files"] == busy["generator_files"]     # same name, same bytes
    assert fresh["target"] == busy["target"]


def test_pin_sets_what_is_unset_and_respects_the_user():
    env = {}
    done = pin(env)
    if not done:                                    # a CPU without AVX2: nothing pinned
        pytest.skip("this CPU has no AVX2")
    assert env == PINS and done == PINS
    env = {"MKL_CBWR": "COMPATIBLE"}
    assert "MKL_CBWR" not in pin(env) and env["MKL_CBWR"] == "COMPATIBLE"
    env = {"FAUX_NATIVE_KERNELS": "1"}
    assert pin(env) == {} and set(env) == {"FAUX_NATIVE_KERNELS"}


def test_the_harness_entry_pins_the_kernels_before_torch_loads():
    """``python -m faux.run`` (and the processes its launchers start) runs torch under the
    pinned kernel set, whatever the parent's environment lacked."""
    env = {k: v for k, v in os.environ.items() if k not in PINS}
    code = ("import faux.run, os, torch, json\n"
            f"print(json.dumps({{k: os.environ.get(k) for k in {sorted(PINS)!r}}} | "
            "{'cpu': torch.backends.cpu.get_cpu_capability()}))")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if got["ATEN_CPU_CAPABILITY"] is None:
        pytest.skip("this CPU has no AVX2: nothing pinned")
    assert {k: got[k] for k in PINS} == PINS
    assert got["cpu"] == "AVX2"
