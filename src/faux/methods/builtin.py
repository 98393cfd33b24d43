"""The eight fairness tests of the paper behind the :mod:`faux.methods.protocol`: thin
adapters over the scorers (``gradients``, ``lic_ub``, ``fta_lin``, ``unfair_map``,
``fliptest``). Registered, with their needs, labels and paper rows, in ``registry``."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING

from faux.methods.protocol import Base, Batch, MethodConfig, TrainData

if TYPE_CHECKING:       # torch is imported where a method runs, not when the registry loads
    import torch


class Gradient(Base):
    """FTA, fAux, fAux+NG, fAux+IG through ``faux.score`` (the aux comes from the study)."""

    def __init__(self, name: str, config: MethodConfig):
        super().__init__(name, config)
        self.aux = None
        # shared by the per-seed copies fit() makes: the target's gradients (or IG
        # attributions) on a batch are computed for the first seed and reused by the others
        self._target_memo: dict = {}

    def fit(self, data: TrainData, seed: int) -> Gradient:
        out = copy.copy(self)
        out.info = {}
        if self.name != "fta":
            out.aux, ainfo = data.aux(seed)
            out.info = {"aux_accuracy": ainfo["accuracy"], "aux_params": ainfo["n_params"]}
        return out

    def score(self, target, batch: Batch, **options) -> torch.Tensor:
        from faux.methods.gradients import score

        return score(self.name, target, self.aux, batch.x, target_memo=self._target_memo,
                     **{**self.config.options, **options})

    def report(self, x0, **options) -> torch.Tensor:
        """Transparency report (eq. 40) from the aux model (see ``transparency.faux_report``)."""
        from faux.methods.transparency import faux_report

        return faux_report(self.aux, x0, method=self.name, **options)


class LicUB(Base):
    """The generator's true derivative of the target in c (synthetic data only).

    Parameters (``MethodConfig.params["lic_ub"]``): ``at`` (``mixed``, the default: the
    target's gradient at the observed x times the sampler's stored dx/dc, wherever the
    sampler took it; or one of ``faux.methods.lic_ub.LIC_AT``: the derivative of
    ``c -> f_tar(x(c))`` through the batch's ``x_of_c``) and ``output`` (the output
    differentiated; default the gradient tests' ``output``)."""

    def score(self, target, batch: Batch) -> torch.Tensor:
        from faux.errors import ConfigError
        from faux.methods.lic_ub import lic_ub, lic_ub_composite

        p = self.config.of(self.name)
        output = p.get("output") or self.config.options.get("output", "prob")
        at = p.get("at", "mixed")
        if at == "mixed":
            return lic_ub(target, batch.x, batch.dx_dc, output=output)
        if batch.x_of_c is None:
            raise ConfigError(f"lic_ub_at={at!r} needs the generator's map c -> x "
                              "(Batch.x_of_c); use lic_ub_at=mixed without it")
        return lic_ub_composite(target, batch.x_of_c, batch.c, at=at, output=output)


class Refit(Base):
    """A test that learns a fair metric from (x, c) per seed: FTA + lin. aux, Unfair Map."""

    def fit(self, data: TrainData, seed: int) -> Refit:
        out = copy.copy(self)
        out.model = self.make().fit(data.x, data.c, seed=seed)
        return out

    def make(self):
        if self.name == "fta_lin":
            from faux.methods.fta_lin import FTALin

            return FTALin(**self.config.of(self.name))
        from faux.methods.unfair_map import UnfairMap

        return UnfairMap(**self.config.of(self.name))

    def score(self, target, batch: Batch) -> torch.Tensor:
        if self.name == "unfair_map":
            return self.model.score(target, batch.x, batch.y)
        return self.model.score(target, batch.x)


class Flip(Base):
    """FlipTest: two WGANs per seed (``fit_many`` trains a run's seeds as one stack); its
    info holds the GANs' quality on the validation rows when ``TrainData`` has them."""

    def _new(self):
        from faux.methods.fliptest import FlipTest

        return FlipTest(**self.config.of(self.name), accelerator=self.config.accelerator)

    def fit(self, data: TrainData, seed: int) -> Flip:
        return self._wrap(self._new().fit(data.x, data.c, seed=seed), data)

    def fit_many(self, data: TrainData, seeds: Sequence[int]) -> list[Flip]:
        return [self._wrap(ft, data) for ft in self._new().fit_many(data.x, data.c, seeds)]

    def _wrap(self, ft, data: TrainData) -> Flip:
        import time

        out = copy.copy(self)
        out.ft = ft
        out.info = {"gan_train_s": ft.info["train_time_s"]}
        if data.x_val is not None:
            t = time.perf_counter()
            q = ft.quality(data.x_val, data.c_val)
            out.info.update(gan_ks=q["ks"], gan_mse=q["mse"], gan_mse_real=q["mse_real"],
                            gan_quality_s=time.perf_counter() - t)
        return out

    def score(self, target, batch: Batch) -> torch.Tensor:
        return self.ft.score(target, batch.x, c=batch.c)

    def report(self, x0, **options) -> torch.Tensor:
        """``|mean(x0 - G(x0))|`` (eq. 39) over rows of group c = 0."""
        import torch

        from faux.methods.transparency import fliptest_report

        x0 = torch.as_tensor(x0)
        return fliptest_report(x0, self.ft.counterparts(x0, torch.zeros(len(x0))))
