"""The pass over every row on Ray (``faux.audit.engine.session.RaySession.score_all``):

    from_items(spans: rows [start, stop) of whole batches)   (faux.audit.engine.dataset)
      -> map_batches(BatchScorer, one actor per worker, a span per call: the actor reads
         the span's rows from the files and scores them a batch at a time)
                                                               (faux.audit.engine.worker)
      -> the driver adds each batch's counts, in the batches' order

The workers read the files themselves, each only its span's row groups, rather than take
rows from ``ray.data.read_parquet``: Ray's reader hands row groups on in no set order and
in blocks that are not the batches, and putting the batches back together in order took
a quarter of the CPU on 2 cores (docs/decisions.md). An actor holds ``IN_FLIGHT`` spans at a
time (it scores one while the next waits, so it never waits for Ray between spans), and a
faster one takes more of them.

The pipeline starts with the session, before the driver has scanned the rows and fitted what
the workers score with (``RayPass``): the actors start and import torch and the scoring code
meanwhile, and wait on their first span for the driver to post the ``Job`` (through a
``Mailbox`` actor). Started only once the state was fitted, they took 5-7 s of every pass
before its first batch. A pipeline iterates in a thread of the driver's (``RayPass._pump``);
the driver's main thread takes the parts from a queue, checking for signals in between.

The batches are the local engine's (``batch_size`` rows from the first), each scored whole,
and their counts are added here in the order the local pass adds them, so the sums, the top
rows, the plot sample and every count come out as a local pass's, bit for bit. Each worker
writes its batch's rows of scores.parquet as one file of the folder ``scores.parquet`` in the
staging folder; the driver checks at the end that every batch's file is there (a worker on
another machine must write to a filesystem the driver shares) and that no temporary file is
left."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import queue
import threading
import time
import warnings
from pathlib import Path

from faux.audit.engine.dataset import IN_FLIGHT, spans
from faux.audit.engine.worker import BatchScorer, Job, part_name
from faux.audit.interrupts import check_signals
from faux.audit.notices import current, warn
from faux.errors import DataError, FauxError


@contextlib.contextmanager
def _data_context():
    """Ray Data's context for the datasets made in the block, restored after: no progress
    bars or warnings of its own (the audit has its own)."""
    import ray

    ctx = ray.data.DataContext.get_current()
    saved = ctx.enable_progress_bars
    ctx.enable_progress_bars = False
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning, module=r"ray\.data")
            yield ctx
    finally:
        ctx.enable_progress_bars = saved


def _dataset(session, batch_size: int, mailbox):
    import ray

    from faux.harness import malloc

    todo = [{"start": a, "stop": b}
            for a, b in spans(session.files, batch_size, session.workers)]
    ds = ray.data.from_items(todo, override_num_blocks=len(todo))
    pool = ray.data.ActorPoolStrategy(size=min(session.workers, len(todo)),  # none left idle
                                      max_tasks_in_flight_per_actor=IN_FLIGHT)
    return ds.map_batches(BatchScorer, fn_constructor_args=(mailbox,), batch_size=1,
                          batch_format="pyarrow", compute=pool, num_cpus=session.cpus,
                          runtime_env={"env_vars": malloc.ENV})


class Mailbox:
    """The actor through which the driver hands the workers their ``Job`` once it has one:
    ``job()`` answers when ``post(job)`` was called, with what was posted (a list holding
    the object-store reference to the pickled job, which every worker reads without a copy
    of its own; None: the pass was called off)."""

    def __init__(self):
        self._posted = asyncio.Event()
        self._job = None

    async def job(self):
        await self._posted.wait()
        return self._job

    async def post(self, job) -> None:
        self._job = job
        self._posted.set()


_END = object()  # the pipeline gave all its rows
JOIN_S = 30.0  # how long ``close`` waits for the pipeline's thread


class RayPass:
    """The pass's pipeline on the session's actors, started before its ``Job`` exists:
    ``parts(job)`` posts the job and yields the workers' pickled parts as they come;
    ``close()`` calls the pass off (when the job was never posted) or stops the pipeline
    after the spans in flight (when ``parts`` stopped early), and waits for its thread."""

    def __init__(self, session, batch_size: int):
        import ray
        import ray.data  # configures its loggers when first imported: before their level is set

        self.batch_size = batch_size
        self._box = ray.remote(num_cpus=0)(Mailbox).remote()
        self._job_ref, self._closed = None, False
        self._stopping = threading.Event()
        self._out: queue.Queue = queue.Queue()
        self._log = logging.getLogger("ray.data")
        self._level = self._log.level
        self._log.setLevel(logging.ERROR)  # Ray Data's own progress lines: the audit has its own
        with _data_context():  # a Dataset keeps the context it was made in
            ds = _dataset(session, batch_size, self._box)
        self._thread = threading.Thread(target=self._pump, args=(ds,), daemon=True,
                                        name="faux-ray-pass")
        self._thread.start()

    def _pump(self, ds) -> None:
        rows = None
        try:
            rows = iter(ds.iter_rows())
            for row in rows:
                self._out.put(row["part"])
                if self._stopping.is_set():
                    break
            self._out.put(_END)
        except BaseException as err:  # noqa: BLE001  (handed to the driver's thread)
            self._out.put(err)
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()

    def parts(self, job_blob: bytes):
        """The job posted to the workers; their parts (pickled ``BatchPart`` or errors), in
        the order they are done, checking for signals while it waits."""
        import ray

        self._job_ref = ray.put(job_blob)
        self._box.post.remote([self._job_ref])
        while True:
            try:
                item = self._out.get(timeout=0.25)
            except queue.Empty:
                check_signals()
                continue
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """The pipeline stopped (the pass called off when its job was never posted) and its
        thread waited for; Ray Data's logging as it was."""
        import ray

        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        with contextlib.suppress(Exception):
            if self._job_ref is None:
                self._box.post.remote(None)
        self._thread.join(timeout=JOIN_S)
        with contextlib.suppress(Exception):
            ray.kill(self._box)
        self._job_ref = None
        self._log.setLevel(self._level)


