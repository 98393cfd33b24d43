"""A CSV or Parquet file to audit, read with pyarrow in batches (a Parquet file one row group
at a time), never loaded whole; a feature that is not numeric is refused naming its column
and the row near which it was read."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from faux.audit.sources.columns import protected_list
from faux.audit.sources.source import Batch, Source
from faux.errors import DataError
from faux.harness.files import path_kind


class FileSource(Source):
    """A CSV or Parquet file, read with pyarrow in batches."""

    def __init__(self, path):
        self.path = Path(path)
        self.name = self.path.stem
        kind = path_kind(self.path)
        if kind != "a file":
            raise DataError(f"data file {self.path}{' ' if kind == 'not found' else ' is '}{kind}; pass --data with an existing "
                            "CSV or Parquet file")
        if self.path.stat().st_size == 0:
            raise DataError(f"data file {self.path} is empty; it needs a header and rows")
        suffix = self.path.suffix.lower()
        self.parquet = suffix in (".parquet", ".pq")
        if not self.parquet and suffix not in (".csv", ".txt", ".gz"):
            raise DataError(f"cannot read {self.path.name}: use a .csv or .parquet file")
        try:
            if self.parquet:
                import pyarrow.parquet as pq

                pf = pq.ParquetFile(self.path)
                self.columns = list(pf.schema_arrow.names)
                self.n_rows = pf.metadata.num_rows
            else:
                import pyarrow.csv as pcsv

                reader = pcsv.open_csv(self.path)
                self.columns = list(reader.schema.names)
                self.n_rows = None
        except Exception as err:
            raise DataError(f"cannot read {self.path}: {' '.join(str(err).split())[:200]}"
                            ) from err
        if self.n_rows == 0:
            raise DataError(f"data file {self.path} has no rows")

    def _record_batches(self, columns, features, batch_size, text=()):
        """The file's record batches of ``columns``: ``features`` read as float64 and, from a
        CSV, ``text`` as strings, a blank cell (or NA, NaN, null) a missing value as pandas
        reads it (else pyarrow infers each column's type)."""
        import pyarrow as pa

        if self.parquet:
            import pyarrow.parquet as pq

            # no read-ahead, one thread: memory stays bounded by one row group
            pf = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
            yield from pf.iter_batches(batch_size=batch_size, columns=columns, use_threads=False)
            return
        import pyarrow.csv as pcsv

        types = {c: pa.float64() for c in features} | {c: pa.string() for c in text}
        reader = pcsv.open_csv(
            self.path, read_options=pcsv.ReadOptions(block_size=1 << 22),
            convert_options=pcsv.ConvertOptions(include_columns=[c for c in columns if c],
                                                column_types=types,
                                                strings_can_be_null=bool(text)))
        for rb in reader:
            for s in range(0, rb.num_rows, batch_size):
                yield rb.slice(s, batch_size)

    def batches(self, features, protected, label, batch_size):
        prot = protected_list(protected)
        want = [c for c in [*prot, label, *features] if c]
        start = 0
        try:
            for rb in self._record_batches(want, features, batch_size):
                m = rb.num_rows
                if m == 0:
                    continue
                x = np.empty((m, len(features)))
                for j, f in enumerate(features):
                    col = rb.column(f)
                    try:
                        x[:, j] = col.to_numpy(zero_copy_only=False)
                    except (TypeError, ValueError) as err:
                        raise DataError(f"feature column {f!r} is not numeric; encode it as the "
                                        "model expects before auditing") from err
                cs = {p: rb.column(p).to_numpy(zero_copy_only=False) for p in prot}
                y = rb.column(label).to_numpy(zero_copy_only=False) if label else None
                yield Batch(start, x, cs[prot[0]], y, cs)
                start += m
        except DataError:
            raise
        except Exception as err:
            msg = " ".join(str(err).split())[:200]
            hit = re.search(r"column #(\d+)", msg)
            if hit and "to double" in msg and int(hit.group(1)) < len(self.columns):
                name = self.columns[int(hit.group(1))]
                raise DataError(f"feature column {name!r} is not numeric near row {start} "
                                f"({msg}); encode it as the model expects, or leave it out of "
                                "--features") from err
            raise DataError(f"cannot read {self.path.name} near row {start}: {msg}") from err
