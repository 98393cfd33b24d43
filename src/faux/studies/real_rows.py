"""The rows of one real-data job (step 1 of :mod:`faux.studies.real`).

The training split, subsampled to ``max_train_rows`` (seeded) when set; the validation split
for early stopping and probes; ``n_score`` individuals drawn (seeded) from the test split,
the ones every method scores under every target; the test rows with c = 0, over which the
transparency reports are taken.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faux.data.real import RealData
from faux.errors import DataError
from faux.studies.real_settings import RealSettings


def subsample(n: int, max_rows: int | None, seed: int) -> np.ndarray:
    """Sorted indices of ``min(n, max_rows)`` rows drawn without replacement (all when None)."""
    if max_rows is None or int(max_rows) >= n:
        return np.arange(n)
    rng = np.random.default_rng(int(seed))
    return np.sort(rng.choice(n, size=int(max_rows), replace=False))


def _check_groups(c: np.ndarray, what: str, name: str, fix: str) -> None:
    values = np.unique(c)
    if values.size < 2:
        raise DataError(f"{name}: the protected attribute takes the single value "
                        f"{values.tolist()} in the {what} ({c.size} rows); {fix}")


@dataclass
class Rows:
    x: np.ndarray
    y: np.ndarray
    c: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    c_val: np.ndarray
    x_score: np.ndarray
    y_score: np.ndarray
    c_score: np.ndarray
    score_idx: np.ndarray    # rows of the test split that are scored
    x0: np.ndarray           # test rows with c = 0 (transparency reports)


def select_rows(data: RealData, settings: RealSettings, seed: int) -> Rows:
    """Training subsample, validation split, scored test individuals, c = 0 test rows."""
    tr = subsample(len(data.y_train), settings.max_train_rows, seed)
    te = subsample(len(data.y_test), settings.n_score, seed + 7919)
    rows = Rows(data.X_train[tr], data.y_train[tr], data.c_train[tr], data.X_val,
                data.y_val, data.c_val, data.X_test[te], data.y_test[te], data.c_test[te], te,
                data.X_test[data.c_test == 0])
    _check_groups(rows.c, "training subsample", data.name,
                  "raise profile.real.max_train_rows or use another seed")
    _check_groups(rows.c_val, "validation split", data.name,
                  "raise real_study.val_frac or use another seed")
    if rows.x0.shape[0] == 0:
        raise DataError(f"{data.name}: no test rows with c = 0 for the transparency reports; "
                        f"use another seed or a larger test_frac")
    return rows
