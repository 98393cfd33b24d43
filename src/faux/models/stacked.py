"""Stacked networks: ``E`` MLPs of one shape trained together as one batched network.

A cell of a study retrains the same recipe once per seed (the aux model's seeds, FlipTest's
GANs). At batch 64 one optimiser step of a small MLP costs far less than the operator
dispatches (and Lightning hooks) around it, so training the seeds one after another is
mostly overhead. :class:`StackedMLP` holds member ``e``'s layer weights at index ``e`` of
(E, in, out) tensors and runs every member with one ``torch.baddbmm`` per layer; a loss
summed over the members gives each member exactly its own gradient, and Adam, RMSprop and
weight clipping act element by element, so every member trains as it would alone.

:func:`train_mlps_stacked` is :func:`faux.models.mlp.train_mlp` for several seeds at once:
member ``s`` starts from the initial weights seed ``s`` gives, sees the mini-batches of
seed ``s``'s own shuffling generator in the same order, and stops early on its own
validation loss with its own patience (the loop of :mod:`faux.models.stack_training`: a
member that stops leaves the stack, its best-epoch weights restored as the single path
restores them). The loop is plain PyTorch rather than a Lightning ``fit``: members leave the
stack mid-training, which rebuilds the optimiser, and Lightning's loop owns its optimisers.

Exactness. :func:`train_mlp_stack` runs each layer through :class:`_StackedLinear`
(``StackedMLP(..., exact=True)``), which uses the kernels the single network's ``nn.Linear``
uses, and Adam is the single-tensor update ``train_mlp``'s Adam runs on CPU. At the shapes
the studies train every member then equals the separately trained network to float32
rounding; at toy shapes MKL may pick other kernels for the batched and the single matmul,
and members drift by an ulp per step. The validation loss that drives early stopping is
summed in another order than Lightning's, so a stop could differ only at a near-tie.
FlipTest's GANs keep the plain batched kernels (faster, an ulp per step from single
networks). What was measured, machine by machine: docs/notebook/training_loops.md.
"""

from __future__ import annotations

import time

import torch
from torch.nn import functional as F

from faux.errors import ConfigError
from faux.models.mlp import MLP, MLPSpec, check_classification_data, mlp_accuracy
from faux.models.stack_training import train_stack
from faux.models.tensors import TensorBatches, n_params
from faux.models.training import curve_loggers, resolve_device


