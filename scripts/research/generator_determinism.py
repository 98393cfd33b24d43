"""Build one dataset's generator into an empty cache and print hashes of what came out.

    python scripts/research/generator_determinism.py australian /tmp/cacheA
    python scripts/research/generator_determinism.py australian /tmp/cacheB   # same hashes expected
    python scripts/research/generator_determinism.py australian /tmp/cacheC --after-other-work

Hashes: the CVAE state dict, the GMM parameters and ``sample(2000, seed=1)``; two builds
are bit-identical when all three agree (docs/notebook/reliability_log.md, finding 6).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import torch

from faux.harness.cache import Cache
from faux.kernels import cpu_kernels
from faux.synth.dataset_generator import build_dataset_generator


def _other_work() -> None:
    import random

    import numpy as np

    from faux.models.mlp import MLPSpec

    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(12345)
    _keep = [torch.empty(n) for n in (17, 333, 4097, 123457)]
    x = torch.randn(300, 7)
    y = (x[:, 0] > 0).float()
    MLPSpec(width=8, depth=1, max_epochs=2, batch_size=32).train(x, y, x[:50], y[:50], seed=3)
    del _keep


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("cache_dir", help="an empty folder (a cold cache)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--after-other-work", action="store_true",
                    help="first seed the global RNGs otherwise, allocate memory and train a "
                         "small MLP in this process (the build must not depend on it)")
    args = ap.parse_args(argv)
    if args.after_other_work:
        _other_work()
    t0 = time.time()
    g = build_dataset_generator(args.dataset, seed=args.seed, cache=Cache(args.cache_dir))
    sd = g.cvae.state_dict()
    hw = hashlib.sha256()
    for k in sorted(sd):
        hw.update(k.encode())
        hw.update(sd[k].numpy().tobytes())
    hg = hashlib.sha256()
    for m in g.encoder.gmms_:
        hg.update(m.means_.tobytes() + m.covariances_.tobytes() + m.weights_.tobytes())
    x, _ = g.sample(2000, seed=1)
    print(json.dumps({
        "dataset": args.dataset, "weights": hw.hexdigest()[:16], "gmm": hg.hexdigest()[:16],
        "samples": hashlib.sha256(x.numpy().tobytes()).hexdigest()[:16],
        "epochs": g.info.get("epochs"), "best_epoch": g.info.get("best_epoch"),
        "cpu": cpu_kernels(), "torch_threads": torch.get_num_threads(),
        "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
