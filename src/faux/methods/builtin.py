"""The eight fairness tests of the paper, one class each (name, label, paper row, needs,
options, audit settings as class attributes; :class:`faux.methods.protocol.Base`), and the
extensions beyond the paper's table (fAux path, ``path``: A.12's successive first-order
steps). ``registry`` registers them.

The four gradient tests (FTA, fAux, fAux+NG, fAux+IG) hold their formulas here, over the
pure functions of ``alignment`` and the autograd passes of ``gradient_pass``; the others
are adapters to their scorers (``lic_ub``, ``fta_lin``, ``unfair_map``, ``fliptest``,
``path``). Torch is imported inside the methods that run, so the registry loads without it."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING

from faux.errors import ConfigError
from faux.methods.options import LicUBOptions, PathOptions, ScoreOptions
from faux.methods.protocol import Base, Batch, MethodConfig, TrainData

if TYPE_CHECKING:       # torch is imported where a method runs, not when the registry loads
    import torch


class Gradient(Base):
    """A test computed from input gradients of the target and (but FTA) the aux, the aux from
    the study: ``faux.score`` runs :meth:`scores`. A subclass holds its formula in
    ``combine`` (a pure function of ``faux.methods.alignment``) and, when it reads other
    than plain input gradients, its pass in ``gradients``."""

    score_options = True

    def __init__(self, config: MethodConfig | None = None):
        super().__init__(config)
        self.aux = None
        #: gradients kept for reuse, shared by the per-seed copies fit() makes: the target's
        #: gradients (or IG attributions) on a batch are computed for the first seed and
        #: reused by the others; tests scoring the same rows may share one dict (the aux's
        #: gradients are then computed once for all of them)
        self.memo: dict = {}

    def fit(self, data: TrainData, seed: int) -> Gradient:
        out = copy.copy(self)
        out.info = {}
        if "aux" in self.needs:
            out.aux, ainfo = data.aux(seed)
            out.info = {"aux_accuracy": ainfo["accuracy"], "aux_params": ainfo["n_params"]}
        return out

    def score(self, target, batch: Batch, options: ScoreOptions | dict | None = None
              ) -> torch.Tensor:
        """Scores under the config's options, with ``options`` (a variant's) on top."""
        o = self.config.options if options is None else self.config.options.replace(
            **(options.as_dict() if isinstance(options, ScoreOptions) else options))
        return self.scores(target, self.aux, batch.x, o, target_memo=self.memo)

    def report(self, x0, **options) -> torch.Tensor:
        """Transparency report (eq. 40) from the aux model (see ``transparency.faux_report``)."""
        from faux.methods.transparency import faux_report

        return faux_report(self.aux, x0, method=self.name, **options)

    @classmethod
    def scores(cls, target, aux, x, options: ScoreOptions, *, target_memo: dict | None = None
               ) -> torch.Tensor:
        """Per-row scores ``(n,)`` of ``target`` on rows ``x`` (``faux.methods.gradients.score``
        documents the options, the memo and the errors); ``aux`` is unused (may be None) by a
        test that does not need one."""
        from faux.methods.autograd import check_model, check_x, scoring_mode
        from faux.methods.gradient_pass import checked_options, finished

        o = checked_options(options)
        x = check_x(x)
        check_model(target, x, "target")
        if "aux" in cls.needs:
            if aux is None:
                raise ConfigError(f"method {cls.name!r} needs an aux model; pass one (only "
                                  f"{FTAMethod.name!r} runs without)")
            check_model(aux, x, "aux")
        else:
            aux = None
        with scoring_mode(target, aux):
            g_t, w_t, g_a, w_a = cls.gradients(target, aux, x, o, target_memo)
        return finished(cls.combine(g_t, w_t, g_a, w_a, o), cls.name)

    @staticmethod
    def gradients(target, aux, x, o: ScoreOptions, memo: dict | None):
        """``(g_t, w_t, g_a, w_a)``: the target's factored input gradient and the aux's (None
        without an aux)."""
        from faux.methods.gradient_pass import aux_gradients, target_gradients

        g_t, w_t = target_gradients(target, x, o, memo)
        g_a, w_a = aux_gradients(aux, x, o, memo) if aux is not None else (None, None)
        return g_t, w_t, g_a, w_a

    @staticmethod
    def combine(g_t, w_t, g_a, w_a, o: ScoreOptions) -> torch.Tensor:
        raise NotImplementedError


class LicUB(Base):
    """The generator's true derivative of the target in c (synthetic data only).

    Options: :class:`faux.methods.options.LicUBOptions` (``MethodConfig.params[name]``); the
    sampler stores dx/dc wherever the reading took it."""

    def score(self, target, batch: Batch) -> torch.Tensor:
        from faux.methods.lic_ub import lic_ub, lic_ub_composite

        p = LicUBOptions.of(self.config.of(self.name))
        output = p.output or self.config.options.output
        at = p.at
        if at == "mixed":
            return lic_ub(target, batch.x, batch.dx_dc, output=output)
        if batch.x_of_c is None:
            raise ConfigError(f"lic_ub_at={at!r} needs the generator's map c -> x "
                              "(Batch.x_of_c); use lic_ub_at=mixed without it")
        return lic_ub_composite(target, batch.x_of_c, batch.c, at=at, output=output)


class Refit(Base):
    """A test that learns a fair metric from (x, c) per seed: FTA + lin. aux, Unfair Map
    (``make()``: the metric, from its constructor arguments ``MethodConfig.params[name]``)."""

    def fit(self, data: TrainData, seed: int) -> Refit:
        out = copy.copy(self)
        out.model = self.make().fit(data.x, data.c, seed=seed)
        return out

    def make(self):
        raise NotImplementedError

    def score(self, target, batch: Batch) -> torch.Tensor:
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


# --------------------------------------------------------------------------- the methods


class FTAMethod(Gradient):
    """FTA: the p-norm of the target's input gradient (no aux)."""

    name, label, short, paper_row, runs = "fta", "FTA", "FTA", 1, "once"
    audit_threshold, black_box = 0.1, "gradient_norm"

    @staticmethod
    def combine(g_t, w_t, g_a, w_a, o: ScoreOptions) -> torch.Tensor:
        from faux.methods.alignment import fta_scores

        return fta_scores(g_t, w_t, o.p)


