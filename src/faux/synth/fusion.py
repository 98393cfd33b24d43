"""Fusion functions and the linear projections that undo them (paper A.7.2, eqs. 32-37).

``x_hat`` (the y-side, dimension N̂) and ``x_tilde`` (the c-side, dimension Ñ) are rows of
mode probabilities, so each sums to its number of features (``s_hat``, ``s_tilde``).

* concat: ``x = [x_hat, x_tilde]``; ``W_hat = [I, 0]``, ``W_tilde = [0, I]``.
* outer: ``x = vec(x_hat ⊗ x_tilde)`` with x_hat the slow index, ``x[i*Ñ + j] =
  x_hat[i] * x_tilde[j]``; ``W_hat = (I_N̂ ⊗ 1_Ñᵀ) / s_tilde`` and
  ``W_tilde = (1_N̂ᵀ ⊗ I_Ñ) / s_hat``. The paper writes the factors as 1/Ñ and 1/N̂ while
  assuming each vector sums to 1; the exact factor is the other vector's sum, i.e. its number
  of features (for a row that sums to 1 the factor is 1).

Projections are ``(out, in)`` matrices: ``x_hat = x @ W_hat.T``, usable as fixed first layers.
"""

from __future__ import annotations

import torch

from faux.errors import ConfigError
from faux.synth.generator_settings import FUSIONS


def _check(kind: str) -> str:
    if kind not in FUSIONS:
        raise ConfigError(f"unknown fusion {kind!r}; choose one of {', '.join(FUSIONS)}")
    return kind


def fused_dim(n_hat: int, n_tilde: int, kind: str) -> int:
    return n_hat + n_tilde if _check(kind) == "concat" else n_hat * n_tilde


def fuse(x_hat: torch.Tensor, x_tilde: torch.Tensor, kind: str) -> torch.Tensor:
    """Fuse row-aligned ``(n, N̂)`` and ``(n, Ñ)`` into ``(n, N̂+Ñ)`` or ``(n, N̂·Ñ)``."""
    if x_hat.shape[0] != x_tilde.shape[0]:
        raise ConfigError(f"fuse needs the same number of rows, got {x_hat.shape[0]} and "
                          f"{x_tilde.shape[0]}")
    if _check(kind) == "concat":
        return torch.cat([x_hat, x_tilde], dim=1)
    return (x_hat[:, :, None] * x_tilde[:, None, :]).reshape(x_hat.shape[0], -1)


def projections(n_hat: int, n_tilde: int, kind: str, s_hat: float = 1.0,
                s_tilde: float = 1.0, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """``(W_hat, W_tilde)`` with ``x_hat = x @ W_hat.T`` and ``x_tilde = x @ W_tilde.T``.

    ``s_hat``/``s_tilde`` are the row sums of x_hat/x_tilde (numbers of features); only the
    outer fusion needs them.
    """
    if _check(kind) == "concat":
        w_hat = torch.cat([torch.eye(n_hat), torch.zeros(n_hat, n_tilde)], dim=1)
        w_tilde = torch.cat([torch.zeros(n_tilde, n_hat), torch.eye(n_tilde)], dim=1)
    else:
        if not (s_hat > 0 and s_tilde > 0):
            raise ConfigError(f"outer-fusion projections need positive row sums, got "
                              f"s_hat={s_hat}, s_tilde={s_tilde}")
        w_hat = torch.kron(torch.eye(n_hat), torch.ones(1, n_tilde)) / float(s_tilde)
        w_tilde = torch.kron(torch.ones(1, n_hat), torch.eye(n_tilde)) / float(s_hat)
    return w_hat.to(dtype), w_tilde.to(dtype)
