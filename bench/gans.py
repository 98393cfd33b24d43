"""Cost of FlipTest's GAN training, one ``name: value`` line per figure.

    python bench/gans.py [--seeds 10] [--steps 300] [--dims 38,360] [--threads 1]

- ``gan_ms_per_seed_step_d<d>``: wall time of one generator step (5 critic steps and one
  generator step, both directions) per seed, when the seeds train together as one stack.
- ``gan_stacked_speedup_d<d>``: time of training the seeds one after another divided by
  the time of training them together (same results per seed; tests/test_models_wgan.py).
- ``gan_paper_profile_hours_d<d>``: the stacked cost extrapolated to one Table 1 cell of the
  paper profile (10 seeds x 20,000 steps).

Inputs are Gaussian with a binary group; widths are the reference's 2 x 128. Table 1's
columns are 38 (concat, magic/backache), 79 (concat, australian/credit_g), 360 and 1,470
wide (outer).
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from faux.models.wgan import GANSpec, train_fliptest_gans_many


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def train(x, c, spec, seeds):
    return train_fliptest_gans_many(x, c, spec, seeds=seeds, accelerator="cpu")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--dims", default="38,360")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads: {torch.get_num_threads()}")
    seeds = list(range(args.seeds))
    for d in (int(v) for v in args.dims.split(",")):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(4000, d, generator=g)
        c = (torch.rand(4000, generator=g) > 0.5).float()
        spec = GANSpec(gen_steps=args.steps)
        train(x, c, spec, [0])                                     # warm-up
        together = timed(lambda: train(x, c, spec, seeds))         # noqa: B023
        alone = timed(lambda: [train(x, c, spec, [s]) for s in seeds])  # noqa: B023
        per = together / args.steps / len(seeds)
        print(f"gan_ms_per_seed_step_d{d}: {1000 * per:.2f}")
        print(f"gan_stacked_speedup_d{d}: {alone / together:.2f}")
        print(f"gan_paper_profile_hours_d{d}: {per * 10 * 20000 / 3600:.2f}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
