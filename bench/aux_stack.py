"""Speed of stacked retraining: R aux seeds as one batched network vs one after another.

    python bench/aux_stack.py [--seeds 10] [--epochs 8] [--dims 38,360] [--threads 1,2] [--reps 2]

The recipe is Table 1's quick aux model (``conf/model/aux/mlp.yaml`` at the quick profile:
2 x 64 ReLU MLP, batch 64, Adam 1e-3) on 4,000 training and 1,000 validation rows, inputs
38 wide (concat fusion, magic/backache) and 360 wide (outer fusion). Both paths run the same
``--epochs`` per seed (patience off, so no member stops early: the same work on both
sides; with early stopping the stack also sheds members as they stop), with the validation
loss every epoch and the best epoch restored, as ``MLPSpec.train`` does.

- ``aux_stack_speedup_d<d>_t<k>``: time of ``spec.train(..., seed=s)`` for every seed one
  after another, divided by the time of ``train_mlps_stacked(spec, ..., seeds)``, on ``k``
  threads (best of ``--reps`` interleaved repetitions of each, to damp a shared machine).
- ``aux_stack_ms_per_seed_epoch_d<d>_t<k>``: the stack's time per seed and epoch;
  ``aux_alone_ms_per_epoch_d<d>_t<k>``: one seed alone's time per epoch.
- ``aux_stack_speedup``: the geometric mean over the dims on the most threads asked for
  (2 by default: the 2-core target).
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings

# OpenMP threads spin while they wait (GNU/Intel default); on a busy 2-core machine a
# spinning thread holds the core its partner needs, and 2-thread runs of small ops took
# 20-40x longer than 1-thread runs here. Both paths run with passive waiting.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from faux.models.mlp import MLPSpec
from faux.models.stacked import train_mlps_stacked


def data(d: int, n: int = 5000, seed: int = 0):
    """Features and a noisy binary c that depends on a few directions of x."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, 3, generator=g) / math.sqrt(d)
    z = torch.tanh(x @ w).sum(1) * 2
    c = (torch.sigmoid(z) > torch.rand(n, generator=g)).float()
    return x[:4000], c[:4000], x[4000:], c[4000:]


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--dims", default="38,360")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    spec = MLPSpec(width=64, depth=2, max_epochs=args.epochs, patience=None, batch_size=64,
                   lr=1e-3)
    threads = [int(v) for v in args.threads.split(",")]
    dims = [int(v) for v in args.dims.split(",")]
    headline = []
    for k in threads:
        torch.set_num_threads(k)
        for d in dims:
            x, c, xv, cv = data(d)

            def stacked():
                return train_mlps_stacked(spec, x, c, xv, cv, seeds=seeds, accelerator="cpu")  # noqa: B023

            def alone():
                return [spec.train(x, c, xv, cv, seed=s, accelerator="cpu") for s in seeds]  # noqa: B023

            spec.train(x, c, xv, cv, seed=0, accelerator="cpu")          # warm-up
            train_mlps_stacked(spec, x, c, xv, cv, seeds=[0, 1], accelerator="cpu")
            t_stack, t_alone = math.inf, math.inf
            for _ in range(args.reps):
                t_stack = min(t_stack, timed(stacked))
                t_alone = min(t_alone, timed(alone))
            ratio = t_alone / t_stack
            per = 1000 * t_stack / (len(seeds) * args.epochs)
            print(f"aux_stack_ms_per_seed_epoch_d{d}_t{k}: {per:.1f}")
            print(f"aux_alone_ms_per_epoch_d{d}_t{k}: {1000 * t_alone / (len(seeds) * args.epochs):.1f}")
            print(f"aux_stack_speedup_d{d}_t{k}: {ratio:.2f}", flush=True)
            if k == max(threads):
                headline.append(ratio)
    print(f"aux_stack_speedup: {math.exp(sum(map(math.log, headline)) / len(headline)):.2f}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
