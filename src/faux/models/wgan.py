"""FlipTest's Wasserstein GANs (Black, Yeom & Fredrikson 2019), in Lightning.

Two generators are trained: ``G01`` maps group c=0 onto the distribution of group c=1 and
``G10`` the reverse, so every individual gets a counterpart. Each has its own critic. The
recipe follows the reference implementation (``samuel-yeom/fliptest``, ``gan/util.py``):
MLP generator and critic (2 x 128 ReLU by default; a plain MLP generator, not
residual), critic weights clipped to ±0.01 after every critic step, RMSprop at lr 5e-5 for
both nets, ``n_critic = 5`` critic steps per generator step, batch 64 (drawn with
replacement, as the reference does), generator loss
``-mean D(G(x)) + λ · mean ||G(x) - x||²`` (squared L2 transport cost, the reference's
small model). λ defaults to 1e-5: A.11.4 finds very small weights (< 1e-4) best.
Generator steps default to 2,000 here (CPU budget); the reference uses 20,000.

Differences from the reference, all for robustness or cost:

* features are standardised with the pooled mean and std of both groups before training
  (the reference scales its inputs beforehand); the transport cost and the quality
  metrics are computed in standardised units, ``Generator`` maps raw features to raw
  features;
* one critic step uses one loss ``mean D(fake) - mean D(real)`` (the reference takes two
  RMSprop steps, real then fake); the generator step draws its own batch;
* both directions, and every seed asked for at once (``train_fliptest_gans_many``), train
  as one stack of networks with batched matrix products; each member still has its own
  weights, batches and optimiser state, so the result per seed is the same.

Quality metrics (A.11.4, FlipTest §5), per direction and averaged over the two:

* ``ks``: mean over features of the two-sample Kolmogorov-Smirnov statistic between the
  real target-group data and the generated data (``scipy.stats.ks_2samp``);
* ``mse``: for each feature, a linear regression predicting it from the other features
  (with a small ridge penalty, ``MSE_RIDGE``; all features at once in closed form) is
  fitted on the *real* target-group data and its mean squared error is measured on the
  *generated* data; averaged over features (standardised units). Fitting on real data and
  scoring the generated data asks whether G(x) obeys the linear relations of the real
  group; fitting on the generated data instead would reward a collapsed generator.
  ``mse_real`` is the same regressions' error on the real data, the floor to compare with.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import pytorch_lightning as pl
import torch
from scipy.stats import ks_2samp

from faux.errors import ConfigError, DataError
from faux.models.mlp import MLP
from faux.models.stacked import StackedMLP
from faux.models.tensors import as_binary, as_features, n_params
from faux.models.training import fit, training_role


@dataclass(frozen=True)
class GANSpec:
    """Hyper-parameters of FlipTest's pair of WGANs (Hydra ``_target_`` of conf/model/gan)."""

    width: int = 128
    depth: int = 2
    critic_width: int | None = None   # None: same as the generator
    critic_depth: int | None = None
    n_critic: int = 5
    batch_size: int = 64
    gen_steps: int = 2000
    lr: float = 5e-5
    clip: float = 0.01
    transport_weight: float = 1e-5

    def __post_init__(self):
        if min(self.width, self.n_critic, self.batch_size, self.gen_steps) < 1 or self.depth < 0:
            raise ConfigError(f"GANSpec needs positive width, n_critic, batch_size, gen_steps "
                              f"and depth >= 0; got {self}")
        if not (self.lr > 0 and self.clip > 0 and self.transport_weight >= 0):
            raise ConfigError("GANSpec needs lr > 0, clip > 0 and transport_weight >= 0")


class Generator(torch.nn.Module):
    """Raw features -> raw features: standardise, the MLP ``net`` (d -> d), un-standardise."""

    def __init__(self, net: MLP, mean: torch.Tensor, std: torch.Tensor):
        super().__init__()
        d = net.d_in
        self.net = net
        self.register_buffer("mean", mean.reshape(1, d).clone())
        self.register_buffer("std", std.reshape(1, d).clone())

    def forward_std(self, z: torch.Tensor) -> torch.Tensor:
        out = self.net(z)
        return out.unsqueeze(-1) if out.ndim == 1 else out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_std((x - self.mean) / self.std) * self.std + self.mean


