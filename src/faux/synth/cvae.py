"""Conditional VAE over GMM-mode-encoded rows (paper A.7.3), conditioned on a binary label.

The label enters the encoder as one continuous float input. How it enters the decoder is
``c_path`` (:data:`C_PATHS`): ``"decoder_input"`` concatenates it to z, so the decoded logits
are a nonlinear function of c; ``"logit_bias"`` adds ``c * b`` (b a learned vector) to the
decoder's pre-softmax outputs, ``logits = h(z) + c b``, so the logits are affine in c and the
path ``c -> x(c)`` between the two labels is one softmax of a straight line (Definition 1:
``x = f_g(z_perp, psi(c))`` with ``psi`` linear). Either way the decoder can be
differentiated with respect to c (LIC-UB) and evaluated at non-binary values (c = 0.5).
The decoder outputs one softmax block per feature: every decoded row is a valid vector of
mode probabilities (each block sums to 1, the row to the number of features).

Decoding (see docs/decisions_synthetic.md): ``"softmax"`` returns the decoder's
deterministic per-block softmax; ``"gumbel"`` returns a Gumbel-softmax relaxed sample of
each block's mode, ``softmax((logits + g) / tau)``, where the Gumbel noise ``g`` is an
explicit argument so a caller can reuse it for x, its counterfactual and derivatives.
"""

from __future__ import annotations

import math

import numpy as np
import pytorch_lightning as pl
import torch
from torch import nn

from faux.errors import ConfigError
from faux.synth.encoding import block_bounds
from faux.synth.generator_settings import C_PATHS

#: the logit bias's learning rate, in units of the CVAE's (``c_path="logit_bias"``)
C_BIAS_LR_SCALE = 10.0

#: torch threads while a CVAE trains (fixed: the result must not depend on the machine)
TRAIN_THREADS = 1


