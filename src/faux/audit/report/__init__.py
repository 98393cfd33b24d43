"""What an audit writes: summary.json, scores.parquet, report.html with its pictures and the
conclusion in words, staged into a folder the audit owns.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``conclusion``, ``outputs``, ``page``, ``plots``, ``summary``, ``writing``.
"""

from faux.audit.face import lazy

#: name -> the module of this package that defines it
_WHERE = {
    "build": "summary",
    "render": "page",
    "conclude": "conclusion",
    "Staging": "outputs",
    "save_result": "outputs",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy(__name__, _WHERE)
