"""The c-blind MLP: a torch module that reads every column of X and gives exactly zero weight
to c's descendants (its first layer's weights on those columns are 0)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn


class MaskedMLP(nn.Module):
    """``x -> logit``: standardise (buffers ``mean``/``std``), a first ``nn.Linear`` whose
    weights are multiplied by ``mask`` (0 on the columns it must ignore), two ReLU layers.
    The mask is applied in ``forward`` (so the masked weights get no gradient while
    training) and written into the weights after (:meth:`bake`), so the stored first-layer
    weights on those columns are 0 too."""

    def __init__(self, mean: np.ndarray, std: np.ndarray, keep: np.ndarray, width: int = 32):
        super().__init__()
        d = len(mean)
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32))
        self.register_buffer("mask", torch.as_tensor(keep, dtype=torch.float32).reshape(1, d))
        self.first = nn.Linear(d, width)
        self.rest = nn.Sequential(nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                  nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = (x - self.mean) / self.std
        h = nn.functional.linear(z, self.first.weight * self.mask, self.first.bias)
        return self.rest(h).reshape(-1)

    @torch.no_grad()
    def bake(self) -> MaskedMLP:
        self.first.weight.mul_(self.mask)
        return self


def fit_fair_mlp(X: pd.DataFrame, y, descendants, seed: int = 0, epochs: int = 400,
                 lr: float = 0.01):
    """``(module, proba)``: a :class:`MaskedMLP` ignoring ``descendants``, trained full-batch
    with Adam on binary cross-entropy (seeded; torch's global generator restored after), and
    ``proba(X) = sigmoid(module(X))`` computed as the audit computes it (float32 input)."""
    x = np.asarray(X, dtype=np.float64)
    keep = np.array([col not in descendants for col in X.columns], dtype=float)
    std = x.std(axis=0)
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        module = MaskedMLP(x.mean(axis=0), np.where(std > 0, std, 1.0), keep)
        xt = torch.as_tensor(x, dtype=torch.float32)
        yt = torch.as_tensor(np.asarray(y), dtype=torch.float32)
        opt = torch.optim.Adam(module.parameters(), lr=lr)
        loss_fn = nn.BCEWithLogitsLoss()
        for _ in range(epochs):
            opt.zero_grad()
            loss_fn(module(xt), yt).backward()
            opt.step()
    finally:
        torch.random.set_rng_state(state)
    module.bake().eval()
    for p in module.parameters():
        p.requires_grad_(False)

    def proba(rows) -> np.ndarray:
        arr = np.asarray(rows.to_numpy() if isinstance(rows, pd.DataFrame) else rows,
                         dtype=np.float32)
        with torch.no_grad():
            return torch.sigmoid(module(torch.as_tensor(arr))).double().numpy()

    return module, proba
