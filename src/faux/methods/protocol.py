"""What a fairness test is, to the studies that run it: the protocol and its inputs.

A fairness test is built from a :class:`MethodConfig` (options every study passes alike),
fitted once per run with a seed on :class:`TrainData` (what it may learn from: training rows,
an aux model, GAN settings), and then scores the individuals of a :class:`Batch` for a
target model: ``test.fit(data, seed).score(target, batch) -> (n,)`` tensor. What it needs of
the study (``target``, ``aux``, ``train``, ``gan``, ``dxdc``) is declared beside it in
``faux.methods.registry``; a study runs the tests whose needs it can meet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:       # annotations only: the registry (and so aggregation) imports no torch
    import torch
    from torch import nn

#: what a fairness test may need from a study
NEEDS = ("target", "aux", "train", "gan", "dxdc")


@dataclass(frozen=True)
class MethodConfig:
    """How a study configures every test: ``options`` are ``faux.score`` options (the
    gradient tests, LIC-UB's ``output``); ``params`` maps a method name to its constructor
    arguments (``unfair_map``, ``fta_lin``, ``fliptest``: the GAN spec fields)."""

    options: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    accelerator: str = "auto"

    def of(self, name: str) -> dict:
        return dict(self.params.get(name) or {})


@dataclass
class TrainData:
    """What a test may fit on: training rows ``x``/``c``, validation rows for quality
    metrics, and ``aux(seed) -> (module, info)``, the study's aux model for a run."""

    x: Any
    c: Any
    x_val: Any = None
    c_val: Any = None
    aux: Callable[[int], tuple[nn.Module, dict]] | None = None


@dataclass
class Batch:
    """The scored individuals: features, and what some tests read beside them (``c`` for
    FlipTest's groups, ``y`` for Unfair Map's loss, ``dx_dc`` for LIC-UB; ``x_of_c``, on
    synthetic data, the map from c to these rows' features, latents and noise fixed, for
    LIC-UB's one-point derivatives)."""

    x: torch.Tensor
    c: Any = None
    y: Any = None
    dx_dc: Any = None
    x_of_c: Callable[[torch.Tensor], torch.Tensor] | None = None


class Fitted(Protocol):
    """A test fitted for one run: ``info`` holds run facts (aux accuracy, GAN quality...)."""

    info: dict

    def score(self, target: nn.Module, batch: Batch) -> torch.Tensor: ...


class FairnessTest(Protocol):
    """``Test(config)``, then ``fit(data, seed)`` per run (``fit_many`` for several seeds;
    implement it when the seeds train faster together)."""

    def fit(self, data: TrainData, seed: int) -> Fitted: ...

    def fit_many(self, data: TrainData, seeds: Sequence[int]) -> list[Fitted]: ...


class Base:
    """Convenience base: ``fit_many`` as a loop of ``fit``; ``info`` starts empty."""

    info: dict

    def __init__(self, name: str, config: MethodConfig):
        self.name = name
        self.config = config
        self.info = {}

    def fit(self, data: TrainData, seed: int):
        return self

    def fit_many(self, data: TrainData, seeds: Sequence[int]) -> list:
        return [self.fit(data, s) for s in seeds]