class FTALinMethod(Refit):
    name, label, short, paper_row = "fta_lin", "FTA + lin. aux", "FTA+lin", 2
    needs = frozenset({"target", "train"})
    own_params = True

    def make(self):
        from faux.methods.fta_lin import FTALin

        return FTALin(**self.config.of(self.name))


class UnfairMapMethod(Refit):
    name, label, paper_row, runs = "unfair_map", "Unfair Map", 3, "tens"
    needs = frozenset({"target", "train"})
    own_params = True

    def make(self):
        from faux.methods.unfair_map import UnfairMap

        return UnfairMap(**self.config.of(self.name))

    def score(self, target, batch: Batch) -> torch.Tensor:
        return self.model.score(target, batch.x, batch.y)


class FlipTestMethod(Flip):
    name, label, paper_row, transparency = "fliptest", "FlipTest", 4, True
    needs = frozenset({"target", "train", "gan"})


class FAuxMethod(Gradient):
    """fAux (eq. 9): the target's gradient along the aux Jacobian's pseudo-inverse."""

    name, label, short, paper_row, transparency = "faux", "fAux", "fAux", 5, True
    needs = frozenset({"target", "aux"})
    audit_threshold, audit_default, black_box = 0.05, True, "pinv_directions"

    @staticmethod
    def combine(g_t, w_t, g_a, w_a, o: ScoreOptions) -> torch.Tensor:
        from faux.methods.alignment import faux_scores

        return faux_scores(g_t, w_t, g_a, w_a, o.eps)


class FAuxNGMethod(Gradient):
    """fAux+NG (eq. 10): the largest |cosine| between the normalised gradients."""

    name, label, short, paper_row, transparency = "faux_ng", "fAux+NG", "NG", 6, True
    needs = frozenset({"target", "aux"})
    own_options = ("ng",)
    # the per-feature reading divides by spreads over the rows scored together, so an
    # audited row's score would depend on its batch: per-row unit vectors instead
    audit_threshold, audit_default, audit_options = 0.5, True, {"ng": "sample"}
    audit_flags = True
    black_box = "gradient_cosine"

    @staticmethod
    def combine(g_t, w_t, g_a, w_a, o: ScoreOptions) -> torch.Tensor:
        from faux.methods.alignment import ng_scores

        return ng_scores(g_t, w_t, g_a, w_a, o.ng, inplace=True)


