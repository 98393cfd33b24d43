"""Training loop glue: in-memory tensor batches and a Lightning Trainer with early stopping.

Tabular data is small, so batches are slices of tensors held in memory (a DataLoader over a
TensorDataset costs ~4x at batch 64 on this hardware). Everything that trains goes through
``fit``: the LightningModule defines ``training_step``/``validation_step`` over a tuple of
tensors and logs ``val_loss``; ``fit`` restores the weights of the best validation epoch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, EarlyStopping


class TensorBatches:
    """Re-iterable mini-batches over tensors that share their first dimension.

    Shuffles with its own seeded generator, so two runs with the same seed see the same
    batches in the same order regardless of global RNG use elsewhere.
    """

    def __init__(self, tensors: Sequence[torch.Tensor], batch_size: int = 64,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        n = {int(t.shape[0]) for t in tensors}
        if len(n) != 1:
            raise ValueError(f"tensors have different numbers of rows: {sorted(n)}")
        self.tensors = tuple(tensors)
        self.n = n.pop()
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = torch.Generator().manual_seed(int(seed))

    def __len__(self) -> int:
        full, rest = divmod(self.n, self.batch_size)
        return full if (self.drop_last or rest == 0) else full + 1

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        order = torch.randperm(self.n, generator=self.generator) if self.shuffle else None
        for b in range(len(self)):
            sl = slice(b * self.batch_size, min((b + 1) * self.batch_size, self.n))
            if order is None:
                yield tuple(t[sl] for t in self.tensors)
            else:
                idx = order[sl]
                yield tuple(t[idx] for t in self.tensors)


class RestoreBest(Callback):
    """Keeps the state dict of the epoch with the lowest monitored value; restores it at the end."""

    def __init__(self, monitor: str = "val_loss"):
        self.monitor = monitor
        self.best = float("inf")
        self.state = None
        self.best_epoch = -1

    def on_validation_end(self, trainer, pl_module):
        if trainer.sanity_checking:
            return
        value = trainer.callback_metrics.get(self.monitor)
        if value is not None and float(value) < self.best:
            self.best = float(value)
            self.best_epoch = trainer.current_epoch
            self.state = copy.deepcopy(pl_module.state_dict())

    def on_fit_end(self, trainer, pl_module):
        if self.state is not None:
            pl_module.load_state_dict(self.state)


def fit(module: pl.LightningModule, train: Sequence[torch.Tensor],
        val: Sequence[torch.Tensor] | None = None, *, max_epochs: int = 100,
        patience: int | None = 10, batch_size: int = 64, seed: int = 0,
        accelerator: str = "auto", logger=False, progress: bool = False,
        extra_callbacks: Sequence[Callback] = ()) -> dict:
    """Train ``module`` on in-memory tensors; early-stop on ``val_loss`` when ``val`` is given.

    Returns a dict with ``epochs`` run, ``best_epoch`` and ``best_val_loss``. The module is
    returned to the CPU in eval mode with the best validation weights loaded.
    """
    pl.seed_everything(seed, workers=True, verbose=False)
    callbacks: list[Callback] = list(extra_callbacks)
    restore = None
    if val is not None:
        restore = RestoreBest("val_loss")
        callbacks.append(restore)
        if patience is not None:
            callbacks.append(EarlyStopping("val_loss", patience=patience, mode="min"))
    trainer = pl.Trainer(
        accelerator=accelerator, devices=1, max_epochs=max_epochs, logger=logger,
        callbacks=callbacks, enable_checkpointing=False, enable_progress_bar=progress,
        enable_model_summary=False, num_sanity_val_steps=0, deterministic=True,
        log_every_n_steps=50,
    )
    train_batches = TensorBatches(train, batch_size=batch_size, shuffle=True, seed=seed)
    val_batches = (TensorBatches(val, batch_size=max(batch_size, 4096), shuffle=False)
                   if val is not None else None)
    trainer.fit(module, train_dataloaders=train_batches, val_dataloaders=val_batches)
    module.cpu().eval()
    return {
        "epochs": int(trainer.current_epoch),
        "best_epoch": int(restore.best_epoch) if restore else int(trainer.current_epoch) - 1,
        "best_val_loss": float(restore.best) if restore else float("nan"),
    }
