"""What one real-data job runs: its settings, the methods it scores and the seed of each part.

Seeds: the job's seed splits the table (``load_real``) and draws the training subsample and
the scored individuals; each trained part gets its own seed (``seed + SEED_OFFSETS[part]``),
so the three same-sized networks do not share initial weights or mini-batch order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.options import ScoreOptions
from faux.studies.fairness_check import TARGETS

#: what the real-data study provides to a fairness test (no dx/dc: LIC-UB cannot run)
PROVIDES = ("target", "aux", "train", "gan")
MODELS = ("unfair", "fair")
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: offsets of each trained part's seed from the job's seed: the unfair target, the fair target
#: and the aux model share an architecture, and the same seed would give them the same initial
#: weights and mini-batch order, which could itself align their gradients
SEED_OFFSETS = {"unfair": 0, "fair": 1000, "aux": 2000, "gan": 3000, "probe": 4000,
                "blind": 5000}
#: the second fair model (``RealSettings.blind``): the unfair recipe blind to the declared edits
BLIND = "blind"


@dataclass(frozen=True)
class RealSettings:
    """Sizes and options of one real-data job (plain values; see ``conf/experiment/real``)."""

    max_train_rows: int | None = None
    n_score: int = 5000
    max_epochs: int = 200
    patience: int | None = 10
    adel_max_epochs: int | None = None   # epoch cap of the Adel models (None: max_epochs)
    gan_steps: int = 20000
    options: dict = field(default_factory=dict)         # faux.score options
    variants: dict = field(default_factory=dict)        # name -> {method: ..., **options}
    report_options: dict = field(default_factory=dict)  # faux_report options
    # extra Table 3 reports: name -> {method: <a report method>, **report options overriding
    # report_options}, e.g. fAux+IG from the mean baseline (docs/notebook/results_real.md, Table 3)
    report_variants: dict = field(default_factory=dict)
    # a method's own settings block by its name (``own_params``: Unfair Map's and FTA + lin.
    # aux's constructor arguments, fAux path's options; ``MethodConfig.params``)
    methods: dict = field(default_factory=dict)
    probe: dict = field(default_factory=lambda: {"width": 32, "depth": 1, "max_epochs": 30,
                                                 "patience": 5})  # fairness_check's MLP probe
    targets: dict = field(default_factory=lambda: dict(TARGETS))
    fair_by_dataset: dict = field(default_factory=dict)  # dataset -> AdelSpec field overrides
    # also train the proxy-blind fair model (the unfair recipe on the declared edits merged;
    # faux.models.proxy_blind) and score, check and compare it like the Adel fair model
    blind: bool = False
    n_random_rankings: int = 1000
    gan_quality_rows: int | None = 2000   # validation rows for FlipTest's KS / MSE metrics
    accelerator: str = "auto"

    def __post_init__(self):
        registry.own_blocks(self.methods, "real_study.methods")
        scorers = [m for m in methods() if registry.get(m).score_options]
        if self.max_train_rows is not None and int(self.max_train_rows) < 10:
            raise ConfigError(f"max_train_rows must be null or >= 10, got {self.max_train_rows}")
        if int(self.n_score) < 2:
            raise ConfigError(f"n_score must be >= 2, got {self.n_score}")
        for name, v in self.variants.items():
            if name in methods() or not isinstance(v, dict) or v.get("method") not in scorers:
                raise ConfigError(f"variant {name!r} must be a new name with "
                                  f"method in {scorers}; got {v!r}")
            ScoreOptions.of(self.options, **{k: w for k, w in v.items() if k != "method"})
        for name, v in self.report_variants.items():
            if (name in report_methods() or not isinstance(v, dict)
                    or v.get("method") not in report_methods()):
                raise ConfigError(f"report variant {name!r} must be a new name with method in "
                                  f"{list(report_methods())}; got {v!r}")
        unknown = set(self.targets) ^ set(TARGETS)
        if unknown:
            raise ConfigError(f"real_study.targets must have exactly the keys {sorted(TARGETS)}; "
                              f"got {sorted(self.targets)}")
        from faux.models.adel import AdelSpec

        fields = set(AdelSpec.__dataclass_fields__)
        for name, over in self.fair_by_dataset.items():
            bad = sorted(set(over or {}) - fields)
            if bad:
                raise ConfigError(f"real_study.fair_by_dataset.{name}: {bad[0]!r} is not a field "
                                  f"of the fair model (AdelSpec: {', '.join(sorted(fields))})")

    def fair_overrides(self, dataset: str) -> dict:
        """The fair model's AdelSpec overrides for one dataset (empty: conf/model/fair)."""
        return dict(self.fair_by_dataset.get(dataset) or {})

    @property
    def method_names(self) -> tuple[str, ...]:
        return (*methods(), *self.variants)


def methods() -> tuple[str, ...]:
    """The registered methods this study runs (those whose needs it meets)."""
    return registry.names(provides=PROVIDES)


def report_methods() -> tuple[str, ...]:
    """The methods with a transparency report (Table 3)."""
    return tuple(m for m in methods() if registry.get(m).transparency)

