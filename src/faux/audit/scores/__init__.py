"""fAux's diagnostic scores: the aux models that predict the protected attribute, the gradient
scores of a batch, their calibrated thresholds under permuted aux models, the feature ranking
and the baselines.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``aux``, ``aux_family``, ``baselines``, ``calibration``, ``methods``, ``ranking``, ``scoring``.
"""

from faux.audit.face import lazy

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

__getattr__, __dir__ = lazy(__name__, _WHERE)
