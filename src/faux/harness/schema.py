"""The typed schema of the ``profile``, ``synthetic`` and ``reading`` groups.

Dataclasses stored in Hydra's ConfigStore (:func:`register`, group ``schema``) and named
first in conf/config.yaml's defaults list (``schema/<group>@<group>``), so every option of
those groups is merged onto its schema: a value of the wrong type (``profile.max_epochs=abc``)
or a key the schema lacks (``synthetic.bogus=1``) fails at composition, one line from
``python -m faux.run`` (exit 2). The values themselves are written in conf/; the schema only
holds a default where a group's files leave a key out.

A reading's allowed values are the ``choices`` of its fields (:data:`Reading`); OmegaConf
checks the types at composition and :meth:`Reading.__post_init__` the choices
(``faux.studies.reading_check.check_reading``). Loaded without torch; Hydra only in
:func:`register`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faux.errors import ConfigError

MISSING = "???"        # omegaconf.MISSING: a value every option of the group must set


@dataclass
class SynthSizes:
    n_train: int = MISSING
    n_val: int = MISSING
    n_test: int = MISSING


@dataclass
class Fig5Profile:
    pairs: str = MISSING
    draws: int = MISSING
    synth: SynthSizes = MISSING


@dataclass
class Fig11Profile:
    runs: int = MISSING
    quality_rows: int | None = None


@dataclass
class Profile:
    """conf/profile/*.yaml. ``real`` varies by profile (the quick profile's Adel settings):
    its numbers are checked by ``faux.harness.validate`` before a run."""

    name: str = MISSING
    max_epochs: int = MISSING
    patience: int | None = MISSING
    runs: int = MISSING
    gan_steps: int = MISSING
    synth: SynthSizes = MISSING
    real: dict[str, Any] = MISSING
    generators: dict[str, Any] = field(default_factory=dict)
    fig5: Fig5Profile = MISSING
    fig11: Fig11Profile = MISSING


@dataclass
class Synthetic:
    """conf/synthetic/*.yaml: the reading-independent settings of the synthetic studies (what
    the reading changes is applied by ``faux.studies.readings.synth_settings``). ``methods``:
    a method's own settings block by its registered name (``own_params``; checked against
    the registry by ``faux.studies.config``), e.g. ``+synthetic.methods.faux_path.steps=16``."""

    threshold_k: float = MISSING
    options: dict[str, Any] = MISSING
    generators: dict[str, Any] = MISSING
    methods: dict[str, Any] = field(default_factory=dict)
    aux_trainer: str = MISSING


def choice(*values) -> Any:
    """A reading axis: its allowed values (the first is the project's earlier default)."""
    return field(default=MISSING, metadata={"choices": values})


@dataclass
class Reading:
    """conf/reading/**/*.yaml: one value per ambiguous choice of the synthetic benchmark; each
    file cites the sentence of the paper an axis reads (``faux.studies.readings``)."""

    name: str = MISSING
    decoding: str = choice("gumbel", "softmax")      # A.7.3 "a vector of mode probabilities"
    tau: float = choice(0.3, 1.0)                    # Gumbel temperature (softmax ignores it)
    beta: float = choice(0.2, 1.0)                   # CVAE KL weight (A.7.3 silent)
    latent_dim: Any = choice("table2", 16)           # CVAE latent size ("table2": 4, magic 8)
    target: str = choice("2x64", "3x128")            # 4.1.1 "multi-layer fully connected networks"
    # A.7.6 threshold on the IFS; calibrated: k std of the bias-0 IFS with k set so the
    # pair's bias-0.5 column has ``fraction`` positives (one threshold for both bias levels)
    threshold: str = choice("mean_k_std", "k_std", "top_fraction", "calibrated")
    aux: str = choice("mlp", "disentangled")         # A.7.6 "perfectly disentangled auxiliary models"
    ifs_output: str = choice("prob", "logit")        # eq. 38 on probabilities or logits
    # where LIC-UB's derivative is taken: mixed = target gradient at the observed x times
    # dx/dc at c = 1/2 (two points); the others are one point of c -> f_tar(x(c))
    # (faux.methods.lic_ub.LIC_AT: mid, fd = eq. 17's finite difference, observed, path)
    lic_ub_at: str = choice("mixed", "mid", "fd", "observed", "path")
    lic_ub_output: str = choice("target", "ifs")     # LIC-UB on the gradient tests' output or the IFS's
    target_output: str = choice("prob", "logit")     # eq. 9: target gradient of prob or logit
    aux_output: str = choice("prob", "logit")        # eq. 9: aux gradient of prob or logit
    ng: str = choice("feature", "sample")            # eq. 10 "l2 normalization of the gradients"
    ig_baseline: str = choice("zeros", "mean")       # 3.4 fAux+IG: baseline not given
    # A.7.6 "sample both an instance x and its counterfactual x'": Algorithm 2's shared prior
    # latent, or abduction (the encoder's posterior mean of x~, decoded with 1 - c)
    counterfactual: str = choice("shared", "abduction")
    # A.7.6 "the variance of the CFF score in the absence of any bias": one bias-0 target of
    # the column's recipe, or pooled over targets of A.7.5's random widths and depths
    reference: str = choice("own", "pooled")
    # Definition 1 / A.4 eqs. 16-17, x = f_g(z_perp, psi(c)): how c enters the c-side CVAE's
    # decoder, as an input beside z or as c * b added to its logits (faux.synth.generator_settings.C_PATHS)
    c_path: str = choice("decoder_input", "logit_bias")
    # one output of the target for every test, or each output axis on its own: the IFS (eq.
    # 38), LIC-UB and the gradient tests (eqs. 5, 9, 10) on probabilities ("the prediction y
    # in this paper is a probability") or on logits; per_axis = ifs_output, target_output,
    # aux_output, lic_ub_output as written (the readings before this axis). Under prob or
    # logit those four must agree with it (faux.studies.reading_check.check_reading)
    output: str = choice("per_axis", "prob", "logit")
    # A.11.2 "MLPs for all auxiliary models, varying the depth and width across different
    # experimental runs": fixed = model.aux's width and depth for every run; varied = each
    # run's drawn by its seed (faux.studies.readings.AUX_WIDTHS x AUX_DEPTHS)
    aux_arch: str = choice("fixed", "varied")
    # the top_fraction and calibrated rules' share of positives, a number in (0, 1]
    fraction: float = field(default=0.3, metadata={"range": (0.0, 1.0)})
    # A.7.3 "We tune our parameters so as to maximize the accuracy of this classifier": each
    # dataset's CVAE latent size and KL weight, over latent_dim and beta ({}: those two for
    # every dataset). `python -m faux.synth.tuning --winners FILES` writes the block from
    # the search's results
    generators: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        label = f"reading {self.name}"
        _check_generators(self.generators, label)
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if "choices" in f.metadata and v == MISSING:
                raise ConfigError(f"{label}: axis {f.name!r} has no value; choose one of "
                                  f"{', '.join(map(str, f.metadata['choices']))}")
            if not _allowed(f, v):
                raise ConfigError(f"{label}: {f.name}={v!r} " + (
                    f"is not one of {', '.join(map(str, f.metadata['choices']))}"
                    if "choices" in f.metadata else
                    "must be a number in ({}, {}]".format(*f.metadata["range"])))


#: a reading's per-dataset CVAE settings: key -> (type, lo, hi), a value in [lo, hi]
GENERATOR_KEYS: dict[str, tuple[type, float, float]] = {"latent_dim": (int, 1, 64),
                                                         "beta": (float, 0.0, 4.0)}


def _check_generators(generators, label: str) -> None:
    """A reading's ``generators``: dataset -> {latent_dim, beta} inside
    :data:`GENERATOR_KEYS`' ranges; a ConfigError naming the entry otherwise."""
    if not isinstance(generators, Mapping):
        raise ConfigError(f"{label}: generators must map a dataset to its CVAE settings, "
                          f"got {generators!r}")
    for name, over in generators.items():
        if not isinstance(over, Mapping) or not over:
            raise ConfigError(f"{label}: generators.{name} must set one of "
                              f"{', '.join(GENERATOR_KEYS)}, got {over!r}")
        for k, v in over.items():
            if k not in GENERATOR_KEYS:
                raise ConfigError(f"{label}: generators.{name}.{k} is not a reading's CVAE "
                                  f"setting; choose from {', '.join(GENERATOR_KEYS)}")
            kind, lo, hi = GENERATOR_KEYS[k]
            ok = (not isinstance(v, bool) and isinstance(v, int if kind is int else int | float)
                  and lo <= v <= hi)
            if not ok:
                raise ConfigError(f"{label}: generators.{name}.{k}={v!r} must be "
                                  f"{'an integer' if kind is int else 'a number'} in "
                                  f"[{lo:g}, {hi:g}]")


