"""What the Ray engine reads: a Parquet file, a folder of Parquet files or a glob of them,
taken as one table whose rows are the files' rows in the files' path order (a row's id is
its position in that table: stable, and the same for the driver and every worker).

``open_dataset`` resolves and checks the input before anything is read (one line each: no
file matched, a file that is not Parquet, files whose columns differ, no rows) and gives the
driver's ``Source``: for one file the ``FileSource`` the local engine reads, for several a
``ParquetFiles`` that reads them one after the other in batches of exactly ``batch_size``
rows (the batches one file of all their rows would give), and the ``Files`` (with each
file's row groups, from its footer) that the workers read: ``read_rows`` reads any rows
``[start, stop)`` of them in those same batches, starting at the row group that holds
``start``, so that a worker reads the rows of its ``spans`` and nothing else."""

from __future__ import annotations

import glob
import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from faux.audit.sources.file_source import FileSource
from faux.errors import ConfigError, DataError
from faux.harness.files import file_sha256, path_kind

SUFFIXES = (".parquet", ".pq")
GLOB_CHARS = "*?["
SPANS_PER_WORKER = 8  # at least this many spans per worker, where the batches allow
IN_FLIGHT = 2  # the spans a worker holds at a time: the one it scores and the next


@dataclass(frozen=True)
class Files:
    """The data set's files (absolute paths, in row order), their rows and the rows of each
    one's row groups."""

    paths: tuple
    rows: tuple
    groups: tuple

    @property
    def n_rows(self) -> int:
        return sum(self.rows)


@dataclass(frozen=True)
class Dataset:
    """The driver's ``source`` and the workers' ``files``."""

    source: FileSource
    files: Files


def _hidden(path: Path, root: Path) -> bool:
    """A file Spark, Hive or a writer leaves beside the data (``_SUCCESS``, ``.crc``)."""
    return any(part.startswith((".", "_")) for part in path.relative_to(root).parts)


def resolve(data) -> list[Path]:
    """The Parquet files ``data`` names, in path order: the file itself, a folder's
    ``*.parquet`` / ``*.pq`` files (sub-folders included, hidden ones left out) or a glob's
    matches."""
    spec = os.fspath(data)
    if any(ch in spec for ch in GLOB_CHARS) and not os.path.exists(spec):
        found = sorted(Path(p) for p in glob.glob(spec, recursive=True)
                       if os.path.isfile(p))
        if not found:
            raise DataError(f"--data {spec} matches no file; pass an existing Parquet file, a "
                            "folder of them or a glob that matches some (quoted, so the shell "
                            "leaves it to the audit)")
        files = found
    else:
        path = Path(spec)
        kind = path_kind(path)
        if kind == "a folder":
            files = sorted(p for p in path.rglob("*") if p.is_file()
                           and p.suffix.lower() in SUFFIXES and not _hidden(p, path))
            if not files:
                raise DataError(f"--data {spec} is a folder without Parquet files (*.parquet, "
                                "*.pq); pass a folder of them, a file or a glob")
        elif kind == "a file":
            files = [path]
        else:
            raise DataError(f"--data {spec}{' ' if kind == 'not found' else ' is '}{kind}; pass "
                            "a Parquet file, a folder of them or a glob")
    other = [p for p in files if p.suffix.lower() not in SUFFIXES]
    if other:
        raise DataError(f"--engine ray reads Parquet files; {other[0]} is not one (.parquet, "
                        ".pq): convert it, or audit it with --engine local")
    return [Path(os.path.abspath(p)) for p in files]


