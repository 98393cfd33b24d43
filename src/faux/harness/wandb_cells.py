"""The W&B runs of a sweep's cells: one per cell, named ``<study>/<column-or-dataset>/
<method>/s<seed>`` (:func:`cell_run_name`) with a stable id (:func:`cell_run_id`: the cell's
folder); :class:`CurveLogger` puts each trained model's Lightning curves into it under
``<role>/s<seed>/``; :func:`supersede_offline` keeps one offline folder per run id (offline
W&B cannot resume a run: each ``wandb.init`` writes a new folder, and ``wandb sync`` of two
folders with one id keeps only one of them); :func:`read_offline_run` reads an offline run
file back. ``faux.harness.joblog.CellRun`` uses them; ``faux.reports.wandb_report``'s summary
run lists the cells' records (:data:`RUN_RECORD`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

from pytorch_lightning.loggers import WandbLogger

#: a cell's record of its W&B run (beside its result.json): id, name, project, mode,
#: config hash, tags, run path, url and offline folder
RUN_RECORD = "wandb_run.json"

#: what an offline run folder is renamed to when a later run of the same id replaces it
SUPERSEDED = "superseded-"


def stable_hash(*parts: str, n: int = 20) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:n]


def cell_run_id(out_dir: str | os.PathLike) -> str:
    """The W&B run id of the cell whose folder is ``out_dir``: a hash of its absolute path
    (the sweep folder and the cell's own folder, which a hash of its overrides names), so
    every invocation of one sweep logs each cell to the same run."""
    return "cell-" + stable_hash(str(Path(out_dir).resolve()))


def cell_run_name(labels: dict, extra: dict | None = None) -> str:
    """``<study>/<column-or-dataset>/<method>/s<seed>`` (``-`` for a part the job has not:
    a real-data cell scores every method), then ``/k=v,...`` for the ``extra`` overrides that
    tell cells of one sweep apart beyond those (Fig. 5's bias, Fig. 11's transport weight)."""
    where = labels.get("column") or labels.get("dataset") or "-"
    seed = labels.get("seed")
    name = "/".join([str(labels.get("study", "-")), str(where), str(labels.get("method", "-")),
                     f"s{seed}" if seed is not None else "s-"])
    if extra:
        name += "/" + ",".join(f"{k}={v}" for k, v in sorted(extra.items()))
    return name


def supersede_offline(wandb_dir: str | os.PathLike, run_id: str, keep=None) -> list[Path]:
    """Rename the offline run folders of ``run_id`` under ``wandb_dir`` (``<save_dir>/wandb``)
    other than ``keep`` to ``superseded-offline-run-...`` (kept, but no longer found by
    ``make wandb-sync`` or counted as the cell's run); returns the new paths."""
    root = Path(wandb_dir)
    keep = Path(keep).resolve() if keep else None
    mine = re.compile(rf"^offline-run-\d{{8}}_\d{{6}}-{re.escape(run_id)}(-\d+)?$")
    out = []
    for d in sorted(root.glob("offline-run-*")):
        if not d.is_dir() or not mine.match(d.name):
            continue
        if keep is not None and d.resolve() == keep:
            continue
        target = d.with_name(SUPERSEDED + d.name)
        os.replace(d, target)
        out.append(target)
    return out


class CurveLogger(WandbLogger):
    """Lightning's ``WandbLogger`` on a run that is already open (the cell's): one trained
    model's curves as ``<prefix>/<metric>`` against its own step axis ``<prefix>/step``
    (Lightning's step counter restarts with every ``fit``), its hyper-parameters as
    ``<prefix>/<name>`` in the run's config."""

    LOGGER_JOIN_CHAR = "/"

    def __init__(self, run, prefix: str):
        super().__init__(experiment=run, prefix=prefix, save_dir=run.dir, project=run.project)
        run.define_metric(f"{prefix}/step", hidden=True)
        run.define_metric(f"{prefix}/*", step_metric=f"{prefix}/step")

    def log_metrics(self, metrics, step=None) -> None:
        out = {f"{self._prefix}/{k}": v for k, v in metrics.items()}
        if step is not None:
            out[f"{self._prefix}/step"] = int(step)
        self._safely(self.experiment.log, out)

    def log_hyperparams(self, params) -> None:
        from lightning_fabric.utilities.logger import _convert_params

        params = _convert_params(params) or {}
        if params:
            self._safely(super().log_hyperparams,
                         {f"{self._prefix}/{k}": v for k, v in params.items()})

    def _safely(self, fn, arg) -> None:
        """A curve that cannot be logged is one warning line, and the rest are dropped:
        training goes on (the job's numbers are its result)."""
        if getattr(self, "_broken", False):
            return
        try:
            fn(arg)
        except Exception as exc:
            self._broken = True
            print(f"warning: training curve {self._prefix} not logged ({type(exc).__name__}: "
                  f"{str(exc).splitlines()[0][:160] if str(exc) else ''})", file=sys.stderr)


def curve_factory(run):
    """``factory(role, seed)`` for :func:`faux.models.training.curves_to`: a
    :class:`CurveLogger` on ``run`` with prefix ``<role>/s<seed>`` (``-2``, ``-3``, ... for a
    repeat of a prefix in this run)."""
    seen: dict[str, int] = {}

    def factory(role: str, seed: int) -> CurveLogger:
        base = f"{role}/s{seed}"
        seen[base] = seen.get(base, 0) + 1
        return CurveLogger(run, base if seen[base] == 1 else f"{base}-{seen[base]}")
    return factory


def _chunks(data: bytes) -> Iterator[bytes]:
    """The records of a W&B transaction log (``run-<id>.wandb``: a ``:W&B`` header of 7 bytes,
    then LevelDB-log blocks of 32 KiB whose chunks carry a 7-byte header: crc, length, type)."""
    if data[:4] != b":W&B":
        raise ValueError("not a W&B run file")
    pos, block, buf = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        _crc, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if left < 7 or (n == 0 and kind == 0):
            pos += left
            continue
        chunk, pos = data[pos + 7:pos + 7 + n], pos + 7 + n
        if kind == 1:
            yield chunk
        elif kind == 2:
            buf = chunk
        elif kind == 3:
            buf += chunk
        elif kind == 4:
            yield buf + chunk
            buf = b""


def read_offline_run(path: str | os.PathLike) -> dict:
    """What an offline run file (``run-<id>.wandb``, or its folder) holds: ``id``, ``name``,
    ``project``, ``group``, ``tags`` (the last run record's), ``config`` (key -> value),
    ``history`` (one dict per logged step) and ``summary`` (key -> value)."""
    from wandb.proto import wandb_internal_pb2 as pb

    path = Path(path)
    if path.is_dir():
        (path,) = path.glob("run-*.wandb")
    out: dict = {"config": {}, "history": [], "summary": {}}

    def key(item) -> str:
        return item.key or "/".join(item.nested_key)

    for chunk in _chunks(path.read_bytes()):
        rec = pb.Record()
        rec.ParseFromString(chunk)
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            r = rec.run
            out.update(id=r.run_id, name=r.display_name, project=r.project, group=r.run_group,
                       tags=list(r.tags))
            for item in r.config.update:
                out["config"][key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                out["config"][key(item)] = json.loads(item.value_json)
        elif kind == "history":
            out["history"].append({key(i): json.loads(i.value_json) for i in rec.history.item})
        elif kind == "summary":
            for item in rec.summary.update:
                out["summary"][key(item)] = json.loads(item.value_json)
    return out
