"""The intersection of several protected attributes: one categorical attribute whose values
are the cells of the cross product of the categorical (binary or multi-valued) attributes'
values, e.g. ``sex x race`` with cells ``Female x Black``, ...

Continuous attributes stay out of it (they have their own views). A cell that no row of
the data has (an empty cell) is refused: its aux output would stand for nobody, and a
cross product with holes is usually a sign of attributes that determine each other. Cells
with fewer than ``min_cell`` sample rows (the rows the aux learns from) are merged into
one cell ``other``; fewer than two cells left is refused too.
"""

from __future__ import annotations

import itertools

import numpy as np

from faux.audit.sources.data_scan import Scan
from faux.audit.sources.protected import ProtectedInfo
from faux.errors import DataError

OTHER = "other"  # the cell the small cells are merged into
SEP = " x "  # joins attribute names (the view's name) and values (a cell's name)


class Intersection:
    """Cells of the cross product of ``names``' values; ``labels`` names each row's cell."""

    def __init__(self, sc: Scan, names: list[str], min_cell: int):
        self.names = names
        self.name = SEP.join(names)
        self.infos = [sc.attrs[a] for a in names]
        if sc.joint is None:
            raise DataError(f"the protected attributes {', '.join(map(repr, names))} take too "
                            "many combinations of values for an intersection; group their "
                            "values, or pass --no-intersection")
        pos = [list(sc.attrs).index(a) for a in names]
        combos = list(itertools.product(*(info.levels for info in self.infos)))
        counts = []
        for combo in combos:
            key = [None] * len(sc.attrs)
            for p, v in zip(pos, combo):
                key[p] = v
            counts.append(sc.joint.get(tuple(key), 0))
        empty = [c for c, k in zip(combos, counts) if k == 0]
        if empty:
            cell = ", ".join(f"{a}={v}" for a, v in zip(names, empty[0]))
            more = f" and {len(empty) - 1} more" if len(empty) > 1 else ""
            raise DataError(f"the intersection {self.name} has an empty cell: no row has "
                            f"{cell}{more}; group those values, pass fewer --protected "
                            "columns, or --no-intersection to score the attributes apart")
        self.cells = [SEP.join(str(v) for v in combo) for combo in combos]
        # rows of each cell among the sample rows, which the aux learns from
        code = self._codes(sc.cs)
        in_sample = np.bincount(code, minlength=len(combos))
        small = [i for i in range(len(combos)) if in_sample[i] < min_cell]
        kept = [i for i in range(len(combos)) if i not in small]
        self.merged = [self.cells[i] for i in small]
        levels = [self.cells[i] for i in kept] + ([OTHER] if small else [])
        if len(levels) < 2:
            raise DataError(f"the intersection {self.name} has {len(levels)} cell(s) with at "
                            f"least {min_cell} sample rows (--min-cell); lower --min-cell, "
                            "raise --sample, or pass --no-intersection")
        self.lookup = np.empty(len(combos), dtype=np.int64)
        for j, i in enumerate(kept):
            self.lookup[i] = j
        self.lookup[small] = len(levels) - 1
        full = np.bincount(self.lookup, weights=counts, minlength=len(levels)).astype(int)
        self.info = ProtectedInfo("categorical", levels=levels, counts=full.tolist())
        self.sample_counts = np.bincount(self.lookup[code], minlength=len(levels)).tolist()
        self.min_cell = int(min_cell)

    def _codes(self, cs: dict) -> np.ndarray:
        """Index of each row's cell in the cross product."""
        code = None
        for a, info in zip(self.names, self.infos):
            idx = info.index(cs[a])
            code = idx if code is None else code * len(info.levels) + idx
        return code

    def labels(self, cs: dict) -> np.ndarray:
        """Each row's cell name (``other`` for a merged cell)."""
        names = np.array(self.info.levels, dtype=object)
        return names[self.lookup[self._codes(cs)]]


def intersection_of(sc: Scan, min_cell: int, enabled: bool = True) -> Intersection | None:
    """The intersection of the categorical attributes of ``sc``, or None when fewer than two
    are categorical (or ``enabled`` is False)."""
    cat = [a for a, info in sc.attrs.items() if info.kind != "continuous"]
    if not enabled or len(cat) < 2:
        return None
    return Intersection(sc, cat, min_cell)