class GroupPairSampler:
    """Batches for WGAN steps: for each generator step, ``n_critic`` critic batches and one
    generator batch per group, drawn with replacement by a seeded generator.

    Each item is ``(z0, z1)`` of shape (g, n_critic + 1, batch, d): ``g`` generator steps.
    """

    def __init__(self, z0: torch.Tensor, z1: torch.Tensor, *, batch_size: int, n_critic: int,
                 gen_steps: int, seed: int, group: int = 8):
        self.z0, self.z1 = z0, z1
        self.batch_size, self.n_critic = int(batch_size), int(n_critic)
        self.gen_steps, self.group = int(gen_steps), int(group)
        self.generator = torch.Generator().manual_seed(int(seed))

    def __len__(self) -> int:
        return -(-self.gen_steps // self.group)

    def __iter__(self):
        done = 0
        while done < self.gen_steps:
            g = min(self.group, self.gen_steps - done)
            shape = (g, self.n_critic + 1, self.batch_size)
            i0 = torch.randint(self.z0.shape[0], shape, generator=self.generator)
            i1 = torch.randint(self.z1.shape[0], shape, generator=self.generator)
            yield self.z0[i0.to(self.z0.device)], self.z1[i1.to(self.z1.device)]
            done += g


class SeedsPairSampler:
    """One :class:`GroupPairSampler` per seed, stepped together.

    Each item is ``(z0, z1)`` of shape (g, n_critic + 1, R, batch, d) for R seeds; seed r's
    slice is exactly what its own sampler yields. Re-iterable (each pass starts afresh).
    """

    def __init__(self, z0: torch.Tensor, z1: torch.Tensor, *, seeds: list[int], batch_size: int,
                 n_critic: int, gen_steps: int, group: int = 8):
        self.z0, self.z1, self.seeds = z0, z1, [int(s) for s in seeds]
        self.kw = dict(batch_size=batch_size, n_critic=n_critic, gen_steps=gen_steps, group=group)
        self.gen_steps, self.group = int(gen_steps), int(group)

    def __len__(self) -> int:
        return -(-self.gen_steps // self.group)

    def to(self, device) -> SeedsPairSampler:
        out = SeedsPairSampler.__new__(SeedsPairSampler)
        out.__dict__.update(self.__dict__)
        out.z0, out.z1 = self.z0.to(device), self.z1.to(device)
        return out

    def __iter__(self):
        samplers = [GroupPairSampler(self.z0, self.z1, seed=s, **self.kw) for s in self.seeds]
        for items in zip(*samplers):
            yield (torch.stack([a for a, _ in items], dim=2),
                   torch.stack([b for _, b in items], dim=2))


class FlipGAN(pl.LightningModule):
    """Both directions' generators and critics for R seeds, trained as one stack.

    Members are ordered (seed 0: G01, G10; seed 1: G01, G10; ...); ``critics`` member e
    judges ``gens`` member e's output. Manual optimisation: one RMSprop per stack.
    """

    def __init__(self, gens: StackedMLP, critics: StackedMLP, spec: GANSpec):
        super().__init__()
        self.automatic_optimization = False
        self.gens, self.critics = gens, critics
        self.spec = spec

    def configure_optimizers(self):
        lr = self.spec.lr
        return [torch.optim.RMSprop(self.gens.parameters(), lr=lr),
                torch.optim.RMSprop(self.critics.parameters(), lr=lr)]

    def training_step(self, batch, batch_idx):
        z0, z1 = batch                                     # (g, n_critic + 1, R, B, d)
        g, k1, r, b, d = z0.shape
        # member order: (seed, direction); G01 maps z0 onto z1's distribution, G10 the reverse
        src = torch.stack([z0, z1], dim=3).reshape(g, k1, 2 * r, b, d)
        tgt = torch.stack([z1, z0], dim=3).reshape(g, k1, 2 * r, b, d)
        opt_g, opt_d = self.optimizers(use_pl_optimizer=False)
        params = list(self.critics.parameters())
        clip, lam = self.spec.clip, self.spec.transport_weight
        for j in range(g):
            for k in range(self.spec.n_critic):
                with torch.no_grad():
                    fake = self.gens(src[j, k])
                scores = self.critics(torch.cat([fake, tgt[j, k]], dim=1))   # (E, 2B, 1)
                loss_d = (scores[:, :b].mean(dim=(1, 2)) - scores[:, b:].mean(dim=(1, 2))).sum()
                opt_d.zero_grad(set_to_none=True)
                loss_d.backward()
                opt_d.step()
                with torch.no_grad():
                    torch._foreach_clamp_min_(params, -clip)
                    torch._foreach_clamp_max_(params, clip)
            z = src[j, -1]
            self.critics.requires_grad_(False)             # no critic gradients here
            out = self.gens(z)
            transport = ((out - z) ** 2).sum(dim=2).mean(dim=1)
            loss_g = (-self.critics(out).mean(dim=(1, 2)) + lam * transport).sum()
            opt_g.zero_grad(set_to_none=True)
            loss_g.backward()
            opt_g.step()
            self.critics.requires_grad_(True)
        if self.trainer.loggers:       # the job's curves (logger=wandb); nothing otherwise
            n = 2 * r
            self.log_dict({"critic_loss": loss_d.detach() / n, "generator_loss": loss_g.detach() / n},
                          on_step=True, on_epoch=True)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return tuple(t if t.device == device else t.to(device) for t in batch)


def _std_stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mean = x.mean(0)
    std = x.std(0)
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    return mean, std


#: elements per sampled group of batches (bounds the sampler's memory on wide inputs)
_GROUP_ELEMENTS = 16_000_000


def train_fliptest_gans_many(x, c, spec: GANSpec | None = None, *, seeds=(0,),
                             accelerator: str = "auto") -> list[tuple[Generator, Generator, dict]]:
    """Train FlipTest's ``G01`` (c=0 -> c=1) and ``G10`` (c=1 -> c=0) once per seed, all
    seeds at once as one stacked network (one pass per step for every seed and direction).

    Seed ``s`` gives the same generators as ``train_fliptest_gans(x, c, spec, seed=s)``.
    Returns one ``(G01, G10, info)`` per seed (generators on the CPU, eval mode); ``info``
    holds ``n_params`` (both generators and critics of one seed), ``n_params_generators``,
    ``train_time_s`` (the stack's time divided by the number of seeds),
    ``train_time_total_s``, ``n_seeds_trained_together`` and the hyper-parameters.
    """
    spec = spec or GANSpec()
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("train_fliptest_gans_many needs at least one seed")
    x = as_features(x, "x")
    c = as_binary(c, x.shape[0], "c")
    if c.ndim != 1:
        raise DataError("FlipTest needs a single binary protected attribute c of shape (n,)")
    mean, std = _std_stats(x)
    z = (x - mean) / std
    z0, z1 = z[c == 0], z[c == 1]
    d = x.shape[1]
    cw = spec.critic_width or spec.width
    cd = spec.depth if spec.critic_depth is None else spec.critic_depth
    gens, critics = [], []
    for s in seeds:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            g01, g10 = MLP(d, spec.width, spec.depth, d_out=d), MLP(d, spec.width, spec.depth, d_out=d)
            c01, c10 = MLP(d, cw, cd), MLP(d, cw, cd)
        gens += [g01, g10]
        critics += [c01, c10]
    one_seed = sum(n_params(m) for m in (gens[0], gens[1], critics[0], critics[1]))
    one_seed_gens = n_params(gens[0]) + n_params(gens[1])
    module = FlipGAN(StackedMLP(gens), StackedMLP(critics), spec)
    per_step = (spec.n_critic + 1) * len(seeds) * spec.batch_size * d
    group = max(1, min(8, _GROUP_ELEMENTS // per_step))
    sampler = SeedsPairSampler(z0, z1, seeds=seeds, batch_size=spec.batch_size,
                               n_critic=spec.n_critic, gen_steps=spec.gen_steps, group=group)
    start = time.perf_counter()
    with training_role("gan"):
        fit(module, sampler, None, max_epochs=1, patience=None, seed=seeds[0],
            accelerator=accelerator)
    elapsed = time.perf_counter() - start
    out = []
    for i in range(len(seeds)):
        pair = []
        for e in (2 * i, 2 * i + 1):
            gen = Generator(module.gens.member(e), mean, std)
            gen.requires_grad_(False)
            pair.append(gen.eval())
        info = {"n_params": one_seed, "n_params_generators": one_seed_gens,
                "train_time_s": elapsed / len(seeds), "train_time_total_s": elapsed,
                "n_seeds_trained_together": len(seeds), **asdict(spec)}
        out.append((pair[0], pair[1], info))
    return out


def train_fliptest_gans(x, c, spec: GANSpec | None = None, *, seed: int = 0,
                        accelerator: str = "auto") -> tuple[Generator, Generator, dict]:
    """Train ``G01`` (c=0 -> c=1) and ``G10`` (c=1 -> c=0) on features ``x`` with binary ``c``.

    Returns ``(G01, G10, info)`` (generators on the CPU, eval mode) with ``info`` holding
    ``n_params`` (both generators and critics), ``n_params_generators``, ``train_time_s``
    and the hyper-parameters.
    """
    return train_fliptest_gans_many(x, c, spec, seeds=[seed], accelerator=accelerator)[0]


#: ridge penalty (per row, standardised units) of the MSE metric's regressions
MSE_RIDGE = 1e-3


def _linear_mse(real: np.ndarray, gen: np.ndarray, ridge: float = MSE_RIDGE) -> tuple[float, float]:
    """Mean over features of the MSE (on gen, and on real) of regressions fitted on real.

    Every feature's regression on all the others (with intercept, ridge penalty
    ``ridge * n`` on the sum of squares) comes from one inverse: with ``P`` the inverse of
    the real data's covariance plus ``ridge * I`` and ``mu`` its mean, feature j's residual at
    a row x is ``((x - mu) P)_j / P_jj``. ``ridge = 0`` equals scikit-learn's
    ``LinearRegression`` per feature on full-rank data (tested); the small default keeps the
    metric defined when there are fewer rows than features (outer fusion), where plain
    least squares interpolates the real rows.
    """
    n, d = real.shape
    if d == 1:
        mu = real.mean(0)
        return float(np.mean((gen - mu) ** 2)), float(np.mean((real - mu) ** 2))
    mu = real.mean(0, keepdims=True)
    rc = real - mu
    cov = rc.T @ rc / n + ridge * np.eye(d)
    prec = np.linalg.pinv(cov, hermitian=True)
    diag = np.diag(prec)
    res_real = (rc @ prec) / diag
    res_gen = ((gen - mu) @ prec) / diag
    return float(np.mean(res_gen ** 2)), float(np.mean(res_real ** 2))


def gan_quality(real_target: torch.Tensor, generated: torch.Tensor, mean: torch.Tensor,
                std: torch.Tensor) -> dict:
    """``ks``, ``mse`` and ``mse_real`` (module docstring) for one direction."""
    real = ((real_target - mean) / std).detach().cpu().double().numpy()
    gen = ((generated - mean) / std).detach().cpu().double().numpy()
    ks = float(np.mean([ks_2samp(real[:, j], gen[:, j]).statistic
                        for j in range(real.shape[1])]))
    mse, mse_real = _linear_mse(real, gen)
    return {"ks": ks, "mse": mse, "mse_real": mse_real}
