"""The feature values of the rows the effect verdict describes (each attribute's flagged rows
with the largest |effect|, ``faux.audit.effect_pass``), kept while the data stream past: after
every batch only the rows still among some attribute's described rows are kept, so memory
stays bounded by their number. The values are the model's features as it reads them (for a
Pipeline that encodes its own columns: the encoders' output) and the protected values."""

from __future__ import annotations

import numpy as np


def _value(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


class RowValues:
    def __init__(self, feats, passes):
        self.feats, self.passes = list(feats), list(passes)
        self.kept: dict[int, dict] = {}

    def _wanted(self) -> set[int]:
        return {-int(t[1]) for ps in self.passes for t in ps.top}

    def add(self, b) -> None:
        if not self.passes:
            return
        wanted = self._wanted()
        ids = b.start + np.arange(b.x.shape[0])
        for i in np.flatnonzero(np.isin(ids, list(wanted))):
            row = {f: _value(b.x[i, j]) for j, f in enumerate(self.feats)}
            for name, vals in (b.cs or {}).items():
                row[name] = _value(vals[i])
            self.kept[int(ids[i])] = row
        self.kept = {k: v for k, v in self.kept.items() if k in wanted}

    def attach(self, effects: dict) -> None:
        """Each described row of ``summary["effects"]`` gets its ``values``."""
        for e in effects.values():
            for rec in e.get("rows", []):
                rec["values"] = self.kept.get(int(rec["row_id"]))
