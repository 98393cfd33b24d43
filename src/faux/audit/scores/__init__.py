"""fAux's diagnostic scores: the aux models that predict the protected attribute, the gradient
scores of a batch, their calibrated thresholds under permuted aux models, the feature ranking
and the baselines.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``aux``, ``aux_family``, ``baselines``, ``calibration``, ``methods``, ``ranking``, ``scoring``.
"""

import importlib

#: name -> the module of this package that defines it
_WHERE = {
    "Scorer": "scoring",
    "GradientMemo": "scoring",
    "train_aux_family": "aux",
    "null_scores": "calibration",
    "NullSettings": "calibration",
    "null_quantile": "calibration",
    "feature_ranking": "ranking",
    "sample_baselines": "baselines",
    "audit_methods": "methods",
    "default_methods": "methods",
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
