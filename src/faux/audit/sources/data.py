"""Reading the data to audit in batches: CSV / Parquet files (pyarrow) or in-memory arrays.

``open_source`` gives a ``Source`` with the column names; ``Source.batches`` yields
``Batch``es (features as float64 ``(m, d)``, the protected columns, the label) of at most
``batch_size`` rows, so a file is never held in memory whole. ``scan`` makes one pass that
checks the features (NaN/inf rows are counted and refused), describes each protected
attribute (and counts the rows of every combination of the categorical ones, for their
intersection) and draws a uniform random sample of rows (for the aux models and the plots).

The pieces, by job: ``faux.audit.sources.source`` (``Batch``, ``Source``), ``faux.audit.sources.columns``
(which columns are read, checked against the header), ``faux.audit.sources.array_source`` (data in
memory), ``faux.audit.sources.file_source`` (CSV / Parquet), ``faux.audit.sources.protected`` (what a
protected attribute is) and ``faux.audit.sources.data_scan`` (the scan); importers name the
module that defines a name (the face ``faux.audit.sources`` lists the public ones).
"""

from __future__ import annotations

from faux.audit.sources.file_source import FileSource
from faux.audit.sources.source import Source


def open_source(data) -> Source:
    if isinstance(data, Source):
        return data
    return FileSource(data)
