"""Multi-layer perceptrons: the target models, the fAux auxiliary models, reference models.

``MLP`` maps a float tensor (n, d_in) to logits of shape (n,) (``d_out == 1``) or
(n, d_out), with ``depth`` ReLU hidden layers of ``width`` units (depth 0 is a linear
model). An optional fixed input projection W (a non-trainable buffer) computes x Wᵀ before
the first layer, for reference models that may only see part of the input.

``train_mlp`` trains a binary classifier (BCE with logits) with the paper's recipe (A.11.2):
batch 64, Adam at lr 1e-3, early stopping on the validation loss (patience 10, best weights
restored). ``faux.models.stacked.train_mlps_stacked(spec, ..., seeds)`` trains several
seeds of one ``MLPSpec`` at once, each as ``train_mlp`` would; it builds on this module,
which does not import it back (no import cycle).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from faux.errors import ConfigError
from faux.models.net import MLP, check_classification_data, mlp_accuracy
from faux.models.tensors import n_params
from faux.models.training import TabularModule, fit


class BinaryClassifier(TabularModule):
    """LightningModule: BCE with logits on a network returning logits (n,) or (n, k)."""

    def __init__(self, net: nn.Module, lr: float = 1e-3):
        super().__init__(lr=lr)
        self.net = net

    def forward(self, x):
        return self.net(x)

    def loss(self, batch):
        x, t = batch
        return F.binary_cross_entropy_with_logits(self.net(x), t)


def train_mlp(x, t, x_val=None, t_val=None, *, width: int = 64, depth: int = 2, seed: int = 0,
              max_epochs: int = 100, patience: int | None = 10, batch_size: int = 64,
              lr: float = 1e-3, projection: torch.Tensor | None = None,
              accelerator: str = "auto") -> tuple[MLP, dict]:
    """Train an MLP classifier of binary labels ``t`` ((n,) or (n, k)) from features ``x``.

    Early stopping on the BCE of ``(x_val, t_val)`` (best epoch restored); without
    validation data all ``max_epochs`` run and ``accuracy`` is the training accuracy.
    Returns ``(mlp, info)``, the MLP on the CPU in eval mode; ``info`` holds ``accuracy``,
    ``n_params``, ``train_time_s``, ``epochs``, ``best_epoch``, ``best_val_loss``.
    """
    x, t, val = check_classification_data(x, t, x_val, t_val)
    d_out = 1 if t.ndim == 1 else t.shape[1]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        net = MLP(x.shape[1], width, depth, d_out, projection=projection)
    module = BinaryClassifier(net, lr=lr)
    start = time.perf_counter()
    out = fit(module, (x, t), val, max_epochs=max_epochs, patience=patience,
              batch_size=batch_size, seed=seed, accelerator=accelerator)
    elapsed = time.perf_counter() - start
    xe, te = val if val is not None else (x, t)
    info = {"accuracy": mlp_accuracy(net, xe, te), "n_params": n_params(net),
            "train_time_s": elapsed, **out}
    return net, info


def random_architecture(seed: int, width_range: tuple[int, int] = (8, 128),
                        depth_range: tuple[int, int] = (1, 4)) -> tuple[int, int]:
    """A (width, depth) drawn uniformly from the inclusive ranges (Section 4.4's grid)."""
    (w0, w1), (d0, d1) = width_range, depth_range
    if not (1 <= w0 <= w1 and 0 <= d0 <= d1):
        raise ConfigError(f"bad ranges width={width_range} depth={depth_range}; "
                          "use 1 <= low <= high")
    rng = np.random.default_rng(int(seed))
    return int(rng.integers(w0, w1 + 1)), int(rng.integers(d0, d1 + 1))


@dataclass(frozen=True)
class MLPSpec:
    """Hyper-parameters of an MLP classifier (Hydra ``_target_`` of conf/model/{target,aux})."""

    width: int = 64
    depth: int = 2
    max_epochs: int = 100
    patience: int | None = 10
    batch_size: int = 64
    lr: float = 1e-3

    def train_kwargs(self, **overrides) -> dict:
        """These hyper-parameters as ``train_mlp`` keywords (keyword ``overrides`` win)."""
        return {"width": self.width, "depth": self.depth, "max_epochs": self.max_epochs,
                "patience": self.patience, "batch_size": self.batch_size, "lr": self.lr,
                **overrides}

    def train(self, x, t, x_val=None, t_val=None, *, seed: int = 0,
              accelerator: str = "auto", **overrides) -> tuple[MLP, dict]:
        """``train_mlp`` with these hyper-parameters (keyword ``overrides`` win)."""
        return train_mlp(x, t, x_val, t_val, seed=seed, accelerator=accelerator,
                         **self.train_kwargs(**overrides))
