"""The harness's numeric overrides (and the method's name), checked in one line before any
work.

:data:`RULES` is one table: a config key (``*`` matches one level: every model, every
dataset of ``synthetic.generators``) and what its value must be. :func:`check` walks a resolved
config (plain containers) through the table in order and raises a one-line
:class:`~faux.errors.ConfigError` for the first value that breaks its rule::

    error: profile.max_epochs=abc: expected an integer >= 1

The harness calls it in the launching process before a run or a sweep starts (Hydra's
``on_run_start`` / ``on_multirun_start``, :class:`faux.harness.guard.SweepGuard`: nothing is
written, no job starts) and again in every job before its result folder is touched
(``faux.run.execute``). :func:`check_override` checks one ``key=value`` of a sweep's
expanded jobs (``seed=-1,0``), so a bad swept value also fails before the first job.

The table covers the seed, every size, epoch, step, count and rate field of
conf/profile/*.yaml, conf/synthetic/*.yaml and conf/model/**.yaml, and the numeric fields of the
experiments' own sections (``real_study``, ``fig8``). A reading's values are checked against
their choices and ranges where they are written, the schema (``faux.harness.schema.Reading``). Profile keys come before the model keys
that interpolate them (``model.target.max_epochs: ${profile.max_epochs}``), so the message
names the key the user typed. Integers are strict: ``3.0``, ``"3"`` and ``true`` are not
integers; numbers must be finite. A key the config does not have is not checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from faux.errors import ConfigError

#: the largest seed: ``lightning.seed_everything`` (numpy) takes seeds in [0, 2**32 - 1]
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Rule:
    """What one config value must be: an int, a float (ints accepted) or a bool, within
    ``[lo, hi]`` (``lo_open`` / ``hi_open``: the bound itself excluded), one of ``words``, or
    null when ``nullable``; a ``choice`` is one of ``words`` only."""

    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    words: tuple[str, ...] = ()                 # text values allowed besides numbers

    def expected(self) -> str:
        if self.kind == "choice":  # the names of CHOICES
            return f"expected one of {', '.join(self.words)}"
        if self.kind == "bool":
            text = "true or false"
        else:
            noun = "an integer" if self.kind == "int" else "a finite number"
            if self.lo is not None and self.hi is not None:
                text = (f"{noun} in {'(' if self.lo_open else '['}{_num(self.lo)}, "
                        f"{_num(self.hi)}{')' if self.hi_open else ']'}")
            elif self.lo is not None:
                text = f"{noun} {'>' if self.lo_open else '>='} {_num(self.lo)}"
            elif self.hi is not None:
                text = f"{noun} {'<' if self.hi_open else '<='} {_num(self.hi)}"
            else:
                text = noun
        return (f"expected {text}" + "".join(f" or {w}" for w in self.words)
                + (" or null" if self.nullable else ""))

    def ok(self, value) -> bool:
        if value is None:
            return self.nullable
        if isinstance(value, str) and value in self.words:
            return True
        if self.kind == "choice":
            return False
        if self.kind == "bool":
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        if self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi):
            return False
        return True


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


SEED = Rule("int", 0, MAX_SEED)
COUNT = Rule("int", 1)                       # sizes, epochs, steps, runs, widths, depths
COUNT0 = Rule("int", 0)                      # a count that may be 0 (no such step)
COUNT_OR_NULL = Rule("int", 1, nullable=True)
PATIENCE = Rule("int", 0, nullable=True)     # null: no early stopping
RATE = Rule("float", 0, lo_open=True)        # learning rates, clip: > 0
WEIGHT = Rule("float", 0)                    # loss weights, alphas, k: >= 0
FRACTION = Rule("float", 0, 1, lo_open=True, hi_open=True)
UNIT = Rule("float", 0, 1)
AUROC_OR_NULL = Rule("float", 0, 1, lo_open=True, hi_open=True, nullable=True)
FLAG = Rule("bool")

#: every numeric harness key and its rule, checked in this order
RULES: dict[str, Rule] = {
    # job identity
    "seed": SEED,
    "gan_seed": SEED,
    "draw": Rule("int", 0),
    # conf/profile/*.yaml
    "profile.max_epochs": COUNT,
    "profile.patience": PATIENCE,
    "profile.runs": COUNT,
    "profile.gan_steps": COUNT,
    "profile.synth.n_train": COUNT,
    "profile.synth.n_val": COUNT,
    "profile.synth.n_test": COUNT,
    "profile.real.seeds": COUNT,
    "profile.real.max_train_rows": COUNT_OR_NULL,
    "profile.real.n_score": COUNT,
    "profile.real.adel_max_epochs": COUNT,
    "profile.real.adel_mmd": WEIGHT,
    "profile.real.adel_last_width": COUNT_OR_NULL,
    "profile.real.adel_probe_target": AUROC_OR_NULL,
    "profile.real.adel_probe_select": FLAG,
    "profile.real.blind_model": FLAG,
    "profile.fig5.draws": COUNT,
    "profile.fig5.synth.n_train": COUNT,
    "profile.fig5.synth.n_val": COUNT,
    "profile.fig5.synth.n_test": COUNT,
    "profile.fig11.runs": COUNT,
    "profile.fig11.quality_rows": COUNT_OR_NULL,
    # CVAE settings (faux.synth.generator_settings.GENERATOR_DEFAULT): the profile's for every dataset,
    # the study's per dataset
    **{f"{prefix}.{k}": rule
       for prefix in ("profile.generators", "synthetic.generators.*")
       for k, rule in {"n_components": COUNT, "reg_covar": RATE, "hidden": COUNT,
                       "depth": COUNT, "latent_dim": COUNT, "beta": WEIGHT, "lr": RATE,
                       "epochs": COUNT, "max_steps": COUNT, "batch_size": COUNT,
                       "patience": PATIENCE, "val_fraction": FRACTION}.items()},
    # conf/synthetic/*.yaml
    "synthetic.threshold_k": WEIGHT,
    "synthetic.options.ig_steps": COUNT,
    # conf/model/**.yaml: every model (target, aux, fair: MLPSpec / AdelSpec)
    "model.*.width": COUNT,
    "model.*.depth": COUNT,
    "model.*.last_width": COUNT_OR_NULL,
    "model.*.max_epochs": COUNT,
    "model.*.patience": PATIENCE,
    "model.*.batch_size": COUNT,
    "model.*.lr": RATE,
    "model.*.alpha": WEIGHT,
    "model.*.alpha_decay": Rule("float", 0, 1, lo_open=True),
    "model.*.alpha_min": WEIGHT,
    "model.*.n_adv": COUNT0,
    "model.*.adv_width": COUNT,
    "model.*.adv_depth": COUNT,
    "model.*.adv_steps": COUNT,
    "model.*.adv_lr": Rule("float", 0, lo_open=True, nullable=True),
    "model.*.decor": WEIGHT,
    "model.*.decor_momentum": Rule("float", 0, 1, hi_open=True),
    "model.*.pair": WEIGHT,
    "model.*.mmd": WEIGHT,
    "model.*.mmd_rows": COUNT,
    "model.*.score_gap": WEIGHT,
    "model.*.probe_target": AUROC_OR_NULL,
    "model.*.probe_step": Rule("float", 1, lo_open=True),
    "model.*.cap": FLAG,
    "model.*.flip": FLAG,
    "model.*.interleave": FLAG,
    "model.*.reinit": FLAG,
    "model.*.adv_norm": FLAG,
    "model.*.decor_whiten": FLAG,
    "model.*.probe_select": FLAG,
    # FlipTest's GANs (GANSpec)
    "model.*.critic_width": COUNT_OR_NULL,
    "model.*.critic_depth": COUNT_OR_NULL,
    "model.*.n_critic": COUNT,
    "model.*.gen_steps": COUNT,
    "model.*.clip": RATE,
    "model.*.transport_weight": WEIGHT,
    # the experiments' own sections (conf/experiment/real.yaml, fig8.yaml)
    "real_study.val_frac": FRACTION,
    "real_study.test_frac": FRACTION,
    "real_study.options.ig_steps": COUNT,
    "real_study.report_options.ig_steps": COUNT,
    "real_study.probe.width": COUNT,
    "real_study.probe.depth": COUNT,
    "real_study.probe.max_epochs": COUNT,
    "real_study.probe.patience": PATIENCE,
    "real_study.targets.probe_max": Rule("float", 0, 1, lo_open=True),
    "real_study.targets.swap_ratio": WEIGHT,
    "real_study.targets.accuracy_drop": UNIT,
    "real_study.n_random_rankings": COUNT,
    "real_study.gan_quality_rows": COUNT_OR_NULL,
    "fig8.width": COUNT,
    "fig8.depth": COUNT,
    "fig8.epochs": COUNT,
}


def show(value) -> str:
    """A value as the user would type it on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, default=str)


