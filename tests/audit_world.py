"""The planted-proxy data the audit tests share: a binary protected attribute ``c`` carried by
``proxy`` (c + noise, AUROC ~0.95), and features x1..x3 independent of it."""

import numpy as np
import pandas as pd


def proxy_world(n: int, seed: int = 0, x2_scale: float = 1.0):
    """``(X, c)``: X has columns x1, x2 (std ``x2_scale``), x3 and proxy."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": x2_scale * rng.normal(size=n),
                      "x3": rng.normal(size=n), "proxy": c + 0.3 * rng.normal(size=n)})
    return X, c
