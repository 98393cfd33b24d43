"""Ground-truth individual fairness scores (paper A.7.6, eq. 38) and their binary labels.

``IFS(x) = |f(x) - f(x')|`` where x' is the counterfactual of x (same latents and decoding
noise, c flipped) and f is ``sigmoid(logit)`` (``output="prob"``) or the logit itself.
The threshold is ``mean + k * std`` of the IFS of the same target recipe trained on
bias-0 data of the same pair and fusion (the "variance of the IFS in the absence of bias").
"""

from __future__ import annotations

import torch

from faux.errors import ConfigError

OUTPUTS = ("prob", "logit")


def _out(target: torch.nn.Module, x: torch.Tensor, output: str, batch_size: int) -> torch.Tensor:
    if output not in OUTPUTS:
        raise ConfigError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
    chunks = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch_size):
            o = target(x[i:i + batch_size])
            if o.ndim == 2:
                if o.shape[1] != 1:
                    raise ConfigError(f"target must return logits of shape (n,) or (n, 1), "
                                      f"got {tuple(o.shape)}")
                o = o[:, 0]
            chunks.append(torch.sigmoid(o) if output == "prob" else o)
    return torch.cat(chunks) if chunks else torch.zeros(0)


def ifs(target: torch.nn.Module, x: torch.Tensor, x_cf: torch.Tensor, output: str = "prob",
        batch_size: int = 8192) -> torch.Tensor:
    """Per-individual ``|f(x) - f(x')|``, shape ``(n,)``."""
    if x.shape != x_cf.shape:
        raise ConfigError(f"x and x_cf must have the same shape, got {tuple(x.shape)} and "
                          f"{tuple(x_cf.shape)}")
    was_training = target.training
    target.eval()
    try:
        return (_out(target, x, output, batch_size) - _out(target, x_cf, output, batch_size)).abs()
    finally:
        target.train(was_training)


def ifs_threshold(ifs_bias0: torch.Tensor, k: float) -> float:
    """``mean + k * std`` of the IFS measured on a target trained on bias-0 data."""
    v = torch.as_tensor(ifs_bias0, dtype=torch.float64).reshape(-1)
    if v.numel() < 2:
        raise ConfigError("ifs_threshold needs the IFS of at least 2 bias-0 points")
    return float(v.mean() + float(k) * v.std())


def ifs_labels(ifs_values: torch.Tensor, threshold: float) -> torch.Tensor:
    """1 where the IFS exceeds the threshold (the individual is treated unfairly), int64."""
    return (torch.as_tensor(ifs_values) > float(threshold)).long()


def positive_rate(labels: torch.Tensor) -> float:
    labels = torch.as_tensor(labels)
    return float(labels.float().mean()) if labels.numel() else float("nan")
