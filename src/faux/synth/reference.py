"""Reference models built from the known fusion (paper A.7.6).

``Projected(W, inner)`` feeds ``x @ W.T`` to ``inner``, with ``W`` a non-trainable buffer.
With ``W = W_hat`` the model sees only the y-side block: it cannot depend on c, so it is a
perfectly fair target (its IFS is 0 up to float rounding). With ``W = W_tilde`` it sees
only the c-side block: a perfectly disentangled auxiliary model.

``train_mlp`` trains a plain MLP classifier (``faux.models.mlp``) on a seeded train/validation
split; it is used for the targets of Figure 8 as well.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from faux.models.mlp import MLP
from faux.models.mlp import train_mlp as _train_mlp


class Projected(nn.Module):
    """``inner(x @ projection.T)`` with the projection fixed (a buffer, not a parameter)."""

    def __init__(self, projection: torch.Tensor, inner: nn.Module):
        super().__init__()
        self.register_buffer("projection", torch.as_tensor(projection, dtype=torch.float32).clone())
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x @ self.projection.T)


def train_mlp(x: torch.Tensor, y: torch.Tensor, *, width: int = 64, depth: int = 2,
              projection: torch.Tensor | None = None, epochs: int = 30, patience: int | None = 5,
              batch_size: int = 64, lr: float = 1e-3, val_fraction: float = 0.2,
              seed: int = 0) -> MLP:
    """A trained, frozen MLP (logits of shape ``(n,)``), reading ``x @ projection.T`` if given.

    A seeded ``val_fraction`` of the rows is held out for early stopping; training is
    :func:`faux.models.mlp.train_mlp`.
    """
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y).long()
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(x.shape[0]))
    n_val = int(round(val_fraction * x.shape[0]))
    val_idx, tr_idx = perm[:n_val], perm[n_val:]
    val = (x[val_idx], y[val_idx]) if n_val > 0 else (None, None)
    net, _ = _train_mlp(x[tr_idx], y[tr_idx], *val, width=width, depth=depth, seed=seed,
                        max_epochs=epochs, patience=patience, batch_size=batch_size, lr=lr,
                        projection=projection)
    for p in net.parameters():
        p.requires_grad_(False)
    return net.eval()


__all__ = ["MLP", "Projected", "train_mlp", "fair_target", "disentangled_aux"]


def fair_target(x, y, w_hat: torch.Tensor, **kw) -> nn.Module:
    """Target that sees only the y-side block (perfectly fair)."""
    return train_mlp(x, y, projection=w_hat, **kw)


def disentangled_aux(x, c, w_tilde: torch.Tensor, **kw) -> nn.Module:
    """Auxiliary model predicting c that sees only the c-side block."""
    return train_mlp(x, c, projection=w_tilde, **kw)
