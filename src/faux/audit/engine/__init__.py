"""Where the pass over the rows runs when it is not this process: Ray (``--engine ray``).
The driver reads and fits as the local engine does; Ray Data reads the Parquet files and
its actors score the rows, a batch each; the driver adds their counts up in the batches'
order, so the outputs are a local run's.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (ray, torch, pyarrow).

Modules: ``dataset`` (the files read), ``rows`` (each row's id on a worker), ``session``
(the Ray started or joined), ``ship`` (the fitted state as bytes), ``worker`` (the actor),
``ray_pass`` (the pass and the merge).
"""

import importlib

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


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *__all__])