def _mlp(d_in: int, hidden: int, depth: int, d_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    d = d_in
    for _ in range(int(depth)):
        layers += [nn.Linear(d, int(hidden)), nn.SiLU()]
        d = int(hidden)
    layers.append(nn.Linear(d, d_out))
    return nn.Sequential(*layers)


def block_softmax(logits: torch.Tensor, block_sizes) -> torch.Tensor:
    """Softmax within each feature block of the last dimension."""
    return torch.cat([torch.softmax(logits[..., a:b], dim=-1)
                      for a, b in block_bounds(block_sizes)], dim=-1)


def block_log_softmax(logits: torch.Tensor, block_sizes) -> torch.Tensor:
    return torch.cat([torch.log_softmax(logits[..., a:b], dim=-1)
                      for a, b in block_bounds(block_sizes)], dim=-1)


def gumbel_noise(shape, generator: torch.Generator | None = None) -> torch.Tensor:
    """Standard Gumbel noise ``-log(-log U)``, float32."""
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    u = u.clamp(1e-12, 1 - 1e-12)
    return (-torch.log(-torch.log(u))).float()


class CVAE(pl.LightningModule):
    """Encoder q(z | x, c) and decoder p(x | z, c) with per-feature categorical blocks."""

    def __init__(self, block_sizes, hidden: int = 256, depth: int = 2, latent_dim: int = 8,
                 beta: float = 1.0, lr: float = 1e-3, c_path: str = C_PATHS[0]):
        super().__init__()
        block_sizes = tuple(int(k) for k in block_sizes)
        if not block_sizes or min(block_sizes) < 1:
            raise ConfigError(f"CVAE block_sizes must be positive, got {block_sizes}")
        if int(hidden) < 1 or int(depth) < 0 or int(latent_dim) < 1:
            raise ConfigError(f"CVAE needs hidden >= 1, depth >= 0, latent_dim >= 1; got "
                              f"hidden={hidden}, depth={depth}, latent_dim={latent_dim}")
        if not (float(beta) >= 0):
            raise ConfigError(f"CVAE beta must be >= 0, got {beta}")
        if c_path not in C_PATHS:
            raise ConfigError(f"CVAE c_path must be one of {', '.join(C_PATHS)}, got {c_path!r}")
        self.save_hyperparameters()
        self.block_sizes = block_sizes
        self.dim = int(sum(block_sizes))
        self.latent_dim = int(latent_dim)
        self.beta = float(beta)
        self.lr = float(lr)
        self.c_path = c_path
        self.encoder = _mlp(self.dim + 1, hidden, depth, 2 * self.latent_dim)
        if c_path == "decoder_input":
            self.decoder = _mlp(self.latent_dim + 1, hidden, depth, self.dim)
        else:
            # b starts at zero (no random draw); its gradient, the mean over rows of
            # c * (softmax - x), moves it from the first step
            self.decoder = _mlp(self.latent_dim, hidden, depth, self.dim)
            self.c_bias = nn.Parameter(torch.zeros(self.dim))

    @staticmethod
    def _cond(c: torch.Tensor, n: int) -> torch.Tensor:
        c = torch.as_tensor(c, dtype=torch.float32)
        if c.ndim == 0:
            c = c.expand(n)
        return c.reshape(n, 1).float()

    def encode(self, x: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(torch.cat([x, self._cond(c, x.shape[0])], dim=1))
        mu, logvar = h.chunk(2, dim=1)
        return mu, logvar.clamp(-12.0, 8.0)

    def decode_logits(self, z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Pre-softmax outputs: ``h(z, c)``, or ``h(z) + c b`` under ``c_path="logit_bias"``."""
        cond = self._cond(c, z.shape[0])
        if self.c_path == "decoder_input":
            return self.decoder(torch.cat([z, cond], dim=1))
        return self.decoder(z) + cond * self.c_bias

    def decode(self, z: torch.Tensor, c: torch.Tensor, noise: torch.Tensor | None = None,
               tau: float = 0.3) -> torch.Tensor:
        """Decoded mode probabilities; with ``noise`` (Gumbel, shape (n, dim)) a relaxed sample."""
        logits = self.decode_logits(z, c)
        if noise is None:
            return block_softmax(logits, self.block_sizes)
        if not tau > 0:
            raise ConfigError(f"Gumbel-softmax temperature tau must be > 0, got {tau}")
        return block_softmax((logits + noise) / float(tau), self.block_sizes)

    def loss_terms(self, x: torch.Tensor, c: torch.Tensor):
        mu, logvar = self.encode(x, c)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        logp = block_log_softmax(self.decode_logits(z, c), self.block_sizes)
        recon = -(x * logp).sum(dim=1).mean()
        kl = 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=1).mean()
        return recon, kl

    def training_step(self, batch, batch_idx):
        x, c = batch
        recon, kl = self.loss_terms(x, c)
        loss = recon + self.beta * kl
        self.log("train_loss", loss, on_epoch=True, on_step=False)
        return loss

    def validation_step(self, batch, batch_idx):
        x, c = batch
        recon, kl = self.loss_terms(x, c)
        self.log("val_loss", recon + self.beta * kl, on_epoch=True, prog_bar=False)
        self.log("val_recon", recon, on_epoch=True)
        self.log("val_kl", kl, on_epoch=True)

    def configure_optimizers(self):
        if self.c_path == "decoder_input":
            return torch.optim.Adam(self.parameters(), lr=self.lr)
        # Adam moves each parameter by about lr per step, so a bias starting at 0 would need
        # |b| / lr steps (3,000 steps: |b| <= 3 logits), whereas c as a decoder input reaches
        # the logits through a whole layer of weights; b learns at C_BIAS_LR_SCALE x lr
        rest = [p for n, p in self.named_parameters() if n != "c_bias"]
        return torch.optim.Adam([{"params": rest},
                                 {"params": [self.c_bias], "lr": self.lr * C_BIAS_LR_SCALE}],
                                lr=self.lr)

    @torch.no_grad()
    def kl_nats(self, x: torch.Tensor, c: torch.Tensor) -> float:
        """Mean KL(q(z|x,c) || N(0, I)) in nats: near 0 means the posterior collapsed."""
        mu, logvar = self.encode(x, c)
        return float((0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum(dim=1)).mean())


def cvae_state(model: CVAE) -> dict:
    """A CVAE as plain data: its constructor arguments and its state dict (tensors)."""
    hp = {"block_sizes": [int(k) for k in model.block_sizes], "hidden": int(model.hparams.hidden),
          "depth": int(model.hparams.depth), "latent_dim": int(model.latent_dim),
          "beta": float(model.beta), "lr": float(model.lr)}
    if model.c_path != C_PATHS[0]:           # a default CVAE's state is what it always was
        hp["c_path"] = model.c_path
    return {"hparams": hp, "state_dict": {k: v.detach().cpu().clone()
                                          for k, v in model.state_dict().items()}}


def cvae_from_state(state: dict) -> CVAE:
    """Inverse of :func:`cvae_state`: the CVAE in eval mode."""
    model = CVAE(**state["hparams"])
    model.load_state_dict(state["state_dict"])
    return model.eval()


def split_rows(n: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(validation rows, training rows)`` of :func:`train_cvae`: a permutation of ``n`` rows
    by ``seed``, its first ``round(val_fraction * n)`` held out. The validation rows never
    take a gradient step (with ``patience=None`` they do not steer training at all)."""
    perm = np.random.default_rng(seed).permutation(int(n))
    n_val = int(round(val_fraction * n)) if val_fraction > 0 else 0
    return perm[:n_val], perm[n_val:]


def train_cvae(x: np.ndarray, y: np.ndarray, block_sizes, *, hidden: int, depth: int,
               latent_dim: int = 8, beta: float = 1.0, lr: float = 1e-3, epochs: int = 200,
               max_steps: int | None = None, batch_size: int = 64, patience: int | None = 20,
               val_fraction: float = 0.1, seed: int = 0,
               c_path: str = C_PATHS[0]) -> tuple[CVAE, dict]:
    """Fit a CVAE on encoded rows ``x`` (float, n x dim) and labels ``y`` (0/1).

    ``max_steps`` caps optimiser steps by lowering the epoch count (magic has 19k rows).
    Training runs on the CPU with one torch thread whatever the hardware and the caller's
    thread setting: a generator is cached and shared, so it must not depend on the machine
    or the environment that built it (on a GPU, "auto" gave other weights; with 2 threads
    instead of 1 the australian CVAE came out different too, as CPU reductions split by
    thread round differently, and 3,000 Adam steps amplify the last bit).
    """
    from faux.models.training import fit

    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y)
    n = x.shape[0]
    val_idx, tr_idx = split_rows(n, val_fraction, seed)
    n_val, n_tr = len(val_idx), len(tr_idx)
    epochs = int(epochs)
    if max_steps is not None:
        steps_per_epoch = math.ceil(n_tr / int(batch_size))
        epochs = max(1, min(epochs, math.ceil(int(max_steps) / steps_per_epoch)))
    torch.manual_seed(seed)
    model = CVAE(block_sizes, hidden=hidden, depth=depth, latent_dim=latent_dim, beta=beta, lr=lr,
                 c_path=c_path)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))
    val = (xt[val_idx], yt[val_idx]) if n_val > 0 else None
    threads = torch.get_num_threads()
    torch.set_num_threads(TRAIN_THREADS)
    try:
        info = fit(model, (xt[tr_idx], yt[tr_idx]), val, max_epochs=epochs, patience=patience,
                   batch_size=batch_size, seed=seed, accelerator="cpu")
    finally:
        torch.set_num_threads(threads)
    info["max_epochs"] = epochs
    info["kl_nats"] = model.kl_nats(xt, yt)
    model.eval()
    return model, info
