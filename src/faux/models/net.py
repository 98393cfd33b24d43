"""The MLP network itself and the checks of classification data, without Lightning;
``faux.models.mlp`` re-exports every name here (the same objects) and adds the training."""

from __future__ import annotations

import torch
from torch import nn

from faux.errors import ConfigError, DataError
from faux.models.tensors import as_binary, as_features


class MLP(nn.Module):
    """``depth`` ReLU hidden layers of ``width`` units, then a linear head of ``d_out`` logits.

    ``last_width``: the last hidden layer's width when it differs (a narrow layer after wide
    ones); ``hidden_width`` is the width of what :meth:`hidden` returns."""

    def __init__(self, d_in: int, width: int = 64, depth: int = 2, d_out: int = 1,
                 projection: torch.Tensor | None = None, last_width: int | None = None):
        super().__init__()
        if int(d_in) < 1 or int(d_out) < 1:
            raise ConfigError(f"MLP needs d_in >= 1 and d_out >= 1 (got {d_in}, {d_out})")
        if int(depth) < 0 or (int(depth) > 0 and int(width) < 1):
            raise ConfigError(f"MLP needs depth >= 0 and width >= 1 (got depth={depth}, "
                              f"width={width})")
        self.d_in, self.width, self.depth, self.d_out = int(d_in), int(width), int(depth), int(d_out)
        if projection is not None:
            projection = torch.as_tensor(projection, dtype=torch.float32)
            if projection.ndim != 2 or projection.shape[1] != self.d_in:
                raise ConfigError(f"projection must have shape (k, {self.d_in}); got "
                                  f"{tuple(projection.shape)}")
            self.register_buffer("projection", projection.clone())
            k = projection.shape[0]
        else:
            self.projection = None
            k = self.d_in
        if last_width is not None and int(last_width) < 1:
            raise ConfigError(f"MLP needs last_width >= 1 or None (got {last_width})")
        self.last_width = None if last_width is None else int(last_width)
        layers: list[nn.Module] = []
        for i in range(self.depth):
            w = self.last_width if (self.last_width and i == self.depth - 1) else self.width
            layers += [nn.Linear(k, w), nn.ReLU()]
            k = w
        self.hidden_width = k
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(k, self.d_out)

    def _check(self, x: torch.Tensor) -> None:
        if x.ndim != 2 or x.shape[1] != self.d_in:
            raise DataError(f"MLP expects inputs of shape (n, {self.d_in}); got "
                            f"{tuple(x.shape)}: pass the features the model was trained on")

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """Activations of the last hidden layer (the projected input when depth is 0)."""
        self._check(x)
        if self.projection is not None:
            x = x @ self.projection.T
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.head(self.hidden(x))
        return out.squeeze(-1) if self.d_out == 1 else out


def mlp_accuracy(net: nn.Module, x: torch.Tensor, t: torch.Tensor) -> float:
    """Fraction of labels ``t`` that the sign of ``net``'s logits gets right."""
    with torch.no_grad():
        return float(((net(x) > 0).float() == t).float().mean())


def check_classification_data(x, t, x_val=None, t_val=None):
    """``(x, t, val)`` checked and converted for a classifier: float32 CPU tensors, binary
    labels (n,) or (n, k), ``val`` ``(x_val, t_val)`` or None; DataError naming the fix."""
    x = as_features(x, "x")
    t = as_binary(t, x.shape[0], "t")
    val = None
    if x_val is not None:
        x_val = as_features(x_val, "x_val", d=x.shape[1])
        t_val = as_binary(t_val, x_val.shape[0], "t_val") if t_val is not None else None
        if t_val is None or t_val.shape[1:] != t.shape[1:]:
            raise DataError("t_val must be given with x_val and have the same columns as t")
        val = (x_val, t_val)
    return x, t, val
