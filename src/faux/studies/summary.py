"""The `summary` job: load the selected dataset and report its shape."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faux.data.spec import DatasetSpec

JOB = "summary"


@dataclass(frozen=True)
class Settings:
    data: DatasetSpec
    seed: int
    data_dir: str

    @classmethod
    def from_config(cls, cfg: dict) -> Settings:
        from hydra.utils import instantiate

        return cls(instantiate(cfg["data"]), int(cfg["seed"]), cfg["paths"]["data_dir"])


def run(s: Settings, out_dir, log) -> dict:
    name = s.data.name
    if s.data.kind == "real":
        ds = s.data.load(root=s.data_dir, seed=s.seed)
        n_rows = len(ds.y_train) + len(ds.y_val) + len(ds.y_test)
        n_features = int(ds.X_train.shape[1])
        pos = float(np.concatenate([ds.y_train, ds.y_val, ds.y_test]).mean())
    else:
        ds = s.data.load(root=s.data_dir)
        n_rows, n_features, pos = ds.n_rows, ds.n_features, float(ds.y.mean())
    log(f"{name}: {n_rows} rows x {n_features} features, positive rate {pos:.3f}")
    return {"dataset": name, "n_rows": n_rows, "n_features": n_features, "positive_rate": pos}
