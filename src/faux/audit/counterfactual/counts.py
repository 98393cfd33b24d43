"""What each effect pass counts batch by batch, however its counterfactuals are made: the
rows seen, flagged, whose decision changes and that left the data's support, the sum of
|effect|, and the ``N_ROWS`` flagged rows of largest |effect| (``top_rows``). A pass counts
a batch on a ``fresh`` copy of itself where batches are counted apart (the Ray engine's
workers) and the copies' counts are added in the batches' order (``add_counts``), which
gives the counts of counting every batch on the pass itself."""

from __future__ import annotations

import copy

from faux.audit.counterfactual.top_rows import keep_top

N_ROWS = 50  # flagged rows described per attribute (the largest |effect| first)


class BatchCounts:
    """The counts both passes keep (``SUMS`` and ``top``); a pass adds its own in its
    ``_zero``, ``counted`` and ``merge_counts``."""

    SUMS: tuple = ("n", "n_flag", "n_change", "n_off", "abs_sum")

    def _zero(self) -> None:
        """The running counts, before the first batch."""
        for name in self.SUMS:
            setattr(self, name, 0)
        self.abs_sum = 0.0
        self.top: list = []  # (|effect|, -row_id, record) of the N_ROWS largest flagged

    def fresh(self):
        """This pass with nothing counted yet (one batch's counts, for ``merge_counts``)."""
        part = copy.copy(self)
        part._zero()
        return part

    def counted_sums(self) -> dict:
        """The sums and the top rows, as ``add_counts`` reads them."""
        return {**{name: getattr(self, name) for name in self.SUMS}, "top": self.top}

    def add_counts(self, c: dict) -> None:
        """Add the sums and offer the top rows of the next batch's ``counted()``."""
        for name in self.SUMS:
            setattr(self, name, getattr(self, name) + c[name])
        keep_top(self.top, c["top"], N_ROWS)