def _allowed(f: dataclasses.Field, v) -> bool:
    """Whether ``v`` is a value the reading field ``f`` allows (its choices or its range)."""
    if "choices" in f.metadata:
        return not isinstance(v, bool) and v in f.metadata["choices"]
    if "range" in f.metadata:
        lo, hi = f.metadata["range"]
        return (not isinstance(v, bool) and isinstance(v, int | float)
                and lo < float(v) <= hi)
    return True


def reading_expected(key: str) -> str | None:
    """``expected ...`` for a dotted reading key (``reading.tau``), None for any other key or
    a field with no choices or range."""
    group, _, name = key.partition(".")
    f = _READING_FIELDS.get(name) if group == "reading" else None
    if f is None:
        return None
    if "choices" in f.metadata:
        return f"expected one of {', '.join(map(str, f.metadata['choices']))}"
    if "range" in f.metadata:
        return "expected a finite number in ({:g}, {:g}]".format(*f.metadata["range"])
    return None


def reading_refused(reading) -> list[str]:
    """The fields of ``reading`` (a resolved reading, maybe partial) whose value is outside
    their choices or range, in the schema's order."""
    if not isinstance(reading, dict):
        return []
    return [name for name, f in _READING_FIELDS.items()
            if name in reading and not _allowed(f, reading[name])]


