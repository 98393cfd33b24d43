"""Tensor plumbing of the training loops that needs no Lightning: in-memory mini-batches
and the checks that turn user arrays into float32 CPU tensors. ``faux.models.training``
re-exports every name here; the audit's stacked aux trainer imports this module directly,
so that an audit never pays for importing Lightning."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from faux.errors import DataError


class TensorBatches:
    """Re-iterable mini-batches over tensors that share their first dimension.

    Shuffles with its own seeded generator, so two runs with the same seed see the same
    batches in the same order regardless of global RNG use elsewhere. With ``group > 1`` each
    item is a list of up to ``group`` consecutive mini-batches (one Lightning step runs
    several optimiser steps, see :class:`TabularModule`); the mini-batches are the same.
    """

    def __init__(self, tensors: Sequence[torch.Tensor], batch_size: int = 64,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False, group: int = 1):
        n = {int(t.shape[0]) for t in tensors}
        if len(n) != 1:
            raise ValueError(f"tensors have different numbers of rows: {sorted(n)}")
        self.tensors = tuple(tensors)
        self.n = n.pop()
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.group = max(1, int(group))
        self.generator = torch.Generator().manual_seed(int(seed))

    def n_batches(self) -> int:
        """Number of mini-batches per pass."""
        full, rest = divmod(self.n, self.batch_size)
        return full if (self.drop_last or rest == 0) else full + 1

    def __len__(self) -> int:
        return -(-self.n_batches() // self.group)

    def to(self, device: torch.device | str) -> TensorBatches:
        """The same batches (sharing the shuffling generator) over tensors moved to ``device``."""
        out = copy.copy(self)
        out.tensors = tuple(t.to(device) for t in self.tensors)
        return out

    def epoch_order(self) -> torch.Tensor | None:
        """The row order (CPU) of the next pass, advancing the shuffling generator; None
        without shuffling. Mini-batch ``b`` of that pass is rows ``order[b*bs:(b+1)*bs]``."""
        return torch.randperm(self.n, generator=self.generator) if self.shuffle else None

    def minibatches(self) -> Iterator[tuple[torch.Tensor, ...]]:
        """One pass of single mini-batches (ignores ``group``)."""
        order = self.epoch_order()
        if order is not None:
            order = order.to(self.tensors[0].device)
        for b in range(self.n_batches()):
            sl = slice(b * self.batch_size, min((b + 1) * self.batch_size, self.n))
            if order is None:
                yield tuple(t[sl] for t in self.tensors)
            else:
                idx = order[sl]
                yield tuple(t[idx] for t in self.tensors)

    def __iter__(self) -> Iterator:
        if self.group == 1:
            yield from self.minibatches()
            return
        chunk: list = []
        for batch in self.minibatches():
            chunk.append(batch)
            if len(chunk) == self.group:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def as_features(x, name: str = "x", d: int | None = None) -> torch.Tensor:
    """``x`` as a finite float32 CPU tensor of shape (n, d); DataError naming the fix otherwise.

    Training data live on the CPU; ``fit`` moves them to the training device once.
    """
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(np.asarray(x, dtype=np.float32))
    x = x.detach().cpu()
    if x.ndim == 1:
        raise DataError(f"{name} has shape {tuple(x.shape)}; pass a 2-D (n, d) feature matrix "
                        "(use x.reshape(-1, 1) for a single feature)")
    if x.ndim != 2 or x.shape[0] == 0:
        raise DataError(f"{name} has shape {tuple(x.shape)}; pass a non-empty (n, d) matrix")
    if not x.is_floating_point():
        x = x.float()
    elif x.dtype == torch.float64:
        x = x.float()
    if not bool(torch.isfinite(x).all()):
        raise DataError(f"{name} contains NaN or infinite values; impute or drop those rows first")
    if d is not None and x.shape[1] != d:
        raise DataError(f"{name} has {x.shape[1]} features but {d} are expected; "
                        "pass data with the columns the model was built for")
    return x


def as_binary(t, n: int, name: str) -> torch.Tensor:
    """Binary labels (0/1) as a float32 CPU tensor, shape (n,) or (n, k); DataError otherwise."""
    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(np.asarray(t, dtype=np.float32))
    t = t.detach().cpu().float()
    if t.ndim == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.ndim not in (1, 2) or t.shape[0] != n:
        raise DataError(f"{name} has shape {tuple(t.shape)} but x has {n} rows; "
                        f"pass one label per row of x")
    if not bool(torch.isfinite(t).all()):
        raise DataError(f"{name} contains NaN values; drop those rows first")
    if not bool(((t == 0) | (t == 1)).all()):
        raise DataError(f"{name} must be binary 0/1; binarise it (e.g. (c > threshold)) first")
    cols = t.reshape(n, -1)
    for j in range(cols.shape[1]):
        if bool((cols[:, j] == cols[0, j]).all()):
            raise DataError(f"{name} takes a single value ({float(cols[0, j]):g}) in every row; "
                            "both groups 0 and 1 must be present")
    return t


def n_params(module: torch.nn.Module) -> int:
    """Number of trainable parameters."""
    return int(sum(p.numel() for p in module.parameters() if p.requires_grad))
