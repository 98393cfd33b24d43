"""Reference models built from the known fusion (paper A.7.6).

``Projected(W, inner)`` feeds ``x @ W.T`` to ``inner``, with ``W`` a non-trainable buffer.
With ``W = W_hat`` the model sees only the y-side block: it cannot depend on c, so it is a
perfectly fair target (its IFS is 0 up to float rounding). With ``W = W_tilde`` it sees
only the c-side block: a perfectly disentangled auxiliary model.

``train_mlp`` trains a plain MLP binary classifier (a minimal private LightningModule) with
``faux.models.training.fit``; it is used for the targets of Figure 8 as well.
"""

from __future__ import annotations

import numpy as np
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from faux.errors import ConfigError


class Projected(nn.Module):
    """``inner(x @ projection.T)`` with the projection fixed (a buffer, not a parameter)."""

    def __init__(self, projection: torch.Tensor, inner: nn.Module):
        super().__init__()
        self.register_buffer("projection", torch.as_tensor(projection, dtype=torch.float32).clone())
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x @ self.projection.T)


class MLP(nn.Module):
    """ReLU MLP with ``depth`` hidden layers of ``width`` units; returns logits of shape (n,)."""

    def __init__(self, d_in: int, width: int = 64, depth: int = 2):
        super().__init__()
        if int(width) < 1 or int(depth) < 0 or int(d_in) < 1:
            raise ConfigError(f"MLP needs d_in >= 1, width >= 1 and depth >= 0, got d_in={d_in}, "
                              f"width={width}, depth={depth}")
        layers: list[nn.Module] = []
        d = int(d_in)
        for _ in range(int(depth)):
            layers += [nn.Linear(d, int(width)), nn.ReLU()]
            d = int(width)
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class _BinaryClassifier(pl.LightningModule):
    def __init__(self, net: nn.Module, lr: float = 1e-3, weight_decay: float = 0.0):
        super().__init__()
        self.net = net
        self.lr, self.weight_decay = float(lr), float(weight_decay)

    def forward(self, x):
        return self.net(x)

    def _loss(self, batch):
        x, y = batch
        return F.binary_cross_entropy_with_logits(self.net(x), y.float())

    def training_step(self, batch, batch_idx):
        return self._loss(batch)

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch), on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)


def train_mlp(x: torch.Tensor, y: torch.Tensor, *, width: int = 64, depth: int = 2,
              projection: torch.Tensor | None = None, epochs: int = 30, patience: int | None = 5,
              batch_size: int = 64, lr: float = 1e-3, val_fraction: float = 0.2,
              seed: int = 0) -> nn.Module:
    """A trained MLP returning logits of shape ``(n,)``; ``Projected`` if ``projection`` given."""
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y).long()
    d_in = x.shape[1] if projection is None else projection.shape[0]
    torch.manual_seed(seed)
    inner = MLP(d_in, width, depth)
    net: nn.Module = inner if projection is None else Projected(projection, inner)
    module = _BinaryClassifier(net, lr=lr)
    n = x.shape[0]
    perm = torch.from_numpy(np.random.default_rng(seed).permutation(n))
    n_val = int(round(val_fraction * n))
    val_idx, tr_idx = perm[:n_val], perm[n_val:]
    from faux.models.training import fit

    val = (x[val_idx], y[val_idx]) if n_val > 0 else None
    fit(module, (x[tr_idx], y[tr_idx]), val, max_epochs=epochs, patience=patience,
        batch_size=batch_size, seed=seed)
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


def fair_target(x, y, w_hat: torch.Tensor, **kw) -> nn.Module:
    """Target that sees only the y-side block (perfectly fair)."""
    return train_mlp(x, y, projection=w_hat, **kw)


def disentangled_aux(x, c, w_tilde: torch.Tensor, **kw) -> nn.Module:
    """Auxiliary model predicting c that sees only the c-side block."""
    return train_mlp(x, c, projection=w_tilde, **kw)
