"""What an audit writes: summary.json, scores.parquet, report.html with its pictures and the
conclusion in words, staged into a folder the audit owns.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``conclusion``, ``outputs``, ``page``, ``plots``, ``summary``, ``writing``.
"""

import importlib

#: name -> the module of this package that defines it
_WHERE = {
    "build": "summary",
    "render": "page",
    "conclude": "conclusion",
    "Staging": "outputs",
    "save_result": "outputs",
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