def generators_refused(reading) -> list[str]:
    """Why a resolved reading's ``generators`` is refused (one line), or nothing."""
    if not isinstance(reading, dict) or "generators" not in reading:
        return []
    try:
        _check_generators(reading["generators"], "reading")
    except ConfigError as exc:
        return [str(exc).removeprefix("reading: ")]
    return []


_READING_FIELDS = {f.name: f for f in dataclasses.fields(Reading)}

#: reading axis -> its allowed values
READING_CHOICES: dict[str, tuple] = {f.name: f.metadata["choices"]
                                     for f in dataclasses.fields(Reading)
                                     if "choices" in f.metadata}
#: numeric reading fields -> (default, lo, hi): a number in (lo, hi]
READING_NUMERIC: dict[str, tuple[float, float, float]] = {
    f.name: (f.default, *f.metadata["range"]) for f in dataclasses.fields(Reading)
    if "range" in f.metadata}

#: group -> its schema (stored as ``schema/<group>``)
SCHEMAS = {"profile": Profile, "synthetic": Synthetic, "reading": Reading}


def register() -> None:
    """Store every schema in Hydra's ConfigStore (idempotent)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for group, node in SCHEMAS.items():
        cs.store(group="schema", name=group, node=node)


def unknown_keys(plain: dict) -> list[str]:
    """The dotted keys of ``plain``'s schema groups that their schema lacks: what composition
    refuses, except a key added with ``+`` (Hydra lifts the schema's key check for those)."""
    import typing

    out: list[str] = []

    def walk(node: dict, cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for key, value in node.items():
            if key not in hints:
                out.append(f"{prefix}.{key}")
            elif dataclasses.is_dataclass(hints[key]) and isinstance(value, dict):
                walk(value, hints[key], f"{prefix}.{key}")

    for group, cls in SCHEMAS.items():
        if isinstance(plain.get(group), dict):
            walk(plain[group], cls, group)
    return out
