"""How much one training epoch through ``faux.models.training.fit`` (Lightning) costs over a
plain PyTorch loop doing the same work (same MLP, same Adam, same tensor slices).

``python bench/training.py`` prints the figures (``bench/scorers.py`` prints the ratio too). The ratio counts the whole ``fit`` call
(Trainer construction, hooks, teardown, moving the module back to the CPU) for one epoch
without validation, best of ``repeats`` runs each.

Measured (2 CPU cores shared with other jobs, load ~2.5, torch 2.13, pytorch_lightning
2.6.6, defaults: 19,020 rows, d=38, 2x64 MLP, batch 64): plain 0.24-0.27 s, fit 0.28-0.33 s,
ratio 1.09-1.26. A LightningModule with automatic optimisation and a per-step
``self.log(..., on_epoch=True)`` measured 2.2-2.4 on the same machine (see
``faux.models.training`` for what removed the difference).
"""

from __future__ import annotations

import time

import torch
from torch.nn import functional as F

from faux.models.mlp import MLP, BinaryClassifier
from faux.models.tensors import TensorBatches
from faux.models.training import fit


def _data(n_rows: int, d: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_rows, d, generator=g)
    t = (x[:, 0] + 0.5 * torch.randn(n_rows, generator=g) > 0).float()
    return x, t


def _net(d: int, width: int, depth: int, seed: int) -> MLP:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLP(d, width, depth)


def _plain_epoch(x, t, net, batch: int, seed: int, lr: float = 1e-3) -> float:
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    batches = TensorBatches((x, t), batch_size=batch, seed=seed)
    start = time.perf_counter()
    for xb, tb in batches:
        loss = F.binary_cross_entropy_with_logits(net(xb), tb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return time.perf_counter() - start


def epoch_timings(n_rows: int = 19020, d: int = 38, width: int = 64, depth: int = 2,
                  batch: int = 64, repeats: int = 5, seed: int = 0) -> dict:
    """Best-of-``repeats`` seconds for one epoch: ``plain_s`` and ``lightning_s`` (whole fit)."""
    x, t = _data(n_rows, d, seed)
    plain, light = [], []
    for r in range(repeats):
        plain.append(_plain_epoch(x, t, _net(d, width, depth, seed), batch, seed + r))
        module = BinaryClassifier(_net(d, width, depth, seed))
        start = time.perf_counter()
        fit(module, (x, t), None, max_epochs=1, patience=None, batch_size=batch,
            seed=seed + r, accelerator="cpu")
        light.append(time.perf_counter() - start)
    return {"plain_s": min(plain), "lightning_s": min(light),
            "ratio": min(light) / min(plain)}


def lightning_epoch_over_plain_loop(n_rows: int = 19020, d: int = 38, width: int = 64,
                                    depth: int = 2, batch: int = 64) -> float:
    """Seconds per epoch through ``fit`` divided by seconds per epoch of a plain loop."""
    return float(epoch_timings(n_rows, d, width, depth, batch)["ratio"])


if __name__ == "__main__":  # pragma: no cover
    torch.set_num_threads(1)
    r = epoch_timings()
    print(f"plain {r['plain_s']:.3f} s, lightning (whole fit) {r['lightning_s']:.3f} s, "
          f"ratio {r['ratio']:.2f}")
