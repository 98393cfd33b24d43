"""Training settings shared by everything that trains (the `trainer` config group)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TrainerSettings:
    accelerator: str = "auto"   # "auto" takes a GPU when one is present
    max_epochs: int = 100
    patience: int = 10
    batch_size: int = 64

    def fit_kwargs(self) -> dict:
        """Keyword arguments for :func:`faux.models.training.fit`."""
        return asdict(self)
