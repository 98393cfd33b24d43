"""Missing feature values (NaN) for a black-box model that reads them (a tree ensemble:
scikit-learn's HistGradientBoosting, LightGBM). A model scored by autograd is refused them
in one line by the scan (``faux.audit.sources.data_scan.scan``), since NaN has no gradient.

The model itself is called on the rows as they are; what standardises, trains and moves
along the aux models never sees a NaN: there a missing value is the sample's column mean
(the aux models, the null models, the counterfactual paths, the diagnostic scores). When
the effect verdict calls the model on a batch and its counterfactuals (``proba`` below),
a value that was missing and that the counterfactual did not move is handed to the model as
NaN again, so the row's own prediction is the model's on the row as given."""

from __future__ import annotations

import dataclasses

import numpy as np


class Missing:
    """The sample's column means (the fill) and the mask of the batch under way."""

    def __init__(self, sample_x: np.ndarray):
        nan = np.isnan(sample_x)
        seen = (~nan).any(axis=0)
        total = np.where(nan, 0.0, sample_x).sum(axis=0)
        self.fill = np.where(seen, total / np.maximum((~nan).sum(axis=0), 1), 0.0)
        self.sample_cells = int(nan.sum())
        self.columns = nan.any(axis=0)
        self.mask: np.ndarray | None = None
        self.raw: np.ndarray | None = None
        self.rows = 0  # rows of the full pass with a NaN feature

    def fill_in(self, x: np.ndarray) -> np.ndarray:
        nan = np.isnan(x)
        return np.where(nan, self.fill[None], x) if nan.any() else x

    def batch(self, b):
        """``b`` with its NaN filled in; the mask is kept for ``proba``."""
        nan = np.isnan(b.x)
        self.mask, self.raw = (nan, b.x) if nan.any() else (None, None)
        if self.mask is None:
            return b
        self.rows += int(nan.any(axis=1).sum())
        return dataclasses.replace(b, x=np.where(nan, self.fill[None], b.x))

    def proba(self, proba):
        """``proba`` on the batch under way (its rows first, then its counterfactuals, as
        ``faux.audit.counterfactual.effects.effects`` calls it) with the row's own values put back where
        they were not moved: the missing ones, and the others exactly as read (not as their
        single-precision standardised round trip, which can cross a tree's split)."""
        def call(x):
            mask, raw = self.mask, self.raw
            if mask is None or len(x) % len(mask):
                return proba(x)
            n, d = mask.shape
            blocks = np.array(x, dtype=np.float64).reshape(-1, n, d)
            same = blocks == blocks[:1]  # counterfactual values equal to the row's own
            blocks = np.where(same, raw[None], blocks)
            return proba(blocks.reshape(-1, d))

        return call

    def summary(self, n_rows: int) -> dict:
        return {"rows": int(self.rows), "rate": self.rows / max(n_rows, 1),
                "columns_in_sample": int(self.columns.sum()),
                "text": (f"{self.rows:,} rows hold a missing (NaN) feature value: the model "
                         "reads them as they are; the aux models, the null models, the "
                         "counterfactual paths and the diagnostic scores read the sample's "
                         "column mean instead (a value the counterfactual leaves unmoved is "
                         "handed back to the model as NaN)")}


class NanTarget:
    """``target`` whose ``proba`` puts a batch's missing values back (for the effect pass)."""

    def __init__(self, target, missing: Missing):
        self._target, self.proba = target, missing.proba(target.proba)

    def __getattr__(self, name):
        return getattr(self._target, name)
