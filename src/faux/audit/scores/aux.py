"""The auxiliary model of the audit: predicts the protected attribute c from the features.

Trained on the scan's sample (in standardised feature units), 80% to fit and 20% held out
to report its quality, because fAux scores mean nothing when the aux cannot read c:

- binary c: one logit (``train_mlp``, or ``train_adel`` kept from reading the label y);
  accuracy and AUROC on the held-out rows;
- categorical c with k values: k one-vs-rest logits (the (n, k) aux of eq. 9); accuracy of
  the arg-max and macro AUROC;
- continuous c: a regression MLP (mean squared error, early stopping) on standardised c; R².

A warning is attached when the quality is near chance (AUROC < 0.6, R² < 0.05).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from faux.audit.sources.data_scan import MIN_ROWS
from faux.audit.sources.protected import ProtectedInfo
from faux.errors import ConfigError, DataError

AUX_KINDS = ("mlp", "adel")
NEAR_CHANCE_AUROC = 0.6
NEAR_CHANCE_R2 = 0.05


class Unstandardised(nn.Module):
    """``inner(mean + scale * z)``: a model of raw features as a model of standardised ones."""

    def __init__(self, inner: nn.Module, mean, scale):
        super().__init__()
        self.inner = inner
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))

    def forward(self, z):
        return self.inner(self.mean + self.scale * z)


def _split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if n < MIN_ROWS:
        raise DataError(f"only {n} rows were sampled to train the aux model; audit at least "
                        f"{MIN_ROWS} rows (raise --sample)")
    perm = np.random.default_rng(seed).permutation(n)
    cut = int(round(0.8 * n))
    return perm[:cut], perm[cut:]


def _train_regression(z, t, zv, tv, *, width, depth, epochs, seed, batch_size=128, lr=1e-3,
                      patience=5) -> nn.Module:
    from faux.models.net import MLP

    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = MLP(z.shape[1], width, depth, 1)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    z, t = torch.as_tensor(z, dtype=torch.float32), torch.as_tensor(t, dtype=torch.float32)
    zv, tv = torch.as_tensor(zv, dtype=torch.float32), torch.as_tensor(tv, dtype=torch.float32)
    best, best_state, bad = float("inf"), copy.deepcopy(net.state_dict()), 0
    for _ in range(epochs):
        net.train()
        for idx in torch.randperm(z.shape[0], generator=g).split(batch_size):
            loss = torch.mean((net(z[idx]) - t[idx]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            v = float(torch.mean((net(zv) - tv) ** 2))
        if v < best - 1e-6:
            best, best_state, bad = v, copy.deepcopy(net.state_dict()), 0
        else:
            bad += 1
            if bad >= patience:
                break
    net.load_state_dict(best_state)
    return net.eval()


def _binary_label(y, sample_rows: int) -> np.ndarray:
    if y is None:
        raise ConfigError("--aux adel needs --label (the Adel aux is kept from reading y)")
    vals = np.unique(y.astype(str))
    if len(vals) != 2:
        raise DataError(f"the label must take 2 values for the Adel aux, got {len(vals)}")
    return (y.astype(str) == vals[1]).astype(np.float32)


#: how ``train_aux_family`` trains several MLP aux models: "stacked" (one stacked network
#: on one thread, ``faux.audit.scores.aux_family``) or "separate" (one Lightning ``train_mlp`` each,
#: the reference the stacked path equals)
TRAINER = "stacked"


def train_aux(z: np.ndarray, c_raw: np.ndarray, info: ProtectedInfo, y=None, *,
              kind: str = "mlp", width: int = 64, depth: int = 2, epochs: int = 30,
              seed: int = 0) -> tuple[nn.Module, dict]:
    """Aux model of standardised features ``z`` (logits (n,) or (n, k)) and its quality."""
    return train_aux_family(z, [(c_raw, seed)], info, y, kind=kind, width=width, depth=depth,
                            epochs=epochs)[0]


def train_aux_family(z: np.ndarray, targets, info: ProtectedInfo, y=None, *,
                     kind: str = "mlp", width: int = 64, depth: int = 2,
                     epochs: int = 30) -> list[tuple[nn.Module, dict]]:
    """``[train_aux(z, c_raw, info, y, seed=seed, ...) for c_raw, seed in targets]``: the
    same models and qualities, the MLP classifiers trained together as one stacked network
    (``faux.audit.scores.aux_family``), the others (a regression, Adel) one after another, torch on
    one thread meanwhile; with ``TRAINER = "separate"`` each alone through Lightning, as
    before (the reference the tests hold the stacked path to)."""
    from faux.audit.scores.aux_family import one_thread

    if kind not in AUX_KINDS:
        raise ConfigError(f"aux={kind!r} is not one of {AUX_KINDS}")
    if not targets:
        return []
    plans = []
    for c_raw, seed in targets:
        tr, te = _split(z.shape[0], seed)
        plans.append((tr, te, info.encode(c_raw), int(seed)))
    if info.kind == "continuous" and kind == "adel":
        raise ConfigError("the Adel aux is a classifier; use --aux mlp for a continuous "
                          "protected attribute")
    yb = _binary_label(y, z.shape[0]) if kind == "adel" else None
    sizes = dict(width=width, depth=depth, max_epochs=epochs, patience=5, batch_size=128)
    if TRAINER == "separate":
        nets = [_train_one(z, p, info, kind, yb, sizes) for p in plans]
    elif kind == "mlp" and info.kind != "continuous":
        from faux.audit.scores.aux_family import Member, train_members

        with one_thread():
            nets = train_members([Member(z[tr], t[tr], z[te], t[te], seed)
                                  for tr, te, t, seed in plans], **sizes)
    else:
        with one_thread():
            nets = [_train_one(z, p, info, kind, yb, sizes) for p in plans]
    return [_finish(net, z, p, info, kind, width, depth, epochs) for net, p in zip(nets, plans)]


def _train_one(z, plan, info, kind, yb, sizes) -> nn.Module:
    """One aux model, trained alone: a regression MLP, ``train_adel`` or ``train_mlp``."""
    tr, te, t, seed = plan
    if info.kind == "continuous":
        return _train_regression(z[tr], t[tr], z[te], t[te], width=sizes["width"],
                                 depth=sizes["depth"], epochs=sizes["max_epochs"], seed=seed)
    if kind == "adel":
        from dataclasses import replace

        from faux.models.adel import GUARDS, train_adel

        net, _ = train_adel(replace(GUARDS, **sizes), z[tr], t[tr], yb[tr], z[te], t[te],
                            yb[te], seed=seed, accelerator="cpu")
        return net
    from faux.models.mlp import train_mlp

    net, _ = train_mlp(z[tr], t[tr], z[te], t[te], seed=seed, accelerator="cpu", **sizes)
    return net


def _finish(net, z, plan, info, kind, width, depth, epochs) -> tuple[nn.Module, dict]:
    """The trained aux frozen in eval mode, and its quality on its held-out rows."""
    tr, te, t, _ = plan
    net = net.eval()
    with torch.no_grad():
        pred = net(torch.as_tensor(z[te], dtype=torch.float32)).numpy()
    if info.kind == "continuous":
        r2 = 1.0 - float(np.mean((pred - t[te]) ** 2)) / max(float(np.var(t[te])), 1e-12)
        quality = {"metric": "R2", "r2": r2, "chance": 0.0}
        near = r2 < NEAR_CHANCE_R2
    else:
        quality = _classification_quality(pred, t[te], info)
        near = quality["auroc"] < NEAR_CHANCE_AUROC
    quality.update({"train_rows": int(len(tr)), "heldout_rows": int(len(te)), "kind": kind,
                    "width": width, "depth": depth, "max_epochs": epochs})
    quality["warning"] = (
        "the aux model barely predicts the protected attribute on held-out rows (near chance): "
        "the features carry little information about it, or the aux failed to learn it; "
        "fAux scores are not meaningful then" if near else None)
    for p in net.parameters():
        p.requires_grad_(False)
    return net, quality


def _classification_quality(logits: np.ndarray, t: np.ndarray, info: ProtectedInfo) -> dict:
    from sklearn.metrics import roc_auc_score  # here: scoring alone need not load sklearn

    if info.kind == "binary":
        acc = float(((logits > 0) == (t > 0.5)).mean())
        auroc = float(roc_auc_score(t, logits)) if len(np.unique(t)) == 2 else float("nan")
        p = float(t.mean())
        return {"metric": "AUROC", "accuracy": acc, "auroc": auroc, "chance": max(p, 1 - p)}
    idx = t.argmax(axis=1)
    acc = float((logits.argmax(axis=1) == idx).mean())
    aucs = [roc_auc_score(t[:, j], logits[:, j]) for j in range(t.shape[1])
            if 0 < t[:, j].sum() < t.shape[0]]
    chance = float(np.bincount(idx, minlength=t.shape[1]).max() / t.shape[0])
    return {"metric": "macro AUROC", "accuracy": acc,
            "auroc": float(np.mean(aucs)) if aucs else float("nan"), "chance": chance}



def row_gradient_norms(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Norm of ``net``'s logit gradient at each row of ``x`` (Frobenius norm of the (k, d)
    Jacobian for k outputs), detached."""
    with torch.enable_grad():
        xx = x.detach().requires_grad_(True)
        out = net(xx).reshape(xx.shape[0], -1)
        sq = torch.zeros(xx.shape[0], dtype=xx.dtype, device=xx.device)
        for j in range(out.shape[1]):
            (g,) = torch.autograd.grad(out[:, j].sum(), xx, retain_graph=j + 1 < out.shape[1])
            sq = sq + (g**2).sum(dim=1)
    return sq.sqrt().detach()


class Steepened(nn.Module):
    """``inner(x) * r(x)`` with ``r(x)`` = ``ref``'s logit-gradient norm over ``inner``'s at
    ``x``, held constant (detached): at every row ``inner``'s gradient direction with
    ``ref``'s steepness. A null aux, trained on a permuted protected attribute, has a logit
    with no unit of its own; steepened to the aux's, a score that divides by the aux's
    gradient (fAux) compares directions only, and scale-free scores are unchanged."""

    def __init__(self, inner: nn.Module, ref: nn.Module):
        super().__init__()
        self.inner, self.ref = inner, ref

    def forward(self, x):
        r = row_gradient_norms(self.ref, x) / row_gradient_norms(self.inner, x).clamp_min(1e-12)
        out = self.inner(x)
        return out * (r if out.ndim == 1 else r.reshape(-1, *([1] * (out.ndim - 1))))