class FAuxIGMethod(Gradient):
    """fAux+IG: eq. 9 on the integrated-gradients attributions of both models."""

    name, label, short, paper_row, transparency = "faux_ig", "fAux+IG", "IG", 7, True
    needs = frozenset({"target", "aux"})
    own_options = ("ig_steps", "ig_baseline")
    audit_threshold = 0.05      # integrated gradients need autograd: no black_box

    @staticmethod
    def gradients(target, aux, x, o: ScoreOptions, memo: dict | None):
        from faux.methods.gradient_pass import aux_attributions, target_attributions

        g_t, w_t = target_attributions(target, x, o, memo)
        g_a, w_a = aux_attributions(aux, x, o)
        return g_t, w_t, g_a, w_a

    @staticmethod
    def combine(g_t, w_t, g_a, w_a, o: ScoreOptions) -> torch.Tensor:
        from faux.methods.alignment import faux_scores

        return faux_scores(g_t, w_t, g_a, w_a, o.eps)


class LicUBMethod(LicUB):
    name, label, short, paper_row, runs = "lic_ub", "LIC-UB", "LIC-UB", 8, "once"
    needs = frozenset({"target", "dxdc"})


#: the paper's tests, in the order of its Table 1
PAPER = (FTAMethod, FTALinMethod, UnfairMapMethod, FlipTestMethod, FAuxMethod, FAuxNGMethod,
         FAuxIGMethod, LicUBMethod)


class FAuxPathMethod(Base):
    """fAux path (``faux.methods.path``): the target's change along K first-order steps of
    the aux inverse to the counterfactual c, ranked by ``|effect|``. Options:
    :class:`~faux.methods.options.PathOptions` (``MethodConfig.params[name]``); the support
    box is the training rows' when ``fit`` gets them. Not a row of the paper's Table 1 (its
    remedy of A.12's limitation): ``paper_row`` None puts it after the paper's rows."""

    name, label, short, paper_section = "faux_path", "fAux path", "path", "A.12"
    needs = frozenset({"target", "aux"})
    own_params = True

    def __init__(self, config: MethodConfig | None = None):
        super().__init__(config)
        self.options = PathOptions.of(self.config.of(self.name))
        from faux.methods.path import check_steps  # a bad K fails when the test is built

        check_steps(self.options.steps)
        self.aux = self.box = self.last = None
        self.sd = self.options.sd

    def fit(self, data: TrainData, seed: int) -> FAuxPathMethod:
        from faux.methods.path import support_box

        out = copy.copy(self)
        out.aux, ainfo = data.aux(seed)
        out.info = {"aux_accuracy": ainfo["accuracy"], "aux_params": ainfo["n_params"]}
        if data.x is not None:
            out.box = support_box(data.x, self.options.margin)
        if self.options.aux_kind == "regression" and out.sd is None and data.c is not None:
            import torch

            out.sd = float(torch.as_tensor(data.c).double().std())
        return out

    def score(self, target, batch: Batch) -> torch.Tensor:
        """``|f_tar(x_K) - f_tar(x_0)|`` per row; the full result (signed effects, end points,
        flags) is kept as ``last``, the flagged rows' counts in ``info``."""
        from faux.methods.path import path_effect

        p, o = self.options, self.config.options
        res = path_effect(target, self.aux, batch.x, steps=p.steps, output=p.output or o.output,
                          aux_kind=p.aux_kind, sd=self.sd, support=self.box,
                          batch_size=o.batch_size)
        self.last = res
        self.info.update(path_outside_rows=int(res.outside.sum()),
                         path_stuck_rows=int(res.stuck.sum()))
        return res.effect.abs()


#: tests beyond the paper's Table 1, registered after its rows
class LicUBPathMethod(LicUB):
    """LIC-UB's path mean: the mean derivative of ``c -> f_tar(x(c))`` over midpoints of
    [0, 1] (``faux.methods.lic_ub.LIC_AT`` "path"), the secant of the labels in the limit.
    A check of the pipeline beside the one-point LIC-UB, not a test (it needs the generator's
    map c -> x); its output follows LIC-UB's options."""

    name, label, short, runs = "lic_ub_path", "LIC-UB path mean", "LIC-UB path", "once"
    needs = frozenset({"target", "dxdc"})

    def score(self, target, batch: Batch) -> torch.Tensor:
        from faux.methods.lic_ub import lic_ub_composite

        p = LicUBOptions.of(self.config.of(LicUBMethod.name))
        if batch.x_of_c is None:
            raise ConfigError("lic_ub_path needs the generator's map c -> x (Batch.x_of_c)")
        return lic_ub_composite(target, batch.x_of_c, batch.c, at="path",
                                output=p.output or self.config.options.output)


EXTENSIONS = (FAuxPathMethod, LicUBPathMethod)
