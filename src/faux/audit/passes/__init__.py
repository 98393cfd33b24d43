"""The audit's passes over the rows: the group views (one per protected attribute and their
intersection), the scoring pass over every batch, and the outcome counts.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``groups``, ``outcome_pass``, ``score_pass``.
"""

from faux.audit.face import lazy

#: name -> the module of this package that defines it
_WHERE = {
    "build_views": "groups",
    "train_primary": "groups",
    "train_views": "groups",
    "score_all": "score_pass",
    "OutcomePass": "outcome_pass",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy(__name__, _WHERE)
