"""Cost of the gradient scorers, one ``name: value`` line per figure.

    python bench/scorers.py [--rows 1000000] [--ig-rows 2000] [--path-rows 200000]
                            [--repeats 3] [--threads 1] [--only faux_path]

Runs single-threaded by default: the project scores in 1-thread workers (two 1-thread jobs
beat one 2-thread job on this hardware), and ratios are steadier on a shared machine.

- ``faux_over_two_autograd_passes`` / ``faux_ng_over_two_autograd_passes``: time of
  ``faux.score`` divided by the time of two bare autograd input-gradient passes (one per
  model) on the same rows; 2x64 ReLU MLP target and aux, d = 20, float32. The bare time is
  the faster of one unchunked pass (timed once: it is ~2x slower) and passes chunked like
  the scorer (65,536 rows, best of the repeats), so the ratio does not profit from chunking. Goal <= 2.0.
- ``faux_ig_speedup_over_captum_default``: captum ``IntegratedGradients`` with default
  settings (50 steps, Gauss-Legendre) on the target's probability and the aux's logit,
  divided by our ``faux_ig`` (50 steps, both models, including the eq. 9 step). Goal >= 10.
- ``faux_path_over_faux``: time of fAux path (``faux.methods.path.path_effect``, default K = 8,
  binary aux, no support box) over ``faux.score("faux")`` on the same ``--path-rows`` rows and
  models. K aux gradient passes plus two target calls against one pass per model: goal
  <= K + 1.
- ``lightning_epoch_over_plain_loop``: one epoch through ``faux.models.training.fit`` over a
  plain PyTorch loop (``bench/training.py``).

Every time is the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch
from torch import nn
from training import lightning_epoch_over_plain_loop  # bench/training.py, beside this script

import faux
from faux.methods.options import DEFAULT_BATCH_SIZE

D, HIDDEN = 20, 64


def mlp(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(D, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, 1)).eval()


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bare_passes(models, x: torch.Tensor, chunk: int | None) -> None:
    """One plain autograd input-gradient pass per model (summed output, w.r.t. x only)."""
    step = chunk or x.shape[0]
    for m in models:
        for s in range(0, x.shape[0], step):
            xc = x[s:s + step].detach().requires_grad_(True)
            torch.autograd.grad(m(xc).sum(), xc)


def faux_path_over_faux(tar: nn.Module, aux: nn.Module, x: torch.Tensor, repeats: int) -> None:
    """fAux path with its default options over fAux, interleaved rounds, best of each."""
    from faux.methods.options import PathOptions
    from faux.methods.path import path_effect

    steps = PathOptions().steps
    jobs = {"faux": lambda: faux.score("faux", tar, aux, x),
            "faux_path": lambda: path_effect(tar, aux, x, steps=steps)}
    for fn in jobs.values():
        fn()                                   # warm-up
    best = dict.fromkeys(jobs, float("inf"))
    for _ in range(repeats):
        for name, fn in jobs.items():
            best[name] = min(best[name], best_of(fn, 1))
    print(f"path_rows: {x.shape[0]}")
    print(f"faux_path_steps: {steps}")
    print(f"faux_path_s: {best['faux_path']:.4f}")
    print(f"faux_path_over_faux: {best['faux_path'] / best['faux']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--ig-rows", type=int, default=2_000)
    ap.add_argument("--path-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--only", choices=("faux_path",), default=None,
                    help="run one piece of the bench only")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    tar, aux = mlp(0), mlp(1)
    x = torch.randn(args.rows, D, generator=torch.Generator().manual_seed(2))
    print(f"rows: {args.rows}")
    print(f"threads: {torch.get_num_threads()}")
    if args.only == "faux_path":
        faux_path_over_faux(tar, aux, x[:args.path_rows], args.repeats)
        return

    bare_passes((tar, aux), x[:1000], None)  # warm-up
    for method in ("faux", "faux_ng"):
        faux.score(method, tar, aux, x[:1000])
    t_whole = best_of(lambda: bare_passes((tar, aux), x, None), 1)
    # interleaved rounds, best of each: robust to load drifting on a shared machine
    jobs = {"bare": lambda: bare_passes((tar, aux), x, DEFAULT_BATCH_SIZE),
            "faux": lambda: faux.score("faux", tar, aux, x),
            "faux_ng": lambda: faux.score("faux_ng", tar, aux, x)}
    best = dict.fromkeys(jobs, float("inf"))
    for _ in range(args.repeats):
        for name, fn in jobs.items():
            best[name] = min(best[name], best_of(fn, 1))
    t_bare = min(t_whole, best["bare"])
    print(f"two_autograd_passes_s: {t_bare:.4f}")
    for method in ("faux", "faux_ng"):
        print(f"{method}_s: {best[method]:.4f}")
        print(f"{method}_over_two_autograd_passes: {best[method] / t_bare:.3f}")

    from captum.attr import IntegratedGradients

    xi = x[:args.ig_rows]
    zeros = torch.zeros_like(xi)
    prob = IntegratedGradients(lambda z: torch.sigmoid(tar(z)))
    logit = IntegratedGradients(aux)

    def captum_both():
        prob.attribute(xi, baselines=zeros, target=0)
        logit.attribute(xi, baselines=zeros, target=0)

    def ours():
        faux.score("faux_ig", tar, aux, xi)

    ours()
    t_ours = best_of(ours, args.repeats)
    t_captum = best_of(captum_both, args.repeats)
    print(f"faux_ig_s: {t_ours:.4f}")
    print(f"captum_ig_default_s: {t_captum:.4f}")
    print(f"faux_ig_speedup_over_captum_default: {t_captum / t_ours:.2f}")

    faux_path_over_faux(tar, aux, x[:args.path_rows], args.repeats)

    # ---- lightning_epoch_over_plain_loop (bench/training.py)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ratio = float(lightning_epoch_over_plain_loop())
    print(f"lightning_epoch_over_plain_loop: {ratio:.3f}")


if __name__ == "__main__":
    with torch.inference_mode(False):
        main()
