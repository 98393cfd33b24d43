"""Training settings shared by everything that trains (the `trainer` config group)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainerSettings:
    """Where models train; each model's epochs, patience and batch size are in its spec."""

    accelerator: str = "auto"   # "auto" takes a GPU when one is present
