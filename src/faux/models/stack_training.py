"""The epoch loop of a stack of networks trained together, each with its own early stopping.

A stack holds ``E`` networks of one shape in stacked parameters (member ``e`` at index ``e``
of every parameter), so one optimiser step updates every member; a loss summed over the
members gives each its own gradient, and Adam acts element by element. :func:`train_stack`
runs the epochs and keeps, per member, what ``fit`` keeps for a single network: the best
validation loss and its epoch (``RestoreBest``) and the patience counter
(``EarlyStopping``, which also stops on a non-finite loss). A member that stops leaves the
stack: the stack and its optimiser's state are sliced to the members still training (exact,
as the state is per element). Each member ends with its best epoch's weights, or its last
ones when no epoch had a validation loss.

The caller supplies the stack (``parameters()``, ``keep(rows)``) and two steps: one
training epoch of the active members and their validation losses. Both the studies' stacked
MLPs (``faux.models.stacked``) and the audit's aux family (``faux.audit.scores.aux_family``) train
through it. Nothing here imports Lightning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch


def keep_members(stack: torch.nn.Module, opt: torch.optim.Optimizer, rows: torch.Tensor,
                 make_opt: Callable) -> torch.optim.Optimizer:
    """Slice the stack (``stack.keep(rows)``) and its optimiser's per-element state to the
    members at ``rows``; returns the new optimiser over the sliced parameters."""
    states = [opt.state.get(p, {}) for p in stack.parameters()]
    stack.keep(rows)
    new_opt = make_opt(stack.parameters())
    for p, state in zip(stack.parameters(), states):
        new_opt.state[p] = {k: (v[rows].clone() if torch.is_tensor(v) and v.ndim > 0 else
                                (v.clone() if torch.is_tensor(v) else v))
                            for k, v in state.items()}
    return new_opt


@dataclass
class StackRun:
    """What :func:`train_stack` returns, per member ``m`` (in the stack's first order)."""

    weights: list[torch.Tensor]     # per parameter: (E, ...), member m's returned weights at m
    epochs: list[int]               # epochs it trained
    best_epoch: list[int]           # its best validation epoch (-1: none)
    best_val_loss: list[float]      # that epoch's validation loss (inf: none)


@dataclass
class _Stopping:
    """Per-member bookkeeping of the best epoch and of the patience counter."""

    patience: int | None
    best: list[float]
    best_epoch: list[int]
    es_best: list[float]
    wait: list[int]

    @classmethod
    def of(cls, n: int, patience: int | None) -> _Stopping:
        return cls(patience, [math.inf] * n, [-1] * n, [math.inf] * n, [0] * n)

    def update(self, epoch: int, active: list[int], losses) -> tuple[list, list]:
        """Record one epoch's validation losses of the ``active`` members: the ``(row,
        member)`` pairs that improved on their best, and the rows that stop now."""
        improved, stopped = [], []
        for row, (m, v) in enumerate(zip(active, losses)):
            if v < self.best[m]:
                self.best[m], self.best_epoch[m] = v, epoch
                improved.append((row, m))
            if self.patience is None:
                continue
            if not math.isfinite(v):
                stopped.append(row)
            elif v < self.es_best[m]:
                self.es_best[m], self.wait[m] = v, 0
            else:
                self.wait[m] += 1
                if self.wait[m] >= int(self.patience):
                    stopped.append(row)
        return improved, stopped


def train_stack(stack: torch.nn.Module, make_opt: Callable, *, max_epochs: int,
                patience: int | None, run_epoch: Callable, val_losses: Callable,
                device=None) -> StackRun:
    """Train every member of ``stack`` with its own early stopping; see the module doc.

    ``make_opt(params)`` builds the optimiser (again whenever members leave).
    ``run_epoch(epoch, active, opt)`` runs one epoch's optimiser steps of the members
    ``active`` (their indices in the first order; row ``i`` of the stack is ``active[i]``).
    ``val_losses(epoch, active)`` returns their validation losses (floats, in that order), or
    None without validation data (every epoch runs; nothing is restored). ``device``: where
    the row indices are built (the stack's device).
    """
    n = len(next(iter(stack.parameters())))
    opt = make_opt(stack.parameters())
    active = list(range(n))
    epochs = [0] * n
    stop = _Stopping.of(n, patience)
    with torch.no_grad():
        best_w = [p.detach().clone() for p in stack.parameters()]
    final: dict[int, list[torch.Tensor]] = {}
    for epoch in range(int(max_epochs)):
        if not active:
            break
        run_epoch(epoch, active, opt)
        for m in active:
            epochs[m] += 1
        losses = val_losses(epoch, active)
        if losses is None:
            continue
        improved, stopped = stop.update(epoch, active, losses)
        if improved:
            rows = torch.tensor([i for i, _ in improved], device=device)
            ids = torch.tensor([m for _, m in improved], device=device)
            with torch.no_grad():
                for bw, p in zip(best_w, stack.parameters()):
                    bw[ids] = p[rows]
        if stopped:
            for row in stopped:
                final[active[row]] = [p.detach()[row].clone() for p in stack.parameters()]
            keep = [row for row in range(len(active)) if row not in stopped]
            active = [active[row] for row in keep]
            if active:
                opt = keep_members(stack, opt, torch.tensor(keep, device=device), make_opt)
    for row, m in enumerate(active):
        final[m] = [p.detach()[row].clone() for p in stack.parameters()]
    # every member's returned weights: its best validation epoch if it had one, else its last
    with torch.no_grad():
        for i in range(len(best_w)):
            for m in range(n):
                if stop.best_epoch[m] < 0:
                    best_w[i][m] = final[m][i]
    return StackRun(best_w, epochs, stop.best_epoch, stop.best)
