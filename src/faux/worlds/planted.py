"""The project's own planted world (``tests/audit_world.py``'s ``proxy_world``, the world the
audit's tests use), for comparison: c ~ Bernoulli(0.5), x1..x3 ~ N(0, 1) independent of c,
``proxy = c + 0.3 N(0, 1)``; the label of ``tests/test_audit_effects.py``,
``1[x1 + 1.5 proxy + 0.3 N(0, 1) > 0.75]``. The counterfactual flips c and holds the noise:
``proxy + (1 - 2c)``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faux.worlds.world import World


def planted_world(n: int = 8000, seed: int = 0) -> World:
    """The draws of ``proxy_world(n, seed)``, in its order, and its label."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n),
                      "x3": rng.normal(size=n), "proxy": c + 0.3 * rng.normal(size=n)})
    noise = np.random.default_rng(seed + 1).normal(size=n)
    y = (X["x1"].to_numpy() + 1.5 * X["proxy"].to_numpy() + 0.3 * noise > 0.75).astype(int)
    X_cf = X.copy()
    X_cf["proxy"] = X["proxy"] + (1 - 2 * c)
    return World(name="planted", description="the audit tests' planted proxy: proxy = c + "
                 "0.3 N(0, 1), x1..x3 independent; y = 1[x1 + 1.5 proxy + 0.3 N(0, 1) > 0.75]",
                 X=X, c=c, X_cf=X_cf, descendants=["proxy"], y=y, source="planted",
                 meta={"seed": seed})
