"""Several aux models of one audit view trained together as one stacked network.

An audit trains, per view, a handful of small classifiers of the protected attribute on the
same standardised sample: the aux models of the interval over seeds and the null aux models
on permuted copies of the attribute. Each is ``train_mlp`` with its own seed, its own 80/20
split of the sample and its own targets. Trained one by one through Lightning, a 2 x 64 MLP
at batch 128 spends most of its time in per-step overhead and in thread hand-offs between
the two cores; the audit waited minutes for models that compute in seconds.

:func:`train_members` trains them as one :class:`MemberStack`: member ``e``'s mini-batch
(its own shuffling generator, seeded as ``train_mlp`` seeds it, over its own training rows)
goes through the stack with the other members' in one forward and backward pass; the summed loss gives every member its own gradient and Adam acts
element by element, so each member ends with the weights ``train_mlp`` gives it alone (tested
in tests/test_audit_speed_paths.py). Each member keeps its own early stopping (patience on
its own validation loss, best epoch restored); a member that stops leaves the stack (the
loop of ``faux.models.stack_training``, which the studies' stacked MLPs share). The
loop is plain PyTorch on one thread (:func:`one_thread`; the caller's thread count is
restored afterwards): at these sizes a second thread only adds synchronisation. Nothing
here imports Lightning (seconds of import time for a command-line audit).

Unlike ``faux.models.stacked`` (one ``baddbmm`` per layer, equal to the single networks
to float32 rounding at the studies' shapes), every member here runs its layers through
``F.linear`` on its own slices; that costs a few more kernel calls per step, and makes each
member bit for bit the network trained alone at every shape, as an audit's flags must not
move with how its models were scheduled.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from faux.errors import ConfigError
from faux.models.net import MLP, check_classification_data
from faux.models.stack_training import train_stack
from faux.models.tensors import TensorBatches

VAL_CHUNK = 4096  # rows per validation batch, as ``fit`` batches them at batch sizes <= 4096


@contextlib.contextmanager
def one_thread():
    """Torch on one intra-op thread inside the block; the caller's count restored after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


@dataclass
class Member:
    """One classifier to train: its training and validation rows, targets and seed."""

    x: object
    t: object
    x_val: object
    t_val: object
    seed: int


class MemberStack(torch.nn.Module):
    """``E`` MLPs of one shape as one module: layer ``l``'s weights of every member in one
    (E, out, in) parameter and its biases in one (E, out) parameter, so one optimiser step
    updates every member (Adam acts element by element: each slice as alone). The forward
    pass runs member ``e``'s input ``x[e]`` through ``F.linear`` on its slices, the very
    kernels its ``nn.Linear`` layers run alone, so every member rounds as it would alone; a
    batched matmul (``torch.baddbmm``) picks other kernels at some batch sizes and drifts
    by an ulp per step."""

    def __init__(self, members: list[MLP]):
        super().__init__()
        lins = [[m for m in net.modules() if isinstance(m, torch.nn.Linear)] for net in members]
        self.shape = (members[0].d_in, members[0].width, members[0].depth, members[0].d_out)
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([ls[i].weight.detach() for ls in lins]))
            for i in range(len(lins[0])))
        self.biases = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([ls[i].bias.detach() for ls in lins]))
            for i in range(len(lins[0])))

    def load_stacked(self, tensors: list[torch.Tensor]) -> None:
        """Replace the parameters by ``tensors`` (``parameters()`` order, any member count)."""
        k = len(self.weights)
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(w) for w in tensors[:k])
        self.biases = torch.nn.ParameterList(torch.nn.Parameter(b) for b in tensors[k:])

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only the members at ``rows`` (in that order)."""
        with torch.no_grad():
            self.load_stacked([p[rows].clone() for p in self.parameters()])

    def forward(self, x) -> list[torch.Tensor]:
        """Each member's logits of its rows ``x[e]`` ((B,) for one output, else (B, k))."""
        ws = [w.unbind(0) for w in self.weights]
        bs = [b.unbind(0) for b in self.biases]
        last = len(ws) - 1
        outs = []
        for e in range(len(x)):
            h = x[e]
            for i in range(len(ws)):
                h = F.linear(h, ws[i][e], bs[i][e])
                if i < last:
                    h = torch.relu(h)
            outs.append(h.squeeze(-1) if self.shape[3] == 1 else h)
        return outs

    def member(self, e: int) -> MLP:
        """Member ``e`` as a plain :class:`MLP` (a copy)."""
        d_in, width, depth, d_out = self.shape
        with torch.random.fork_rng(devices=[]):          # its init is overwritten below
            net = MLP(d_in, width, depth, d_out)
        lins = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
        with torch.no_grad():
            for lin, w, b in zip(lins, self.weights, self.biases):
                lin.weight.copy_(w[e])
                lin.bias.copy_(b[e])
        return net


