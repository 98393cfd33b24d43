"""The Adel network: an MLP predictor of y and an adversary reading its last hidden layer."""

from __future__ import annotations

import torch
from torch import nn

from faux.errors import ConfigError
from faux.models.mlp import MLP


class AdelNet(nn.Module):
    """Predictor ``net`` (x -> logits of y) and ``adversary`` (hidden layer -> logits of s)."""

    def __init__(self, d_in: int, width: int = 64, depth: int = 2, d_out: int = 1,
                 d_adv: int = 1, adv_width: int = 32, adv_depth: int = 1,
                 adv_norm: bool = False, hide_on: str = "hidden",
                 last_width: int | None = None):
        super().__init__()
        self.adv_norm = bool(adv_norm)
        self.hide_on = str(hide_on)
        if int(depth) < 1:
            raise ConfigError(f"the Adel model needs depth >= 1 (a hidden layer for the "
                              f"adversary to read); got depth={depth}")
        self.net = MLP(d_in, width, depth, d_out, last_width=last_width)
        self.adversary = MLP(self.net.hidden_width, adv_width, adv_depth, d_adv)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        return self.net.hidden(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def residual(self, h: torch.Tensor) -> torch.Tensor:
        """h less its component along the head's weights (detached): every direction of the
        hidden layer but the one(s) the score reads."""
        w = self.net.head.weight.detach()                      # (d_out, width)
        q, _ = torch.linalg.qr(w.T)                            # orthonormal basis of the rows
        return h - (h @ q) @ q.T

    def hide_view(self, h: torch.Tensor) -> torch.Tensor:
        """What the penalties that hide s read: h (``hide_on="hidden"``) or its residual."""
        return self.residual(h) if self.hide_on == "residual" else h

    def adversary_input(self, h: torch.Tensor) -> torch.Tensor:
        """What the adversary reads: h (or its residual, ``hide_on``), standardised per unit
        over the batch with ``adv_norm`` (the predictor cannot hide s by shrinking h below the
        adversary's resolution)."""
        h = self.hide_view(h)
        if not self.adv_norm:
            return h
        return (h - h.mean(0)) / (h.std(0, unbiased=False) + 1e-6)

    def adversary_logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.adversary(self.adversary_input(self.hidden(x)))
