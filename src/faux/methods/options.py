"""The typed options of the fairness tests, each default written once.

:class:`ScoreOptions` are the options of the gradient scorers (``faux.score``: FTA, fAux,
fAux+NG, fAux+IG); :class:`LicUBOptions` are LIC-UB's; :class:`PathOptions` fAux path's. All
are frozen dataclasses built with ``of(...)``, which refuses an unknown option name in one
line naming the known ones. A choice among names is a ``typing.Literal`` below; the tuple of
its values (``OUTPUTS``, ``NG_READINGS``...) is read from it, so each list is written once.
The functions that take an option as a keyword default to the field's default here.
Loaded without torch (the registry, and so aggregation, imports this module).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Literal, get_args

from faux.errors import ConfigError

if TYPE_CHECKING:       # annotations only: a tensor baseline
    import torch

#: rows per chunk of an autograd pass
DEFAULT_BATCH_SIZE = 65536

#: the model output a gradient is taken of: the sigmoid of the logit, or the logit
Output = Literal["prob", "logit"]
#: fAux+NG's ``norm(.)`` of eq. 10 (``faux.methods.alignment.normalise_gradients``)
NGReading = Literal["feature", "sample", "feature_rms"]
#: the quadrature rule of integrated gradients (``faux.methods.ig.quadrature``)
IGMethod = Literal["midpoint", "trapezoid", "gausslegendre"]
#: the named integrated-gradients baselines (a tensor is the other choice)
IGBaseline = Literal["zeros", "mean"]
#: where ``lic_ub_composite`` takes the derivative of ``c -> f_tar(x(c))``
#: (``faux.methods.lic_ub``)
LicAt = Literal["mid", "fd", "observed", "path"]
#: LIC-UB's reading: "mixed" (the sampler's stored dx/dc at the observed x) or a ``LicAt``
LicUBAt = Literal["mixed", LicAt]
#: what fAux path's aux outputs are (``faux.methods.path``)
AuxKind = Literal["logit", "softmax", "regression"]

OUTPUTS: tuple[str, ...] = get_args(Output)
NG_READINGS: tuple[str, ...] = get_args(NGReading)
IG_METHODS: tuple[str, ...] = get_args(IGMethod)
BASELINES: tuple[str, ...] = get_args(IGBaseline)
LIC_AT: tuple[str, ...] = get_args(LicAt)
LIC_UB_AT: tuple[str, ...] = get_args(LicUBAt)
AUX_KINDS: tuple[str, ...] = get_args(AuxKind)


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

    ``output``: the target's output differentiated; ``aux_output``: the aux's (the logit by
    default: a probability's gradient vanishes where the aux is confident, and eq. 9 divides
    by its squared norm); ``p``: FTA's norm (a number, or "inf"); ``ng``: fAux+NG's
    normalisation; ``ig_steps``, ``ig_baseline`` (a name, or a tensor (d,) or (n, d)),
    ``ig_method``: fAux+IG's integrated gradients; ``eps``: relative eigenvalue cut-off of the
    pseudo-inverse for k > 1 aux outputs; ``batch_size``: rows per chunk."""

    output: Output = "prob"
    aux_output: Output = "logit"
    p: float = 2.0
    ng: NGReading = "feature"
    ig_steps: int = 50
    ig_baseline: IGBaseline | torch.Tensor = "zeros"
    ig_method: IGMethod = "midpoint"
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
    sampler's stored dx/dc; or one of :data:`LIC_AT`: the derivative of ``c -> f_tar(x(c))``
    through the batch's ``x_of_c``) and ``output`` (the output differentiated; None: the
    gradient tests' ``ScoreOptions.output``)."""

    at: LicUBAt = "mixed"
    output: Output | None = None

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
    output: Output | None = None
    margin: float = 0.1
    aux_kind: AuxKind = "logit"
    sd: float | None = None

    @classmethod
    def of(cls, options: PathOptions | dict | None = None, /, **overrides) -> PathOptions:
        return _merge(cls, options, overrides, "fAux path")
