"""A model blind to declared proxy edits by construction.

:class:`MergeEdits` replaces each edited pair of one-hot columns ``(a, b)`` by their sum, in
both places: a network on its output cannot tell the two levels apart, so the edit
``a <-> b`` cannot move it (e.g. Adult's ``relationship=Husband`` and ``relationship=Wife``
become one "spouse" column). :class:`ProxyBlind` is such a network with the merge in front; it
keeps the inner network's ``hidden(x)`` so the fairness check can probe it.
:func:`train_proxy_blind` trains the unfair target's recipe (any spec with
``train(x, t, x_val, t_val, seed=..., **kwargs)``) on the merged columns.

It is "fair" in one narrow, exact sense: counterfactually invariant to the declared edit (its
proxy swap is 0), while everything else it reads stays as it was (it can still read c from
other proxies).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from faux.errors import ConfigError


class MergeEdits(torch.nn.Module):
    """x with each edited pair of columns (a, b) replaced by their sum in both places."""

    def __init__(self, pairs: Sequence[tuple[int, int]], d: int):
        super().__init__()
        m = torch.eye(int(d))
        for i, j in pairs:
            if not (0 <= i < d and 0 <= j < d) or i == j:
                raise ConfigError(f"a proxy edit merges two distinct columns of {d}; "
                                  f"got ({i}, {j})")
            m[i, j] = m[j, i] = 1.0
        self.register_buffer("m", m)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.m


class ProxyBlind(torch.nn.Module):
    """``net(merge(x))``, with ``hidden(x) = net.hidden(merge(x))`` (for the fairness probe)."""

    def __init__(self, merge: MergeEdits, net: torch.nn.Module):
        super().__init__()
        self.merge, self.net = merge, net

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        return self.net.hidden(self.merge(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.merge(x))


def train_proxy_blind(spec, pairs: Sequence[tuple[int, int]], x, y, x_val, y_val, *,
                      seed: int, **kwargs) -> tuple[ProxyBlind, dict]:
    """Train ``spec`` on the columns merged by ``pairs``; the model takes the original x."""
    if not pairs:
        raise ConfigError("a proxy-blind model needs at least one declared proxy edit")
    x = np.asarray(x, dtype=np.float32)
    merge = MergeEdits(pairs, x.shape[1])

    def merged(a):
        with torch.no_grad():
            return merge(torch.as_tensor(np.asarray(a, dtype=np.float32))).numpy()

    net, info = spec.train(merged(x), y, merged(x_val), y_val, seed=seed, **kwargs)
    return ProxyBlind(merge, net).eval(), info
