"""The typed options of the fairness tests, each default written once.

:class:`ScoreOptions` are the options of the gradient scorers (``faux.score``: FTA, fAux,
fAux+NG, fAux+IG); :class:`LicUBOptions` are LIC-UB's. Both are frozen dataclasses built
with ``of(...)``, which refuses an unknown option name in one line naming the known ones.
Loaded without torch (the registry, and so aggregation, imports this module).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from faux.errors import ConfigError

#: rows per chunk of an autograd pass
DEFAULT_BATCH_SIZE = 65536


def _merge(cls, base, overrides: dict, what: str):
    if isinstance(base, cls):
        base_fields = {}
        start = base
    else:
        base_fields = dict(base or {})
        start = None
    given = {**base_fields, **overrides}
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(f"unknown option(s) {unknown} for {what}; known: {', '.join(known)}")
    return replace(start, **given) if start is not None else cls(**given)


@dataclass(frozen=True)
class ScoreOptions:
    """Options of ``faux.score`` (see ``faux.methods.gradients.score``).

    ``output``: the target's output differentiated ("prob"|"logit"); ``aux_output``: the aux's
    (None: "logit"); ``p``: FTA's norm; ``ng``: fAux+NG's normalisation ("feature"|"sample"|
    "feature_rms"); ``ig_steps``, ``ig_baseline`` ("zeros"|"mean"|a tensor (d,) or (n, d)),
    ``ig_method`` ("midpoint"|"trapezoid"|"gausslegendre"): fAux+IG's integrated gradients;
    ``eps``: relative eigenvalue cut-off of the pseudo-inverse for k > 1 aux outputs;
    ``batch_size``: rows per chunk."""

    output: str = "prob"
    aux_output: str | None = None
    p: Any = 2.0
    ng: str = "feature"
    ig_steps: int = 50
    ig_baseline: Any = "zeros"
    ig_method: str = "midpoint"
    eps: float = 1e-12
    batch_size: int = DEFAULT_BATCH_SIZE

    @classmethod
    def of(cls, options: ScoreOptions | dict | None = None, /, **overrides) -> ScoreOptions:
        """``options`` (a ScoreOptions, a dict or None) with ``overrides`` on top."""
        return _merge(cls, options, overrides, "faux.score")

    def replace(self, **overrides) -> ScoreOptions:
        return ScoreOptions.of(self, **overrides)

    def as_dict(self) -> dict:
        """The fields by name (shallow: a tensor baseline stays the same object)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class LicUBOptions:
    """LIC-UB's options: ``at`` ("mixed": the target's gradient at the observed x times the
    sampler's stored dx/dc; or one of ``faux.methods.lic_ub.LIC_AT``: the derivative of
    ``c -> f_tar(x(c))`` through the batch's ``x_of_c``) and ``output`` (the output
    differentiated; None: the gradient tests' ``ScoreOptions.output``)."""

    at: str = "mixed"
    output: str | None = None

    @classmethod
    def of(cls, options: LicUBOptions | dict | None = None, /, **overrides) -> LicUBOptions:
        return _merge(cls, options, overrides, "LIC-UB")


@dataclass(frozen=True)
class PathOptions:
    """fAux path's options (``faux.methods.path``; ``MethodConfig.params["faux_path"]``):
    ``steps`` (K first-order steps of the aux inverse, >= 1), ``output`` (the target's output
    compared, "prob"|"logit"; None: the gradient tests' ``ScoreOptions.output``), ``margin``
    (the support box of the training rows is widened by ``margin`` times each feature's
    range), ``aux_kind`` ("logit": one binary logit per aux output column, moved to its
    mirror; "softmax": one k-class c, a logit per class, the margin to each other class
    mirrored; "regression": a continuous c, moved by +-``sd``) and ``sd`` (the step of a
    regression aux; None: the standard deviation of the training c)."""

    steps: int = 8
    output: str | None = None
    margin: float = 0.1
    aux_kind: str = "logit"
    sd: float | None = None

    @classmethod
    def of(cls, options: PathOptions | dict | None = None, /, **overrides) -> PathOptions:
        return _merge(cls, options, overrides, "fAux path")
