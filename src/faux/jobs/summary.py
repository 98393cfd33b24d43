"""The `summary` job: load the selected dataset and report its shape."""

from __future__ import annotations

import numpy as np


def run(cfg: dict, out_dir, log) -> dict:
    from faux.data.registry import load

    data_cfg = cfg["data"]
    ds = load(data_cfg["name"], root=cfg["paths"]["data_dir"], seed=cfg["seed"]) \
        if data_cfg["kind"] == "real" else load(data_cfg["name"], root=cfg["paths"]["data_dir"])
    if data_cfg["kind"] == "real":
        n_rows = len(ds.y_train) + len(ds.y_val) + len(ds.y_test)
        n_features = int(ds.X_train.shape[1])
        pos = float(np.concatenate([ds.y_train, ds.y_val, ds.y_test]).mean())
    else:
        n_rows, n_features, pos = ds.n_rows, ds.n_features, float(ds.y.mean())
    log(f"{data_cfg['name']}: {n_rows} rows x {n_features} features, positive rate {pos:.3f}")
    return {"dataset": data_cfg["name"], "n_rows": n_rows, "n_features": n_features,
            "positive_rate": pos}
