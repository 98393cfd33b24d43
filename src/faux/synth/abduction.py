"""Counterfactuals by abduction: infer the c-side latent from the observed features, then
decode it with the other value of c.

Algorithm 2 (A.7) samples x and its counterfactual x' from one prior latent z~ and one
decoding noise, so x' = F(x^, Gamma_c(z~, 1 - c)) shares the latent that made x. A reader of
A.7.6 ("we may simultaneously sample both an instance x and its counterfactual x'") may
instead take the counterfactual the way a structural causal model does (abduction, action,
prediction): z_abd = E[z | x~, c] from the CVAE's encoder, then x'_abd = F(x^, Gamma_c(z_abd,
1 - c)), the same decoding noise. With a perfect CVAE the two agree; with ours they differ by
what the encoder cannot recover.

The derivative that LIC-UB takes under this reading follows the same latent: the map
c -> F(x^, Gamma_c(z_abd, c)) (its value at the observed c is the CVAE's reconstruction
of x~, not x~ itself).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from faux.synth.fusion import fuse

#: how a counterfactual is made: ``shared`` = Algorithm 2's prior latent; ``abduction`` =
#: the encoder's posterior mean of the observed c-side features
COUNTERFACTUALS = ("shared", "abduction")


def abduced_latent(cvae, x_tilde: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``E[z | x~, c]``: the encoder's posterior mean (no sampling, so deterministic)."""
    with torch.no_grad():
        mu, _ = cvae.encode(x_tilde, c.float())
    return mu


def abduced_counterfactual(gen, n: int, bias: float, fusion: str,
                           seed: int) -> tuple[torch.Tensor, torch.Tensor, Callable]:
    """For the rows ``gen.sample(n, bias, fusion, seed)`` draws: the counterfactual by
    abduction ``x'_abd`` (n, d), its c-side block ``Gamma_c(z_abd, 1 - c)`` and the map
    ``c -> F(x^, Gamma_c(z_abd, c))`` of those rows."""
    d = gen._draw(int(n), bias, seed)
    c = d["c"].float()
    with torch.no_grad():
        x_tilde = gen.gen_c.decode(d["z_tilde"], c, d["noise_tilde"], gen.tau)
        z_abd = abduced_latent(gen.gen_c.cvae, x_tilde, c)
        x_tilde_cf = gen.gen_c.decode(z_abd, 1.0 - c, d["noise_tilde"], gen.tau)
        x_cf = fuse(d["x_hat"], x_tilde_cf, fusion)
    return x_cf, x_tilde_cf, gen._fused_c_side(d["x_hat"], z_abd, d["noise_tilde"], fusion)
