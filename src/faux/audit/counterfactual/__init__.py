"""Counterfactuals: the same person in the other group. By transport (non-descendants of the
protected attribute held fixed, the rest carried keeping the person's position) or by the aux
model's inverse; and each one's pass over the data.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``effect_pass``, ``effects``, ``swaps``, ``transport``, ``transport_pass``.
"""

import importlib

#: name -> the module of this package that defines it
_WHERE = {
    "fit_transport": "transport",
    "carried": "transport_pass",
    "counterfactual": "effects",
    "Space": "effects",
    "null_nets_for": "effect_pass",
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
