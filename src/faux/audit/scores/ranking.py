"""The aux model's feature ranking (the transparency report of fAux, one-hot groups
aggregated): which features carry the protected attribute."""

from __future__ import annotations

import numpy as np


def feature_groups(features, layout) -> list[str]:
    """The feature each column belongs to: its categorical block's name (one-hot columns of
    one feature, from the model's encoders or ``Layout.infer``), else its own name."""
    owner = {j: b.name for b in layout.blocks for j in b.columns}
    return [owner.get(j, str(f)) for j, f in enumerate(features)]


def feature_ranking(aux_z, z_sample: np.ndarray, groups) -> dict:
    """How much each feature (``groups``: each column's feature) moves the aux model's
    reading of the protected attribute, one-hot columns of a feature aggregated."""
    import torch

    from faux.methods.builtin import FAuxMethod
    from faux.methods.transparency import aggregate_groups, faux_report

    r = faux_report(aux_z, torch.as_tensor(z_sample, dtype=torch.float32), FAuxMethod.name)
    if r.ndim == 2:  # k outputs: a feature matters if it matters for any of them
        r = r.amax(dim=0)
    agg = aggregate_groups(r, list(groups))
    return dict(sorted(agg.items(), key=lambda kv: -kv[1]))
