"""Biased synthetic data with per-individual counterfactuals (paper Algorithm 2, A.7).

One CVAE per source dataset (``Γ_y`` from the xy dataset, ``Γ_c`` from the xc dataset) is
trained once and cached. ``SyntheticGenerator.sample`` then draws ``(y, c) ~ P_bias``,
latents ``ẑ, z̃ ~ N(0, I)`` and decoding noise, decodes ``x̂ = Γ_y(ẑ, y)``,
``x̃ = Γ_c(z̃, c)``, fuses ``x = F(x̂, x̃)``, and also returns the counterfactual
``x' = F(x̂, Γ_c(z̃, 1 - c))`` with the same latents and the same noise, and ``dx/dc``: the
derivative of the fused x with respect to a continuous c through the c-side decoder,
latent and noise held fixed, at ``c = 0.5`` (``dxdc_at="mid"``) or at the observed c.

``c_path`` (``faux.synth.generator_settings.C_PATHS``) is how c enters the c-side CVAE's decoder: as an
input beside z (``decoder_input``, the default) or as ``c * b`` added to its pre-softmax
outputs (``logit_bias``); x(c), dx/dc and the counterfactual all follow that decoder. The
y-side CVAE keeps its own configuration. A generator configuration holds ``c_path`` only
when it is not the default, so a default generator's cache key is what it always was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from faux.errors import ConfigError
from faux.harness.cache import Cache
from faux.synth.bias import mutual_information, p_bias, sample_joint
from faux.synth.dataset_generator import build_dataset_generator
from faux.synth.fusion import fuse, projections
from faux.synth.generator_quality import generator_scores
from faux.synth.generator_settings import (
    C_PATHS,
    DECODINGS,
    FUSIONS,
    check_decoding,
    check_dxdc_at,
    generator_config,
)


@dataclass
class SyntheticSet:
    """One synthetic sample with its ground truth; tensors are float32, y/c int64."""

    x: torch.Tensor
    x_cf: torch.Tensor
    y: torch.Tensor
    c: torch.Tensor
    x_hat: torch.Tensor
    x_tilde: torch.Tensor
    x_tilde_cf: torch.Tensor
    dx_dc: torch.Tensor
    w_hat: torch.Tensor
    w_tilde: torch.Tensor
    fusion: str
    bias: float
    joint: np.ndarray
    dxdc_at: str

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])


class SyntheticGenerator:
    """Both CVAEs of a pair (xc: the dataset whose label is c; xy: whose label is y).

    ``generator_cfgs`` maps dataset name to overrides of :func:`generator_config`.
    ``c_path`` (``faux.synth.generator_settings.C_PATHS``) is how c enters the c-side CVAE's decoder; it
    is added to the xc dataset's overrides only, so with ``xc == xy`` and a non-default
    ``c_path`` the two sides are two CVAEs.
    """

    def __init__(self, xc: str, xy: str, generator_cfgs: dict | None = None, cache_dir=None,
                 seed: int = 0, decoding: str = "gumbel", tau: float = 0.3,
                 dxdc_at: str = "mid", root=None, c_path: str = C_PATHS[0]):
        self.xc, self.xy = xc, xy
        self.decoding = check_decoding(decoding)
        if not tau > 0:
            raise ConfigError(f"tau must be > 0, got {tau}")
        self.tau = float(tau)
        self.dxdc_at = check_dxdc_at(dxdc_at)
        self.seed = int(seed)
        cfgs = generator_cfgs or {}
        unknown = set(cfgs) - {xc, xy}
        if unknown:
            raise ConfigError(f"generator_cfgs has entries {sorted(unknown)} that are not in the "
                              f"pair ({xc}, {xy}); remove them")
        self.cache = Cache(cache_dir)
        cfg_c = generator_config(xc, {**(cfgs.get(xc) or {}), "c_path": c_path})
        cfg_y = generator_config(xy, cfgs.get(xy))
        self.c_path = cfg_c.get("c_path", C_PATHS[0])
        self.gen_c = build_dataset_generator(xc, cfg_c, seed=seed, cache=self.cache, root=root)
        self.gen_y = (self.gen_c if (xy, cfg_y) == (xc, cfg_c) else
                      build_dataset_generator(xy, cfg_y, seed=seed, cache=self.cache, root=root))

    @property
    def key(self) -> dict:
        """What this pair's samples depend on: both generators' keys (data checksums, code
        version, configs, seed) and the decoding options. Keys of artifacts trained on its
        samples (targets, aux models) should hold it."""
        return {"c": self.gen_c.key, "y": self.gen_y.key, "decoding": self.decoding,
                "tau": self.tau, "dxdc_at": self.dxdc_at}

    @property
    def p_c1(self) -> float:
        return self.gen_c.p_label

    @property
    def p_y1(self) -> float:
        return self.gen_y.p_label

    def joint(self, bias: float) -> np.ndarray:
        """``P_bias[c, y]``."""
        return p_bias(self.p_c1, self.p_y1, bias)

    def mutual_information(self, bias: float) -> float:
        return mutual_information(self.joint(bias))

    def projections(self, fusion: str) -> tuple[torch.Tensor, torch.Tensor]:
        return projections(self.gen_y.dim, self.gen_c.dim, fusion,
                           s_hat=self.gen_y.n_features, s_tilde=self.gen_c.n_features)

    def _fused_c_side(self, x_hat, z_tilde, noise_tilde, fusion):
        def f(c: torch.Tensor) -> torch.Tensor:
            return fuse(x_hat, self.gen_c.decode(z_tilde, c, noise_tilde, self.tau), fusion)
        return f

    def _draw(self, n: int, bias: float, seed: int) -> dict:
        """Labels, latents and decoding noise of ``n`` rows; all randomness of a sample."""
        P = self.joint(bias)
        rng = np.random.default_rng(seed)
        c_np, y_np = sample_joint(P, n, rng)
        g = torch.Generator().manual_seed(int(rng.integers(2**62)))
        gumbel = self.decoding == "gumbel"
        d = {"P": P, "y": torch.from_numpy(y_np), "c": torch.from_numpy(c_np),
             "z_hat": torch.randn(n, self.gen_y.cvae.latent_dim, generator=g),
             "z_tilde": torch.randn(n, self.gen_c.cvae.latent_dim, generator=g)}
        d["noise_hat"] = self.gen_y.noise(n, g) if gumbel else None
        d["noise_tilde"] = self.gen_c.noise(n, g) if gumbel else None
        with torch.no_grad():
            d["x_hat"] = self.gen_y.decode(d["z_hat"], d["y"].float(), d["noise_hat"], self.tau)
        return d

    def sample(self, n: int, bias: float, fusion: str = "outer", seed: int = 1,
               dxdc_at: str | None = None) -> SyntheticSet:
        """``n`` draws of Algorithm 2 with counterfactuals and ``dx/dc``; deterministic in seed."""
        if int(n) < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        if fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
        dxdc_at = check_dxdc_at(dxdc_at or self.dxdc_at)
        n = int(n)
        d = self._draw(n, bias, seed)
        cf = d["c"].float()
        x_hat, z_tilde, noise_tilde = d["x_hat"], d["z_tilde"], d["noise_tilde"]
        with torch.no_grad():
            x_tilde = self.gen_c.decode(z_tilde, cf, noise_tilde, self.tau)
            x_tilde_cf = self.gen_c.decode(z_tilde, 1.0 - cf, noise_tilde, self.tau)
            x = fuse(x_hat, x_tilde, fusion)
            x_cf = fuse(x_hat, x_tilde_cf, fusion)
        c_eval = torch.full((n,), 0.5) if dxdc_at == "mid" else cf.clone()
        f = self._fused_c_side(x_hat, z_tilde, noise_tilde, fusion)
        _, dx_dc = torch.func.jvp(f, (c_eval,), (torch.ones(n),))
        w_hat, w_tilde = self.projections(fusion)
        return SyntheticSet(x=x, x_cf=x_cf, y=d["y"], c=d["c"], x_hat=x_hat, x_tilde=x_tilde,
                            x_tilde_cf=x_tilde_cf, dx_dc=dx_dc.detach(), w_hat=w_hat,
                            w_tilde=w_tilde, fusion=fusion, bias=float(bias), joint=d["P"],
                            dxdc_at=dxdc_at)

    def fused_of_c(self, n: int, bias: float, fusion: str, seed: int):
        """The map ``c -> fused x`` for the rows ``sample(n, bias, fusion, seed)`` draws, with
        their latents and noise fixed (for finite-difference checks and diagnostics)."""
        d = self._draw(int(n), bias, seed)
        return self._fused_c_side(d["x_hat"], d["z_tilde"], d["noise_tilde"], fusion)


def main(argv=None) -> None:
    """``python -m faux.synth.sampler DATASET [--beta B] [--decoding D] ...``: print scores."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Train/load a dataset's CVAE and print its scores")
    ap.add_argument("dataset")
    ap.add_argument("--decoding", default="gumbel", choices=DECODINGS)
    ap.add_argument("--tau", type=float, default=0.3)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="generator config overrides, e.g. beta=0.2 max_steps=1000")
    args = ap.parse_args(argv)
    over = {}
    for kv in args.set:
        k, _, v = kv.partition("=")
        over[k] = json.loads(v) if v not in ("reduce", "error") else v
    gen = build_dataset_generator(args.dataset, over, seed=args.seed)
    out = generator_scores(gen, decoding=args.decoding, tau=args.tau, n=args.n, seed=args.seed)
    out["train_info"] = gen.info
    print(json.dumps(out))


if __name__ == "__main__":
    main()
