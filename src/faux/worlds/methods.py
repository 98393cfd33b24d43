"""Table 1's methods against the exact counterfactual: every registered method's per-row
scores on a world's rows, ranked against the rows whose decision truly flips.

**Targets**: the differentiable models of ``faux.worlds.models``: ``logistic``, ``mlp`` and
``fair_logistic`` (scikit-learn, as their exact torch twins, ``faux.audit.loaders.exact.convert``)
and ``fair_mlp`` (a torch module). ``trees`` is not differentiable, so no gradient method
scores it, and ``with_c`` reads c itself: a derivative in X misses c's direct effect, which
is part of its true effect. Both are left out.

**Units**: every method sees the rows standardised, ``z = (x - mean) / sd`` over the world's
rows, and the target as ``target(mean + sd z)``, as the audit scores them: a gradient's size
then does not depend on the units a feature is recorded in, and the audit's thresholds
(``audit_threshold`` of the registry) read the same scale.

**Aux**: one per world, shared by its models: the harness's aux MLP of c from the rows
(conf/model/aux/mlp.yaml: width 64, depth 2, batch 64, Adam 1e-3, early stopping on a
validation loss), trained on 80 % of the world's rows and validated on the other 20 %
(seed 0), with the profile's epochs (:data:`AUX_EPOCHS`: the harness's quick and paper
profiles).

**What each method is fed** (its ``needs``; ``fit(data, seed)`` then ``score(target,
batch)``, the path of the studies, at the method's first run seed):

- ``target``/``aux`` (FTA, fAux, fAux+NG, fAux+IG, fAux path): the target and the aux, at
  ``ScoreOptions``' defaults with the method's ``audit_options`` (fAux+NG per row, as the
  audit and Table 1's reading score it);
- ``train`` (FTA + lin. aux, Unfair Map): the rows and c (Unfair Map attacks with ``y``);
- ``dxdc`` (LIC-UB, LIC-UB path mean): a world knows each row at c = 0 and c = 1 only, so
  ``x(c) = x(0) + c (x(1) - x(0))``, the straight line between the row's two exact
  versions. LIC-UB takes the target's derivative along it at c = 1/2 (``at="mid"``, the
  reading of Table 1); the path mean averages it over 10 midpoints, which tends to the
  secant ``|p(x(1)) - p(x(0))|``, the true effect itself: a check, not a test;
- ``gan`` (FlipTest): two WGANs per world, only when asked (:data:`GAN_STEPS`).

**Scores** (:func:`rank_scores`): AP of the scores against the true flips
(``faux.metrics.ranking.average_precision``; NaN without a flip, as on a fair model), the
positive rate (the AP of a random ranking), the AP of ``|true effect|`` (how far ranking by
the exact effect gets: a flip also needs p near the threshold), Spearman of the scores
against ``|true effect|`` (NaN when either is constant) and, for a method with a default
threshold, the share of rows at or above it (on a fair model every such flag is false).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from faux.worlds.evaluate import Truth, spearman, truth

#: the models scored: the differentiable ones (trees are not; with_c reads c itself)
TARGETS = ("logistic", "mlp", "fair_logistic", "fair_mlp")
#: what a world provides a method (``gan`` is added when FlipTest is asked for)
PROVIDES = ("target", "aux", "train", "dxdc")
#: the aux's (max_epochs, patience) per worlds profile: the harness's quick and paper profiles
AUX_EPOCHS = {"quick": (30, 5), "default": (200, 10)}
#: FlipTest's generator steps per worlds profile: the harness's quick and paper profiles
GAN_STEPS = {"quick": 1000, "default": 20000}
#: LIC-UB's reading (conf/reading/p30_softmax_latent16.yaml: the derivative at c = 1/2)
LIC_UB = {"at": "mid"}
#: the share of the rows the aux is validated on
VAL_SHARE = 0.2


@dataclass
class Prepared:
    """A world in the methods' units: ``z`` (rows standardised), ``z0``/``z1`` (each row at
    c = 0 and c = 1), ``c`` (float), ``y``, and the standardisation ``mean``/``sd``."""

    z: torch.Tensor
    z0: torch.Tensor
    z1: torch.Tensor
    c: torch.Tensor
    y: torch.Tensor
    mean: np.ndarray
    sd: np.ndarray

    def x_of_c(self, c: torch.Tensor) -> torch.Tensor:
        """The rows at (possibly fractional) c, on the line between their two versions."""
        return self.z0 + c.reshape(-1, 1).to(self.z0.dtype) * (self.z1 - self.z0)


def prepare(world) -> Prepared:
    x = world.X.to_numpy(np.float64)
    mean, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)

    def std(a):
        return torch.as_tensor((a - mean) / sd, dtype=torch.float32)

    z, zcf = std(x), std(world.X_cf.to_numpy(np.float64))
    is1 = torch.as_tensor(world.c == 1).reshape(-1, 1)
    return Prepared(z, torch.where(is1, zcf, z), torch.where(is1, z, zcf),
                    torch.as_tensor(world.c, dtype=torch.float32),
                    torch.as_tensor(world.y, dtype=torch.float32), mean, sd)


def target_module(model, prep: Prepared) -> torch.nn.Module:
    """The model as a torch module of standardised rows returning its logit; ValueError for
    a model that is not differentiable (or reads c)."""
    from faux.audit.loaders.exact import convert
    from faux.audit.scores.aux import Unstandardised

    if model.reads_c:
        raise ValueError(f"{model.name} reads c itself; the methods differentiate in X alone")
    if isinstance(model.obj, torch.nn.Module):
        module = model.obj
    else:
        twin = convert(model.obj)
        if twin is None or twin.output != "logit":
            raise ValueError(f"{model.name} is not differentiable (no torch twin)")
        module = twin.module
    return Unstandardised(module, prep.mean, prep.sd).eval()


def train_aux(prep: Prepared, epochs: tuple[int, int], seed: int = 0):
    """``(aux, info)``: the harness's aux MLP of c from the standardised rows (the module
    docstring)."""
    from faux.models.mlp import MLPSpec

    n = len(prep.z)
    order = np.random.default_rng(seed).permutation(n)
    val, train = order[: int(VAL_SHARE * n)], order[int(VAL_SHARE * n):]
    spec = MLPSpec(width=64, depth=2, max_epochs=epochs[0], patience=epochs[1])
    return spec.train(prep.z[train], prep.c[train], prep.z[val], prep.c[val], seed=seed,
                      accelerator="cpu")


def method_names(fliptest: bool = False) -> tuple[str, ...]:
    """The registered methods a world can feed, in Table 1's order."""
    from faux.methods import registry

    return registry.names(provides=PROVIDES + (("gan",) if fliptest else ()))


