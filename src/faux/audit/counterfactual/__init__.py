"""Counterfactuals: the same person in the other group. By transport (non-descendants of the
protected attribute held fixed, the rest carried keeping the person's position) or by the aux
model's inverse; and each one's pass over the data.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``counts``, ``effect_pass``, ``effects``, ``swaps``, ``top_rows``, ``transport``,
``transport_pass``.
"""

from faux.audit.face import lazy

#: name -> the module of this package that defines it
_WHERE = {
    "fit_transport": "transport",
    "carried": "transport_pass",
    "counterfactual": "effects",
    "Space": "effects",
    "null_nets_for": "effect_pass",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy(__name__, _WHERE)
