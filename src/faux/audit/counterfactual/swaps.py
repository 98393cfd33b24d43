"""The categorical part of a counterfactual (``faux.audit.counterfactual.effects.counterfactual``): one-hot
blocks (and 0/1 columns) are swapped whole to another level, never moved fractionally. Each
round, per row, the swap that moves the aux furthest towards its target is applied; the
continuous path then covers what is left."""

from __future__ import annotations

import torch

from faux.audit.sources.layout import Block, current_level


def _swap(z: torch.Tensor, block: Block, level: int, x_mean, x_scale) -> torch.Tensor:
    """``z`` with ``block`` set to its ``level``."""
    z = z.clone()
    cols = list(block.columns)
    vals = torch.as_tensor(block.codes[level], dtype=z.dtype, device=z.device)
    z[:, cols] = ((vals - x_mean[cols]) / x_scale[cols]).expand(z.shape[0], -1)
    return z


def _at(t, idx):
    """``t[idx]`` for a per-row tensor; a scalar or None as it is."""
    return t[idx] if isinstance(t, torch.Tensor) and t.dim() > 0 else t


@torch.no_grad()
def swaps(scalar_at, z, target, sign, layout, x_mean, x_scale, allowed=None):
    """Greedy categorical swaps: ``scalar_at(rows, idx)`` is the aux's scalar at ``rows``, a
    changed copy of the rows ``idx`` of ``z``. Each round, per row, the swap among the blocks
    not yet swapped that moves the aux furthest towards ``target`` is applied while the target
    is not reached. ``allowed(bi, current_levels, candidate)``: a (n,) mask of the rows that may
    make that swap (None: all). Returns the new rows and (n, n_blocks) new level indices
    (-1: unchanged)."""
    n, nb = z.shape[0], len(layout.blocks)
    z = z.clone()
    moved = torch.full((n, nb), -1, dtype=torch.long, device=z.device)
    if nb == 0:
        return z, moved
    cur = [current_level(z, b, x_mean, x_scale) for b in layout.blocks]
    for _ in range(nb):
        now = scalar_at(z, torch.arange(n, device=z.device))
        todo = sign * (target - now) > 0
        if not bool(todo.any()):
            break
        best_gain = torch.zeros(n, dtype=now.dtype, device=z.device)
        best_b = torch.full((n,), -1, dtype=torch.long, device=z.device)
        best_l = torch.full((n,), -1, dtype=torch.long, device=z.device)
        for bi, block in enumerate(layout.blocks):
            free = moved[:, bi] < 0
            for li in range(len(block.levels)):
                if not block.is_target(li):  # the values the encoder never saw
                    continue
                may = free & todo & (cur[bi] != li)
                if allowed is not None:
                    may = may & allowed(bi, cur[bi], li)
                idx = may.nonzero().squeeze(1)
                if idx.numel() == 0:  # no row may take this level: skip the aux call
                    continue
                sub = _swap(z[idx], block, li, x_mean, x_scale)
                gain = _at(sign, idx) * (scalar_at(sub, idx) - now[idx])
                better = gain > best_gain[idx]
                pick = idx[better]
                best_gain[pick] = gain[better]
                best_b[pick] = bi
                best_l[pick] = li
        if not bool((best_b >= 0).any()):
            break
        for bi, block in enumerate(layout.blocks):
            rows = best_b == bi
            if not bool(rows.any()):
                continue
            for li in torch.unique(best_l[rows]).tolist():
                r = rows & (best_l == li)
                z[r] = _swap(z[r], block, li, x_mean, x_scale)
                moved[r, bi] = li
    return z, moved