def _schema(path: Path):
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
        groups = tuple(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        return meta.schema.to_arrow_schema(), groups
    except Exception as err:
        raise DataError(f"cannot read {path}: {' '.join(str(err).split())[:200]}") from err


def _fields(schema) -> dict:
    return {f.name: str(f.type) for f in schema}


def check_schemas(files: list[Path], spec: str) -> tuple[list[str], list[tuple]]:
    """The files' columns (all files have the same names and types, in any order) and the
    rows of each file's row groups; one line naming the first file that differs and how."""
    first, g0 = _schema(files[0])
    want = _fields(first)
    groups = [g0]
    for p in files[1:]:
        schema, g = _schema(p)
        have = _fields(schema)
        if have != want:
            lacks = [c for c in want if c not in have]
            extra = [c for c in have if c not in want]
            typed = [f"{c} is {have[c]}, not {want[c]}" for c in want
                     if c in have and have[c] != want[c]]
            why = "; ".join(t for t in (f"it lacks {lacks[:3]}" if lacks else "",
                                         f"it has {extra[:3]} besides" if extra else "",
                                         ", ".join(typed[:3])) if t)
            raise DataError(f"the Parquet files of --data {spec} have different columns: "
                            f"{p.name} differs from {files[0].name} ({why}); pass files of one "
                            "schema")
        groups.append(g)
    if sum(map(sum, groups)) == 0:
        raise DataError(f"--data {spec} has no rows")
    return list(first.names), groups


def _joined(parts):
    """Record batches as one table of one chunk (the files' own metadata, a writer's
    notes, left out)."""
    import pyarrow as pa

    return pa.concat_tables([pa.Table.from_batches([b.replace_schema_metadata(None)])
                             for b in parts]).combine_chunks()


def _file_rows(path: str, groups: tuple, lo: int, hi: int, batch_size: int, columns):
    """Rows ``[lo, hi)`` of one file, as record batches: its row groups from the one that
    holds ``lo``, the rows before ``lo`` dropped."""
    import pyarrow.parquet as pq

    bounds = np.cumsum([0, *groups])
    first = int(np.searchsorted(bounds, lo, side="right")) - 1
    last = int(np.searchsorted(bounds, hi, side="left"))
    skip, want = lo - int(bounds[first]), hi - lo
    pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for rb in pf.iter_batches(batch_size=batch_size, row_groups=range(first, last),
                              columns=columns, use_threads=False):
        if skip >= rb.num_rows:
            skip -= rb.num_rows
            continue
        rb = rb.slice(skip, min(rb.num_rows - skip, want))
        skip, want = 0, want - rb.num_rows
        yield rb
        if want == 0:
            return
    raise DataError(f"{path} has fewer rows than when the audit listed it; do not change the "
                    "data while it is audited")


def read_rows(files: Files, start: int, stop: int, batch_size: int, columns):
    """Rows ``[start, stop)`` of the files (one table, ``files``' row order) in tables of
    ``batch_size`` rows (the last one shorter), each one chunk: the batches a read of all
    the rows cuts there when ``start`` is a multiple of ``batch_size``."""
    held, n_held, pos = [], 0, 0
    for path, groups in zip(files.paths, files.groups, strict=True):
        n = sum(groups)
        lo, hi = max(start - pos, 0), min(stop - pos, n)
        pos += n
        if lo >= hi:
            continue
        for rb in _file_rows(path, groups, lo, hi, batch_size, columns):
            held.append(rb)
            n_held += rb.num_rows
            while n_held >= batch_size:
                table = _joined(held)
                yield table.slice(0, batch_size)
                rest = table.slice(batch_size)
                held, n_held = rest.to_batches(), rest.num_rows
    if n_held:
        yield _joined(held)


def spans(files: Files, batch_size: int, workers: int) -> list[tuple[int, int]]:
    """The rows ``[start, stop)`` each worker's call reads and scores: whole batches, about
    a row group's rows each (a worker reads from the row group that holds its first row, so
    spans shorter than a row group read some rows twice), fewer where that would leave
    fewer than ``SPANS_PER_WORKER`` spans per worker; the last ``IN_FLIGHT`` spans per
    worker cut into single batches, so that the workers finish within about a batch or two
    of each other."""
    n = files.n_rows
    n_batches = math.ceil(n / batch_size)
    group = max((g for gs in files.groups for g in gs), default=batch_size)
    per = max(1, min(math.ceil(group / batch_size),
                     math.ceil(n_batches / (SPANS_PER_WORKER * workers))))
    out = [(k * batch_size, min((k + per) * batch_size, n))
           for k in range(0, n_batches, per)]
    cut = max(len(out) - IN_FLIGHT * workers, 0)
    return out[:cut] + [(a, min(a + batch_size, b)) for a0, b in out[cut:]
                        for a in range(a0, b, batch_size)]


class ParquetFiles(FileSource):
    """Several Parquet files of one schema as one table, read in batches of exactly
    ``batch_size`` rows across the files' ends (as one file of all their rows is read)."""

    def __init__(self, spec: str, files: Files, columns: list[str]):
        self.spec, self.listed = spec, files
        self.files = [Path(p) for p in files.paths]
        self.path = Path(spec)  # named in messages; the provenance hashes every file
        self.name = self.path.stem if self.path.suffix.lower() in SUFFIXES else (
            self.path.name if not any(ch in spec for ch in GLOB_CHARS)
            else self.path.parent.name)
        self.parquet, self.columns, self.n_rows = True, columns, files.n_rows

    def _record_batches(self, columns, features, batch_size, text=()):
        for table in read_rows(self.listed, 0, self.n_rows, batch_size, columns):
            yield table.to_batches()[0]

    def provenance(self) -> dict:
        """The data's identity: the files and a sha256 over their own, in row order."""
        h = hashlib.sha256()
        for p in self.files:
            h.update(f"{p.name}\0{file_sha256(p)}\n".encode())
        return {"file": self.spec, "files": len(self.files), "sha256": h.hexdigest(),
                "hash_of": "the files' sha256 (name and hash of each, in row order)"}


def open_dataset(data) -> Dataset:
    """The driver's source and the workers' files of ``data`` (a path, folder or glob)."""
    if data is None:
        raise ConfigError("engine='ray' (--engine ray) reads data=<Parquet file, folder or "
                          "glob>; data in memory is audited with engine='local'")
    if not isinstance(data, str | os.PathLike):
        raise ConfigError(f"engine='ray' reads data= as a path (a Parquet file, a folder of "
                          f"them or a glob), got {type(data).__name__}")
    spec = os.fspath(data)
    files = resolve(spec)
    columns, groups = check_schemas(files, spec)
    listed = Files(tuple(str(p) for p in files), tuple(map(sum, groups)), tuple(groups))
    source = FileSource(files[0]) if len(files) == 1 else ParquetFiles(spec, listed, columns)
    return Dataset(source, listed)
