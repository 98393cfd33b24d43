"""The data an audit reads: files and in-memory arrays in batches, the scan before training, the
columns, the protected attributes and their intersection, the categorical layout, and where the
inputs came from.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``array_source``, ``columns``, ``data``, ``data_scan``, ``file_source``, ``intersection``, ``layout``, ``protected``, ``provenance``, ``source``.
"""

import importlib

#: name -> the module of this package that defines it
_WHERE = {
    "open_source": "data",
    "Source": "source",
    "Batch": "source",
    "ArraySource": "array_source",
    "FileSource": "file_source",
    "ProtectedInfo": "protected",
    "Layout": "layout",
    "intersection_of": "intersection",
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