def _walk(node, parts: list[str], prefix: str):
    """``(key, value)`` of every key of ``node`` that the pattern ``parts`` names."""
    if not parts:
        yield prefix, node
        return
    if not isinstance(node, dict):
        return
    head, rest = parts[0], parts[1:]
    keys = list(node) if head == "*" else [head] if head in node else []
    for k in keys:
        yield from _walk(node[k], rest, f"{prefix}.{k}" if prefix else str(k))


#: config keys whose value is one of names that a layer above the harness knows (``faux.run``
#: adds ``method``: the registered methods); key -> a function giving the names
CHOICES: dict[str, Callable[[], tuple[str, ...]]] = {}


def _choice(key: str) -> Rule | None:
    names = CHOICES.get(key)
    return None if names is None else Rule("choice", words=tuple(names()))


def problems(plain: dict) -> list[str]:
    """Every ``<key>=<value>: expected ...`` of ``plain`` (a resolved config): every key the
    schema of its group lacks (``faux.harness.schema``: one added with ``+``, which
    composition lets through), the reading's values outside their choices or range (the
    schema's :class:`~faux.harness.schema.Reading`), then the table's keys in order."""
    from faux.harness.schema import SCHEMAS, generators_refused, reading_refused, unknown_keys

    out = [f"{key}: not a key of the {key.split('.')[0]} schema "
           f"(faux.harness.schema.{SCHEMAS[key.split('.')[0]].__name__})"
           for key in unknown_keys(plain)]
    reading = plain.get("reading")
    out += [f"reading.{name}={show(reading[name])}: {expected(f'reading.{name}')}"
            for name in reading_refused(reading)]
    out += [f"reading.{why}" for why in generators_refused(reading)]
    for pattern in [*CHOICES, *RULES]:
        rule = _choice(pattern) or RULES[pattern]
        for key, value in _walk(plain, pattern.split("."), ""):
            if not rule.ok(value):
                out.append(f"{key}={show(value)}: {rule.expected()}")
    return out


