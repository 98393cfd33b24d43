"""The audit's passes over the rows: the group views (one per protected attribute and their
intersection), the scoring pass over every batch, and the outcome counts.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``groups``, ``outcome_pass``, ``score_pass``.
"""

import importlib

#: name -> the module of this package that defines it
_WHERE = {
    "build_views": "groups",
    "train_primary": "groups",
    "train_views": "groups",
    "score_all": "score_pass",
    "OutcomePass": "outcome_pass",
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