class _StackedLinear(torch.autograd.Function):
    """``baddbmm(b, h, w)`` (member ``e``: ``h[e] @ w[e] + b[e]``) computed with the kernels
    the single network's ``nn.Linear`` uses, so every member rounds exactly as it would alone.

    On MKL (CPU) a batched matmul equals the single ``addmm`` except with one
    output column (the head; MKL's matrix-vector path), so that layer's forward runs one
    ``addmm`` per member; autograd's weight gradient of ``baddbmm`` (``hᵀ g``) rounds
    differently from ``nn.Linear``'s (``gᵀ h``) for narrow inputs, so the backward computes
    ``gᵀ h`` batched, which equals it for every shape tried (tests/test_models_stacked.py
    holds the members to bit equality)."""

    @staticmethod
    def forward(ctx, h, w, b):
        ctx.save_for_backward(h, w)
        if w.shape[-1] == 1:
            return torch.stack([torch.addmm(b[e], h[e], w[e]) for e in range(w.shape[0])])
        return torch.baddbmm(b, h, w)

    @staticmethod
    def backward(ctx, g):
        h, w = ctx.saved_tensors
        gh = torch.bmm(g, w.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        gw = torch.bmm(g.transpose(1, 2), h).transpose(1, 2)
        gb = g.sum(1, keepdim=True)
        return gh, gw, gb


class StackedMLP(torch.nn.Module):
    """``E`` independent MLPs evaluated in one batched pass: (E, B, d_in) -> (E, B, d_out).

    Built from initialised :class:`MLP` members (so each member starts exactly as the MLP its
    seed would give); layer ``l`` holds weights (E, in, out) and biases (E, 1, out), applied
    with ``torch.baddbmm``. A 2-D input (B, d_in) is shared by every member. Losses summed
    over members give each member its own gradient, and RMSprop, Adam and weight clipping act
    element by element, so training the stack equals training the members one by one (up to
    float summation order; tested). ``exact``: run every layer through :class:`_StackedLinear`
    (the single network's kernels; equal to float32 rounding at the studies' shapes, slower); the aux
    stack uses it, FlipTest's GANs keep the plain batched kernels. Members must not have
    input projections (project the inputs once before the stack instead).
    """

    def __init__(self, members: list[MLP], exact: bool = False):
        super().__init__()
        self.exact = bool(exact)
        if not members:
            raise ConfigError("StackedMLP needs at least one member")
        first = members[0]
        if any(m.projection is not None for m in members):
            raise ConfigError("StackedMLP does not support input projections; project the "
                              "inputs once and stack MLPs without projection")
        self.shape = (first.d_in, first.width, first.depth, first.d_out)
        if any((m.d_in, m.width, m.depth, m.d_out) != self.shape for m in members):
            raise ConfigError("StackedMLP members must share d_in, width, depth and d_out")
        linears = [[m for m in net.modules() if isinstance(m, torch.nn.Linear)] for net in members]
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([lin[i].weight.detach().T for lin in linears]).contiguous())
            for i in range(len(linears[0])))
        self.biases = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([lin[i].bias.detach()[None] for lin in linears]).contiguous())
            for i in range(len(linears[0])))

    def __len__(self) -> int:
        return int(self.weights[0].shape[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if x.ndim != 3:
                x = torch.matmul(x, w) + b
            else:
                x = _StackedLinear.apply(x, w, b) if self.exact else torch.baddbmm(b, x, w)
            if i < last:
                x = torch.relu(x)
        return x

    def member(self, e: int, projection: torch.Tensor | None = None) -> MLP:
        """Member ``e`` as a plain :class:`MLP` on the CPU (a copy), optionally with the fixed
        input ``projection`` its inputs went through before the stack."""
        d_in, width, depth, d_out = self.shape
        if projection is not None:
            d_in = int(projection.shape[1])
        with torch.random.fork_rng(devices=[]):          # its init is overwritten below:
            net = MLP(d_in, width, depth, d_out, projection=projection)   # global RNG untouched
        linears = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
        with torch.no_grad():
            for lin, w, b in zip(linears, self.weights, self.biases):
                lin.weight.copy_(w[e].T)
                lin.bias.copy_(b[e, 0])
        return net

    def load_stacked(self, tensors: list[torch.Tensor]) -> None:
        """Replace the parameters by ``tensors`` (in ``parameters()`` order; any number of
        members)."""
        k = len(self.weights)
        if len(tensors) != 2 * k:
            raise ConfigError(f"load_stacked needs {2 * k} tensors, got {len(tensors)}")
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(w) for w in tensors[:k])
        self.biases = torch.nn.ParameterList(torch.nn.Parameter(b) for b in tensors[k:])

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only the members at ``rows`` (in that order): new, smaller parameters."""
        with torch.no_grad():
            self.load_stacked([p[rows].clone() for p in self.parameters()])


def _member_losses(stack: StackedMLP, x: torch.Tensor, t: torch.Tensor,
                   chunk: int) -> torch.Tensor:
    """Mean BCE of every member on the shared rows ``(x, t)``, in chunks of rows: (E,).

    Chunks are weighted by their size, as Lightning averages ``val_loss`` over batches."""
    total = None
    for a in range(0, x.shape[0], chunk):
        xb, tb = x[a:a + chunk], t[a:a + chunk]
        out = stack(xb)
        out = out.squeeze(-1) if tb.ndim == 1 else out
        loss = F.binary_cross_entropy_with_logits(out, tb.expand(out.shape), reduction="none")
        part = loss.reshape(loss.shape[0], -1).mean(1) * xb.shape[0]
        total = part if total is None else total + part
    return total / x.shape[0]


def _check_stack_args(seeds, max_epochs, batch_size, patience) -> list[int]:
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("train_mlp_stack needs at least one seed")
    if int(max_epochs) < 0 or int(batch_size) < 1 or (patience is not None and int(patience) < 0):
        raise ConfigError(f"need max_epochs >= 0, batch_size >= 1 and patience >= 0 or None "
                          f"(got {max_epochs}, {batch_size}, {patience})")
    return seeds


def _initial_stack(seeds: list[int], d_in: int, width: int, depth: int, d_out: int,
                   device) -> tuple[StackedMLP, int]:
    """The stack of seed ``s``'s initial MLPs (each as ``train_mlp`` initialises it) on
    ``device``, and one member's parameter count."""
    members = []
    for s in seeds:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            members.append(MLP(d_in, width, depth, d_out))
    return StackedMLP(members, exact=True).to(device), n_params(members[0])


def _epoch_step(stack: StackedMLP, xs: torch.Tensor, ts: torch.Tensor, batches: list,
                batch_size: int, curves, device):
    """``run_epoch`` of :func:`faux.models.stack_training.train_stack`: every active member
    through its own shuffled mini-batches of the shared rows ``(xs, ts)``, one optimiser step
    per batch for all of them; each member's mean training loss goes to its curve."""

    def run_epoch(epoch: int, active: list[int], opt) -> None:
        orders = torch.stack([batches[m].epoch_order() for m in active]).to(device)
        train_sum, n_batches = None, 0
        for a in range(0, xs.shape[0], batch_size):
            idx = orders[:, a:a + batch_size]                      # (E, B)
            flat = idx.reshape(-1)           # index_select: ~10x faster than xs[idx] here
            out = stack(xs.index_select(0, flat).view(*idx.shape, -1))
            tb = ts.index_select(0, flat).view(*idx.shape, *ts.shape[1:])
            out = out.squeeze(-1) if tb.ndim == 2 else out
            loss = F.binary_cross_entropy_with_logits(out, tb, reduction="none")
            per_member = loss.reshape(loss.shape[0], -1).mean(1)
            loss = per_member.sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if curves is not None:
                d = per_member.detach()
                train_sum, n_batches = (d if train_sum is None else train_sum + d), n_batches + 1
        if curves is not None and n_batches:
            for m, v in zip(active, (train_sum / n_batches).tolist()):
                curves[m].log_metrics({"train_loss": v, "epoch": epoch}, step=epoch)

    return run_epoch


def _val_step(stack: StackedMLP, vx, vt, chunk: int, curves):
    """``val_losses`` of :func:`faux.models.stack_training.train_stack`: every active
    member's loss on the shared validation rows (None without them), logged to its curve."""

    def val_losses(epoch: int, active: list[int]):
        if vx is None:
            return None
        with torch.no_grad():
            losses = _member_losses(stack, vx, vt, chunk).tolist()
        if curves is not None:
            for m, v in zip(active, losses):
                curves[m].log_metrics({"val_loss": v, "epoch": epoch}, step=epoch)
        return losses

    return val_losses


def train_mlp_stack(x, t, x_val=None, t_val=None, *, seeds, width: int = 64, depth: int = 2,
                    max_epochs: int = 100, patience: int | None = 10, batch_size: int = 64,
                    lr: float = 1e-3, projection: torch.Tensor | None = None,
                    accelerator: str = "auto") -> list[tuple[MLP, dict]]:
    """``train_mlp(x, t, x_val, t_val, seed=s, ...)`` for every ``s`` in ``seeds``, as one stack.

    Returns one ``(mlp, info)`` per seed, in order, each what ``train_mlp`` returns for that
    seed (same weights and predictions up to float summation order, same ``epochs`` and
    ``best_epoch``; tested to 1e-4). ``info`` has the same keys; ``train_time_s`` is the
    stack's wall time divided by the number of seeds.
    """
    seeds = _check_stack_args(seeds, max_epochs, batch_size, patience)
    x, t, val = check_classification_data(x, t, x_val, t_val)
    start = time.perf_counter()
    device = resolve_device(accelerator)
    # the projection is a fixed map: apply it to the data once and stack the rest (seed s's
    # MLP with projection initialises its layers exactly as one without)
    proj = MLP(x.shape[1], 1, 0, projection=projection).projection if projection is not None else None
    stack, n_par = _initial_stack(seeds, x.shape[1] if proj is None else proj.shape[0], width,
                                  depth, 1 if t.ndim == 1 else t.shape[1], device)

    def prep(a):
        return (a @ proj.T if proj is not None else a).to(device)

    vx, vt = (prep(val[0]), val[1].to(device)) if val is not None else (None, None)
    batches = [TensorBatches((x,), batch_size=batch_size, seed=s) for s in seeds]

    def make_opt(params):
        # the single-tensor Adam: what ``train_mlp``'s Adam runs on CPU; its element-wise
        # update on a (E, ...) tensor equals the update of each slice bit for bit (fused Adam
        # rounds differently, by an ulp)
        return torch.optim.Adam(params, lr=lr, foreach=False, fused=False)

    curves = curve_loggers(seeds, "mlp")           # the job's curves (logger=wandb), else None
    run = train_stack(
        stack, make_opt, max_epochs=max_epochs, patience=patience, device=device,
        run_epoch=_epoch_step(stack, prep(x), t.to(device), batches, batch_size, curves, device),
        val_losses=_val_step(stack, vx, vt, max(batch_size, 4096), curves))
    elapsed = time.perf_counter() - start
    stack.load_stacked([w.cpu() for w in run.weights])
    stack.cpu()
    xe, te = val if val is not None else (x, t)
    out = []
    for m in range(len(seeds)):
        net = stack.member(m, projection=proj).eval()
        info = {"epochs": run.epochs[m],
                "best_epoch": run.best_epoch[m] if val is not None else run.epochs[m] - 1,
                "best_val_loss": run.best_val_loss[m] if val is not None else float("nan")}
        info = {"accuracy": mlp_accuracy(net, xe, te), "n_params": n_par,
                "train_time_s": elapsed / len(seeds), **info}
        out.append((net, info))
    return out


def train_mlps_stacked(spec: MLPSpec, x, t, x_val=None, t_val=None, *, seeds,
                       accelerator: str = "auto", **overrides) -> list[tuple[MLP, dict]]:
    """``[spec.train(x, t, x_val, t_val, seed=s) for s in seeds]``, trained as one stack.

    The stacked counterpart of ``MLPSpec.train`` (kept here, not as an ``MLPSpec`` method,
    so that this module builds on ``faux.models.mlp`` without ``mlp`` importing it back).
    Each element is what ``spec.train`` returns for that seed (up to float summation order;
    same ``info`` keys), so callers can cache each member under its own key.
    """
    return train_mlp_stack(x, t, x_val, t_val, seeds=seeds, accelerator=accelerator,
                           **spec.train_kwargs(**overrides))
