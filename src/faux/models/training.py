"""Training loop glue: in-memory tensor batches and a Lightning Trainer with early stopping.

Tabular data is small, so batches are slices of tensors held in memory (not a DataLoader),
and the tensors are moved to the training device once, before the first epoch. Everything
that trains goes through ``fit``: the LightningModule defines ``training_step``/
``validation_step`` over a tuple of tensors and logs ``val_loss``; ``fit`` restores the
weights of the best validation epoch.

At batch 64 an MLP step costs well under a millisecond, so Lightning's per-step machinery
(per-step logging, the automatic-optimisation closure, its hooks) would cost more than the
step itself. :class:`TabularModule` therefore uses manual optimisation, accumulates the
training loss in a tensor, logs ``train_loss`` once per epoch, and receives ``group`` (8)
mini-batches per Lightning step, running one optimiser step per mini-batch (the same updates
in the same order). Modules that subclass it only define ``loss(batch)`` (and optionally
``val_loss``). Any other LightningModule still works with ``fit``, one mini-batch per step,
only slower. The costs measured: docs/notebook/training_loops.md.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import warnings
from collections.abc import Iterable, Sequence

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, EarlyStopping

from faux.errors import ConfigError
from faux.harness.curves import curve_loggers, curves_to, job_logger, training_role
from faux.models.tensors import TensorBatches

#: the job's curve loggers (``faux.harness.curves``), for the modules that train
__all__ = ["curve_loggers", "curves_to", "training_role"]


def _to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch if batch.device == device else batch.to(device)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(b, device) for b in batch)
    return batch


class TabularModule(pl.LightningModule):
    """Base LightningModule with a cheap training step (manual optimisation, epoch logging).

    Subclasses define ``loss(batch) -> scalar tensor`` and optionally ``val_loss(batch)``
    (defaults to ``loss``) and ``configure_optimizers`` (defaults to Adam at ``self.lr``).
    ``train_loss`` (mean over the epoch's mini-batches) and ``val_loss`` are logged per epoch.
    ``fit`` hands a TabularModule ``group`` mini-batches per Lightning step (a list of batch
    tuples); ``training_step`` runs ``train_minibatch`` on each, in order, so the optimiser
    sees exactly the same sequence of mini-batches as with one batch per step. Modules with
    several optimisers override ``train_minibatch``, returning the detached loss to record.
    """

    group: int = 8

    def __init__(self, lr: float = 1e-3):
        super().__init__()
        self.automatic_optimization = False
        self.lr = float(lr)
        self._loss_sum: torch.Tensor | None = None
        self._loss_n = 0

    def loss(self, batch) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def val_loss(self, batch) -> torch.Tensor:
        return self.loss(batch)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)

    def train_minibatch(self, batch) -> torch.Tensor:
        """One optimiser step on one mini-batch; returns the detached training loss."""
        # single device, fp32: the raw optimizer and loss.backward() are what Lightning's
        # wrappers reduce to, without their per-step hooks.
        opt = self.optimizers(use_pl_optimizer=False)
        loss = self.loss(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    def training_step(self, batch, batch_idx):
        for mb in (batch if isinstance(batch, list) else [batch]):
            d = self.train_minibatch(mb)
            if d is not None:
                self._loss_sum = d if self._loss_sum is None else self._loss_sum + d
                self._loss_n += 1

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        # fit moves the tensors to the device once; this only checks (cheaply) that it did
        return _to_device(batch, device)

    def on_train_epoch_end(self):
        if self._loss_n:
            self.log("train_loss", self._loss_sum / self._loss_n, on_epoch=True)
        self._loss_sum, self._loss_n = None, 0

    def validation_step(self, batch, batch_idx):
        n = int(batch[0].shape[0])
        self.log("val_loss", self.val_loss(batch), on_epoch=True, batch_size=n)


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


class _WarmEarlyStopping(EarlyStopping):
    """EarlyStopping that ignores the first ``warmup`` epochs (no best value, no patience)."""

    def __init__(self, *args, warmup: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.warmup = int(warmup)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.current_epoch >= self.warmup:
            super().on_validation_end(trainer, pl_module)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if trainer.current_epoch >= self.warmup:
            super().on_train_epoch_end(trainer, pl_module)


_QUIET = ("pytorch_lightning", "lightning_fabric", "lightning.pytorch", "lightning.fabric")


@contextlib.contextmanager
def _quiet_and_restored_flags():
    """Silence Lightning's info banners; restore torch's determinism flags afterwards."""
    loggers = [logging.getLogger(name) for name in _QUIET]
    levels = [lg.level for lg in loggers]
    det = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            # fit without validation data on a module that defines validation_step
            warnings.filterwarnings("ignore", message=".*no `val_dataloader`.*")
            # we log once per epoch, never per step
            warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
            # pytorch_lightning 2.6.6 with torch 2.13: internal deprecation, nothing to act on
            warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\).*")
            yield
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)
        torch.use_deterministic_algorithms(det, warn_only=warn_only)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn


def _as_batches(data, batch_size: int, shuffle: bool, seed: int, group: int):
    if isinstance(data, torch.Tensor):
        data = (data,)
    if isinstance(data, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in data):
        return TensorBatches(data, batch_size=batch_size, shuffle=shuffle, seed=seed,
                             group=group)
    if isinstance(data, Iterable):
        return data
    raise ConfigError(f"fit got training data of type {type(data).__name__}; "
                      "pass a tuple of tensors or a re-iterable of batches")


def fit(module: pl.LightningModule, train: Sequence[torch.Tensor] | Iterable,
        val: Sequence[torch.Tensor] | None = None, *, max_epochs: int = 100,
        patience: int | None = 10, batch_size: int = 64, seed: int = 0,
        accelerator: str = "auto", logger=False, progress: bool = False,
        extra_callbacks: Sequence[Callback] = (), warmup_epochs: int = 0) -> dict:
    """Train ``module`` on in-memory tensors; early-stop on ``val_loss`` when ``val`` is given.

    ``train`` is a tuple of tensors (shuffled into batches of ``batch_size`` with a generator
    seeded by ``seed``; grouped ``module.group`` per step for a :class:`TabularModule`) or
    any re-iterable of batches (e.g. a sampler of GAN steps); an
    iterable with a ``to(device)`` method is moved to the training device first.
    ``warmup_epochs``: early stopping starts counting (best value, patience) only after that
    many epochs; the best-epoch restore still considers every epoch.
    Returns a dict with ``epochs`` run, ``best_epoch`` and ``best_val_loss``. The module is
    returned to the CPU in eval mode with the best validation weights loaded.
    ``logger=False`` (the default) inside :func:`curves_to` trains with the job's curve
    logger; any other value is the Trainer's ``logger`` as given.
    """
    if logger is False:
        logger = job_logger(module, seed)
    callbacks: list[Callback] = list(extra_callbacks)
    restore = None
    if val is not None:
        restore = RestoreBest("val_loss")
        callbacks.append(restore)
        if patience is not None:
            callbacks.append(_WarmEarlyStopping("val_loss", patience=patience, mode="min",
                                                warmup=warmup_epochs))
    with _quiet_and_restored_flags():
        pl.seed_everything(seed, workers=True, verbose=False)
        trainer = pl.Trainer(
            accelerator=accelerator, devices=1, max_epochs=max_epochs, logger=logger,
            callbacks=callbacks, enable_checkpointing=False, enable_progress_bar=progress,
            enable_model_summary=False, num_sanity_val_steps=0, deterministic=True,
            log_every_n_steps=50,
        )
        device = trainer.strategy.root_device
        group = int(getattr(module, "group", 1)) if isinstance(module, TabularModule) else 1
        train_batches = _as_batches(train, batch_size, True, seed, group)
        if hasattr(train_batches, "to"):
            train_batches = train_batches.to(device)
        val_batches = None
        if val is not None:
            val_batches = TensorBatches(val, batch_size=max(batch_size, 4096),
                                        shuffle=False).to(device)
        trainer.fit(module, train_dataloaders=train_batches, val_dataloaders=val_batches)
    module.cpu().eval()
    return {
        "epochs": int(trainer.current_epoch),
        "best_epoch": int(restore.best_epoch) if restore else int(trainer.current_epoch) - 1,
        "best_val_loss": float(restore.best) if restore else float("nan"),
    }


def resolve_device(accelerator: str = "auto") -> torch.device:
    """The torch device of a Lightning ``accelerator`` name, for loops that run outside
    ``fit``: "auto" is the GPU when one is present, else the CPU."""
    name = str(accelerator).lower()
    if name == "cpu":
        return torch.device("cpu")
    if name in ("gpu", "cuda") or (name == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ConfigError(f"accelerator={accelerator!r} but no CUDA GPU is available; "
                              "use accelerator=cpu (or auto)")
        return torch.device("cuda")
    if name == "auto":
        return torch.device("cpu")
    raise ConfigError(f"accelerator={accelerator!r} is not supported here; use auto, cpu or gpu")