def check(plain: dict) -> None:
    """Raise a one-line ConfigError for the first value of ``plain`` that breaks its rule."""
    found = problems(plain)
    if found:
        raise ConfigError(found[0])


def rule_for(key: str) -> Rule | None:
    """The rule of a dotted config key (``model.gan.lr`` matches ``model.*.lr``)."""
    if key in CHOICES:
        return _choice(key)
    parts = key.split(".")
    for pattern, rule in RULES.items():
        p = pattern.split(".")
        if len(p) == len(parts) and all(a in ("*", b) for a, b in zip(p, parts)):
            return rule
    return None


def expected(key: str) -> str | None:
    """``expected ...`` for a dotted config key: its rule's words, or the reading schema's
    choices or range (``faux.harness.schema.reading_expected``); None when neither has it."""
    from faux.harness.schema import reading_expected

    rule = rule_for(key)
    return rule.expected() if rule is not None else reading_expected(key)


def check_override(key: str, value) -> None:
    """Raise a one-line ConfigError when ``key=value`` (a parsed override) breaks its rule or
    the reading schema. Interpolations (``${...}``) are left to :func:`check` on the
    resolved config."""
    from faux.harness.schema import reading_refused

    key = key.lstrip("+~")
    if isinstance(value, str) and "${" in value:
        return
    rule = rule_for(key)
    if rule is not None:
        bad = not rule.ok(value)
    else:
        group, _, name = key.partition(".")
        bad = group == "reading" and bool(reading_refused({name: value}))
    if bad:
        raise ConfigError(f"{key}={show(value)}: {expected(key)}")
