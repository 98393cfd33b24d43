"""A Ray worker's part of the pass: ``BatchScorer``, the callable class that
``Dataset.map_batches`` runs in each actor. The actor unpickles the driver's ``Job`` once
(one copy of the model per actor, torch on one thread), then takes spans of whole batches
(rows ``[start, stop)``, ``faux.audit.engine.dataset.spans``), reads them from the files
(``read_rows``: exactly the local engine's batches) and for each batch: reads its rows as
the driver's source reads a file's (the same float64 features, protected values, label; a
Pipeline's encoders applied), scores them with
``faux.audit.passes.score_pass.score_batch`` on a copy of the state that has counted
nothing yet, writes its rows of scores.parquet as one file (``part-<k>.parquet``, written
under a hidden name and renamed whole, so that no file of that name is ever half written)
and returns what it counted (``BatchPart``: no per-row array), which the driver adds, in the
batches' order, to its own counts."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faux.audit.sources.file_source import FileSource


def part_name(index: int) -> str:
    """The file of batch ``index`` in the scores.parquet folder (name order is row order)."""
    return f"part-{index:06d}.parquet"


@dataclass(frozen=True)
class Job:
    """What every worker needs: the pass's ``state`` (``BatchState``), the data's ``files``
    (``Files``), the driver's ``source`` (how a batch's rows are read), its columns, the
    rows per batch, the staged scores.parquet folder (``parts``) and an empty ``tally``
    (``Tally``: how a batch's share of the pass's counts and plot sample is drawn)."""

    state: Any
    files: Any
    source: Any
    feats: list
    c_cols: list
    label: str | None
    batch_size: int
    parts: str
    tally: Any


@dataclass(frozen=True)
class BatchPart:
    """One batch as a worker counted it: its ``index`` and ``rows``, its share of the pass's
    tally (``TallyPart``), the views', passes' and observers' counts (``counted()`` of each),
    the rows with a missing value and the warnings raised."""

    index: int
    rows: int
    tally: Any
    views: list
    passes: list
    outcome: dict | None
    row_values: dict | None
    missing_rows: int
    warnings: list


class TableSource(FileSource):
    """A batch's rows as a worker got them (a pyarrow table), read as ``like`` (the driver's
    ``FileSource``) reads its file."""

    def __init__(self, table, like: FileSource):
        self.table = table.combine_chunks()
        self.path, self.name, self.parquet = like.path, like.name, True
        self.columns, self.n_rows = list(table.column_names), table.num_rows

    def _record_batches(self, columns, features, batch_size, text=()):
        wanted = list(dict.fromkeys(c for c in columns if c))
        yield from self.table.select(wanted).to_batches(max_chunksize=batch_size)


def on_table(source, table):
    """``source`` (the driver's: a file's, or a Pipeline's encoders over it) reading
    ``table`` instead of its files."""
    from faux.audit.loaders.encoders import EncodedSource

    if isinstance(source, EncodedSource):
        out = copy.copy(source)
        out.raw = TableSource(table, source.raw)
        return out
    return TableSource(table, source)


def columns_read(source, feats, c_cols, label) -> list[str]:
    """The data's columns a batch needs: the protected ones, the label, and the features
    (a Pipeline's: the columns its encoders read)."""
    enc = getattr(source, "enc", None)
    base = enc.raw_features if enc is not None else feats
    return list(dict.fromkeys([*c_cols, *([label] if label else []), *base]))


def fresh_state(state):
    """``state`` whose views, passes and observers have counted nothing yet (the model, the
    aux models, the transports and every setting shared)."""
    from faux.audit.passes.score_pass import Observers

    views = tuple(v.fresh() for v in state.views)
    passes = tuple(p.fresh() for p in state.passes)
    obs = state.observers
    observers = None if obs is None else Observers(obs.outcome.fresh(),
                                                   obs.row_values.fresh(list(passes)))
    return dataclasses.replace(state, views=views, passes=passes, observers=observers)


def write_part(frame, folder: Path, index: int) -> None:
    """Batch ``index``'s rows of scores.parquet, renamed into place once written whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    final = folder / part_name(index)
    tmp = folder / f".{final.name}.{os.getpid()}.tmp"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
    os.replace(tmp, final)


class BatchScorer:
    """The callable class of ``map_batches``: one per actor, built with the driver's
    ``Mailbox`` actor (``faux.audit.engine.ray_pass``), which it asks for the pickled ``Job``
    on its first call: the actors start, and import what scoring needs, while the driver
    still fits the state they score with. A mailbox that answers None means the pass was
    called off, and the actor scores nothing."""

    def __init__(self, mailbox):
        import importlib

        import torch

        importlib.import_module("faux.audit.passes.score_pass")  # loaded while the driver fits
        torch.set_num_threads(1)  # many small operations: one thread each, one per CPU
        self._mailbox, self._job = mailbox, None

    @property
    def job(self) -> Job | None:
        """The driver's ``Job`` (None: called off), waited for on the first call."""
        if self._mailbox is not None:
            import ray

            from faux.audit.engine.ship import loads

            posted = ray.get(self._mailbox.job.remote())  # [a reference to the bytes] or None
            self._mailbox = None
            self._job = None if posted is None else loads(ray.get(posted[0]))
        return self._job

    def _batch(self, table, start: int):
        """The table's rows (one batch, rows ``start`` on) as ``score_batch`` reads them."""
        job = self.job
        source = on_table(job.source, table)
        (b,) = source.batches(job.feats, job.c_cols, job.label, max(table.num_rows, 1))
        return dataclasses.replace(b, start=start)

    def _score(self, table, start: int) -> BatchPart:
        """One whole batch scored, its file written, its counts returned."""
        from faux.audit.notices import FauxAuditWarning, collecting
        from faux.audit.passes.score_pass import score_batch

        job = self.job
        raw = self._batch(table, start)
        state = fresh_state(job.state)
        missing = job.state.missing  # shared: the passes' model calls read its batch mask
        before = 0 if missing is None else missing.rows
        with collecting() as found, warnings.catch_warnings():
            warnings.simplefilter("ignore", FauxAuditWarning)
            result = score_batch(state, raw)
        index = raw.start // job.batch_size
        write_part(result.frame, Path(job.parts), index)
        obs = state.observers
        return BatchPart(
            index=index, rows=len(result.flagged), tally=job.tally.part_at(result, raw.start),
            views=[v.counted() for v in state.views],
            passes=[p.counted() for p in state.passes],
            outcome=None if obs is None else obs.outcome.counted(),
            row_values=None if obs is None else obs.row_values.counted(),
            missing_rows=0 if missing is None else missing.rows - before,
            warnings=list(found))

    def _span(self, start: int, stop: int) -> list[bytes]:
        """Rows ``[start, stop)`` read and scored, a batch at a time: each batch's
        ``BatchPart`` pickled; a faux error (one line) pickled in place of the rest."""
        from faux.audit.engine.dataset import read_rows
        from faux.errors import FauxError

        job, out = self.job, []
        columns = columns_read(job.source, job.feats, job.c_cols, job.label)
        try:
            for table in read_rows(job.files, start, stop, job.batch_size, columns):
                out.append(pickle.dumps(self._score(table, start), protocol=5))
                start += table.num_rows
        except FauxError as err:
            out.append(pickle.dumps(err))
        return out

    def __call__(self, table):
        """The spans of ``table`` (columns ``start`` and ``stop``), one row per batch in the
        result (``part``: its ``BatchPart`` or a faux error, pickled, for the driver)."""
        import pyarrow as pa

        out = []
        if self.job is None:  # called off before the driver had a job for the workers
            return pa.table({"part": pa.array(out, type=pa.large_binary())})
        for a, b in zip(table.column("start").to_pylist(), table.column("stop").to_pylist(),
                        strict=True):
            out.extend(self._span(int(a), int(b)))
        return pa.table({"part": pa.array(out, type=pa.large_binary())})
