"""What a fairness test is, to the studies, the reports and the audit: the protocol, its
inputs and the class attributes that describe it.

A fairness test is a class (one per method, :class:`Base`'s subclasses in
``faux.methods.builtin``), built from a :class:`MethodConfig` (options every study passes
alike), fitted once per run with a seed on :class:`TrainData` (what it may learn from:
training rows, an aux model, GAN settings), and then scores the individuals of a
:class:`Batch` for a target model: ``test.fit(data, seed).score(target, batch) -> (n,)``
tensor. Its class attributes say what it needs of a study (``target``, ``aux``, ``train``,
``gan``, ``dxdc``), how it is shown (label, paper row) and how the audit runs it;
``faux.methods.registry`` holds the classes, and a study runs those whose needs it meets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from faux.methods.options import ScoreOptions

if TYPE_CHECKING:       # annotations only: the registry (and so aggregation) imports no torch
    import torch
    from torch import nn

#: what a fairness test may need from a study
NEEDS = ("target", "aux", "train", "gan", "dxdc")


#: how often a test runs per cell: once (deterministic given the target), over seeds base,
#: base+1, ..., or over seeds 10, 20, ... (Unfair Map's metric seeds, A.11.3)
RUNS = ("once", "seeds", "tens")


@dataclass(frozen=True)
class MethodConfig:
    """How a study configures every test: ``options`` are the gradient tests' options
    (:class:`ScoreOptions`; a dict of its fields is checked and converted); ``params`` maps a
    method name to its own settings (constructor arguments of Unfair Map, FTA + lin. aux,
    FlipTest's GAN spec fields; LIC-UB's :class:`~faux.methods.options.LicUBOptions`)."""

    options: ScoreOptions = field(default_factory=ScoreOptions)
    params: dict = field(default_factory=dict)
    accelerator: str = "auto"

    def __post_init__(self):
        if not isinstance(self.options, ScoreOptions):
            object.__setattr__(self, "options", ScoreOptions.of(self.options))

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
    """A fairness test's class: what it is (class attributes, read by the registry, the
    studies, the reports and the audit) and the convenience defaults of the protocol
    (``fit`` returns the test itself; ``fit_many`` is a loop of ``fit``; ``info`` starts
    empty). ``Class(config)`` or ``Class.build(config)`` makes one."""

    #: registered name (result keys, sweep lists) and display label (tables, figures)
    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    #: short label of the readings study's compact tables (default: ``label``)
    short: ClassVar[str] = ""
    #: what a study must provide (a subset of NEEDS, with "target")
    needs: ClassVar[frozenset] = frozenset({"target"})
    #: row of the paper's Table 1 (None: not in the paper)
    paper_row: ClassVar[int | None] = None
    #: one of RUNS
    runs: ClassVar[str] = "seeds"
    #: scores with ScoreOptions (the real study's variants may override them)
    score_options: ClassVar[bool] = False
    #: has a transparency report, ``report(x0, **options)`` (Table 3)
    transparency: ClassVar[bool] = False
    #: ScoreOptions fields only this test reads (other tests' results do not depend on them)
    own_options: ClassVar[tuple[str, ...]] = ()
    #: reads a settings block of its own, ``MethodConfig.params[name]``, that no other reads;
    #: the studies fill it from the config's ``methods.<name>`` (``faux.studies.config``)
    own_params: ClassVar[bool] = False
    #: the audit: the default flagging threshold (None: the audit does not offer the test)
    audit_threshold: ClassVar[float | None] = None
    #: in the audit's default method list
    audit_default: ClassVar[bool] = False
    #: first in the audit's default list, so its flags are the audit's verdict: the test whose
    #: calibrated null (aux models on permuted c) separates a planted proxy (docs/audit.md)
    audit_flags: ClassVar[bool] = False
    #: ScoreOptions fields the audit sets for this test
    audit_options: ClassVar[dict] = {}
    #: how the audit scores a black box (model calls only): "pinv_directions" (eq. 9 by
    #: central differences along the aux Jacobian's pseudo-inverse directions),
    #: "gradient_cosine" (eq. 10 of a central-difference gradient), "gradient_norm" (its
    #: l2 norm); None: the test needs autograd through the model (torch models only)
    black_box: ClassVar[str | None] = None

    info: dict

    def __init__(self, config: MethodConfig | None = None):
        self.config = config if config is not None else MethodConfig()
        self.info = {}

    @classmethod
    def build(cls, config: MethodConfig | None = None):
        return cls(config)

    @classmethod
    def run_seeds(cls, base_seed: int, n_runs: int) -> list[int]:
        """The seeds of a cell's runs."""
        if cls.runs == "once":
            return [int(base_seed)]
        if cls.runs == "tens":
            return [10 * (i + 1) for i in range(int(n_runs))]
        return [int(base_seed) + i for i in range(int(n_runs))]

    def fit(self, data: TrainData, seed: int):
        return self

    def fit_many(self, data: TrainData, seeds: Sequence[int]) -> list:
        return [self.fit(data, s) for s in seeds]
