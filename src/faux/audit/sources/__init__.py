"""The data an audit reads: files and in-memory arrays in batches, the scan before training, the
columns, the protected attributes and their intersection, the categorical layout, and where the
inputs came from.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``array_source``, ``columns``, ``data``, ``data_scan``, ``file_source``, ``intersection``, ``layout``, ``protected``, ``provenance``, ``source``.
"""

from faux.audit.face import lazy

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

__getattr__, __dir__ = lazy(__name__, _WHERE)