def _val_losses(stack: MemberStack, xv: torch.Tensor, tv: torch.Tensor, chunk: int) -> list:
    """Mean BCE of each member on its own validation rows ``xv[e], tv[e]``, batched and
    averaged as Lightning's ``val_loss`` (chunks weighted by their size)."""
    n = xv.shape[1]
    total = [0.0] * xv.shape[0]
    for a in range(0, n, chunk):
        xb, tb = xv[:, a:a + chunk], tv[:, a:a + chunk]
        for e, out in enumerate(stack(xb)):
            total[e] += float(F.binary_cross_entropy_with_logits(out, tb[e])) * xb.shape[1]
    return [t / n for t in total]


def train_members(members: list[Member], *, width: int, depth: int, max_epochs: int,
                  patience: int | None, batch_size: int, lr: float = 1e-3) -> list[MLP]:
    """``train_mlp(m.x, m.t, m.x_val, m.t_val, seed=m.seed, ...)`` for every member, trained
    as one stack on one CPU thread; the MLPs in order, in eval mode. Every member needs as
    many training rows and as many validation rows as the others."""
    if not members:
        raise ConfigError("train_members needs at least one member")
    data = [check_classification_data(m.x, m.t, m.x_val, m.t_val) for m in members]
    if len({(d[0].shape, d[1].shape, d[2][0].shape) for d in data}) != 1:
        raise ConfigError("stacked aux members need the same numbers of rows and targets")
    with one_thread(), torch.no_grad():
        xs = torch.stack([d[0] for d in data])                    # (E, n, d)
        ts = torch.stack([d[1] for d in data])                    # (E, n) or (E, n, k)
        xv = torch.stack([d[2][0] for d in data])
        tv = torch.stack([d[2][1] for d in data])
    with one_thread():
        return _train(xs, ts, xv, tv, [int(m.seed) for m in members], width=width,
                      depth=depth, max_epochs=int(max_epochs), patience=patience,
                      batch_size=int(batch_size), lr=lr)


def _train(xs, ts, xv, tv, seeds, *, width, depth, max_epochs, patience, batch_size, lr):
    r, n = xs.shape[0], xs.shape[1]
    d_out = 1 if ts.ndim == 2 else ts.shape[2]
    nets = []
    for s in seeds:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            nets.append(MLP(xs.shape[2], width, depth, d_out))
    stack = MemberStack(nets)
    flat_x, flat_t = xs.reshape(r * n, -1), ts.reshape(r * n, *ts.shape[2:])
    batches = [TensorBatches((xs[0],), batch_size=batch_size, seed=s) for s in seeds]

    def make_opt(params):  # the single-tensor Adam ``train_mlp`` runs on CPU
        return torch.optim.Adam(params, lr=lr, foreach=False, fused=False)

    def run_epoch(epoch, active, opt):
        offset = torch.tensor(active)[:, None] * n
        orders = torch.stack([batches[m].epoch_order() for m in active]) + offset
        for a in range(0, n, batch_size):
            idx = orders[:, a:a + batch_size]
            flat = idx.reshape(-1)
            outs = stack(flat_x.index_select(0, flat).view(*idx.shape, -1))
            tb = flat_t.index_select(0, flat).view(*idx.shape, *flat_t.shape[1:])
            # each member's mean BCE as alone; their sum gives each its own gradient
            loss = sum(F.binary_cross_entropy_with_logits(o, tb[e]) for e, o in enumerate(outs))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    def val_losses(epoch, active):
        with torch.no_grad():
            sel = torch.tensor(active)
            return _val_losses(stack, xv[sel], tv[sel], max(batch_size, VAL_CHUNK))

    run = train_stack(stack, make_opt, max_epochs=max_epochs, patience=patience,
                      run_epoch=run_epoch, val_losses=val_losses)
    stack.load_stacked(run.weights)
    return [stack.member(m).eval() for m in range(r)]
