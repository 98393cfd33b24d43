"""The feature values of the rows the effect verdict describes (each attribute's flagged rows
with the largest |effect|, ``faux.audit.counterfactual.effect_pass``), kept while the data stream past: after
every batch only the rows still among some attribute's described rows are kept, so memory
stays bounded by their number. The values are the model's features as it reads them (for a
Pipeline that encodes its own columns: the encoders' output) and the protected values; for a
Pipeline also ``raw``: the user's own columns as read, before the encoders, and the
protected values."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _value(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    if v is not None and not isinstance(v, str | int | float | bool):  # pd.NA, a Timestamp
        return None if pd.isna(v) else str(v)
    return v


class RowValues:
    def __init__(self, feats, passes):
        self.feats, self.passes = list(feats), list(passes)
        self.kept: dict[int, dict] = {}
        self.raw: dict[int, dict] = {}

    def fresh(self, passes) -> RowValues:
        """Nothing kept yet, for the rows of ``passes`` (one batch's passes: ``fresh()``
        copies of this one's, whose top rows are that batch's)."""
        return RowValues(self.feats, passes)

    def counted(self) -> dict:
        return {"kept": self.kept, "raw": self.raw}

    def merge_counts(self, c: dict) -> None:
        """Add the rows kept from the next batch (``fresh(...).counted()`` after it), once
        the passes merged that batch's top rows: only the rows still described stay."""
        wanted = self._wanted()
        self.kept = {k: v for k, v in {**self.kept, **c["kept"]}.items() if k in wanted}
        self.raw = {k: v for k, v in {**self.raw, **c["raw"]}.items() if k in wanted}

    def _wanted(self) -> set[int]:
        return {-int(t[1]) for ps in self.passes for t in ps.top}

    def add(self, b) -> None:
        if not self.passes:
            return
        wanted = self._wanted()
        ids = b.start + np.arange(b.x.shape[0])
        for i in np.flatnonzero(np.isin(ids, list(wanted))):
            row = {f: _value(b.x[i, j]) for j, f in enumerate(self.feats)}
            prot = {name: _value(vals[i]) for name, vals in (b.cs or {}).items()}
            self.kept[int(ids[i])] = {**row, **prot}
            if b.raw is not None:
                raw = b.raw.iloc[int(i)]
                self.raw[int(ids[i])] = {**{str(k): _value(v) for k, v in raw.items()}, **prot}
        self.kept = {k: v for k, v in self.kept.items() if k in wanted}
        self.raw = {k: v for k, v in self.raw.items() if k in wanted}

    def attach(self, effects: dict) -> None:
        """Each described row of ``summary["effects"]`` gets its ``values`` (and, for a
        Pipeline, its ``raw`` values)."""
        for e in effects.values():
            for rec in e.get("rows", []):
                rec["values"] = self.kept.get(int(rec["row_id"]))
                if self.raw:
                    rec["raw"] = self.raw.get(int(rec["row_id"]))
