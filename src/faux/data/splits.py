"""Deterministic train / validation / test splits of row indices."""

from __future__ import annotations

import numpy as np

from faux.errors import ConfigError, DataError


def check_fractions(val_frac: float, test_frac: float) -> None:
    """Raise ``ConfigError`` unless ``0 < val_frac``, ``0 < test_frac`` and their sum is < 1."""
    for label, frac in (("val_frac", val_frac), ("test_frac", test_frac)):
        if not isinstance(frac, int | float) or not 0.0 < float(frac) < 1.0:
            raise ConfigError(f"{label} must be a fraction in (0, 1), got {frac!r}")
    if val_frac + test_frac >= 1.0:
        raise ConfigError(f"val_frac + test_frac must be < 1 to leave training rows, got "
                          f"{val_frac} + {test_frac}")


def split_indices(n: int, seed: int, val_frac: float = 0.15, test_frac: float = 0.15,
                  stratify=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split ``range(n)`` into sorted ``(train_idx, val_idx, test_idx)`` (int64 arrays).

    ``test_frac`` and ``val_frac`` are fractions of all ``n`` rows. The same ``seed`` gives the
    same split. ``stratify`` (length ``n``, e.g. ``2*y + c``) keeps its class proportions in each
    split; a class with too few members to stratify raises ``DataError``.
    """
    from sklearn.model_selection import train_test_split

    check_fractions(val_frac, test_frac)
    n = int(n)
    if stratify is not None:
        stratify = np.asarray(stratify)
        if stratify.shape != (n,):
            raise DataError(f"stratify has shape {stratify.shape}, expected ({n},); pass one "
                            f"label per row")
    idx = np.arange(n, dtype=np.int64)
    try:
        rest, test = train_test_split(idx, test_size=float(test_frac), random_state=seed,
                                      stratify=stratify)
        val_size = float(val_frac) / (1.0 - float(test_frac))
        train, val = train_test_split(rest, test_size=val_size, random_state=seed,
                                      stratify=None if stratify is None else stratify[rest])
    except ValueError as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot split {n} rows into val_frac={val_frac}, test_frac="
                        f"{test_frac} ({why}); use more rows, other fractions or "
                        f"stratify=None") from exc
    return np.sort(train), np.sort(val), np.sort(test)
