"""The rows an audit reads, in batches: ``Batch`` (features as float64 ``(m, d)``, the
protected columns, the label) and ``Source``, the interface of an in-memory array
(``faux.audit.sources.array_source``) and a CSV / Parquet file (``faux.audit.sources.file_source``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from faux.errors import DataError


@dataclass
class Batch:
    start: int  # row id of the first row
    x: np.ndarray  # (m, d) float64
    c: np.ndarray  # (m,) raw values of the (first) protected attribute
    y: np.ndarray | None
    cs: dict | None = None  # every protected attribute's raw values, by column name
    raw: object = None  # a Pipeline's: the user's columns it encodes (a DataFrame), as read


class Source:
    """Rows to audit. ``columns``: all column names; ``n_rows`` when known upfront."""

    columns: list[str]
    n_rows: int | None
    name: str

    def batches(self, features: Sequence[str], protected, label: str | None,
                batch_size: int) -> Iterator[Batch]:
        """Batches of ``features``; ``protected`` one column name or a list of them (the
        first one is ``Batch.c``, all of them ``Batch.cs``)."""
        raise NotImplementedError


def as_float(values: np.ndarray, name: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise DataError(f"feature column {name!r} is not numeric; encode it as the model "
                        "expects (e.g. one-hot columns) before auditing") from err
