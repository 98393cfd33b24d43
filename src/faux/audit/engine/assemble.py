"""The batches of the pass, put together from the rows as Ray reads them.

Ray Data reads a file's row groups in parallel and hands them on in no set order (its
Parquet reader packs row groups of several files into one read task; on a 10 M-row file it
handed on the first two row groups last), so its blocks are neither the local engine's
batches nor in row order. ``BatchAssembler``, the one actor of a ``map_batches`` stage
between the reading and the scoring, places each row (its id, ``faux.audit.engine.rows``),
holds the rows of each batch ``[k * batch_size, (k + 1) * batch_size)`` until the batch is
whole, and hands it on then as one row of its output: ``batch`` (k) and ``rows`` (the
batch's rows in order, with their ids in a ``row_id`` column, as Arrow IPC bytes). A row is
never split, so each scorer gets exactly one of the local engine's batches per row, however
Ray sizes its blocks. It holds copies of the rows of unfinished batches only (a batch is
unfinished while a row group of it is still to be read)."""

from __future__ import annotations

import numpy as np

from faux.errors import DataError, FauxError

ROW_ID = "row_id"
ERROR = -1  # the batch of an output row that holds a faux error instead of rows
ASSEMBLER_CPUS = 0.01  # the assembling actor's CPU share: it only moves rows
SYNTHETIC = ("path", "row_hash")  # the columns read_parquet adds: each row's file and hash


def batch_rows(k: int, batch_size: int, n_rows: int) -> int:
    """The rows of batch ``k`` (the last one may be short)."""
    return min(batch_size, n_rows - k * batch_size)


class BatchAssembler:
    """The callable class of the assembling ``map_batches`` stage (one actor): ``offsets``
    and ``rows`` place a row (each file's first row id and rows), ``batch_size`` and
    ``n_rows`` cut the batches."""

    def __init__(self, offsets: dict, rows: dict, batch_size: int, n_rows: int):
        self.offsets, self.rows = offsets, rows
        self.batch_size, self.n_rows = int(batch_size), int(n_rows)
        self.held: dict[int, list] = {}  # batch -> its rows read so far (tables)
        self.count: dict[int, int] = {}
        self.finished: set[int] = set()

    def __call__(self, table):
        """The batches ``table``'s rows made whole, one row each; a faux error (one line)
        as a row of batch -1 holding it pickled, for the driver to raise."""
        import pickle

        import pyarrow as pa

        try:
            done = self._add(table)
        except FauxError as err:
            return pa.table({"batch": pa.array([ERROR], type=pa.int64()),
                             "rows": pa.array([pickle.dumps(err)], type=pa.large_binary())})
        rows = [binary(to_buffer(t)) for t in done.values()]
        return pa.table({"batch": pa.array(list(done), type=pa.int64()),
                         "rows": pa.chunked_array(rows, type=pa.large_binary())})

    def _add(self, table) -> dict:
        """``table``'s rows held by batch; the batches they made whole (batch -> its rows,
        in order)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from faux.audit.engine.rows import row_ids

        paths = pc.dictionary_encode(table.column("path")).combine_chunks()
        ids = row_ids(paths.dictionary.to_pylist(), paths.indices.to_numpy(),
                      table.column("row_hash").to_numpy(), self.offsets, self.rows)
        table = table.drop_columns(list(SYNTHETIC)).append_column(ROW_ID, pa.array(ids))
        k_of = ids // self.batch_size
        done = {}
        for k in np.unique(k_of).tolist():
            rows = np.flatnonzero(k_of == k)
            want = batch_rows(k, self.batch_size, self.n_rows)
            if self.count.get(k, 0) + len(rows) > want or k in self.finished:
                raise DataError(f"Ray read batch {k}'s rows more than once "
                                f"({self.count.get(k, 0) + len(rows)} of {want}); use "
                                "--engine local")
            in_order = rows[-1] - rows[0] + 1 == len(rows) and bool(
                (np.diff(ids[rows]) == 1).all())
            if len(rows) == want and in_order:  # the whole batch here, in order: a view
                self.finished.add(k)
                done[k] = table.slice(int(rows[0]), len(rows))
                continue
            self.held.setdefault(k, []).append(table.take(rows))  # a copy: the block goes
            self.count[k] = self.count.get(k, 0) + len(rows)
            if self.count[k] == want:
                done[k] = self._whole(k)
        return done

    def _whole(self, k: int):
        """Batch ``k``'s rows, in row order (its rows no longer held)."""
        import pyarrow as pa

        part = pa.concat_tables(self.held.pop(k))
        del self.count[k]
        self.finished.add(k)
        order = np.argsort(part.column(ROW_ID).to_numpy(), kind="stable")
        return part.take(order)


def to_buffer(table):
    """``table`` as an Arrow IPC stream (a buffer)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def binary(buf):
    """A one-value ``large_binary`` array over ``buf``, not copied."""
    import pyarrow as pa

    offsets = pa.py_buffer(np.array([0, buf.size], dtype=np.int64))
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, offsets, buf])


def from_bytes(data) -> object:
    """The table ``to_buffer`` wrote (its bytes)."""
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