def config(name: str, gan_steps: int | None = None):
    """The ``MethodConfig`` a method runs under (the module docstring)."""
    from faux.methods import registry
    from faux.methods.builtin import LicUBMethod
    from faux.methods.options import ScoreOptions
    from faux.methods.protocol import MethodConfig
    from faux.models.wgan import GANSpec

    method = registry.get(name)
    params = {LicUBMethod.name: dict(LIC_UB)}
    if "gan" in method.needs:
        params[name] = {"gen_steps": gan_steps or GANSpec().gen_steps}
    return MethodConfig(ScoreOptions.of(method.audit_options), params, "cpu")


def rank_scores(scores, tr: Truth) -> dict:
    """A method's per-row scores against the truth (the module docstring)."""
    from faux.metrics.ranking import average_precision

    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    flips, size = tr.flips.astype(int), np.abs(tr.effect)
    return {"n_rows": len(flips), "n_true_flips": int(flips.sum()),
            "positive_rate": float(flips.mean()),
            "ap": average_precision(flips, scores),
            "ap_effect": average_precision(flips, size),
            "spearman": spearman(scores, size)}


def flag_rate(name: str, scores) -> float:
    """The share of rows at or above the method's default threshold (NaN without one)."""
    from faux.methods import registry

    t = registry.get(name).audit_threshold
    return float("nan") if t is None else float(np.mean(np.asarray(scores) >= t))


def score_world(world, models: dict, names, epochs: tuple[int, int],
                gan_steps: int | None = None, seed: int = 0) -> list[dict]:
    """One row per model of ``models`` (differentiable ones) and method of ``names``: the
    scores of :func:`rank_scores`, ``flag_rate``, the aux's accuracy, ``fit_s`` (fitting the
    method, once per world: FlipTest's GANs, the metrics of FTA + lin. aux and Unfair Map)
    and ``score_s`` (scoring the model's rows)."""
    from faux.methods import registry
    from faux.methods.protocol import Batch, TrainData

    prep = prepare(world)
    aux, info = train_aux(prep, epochs, seed)
    data = TrainData(prep.z, prep.c, aux=lambda _seed: (aux, info))
    batch = Batch(prep.z, prep.c, prep.y, dx_dc=prep.z1 - prep.z0, x_of_c=prep.x_of_c)
    fitted, fit_s = {}, {}
    for name in names:
        method, t0 = registry.get(name), time.perf_counter()
        fitted[name] = method.build(config(name, gan_steps)).fit(
            data, method.run_seeds(seed, 1)[0])
        fit_s[name] = time.perf_counter() - t0
    rows = []
    for m, model in models.items():
        target, tr = target_module(model, prep), truth(model, world)
        for name in names:
            t0 = time.perf_counter()
            scores = fitted[name].score(target, batch).detach().double().numpy()
            rows.append({"world": world.name, "model": m, "fair": model.fair, "method": name,
                         **rank_scores(scores, tr), "flag_rate": flag_rate(name, scores),
                         "aux_accuracy": float(info["accuracy"]),
                         "fit_s": round(fit_s[name], 2),
                         "score_s": round(time.perf_counter() - t0, 2)})
    return rows
