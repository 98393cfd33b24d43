"""The aux model's feature ranking (the transparency report of fAux, one-hot groups
aggregated): which features carry the protected attribute."""

from __future__ import annotations

import numpy as np


def feature_groups(features) -> list[str]:
    """Original feature of each column: the part before '=' of one-hot names ('sex=Male')."""
    return [f.split("=", 1)[0] if "=" in f else f for f in features]


def feature_ranking(aux_z, z_sample: np.ndarray, features) -> dict:
    import torch

    from faux.methods.builtin import FAuxMethod
    from faux.methods.transparency import aggregate_groups, faux_report

    r = faux_report(aux_z, torch.as_tensor(z_sample, dtype=torch.float32), FAuxMethod.name)
    if r.ndim == 2:  # k outputs: a feature matters if it matters for any of them
        r = r.amax(dim=0)
    agg = aggregate_groups(r, feature_groups(features))
    return dict(sorted(agg.items(), key=lambda kv: -kv[1]))
