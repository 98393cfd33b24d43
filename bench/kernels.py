"""What pinning the CPU kernel set costs and what it changes: a fixed CVAE-sized training
loop (Adam on a 4-layer MLP, batch 64) in fresh processes under the native kernels and under
``faux.kernels.PINS``; prints the seconds, a hash of the final weights, and the ratio.

    python bench/kernels.py [--steps 600]

Same hash in two processes of one setting: the loop is deterministic under it. Another hash
under the pins than natively: the pins change the arithmetic on this machine (e.g. MKL's
code path on AMD CPUs); a machine with other kernels (AVX-512) gets the pinned hash only
under the pins.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import hashlib, json, sys, time
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
steps = int(sys.argv[1])
d = 977
net = torch.nn.Sequential(torch.nn.Linear(d, 512), torch.nn.SiLU(), torch.nn.Linear(512, 512),
                          torch.nn.SiLU(), torch.nn.Linear(512, 512), torch.nn.SiLU(),
                          torch.nn.Linear(512, d))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(4096, d)
t0 = time.perf_counter()
for i in range(steps):
    b = x[(i * 64) % 4096:(i * 64) % 4096 + 64]
    loss = torch.nn.functional.mse_loss(net(b), b)
    opt.zero_grad()
    loss.backward()
    opt.step()
sec = time.perf_counter() - t0
h = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in net.parameters()))
print(json.dumps({"s": sec, "hash": h.hexdigest()[:16],
                  "cpu": torch.backends.cpu.get_cpu_capability()}))
"""


def run(env_extra: dict, steps: int, drop=()) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_extra)
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", CHILD, str(steps)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> None:
    from faux.kernels import PINS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600)
    args = ap.parse_args(argv)
    native = [run({}, args.steps, drop=PINS) for _ in range(2)]
    pinned = [run(dict(PINS), args.steps) for _ in range(2)]
    t_n = min(r["s"] for r in native)
    t_p = min(r["s"] for r in pinned)
    print(f"native_s: {t_n:.2f} ({native[0]['cpu']}, hash {native[0]['hash']}, "
          f"repeat {'same' if native[0]['hash'] == native[1]['hash'] else 'DIFFERENT'})")
    print(f"pinned_s: {t_p:.2f} ({pinned[0]['cpu']}, hash {pinned[0]['hash']}, "
          f"repeat {'same' if pinned[0]['hash'] == pinned[1]['hash'] else 'DIFFERENT'})")
    print(f"pinned_over_native: {t_p / t_n:.2f}")
    print(f"pinned_changes_arithmetic_here: {native[0]['hash'] != pinned[0]['hash']}")


if __name__ == "__main__":
    main()
