"""A dataset selection as the config tree makes it: a name and a kind (pmlb or real)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    kind: str = "pmlb"

    def load(self, **kwargs):
        """Load the dataset (PMLB: continuous features; real: split, encoded)."""
        from faux.data.registry import load

        return load(self.name, **kwargs)
