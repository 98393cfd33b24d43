"""Where the categorical features sit in the model's input: one-hot blocks (and 0/1 columns),
each with its levels' codes, and the continuous columns beside them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from faux.errors import ConfigError

ONE_HOT_SEPARATORS = ("_", "=")


@dataclass(frozen=True)
class Block:
    """A categorical feature in the model's input: its columns, its level names, and each
    level's values in those columns (``codes[i]``: one-hot rows, a one-hot row of zeros for
    a dropped level, ``(0,)``/``(1,)`` for a 0/1 column, ``(i,)`` for an ordinal code).
    ``unseen``: the last level stands for the values the model's encoder never saw in training
    and accepts (its code is the encoder's output for them): a row may hold it, a
    counterfactual never moves to it."""

    name: str
    columns: tuple[int, ...]
    levels: tuple[str, ...]
    codes: tuple[tuple[float, ...], ...] = ()
    unseen: bool = False

    def __post_init__(self):
        if not self.codes:
            k = len(self.columns)
            codes = ((0.0,), (1.0,)) if k == 1 else tuple(
                tuple(float(i == j) for j in range(k)) for i in range(k))
            object.__setattr__(self, "codes", codes)
        if len(self.codes) != len(self.levels) or any(len(v) != len(self.columns)
                                                      for v in self.codes):
            raise ConfigError(f"categorical feature {self.name!r}: one code per level, each "
                              "with one value per column")

    def level_of(self, values) -> int:
        """The level whose code is nearest to one row's ``values`` of the block's columns."""
        v = np.asarray(values, dtype=np.float64).reshape(1, -1)
        return int(np.argmin(((np.asarray(self.codes) - v) ** 2).sum(axis=1)))

    def is_target(self, level: int) -> bool:
        """Whether a counterfactual may move a row to ``level`` (not the unseen values')."""
        return not (self.unseen and level == len(self.levels) - 1)


@dataclass(frozen=True)
class Units:
    """A continuous input column that is an affine function of one of the user's own columns
    (a Pipeline's scaler, or the column passed through): ``value = intercept + slope * raw``,
    so that a value the model reads is shown in the user's units."""

    column: int  # the input column
    name: str  # the user's column it is computed from
    slope: float
    intercept: float

    def raw(self, value: float) -> float:
        """``value`` in the user's units, rounded at a billionth of the column's scale
        (``1 / slope``: its standard deviation for a standard scaler), below which the
        inverse holds only float noise (a raw 0 computes back as -2e-13)."""
        v = (float(value) - self.intercept) / self.slope
        digits = int(-math.floor(math.log10(1e-9 / abs(self.slope))))
        return float(f"{round(v, digits):.10g}") + 0.0


@dataclass(frozen=True)
class Layout:
    """Which input columns are categorical (blocks) and which continuous; ``units``: the
    continuous columns known to be an affine function of a user's column (a Pipeline's
    encoding steps, ``faux.audit.loaders.encoders``)."""

    n_features: int
    blocks: tuple[Block, ...] = ()
    continuous: tuple[int, ...] = field(default=())
    units: tuple[Units, ...] = ()

    def units_of(self, column: int) -> Units | None:
        """The user's units of input column ``column``, when known."""
        return next((u for u in self.units if u.column == column), None)

    @staticmethod
    def infer(x: np.ndarray, names) -> Layout:
        """Blocks from the data: columns named ``<feature><sep><level>`` (sep ``_`` or ``=``)
        holding only 0/1 and summing to exactly 1 on every row form one block; any other
        column holding only 0 and 1 is a block of its own; the rest are continuous."""
        x = np.asarray(x)
        names = [str(n) for n in names]
        binary = [j for j in range(x.shape[1]) if np.isin(x[:, j], (0.0, 1.0)).all()]
        blocks, used = [], set()
        for sep in ONE_HOT_SEPARATORS:
            groups: dict[str, list[int]] = {}
            for j in binary:
                if j not in used and sep in names[j]:
                    groups.setdefault(names[j].rsplit(sep, 1)[0], []).append(j)
            for prefix, cols in groups.items():
                if len(cols) >= 2 and np.all(x[:, cols].sum(axis=1) == 1):
                    blocks.append(Block(prefix, tuple(cols),
                                        tuple(names[j].rsplit(sep, 1)[1] for j in cols)))
                    used.update(cols)
        for j in binary:
            if j not in used:
                blocks.append(Block(names[j], (j,), ("0", "1")))
                used.add(j)
        cont = tuple(j for j in range(x.shape[1]) if j not in used)
        return Layout(x.shape[1], tuple(sorted(blocks, key=lambda b: b.columns[0])), cont)

    def mask(self, device=None) -> torch.Tensor:
        m = torch.zeros(self.n_features, dtype=torch.bool, device=device)
        m[list(self.continuous)] = True
        return m


def current_level(z, block: Block, x_mean, x_scale) -> torch.Tensor:
    """Each row's level of ``block``: the nearest code."""
    cols = list(block.columns)
    x = z[:, cols] * x_scale[cols] + x_mean[cols]
    codes = torch.as_tensor(block.codes, dtype=z.dtype, device=z.device)
    return torch.cdist(x, codes).argmin(dim=1)
