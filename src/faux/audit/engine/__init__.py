"""Where the pass over the rows runs when it is not this process: Ray (``--engine ray``).
The driver reads and fits as the local engine does; Ray Data hands spans of whole batches
to its actors, which read those rows of the Parquet files and score them, a batch at a time;
the driver adds their counts up in the batches' order, so the outputs are a local run's.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (ray, torch, pyarrow).

Modules: ``dataset`` (the files, their spans, any rows of them read), ``session``
(the Ray started or joined), ``ship`` (the fitted state as bytes), ``worker`` (the actor),
``ray_pass`` (the pass and the merge).
"""

from faux.audit.face import lazy

#: name -> the module of this package that defines it
_WHERE = {
    "open_dataset": "dataset",
    "Files": "dataset",
    "ParquetFiles": "dataset",
    "start": "session",
    "RaySession": "session",
    "score_on_ray": "ray_pass",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy(__name__, _WHERE)