def merge(state, part, tally) -> None:
    """Batch ``part`` (``faux.audit.engine.worker.BatchPart``) added to the driver's counts:
    the pass's (``tally``), the views', the passes' (before the described rows' values,
    which keep the rows the merged passes describe) and the observers'."""
    tally.add_part(part.tally)
    for view, counts in zip(state.views, part.views, strict=True):
        view.merge_counts(counts)
    for ps, counts in zip(state.passes, part.passes, strict=True):
        ps.merge_counts(counts)
    if state.observers is not None:
        state.observers.outcome.merge_counts(part.outcome)
        state.observers.row_values.merge_counts(part.row_values)
    if state.missing is not None:
        state.missing.rows += part.missing_rows
    seen = set(current())
    for msg in part.warnings:
        if msg not in seen:
            warn(msg)
            seen.add(msg)


class RayPassError(FauxError):
    """Ray failed the pass (a node lost, an actor that cannot be restarted, a task error)."""


def ray_failure(err: Exception) -> RayPassError:
    """Ray's error as one line: its kind and its last line of text (the cause's)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    last = lines[-1][:200] if lines else ""
    return RayPassError(f"Ray failed the pass ({type(err).__name__}: {last}); nothing was "
                        "written: see Ray's logs (a local Ray's under /tmp/faux-ray)")


def _check_parts(folder: Path, n_batches: int) -> None:
    """Every batch's file in ``folder``, and nothing else (a worker's temporaries, left by
    one that was stopped, removed)."""
    for leftover in folder.glob(".part-*.tmp"):
        leftover.unlink(missing_ok=True)
    missing = [i for i in range(n_batches) if not (folder / part_name(i)).is_file()]
    if missing:
        raise DataError(f"the Ray workers' scores of batch {missing[0]} are not in "
                        f"{folder.parent} ({len(missing)} of {n_batches} batches missing): "
                        "on a cluster --out must be a folder every node writes to (a shared "
                        "filesystem)")


def score_on_ray(session, state, reading, *, n_rows: int, seed: int, out, bar):
    """The pass over every row of the session's files on its actors (``state`` and
    ``reading``: ``faux.audit.passes.score_pass``'s), their scores into ``out``/
    scores.parquet (a folder), its result that of ``score_all`` on the same rows."""
    import ray

    from faux.audit.engine.ship import dumps
    from faux.audit.passes.score_pass import Tally

    run = session.ray_pass
    if int(reading.batch_size) != run.batch_size:
        raise ValueError(f"the pipeline's batches are of {run.batch_size} rows, the pass's of "
                         f"{reading.batch_size}")
    folder = Path(out) / "scores.parquet"
    folder.mkdir()
    tally = Tally(state.methods, n_rows, seed, state.bh_null, False,
                  None if state.sampled is None else len(state.sampled.rows))
    job = Job(state=state, files=session.files, source=reading.source, feats=list(reading.feats),
              c_cols=list(reading.c_cols), label=reading.label,
              batch_size=int(reading.batch_size), parts=str(folder), tally=tally)
    advance = bar.start("scoring", n_rows)
    t0 = time.perf_counter()
    pending, n_merged, n_done = {}, 0, 0
    try:
        for blob in run.parts(dumps(job)):
            part = pickle.loads(blob)
            if isinstance(part, FauxError):  # a worker's one line
                raise part
            pending[part.index] = part
            while n_merged in pending:  # in the batches' order
                done = pending.pop(n_merged)
                merge(state, done, tally)
                advance(done.rows)
                n_merged, n_done = n_merged + 1, n_done + done.rows
            check_signals()
    except ray.exceptions.RayError as err:
        raise ray_failure(err) from err
    if pending or n_done != n_rows:
        raise RayPassError(f"the Ray pass scored {n_done:,} of the {n_rows:,} rows (the files "
                           "changed while they were read); nothing was written")
    _check_parts(folder, n_merged)
    return tally.finish(time.perf_counter() - t0, state.alpha)
