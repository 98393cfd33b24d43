"""FlipTest's Wasserstein GANs (Black, Yeom & Fredrikson 2019), in Lightning.

Two generators are trained: ``G01`` maps group c=0 onto the distribution of group c=1 and
``G10`` the reverse, so every individual gets a counterpart. Each has its own critic. The
recipe follows the reference implementation (``samuel-yeom/fliptest``, ``gan/util.py``;
DESIGN §6): MLP generator and critic (2 x 128 ReLU by default; a plain MLP generator, not
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
  RMSprop steps, real then fake); the generator step draws its own batch.

Quality metrics (A.11.4, FlipTest §5), per direction and averaged over the two:

* ``ks``: mean over features of the two-sample Kolmogorov-Smirnov statistic between the
  real target-group data and the generated data (``scipy.stats.ks_2samp``);
* ``mse``: for each feature, a linear regression predicting it from the other features is
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
from sklearn.linear_model import LinearRegression

from faux.errors import ConfigError, DataError
from faux.models.mlp import MLP
from faux.models.training import as_binary, as_features, fit, n_params


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
    """Raw features -> raw features: standardise, MLP, un-standardise."""

    def __init__(self, d: int, width: int, depth: int, mean: torch.Tensor, std: torch.Tensor):
        super().__init__()
        self.net = MLP(d, width, depth, d_out=d)
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

    def to(self, device) -> GroupPairSampler:
        out = GroupPairSampler.__new__(GroupPairSampler)
        out.__dict__.update(self.__dict__)
        out.z0, out.z1 = self.z0.to(device), self.z1.to(device)
        return out

    def __iter__(self):
        done = 0
        while done < self.gen_steps:
            g = min(self.group, self.gen_steps - done)
            shape = (g, self.n_critic + 1, self.batch_size)
            i0 = torch.randint(self.z0.shape[0], shape, generator=self.generator)
            i1 = torch.randint(self.z1.shape[0], shape, generator=self.generator)
            yield self.z0[i0.to(self.z0.device)], self.z1[i1.to(self.z1.device)]
            done += g


class FlipGAN(pl.LightningModule):
    """Both directions' generators and critics, trained with manual optimisation."""

    def __init__(self, gen01: Generator, gen10: Generator, critic01: MLP, critic10: MLP,
                 spec: GANSpec):
        super().__init__()
        self.automatic_optimization = False
        self.gen01, self.gen10 = gen01, gen10
        self.critic01, self.critic10 = critic01, critic10   # critic01 judges G01's output
        self.spec = spec

    def configure_optimizers(self):
        lr = self.spec.lr
        return [torch.optim.RMSprop(m.parameters(), lr=lr)
                for m in (self.gen01, self.gen10, self.critic01, self.critic10)]

    def _direction(self, gen, critic, opt_g, opt_d, src, tgt):
        """One generator step after n_critic critic steps; src/tgt: (n_critic + 1, B, d)."""
        clip = self.spec.clip
        params = list(critic.parameters())
        b = src.shape[1]
        for k in range(self.spec.n_critic):
            with torch.no_grad():
                fake = gen.forward_std(src[k])
            scores = critic(torch.cat([fake, tgt[k]]))     # one pass for fake and real
            loss_d = scores[:b].mean() - scores[b:].mean()
            opt_d.zero_grad(set_to_none=True)
            loss_d.backward()
            opt_d.step()
            with torch.no_grad():
                torch._foreach_clamp_min_(params, -clip)
                torch._foreach_clamp_max_(params, clip)
        z = src[-1]
        critic.requires_grad_(False)                       # no critic gradients here
        out = gen.forward_std(z)
        transport = ((out - z) ** 2).sum(dim=1).mean()
        loss_g = -critic(out).mean() + self.spec.transport_weight * transport
        opt_g.zero_grad(set_to_none=True)
        loss_g.backward()
        opt_g.step()
        critic.requires_grad_(True)
        return loss_d.detach(), loss_g.detach()

    def training_step(self, batch, batch_idx):
        z0, z1 = batch
        og01, og10, od01, od10 = self.optimizers(use_pl_optimizer=False)
        for j in range(z0.shape[0]):
            self._direction(self.gen01, self.critic01, og01, od01, z0[j], z1[j])
            self._direction(self.gen10, self.critic10, og10, od10, z1[j], z0[j])

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return tuple(b if b.device == device else b.to(device) for b in batch)


def _std_stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mean = x.mean(0)
    std = x.std(0)
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    return mean, std


def train_fliptest_gans(x, c, spec: GANSpec | None = None, *, seed: int = 0,
                        accelerator: str = "auto") -> tuple[Generator, Generator, dict]:
    """Train ``G01`` (c=0 -> c=1) and ``G10`` (c=1 -> c=0) on features ``x`` with binary ``c``.

    Returns ``(G01, G10, info)`` (generators on the CPU, eval mode) with ``info`` holding
    ``n_params`` (both generators and critics), ``n_params_generators``, ``train_time_s``
    and the hyper-parameters.
    """
    spec = spec or GANSpec()
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
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        gen01 = Generator(d, spec.width, spec.depth, mean, std)
        gen10 = Generator(d, spec.width, spec.depth, mean, std)
        critic01, critic10 = MLP(d, cw, cd), MLP(d, cw, cd)
    module = FlipGAN(gen01, gen10, critic01, critic10, spec)
    sampler = GroupPairSampler(z0, z1, batch_size=spec.batch_size, n_critic=spec.n_critic,
                               gen_steps=spec.gen_steps, seed=seed)
    start = time.perf_counter()
    fit(module, sampler, None, max_epochs=1, patience=None, seed=seed, accelerator=accelerator)
    elapsed = time.perf_counter() - start
    info = {"n_params": sum(n_params(m) for m in (gen01, gen10, critic01, critic10)),
            "n_params_generators": n_params(gen01.net) + n_params(gen10.net),
            "train_time_s": elapsed, **asdict(spec)}
    for m in (gen01, gen10):
        m.requires_grad_(False)
    return gen01, gen10, info


def _linear_mse(real: np.ndarray, gen: np.ndarray) -> tuple[float, float]:
    """Mean over features of the MSE (on gen, and on real) of regressions fitted on real."""
    d = real.shape[1]
    on_gen, on_real = [], []
    for j in range(d):
        rest = [k for k in range(d) if k != j]
        if rest:
            reg = LinearRegression().fit(real[:, rest], real[:, j])
            pg, pr = reg.predict(gen[:, rest]), reg.predict(real[:, rest])
        else:
            pg = pr = np.full(1, real[:, j].mean())
        on_gen.append(float(np.mean((gen[:, j] - pg) ** 2)))
        on_real.append(float(np.mean((real[:, j] - pr) ** 2)))
    return float(np.mean(on_gen)), float(np.mean(on_real))


def gan_quality(real_target: torch.Tensor, generated: torch.Tensor, mean: torch.Tensor,
                std: torch.Tensor) -> dict:
    """``ks``, ``mse`` and ``mse_real`` (module docstring) for one direction."""
    real = ((real_target - mean) / std).detach().cpu().double().numpy()
    gen = ((generated - mean) / std).detach().cpu().double().numpy()
    ks = float(np.mean([ks_2samp(real[:, j], gen[:, j]).statistic
                        for j in range(real.shape[1])]))
    mse, mse_real = _linear_mse(real, gen)
    return {"ks": ks, "mse": mse, "mse_real": mse_real}
