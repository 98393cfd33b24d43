"""Every fairness test faux knows: name -> implementation, needs, display label, paper row.

Studies, reports and the Hydra sweep lists read this table (``names()``, ``get()``,
``label()``). Adding a method = one module with a class following
:class:`faux.methods.protocol.FairnessTest` (``Class(name, config)``, ``fit(data, seed)``,
``score(target, batch)``; ``faux.methods.protocol.Base`` gives the defaults) and one
``register(Method(...))`` line below. ``needs`` says what a study must provide:

- ``target`` the model under test; ``aux`` an aux model predicting c (the study trains it);
- ``train`` training rows (x, c) to fit on; ``gan`` GAN settings (``MethodConfig.params``);
- ``dxdc`` the true derivative dx/dc (synthetic data only).

``runs``: ``"once"`` (deterministic given the target: one run), ``"seeds"`` (run seeds
base, base+1, ...), ``"tens"`` (10, 20, ...: Unfair Map's metric seeds, A.11.3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from faux.errors import ConfigError
from faux.methods import builtin
from faux.methods.protocol import NEEDS, MethodConfig

RUNS = ("once", "seeds", "tens")


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    make: Callable[[str, MethodConfig], object]     # (name, config) -> FairnessTest
    needs: frozenset
    paper_row: int | None = None     # row of the paper's Table 1 (None: not in the paper)
    runs: str = "seeds"
    score_options: bool = False      # takes faux.score options (real-study variants)
    report: bool = False             # has a transparency report (Table 3)
    config_keys: tuple = ()          # dotted config keys only this method reads

    def __post_init__(self):
        object.__setattr__(self, "needs", frozenset(self.needs))
        bad = sorted(self.needs - set(NEEDS))
        if bad or "target" not in self.needs:
            raise ConfigError(f"method {self.name!r}: needs must include 'target' and be drawn "
                              f"from {list(NEEDS)}, got {sorted(self.needs)}")
        if self.runs not in RUNS:
            raise ConfigError(f"method {self.name!r}: runs must be one of {RUNS}")

    def build(self, config: MethodConfig | None = None):
        return self.make(self.name, config or MethodConfig())

    def run_seeds(self, base_seed: int, n_runs: int) -> list[int]:
        if self.runs == "once":
            return [int(base_seed)]
        if self.runs == "tens":
            return [10 * (i + 1) for i in range(int(n_runs))]
        return [int(base_seed) + i for i in range(int(n_runs))]


_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add (or replace) a method; returns it."""
    _METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    _METHODS.pop(name, None)


def get(name: str) -> Method:
    if name not in _METHODS:
        raise ConfigError(f"unknown method {name!r}; choose one of {', '.join(names())}")
    return _METHODS[name]


def names(provides: Iterable[str] | None = None, requires: Iterable[str] = ()) -> tuple[str, ...]:
    """Method names in table order (paper rows first, then registration order); only those
    whose needs ``provides`` covers (a study's inputs) and that need all of ``requires``."""
    prov = None if provides is None else set(provides)
    req = set(requires)
    out = [m for m in _METHODS.values()
           if (prov is None or m.needs <= prov) and req <= m.needs]
    rows = [m for m in out if m.paper_row is not None]
    rest = [m for m in out if m.paper_row is None]
    return tuple(m.name for m in sorted(rows, key=lambda m: m.paper_row) + rest)


def label(name: str) -> str:
    """Display label of a method; an unregistered name ``<method>_<variant>`` (a real-study
    variant) is labelled ``<label> (<variant>)``."""
    if name in _METHODS:
        return _METHODS[name].label
    for m in sorted(_METHODS, key=len, reverse=True):
        if name.startswith(m + "_"):
            return f"{_METHODS[m].label} ({name[len(m) + 1:]})"
    return name


def order(name: str) -> tuple[int, str]:
    """Sort key: registry order, unknown names after, alphabetically."""
    all_names = names()
    return (all_names.index(name), "") if name in all_names else (len(all_names), name)


#: config keys read only where a method has the need (a job for a method without the need
#: leaves them out of its config hash)
NEED_KEYS = {"aux": ("model.aux", "synthetic.aux_trainer"), "gan": ("model.gan", "profile.gan_steps")}


def foreign_keys(name: str) -> tuple[str, ...]:
    """The dotted config keys a one-method job of ``name`` does not read: other methods' own
    keys and the keys of needs it lacks. ``faux.studies.job.config_hash`` leaves them out, so a rerun
    that changes one method's option finds every other method's jobs finished."""
    m = get(name)
    own = set(m.config_keys) | {k for need in m.needs for k in NEED_KEYS.get(need, ())}
    other = {k for o in _METHODS.values() if o.name != name for k in o.config_keys}
    other |= {k for need, keys in NEED_KEYS.items() if need not in m.needs for k in keys}
    return tuple(sorted(other - own))


def check_names(values: Iterable[str], what: str = "method list") -> list[str]:
    """``values`` as a list, ConfigError naming any unknown method (the one check of the
    YAML method lists, e.g. Table 1's sweep)."""
    values = [str(v).strip() for v in values]
    bad = [v for v in values if v not in _METHODS]
    if bad:
        raise ConfigError(f"{what}: unknown method(s) {bad}; choose from {', '.join(names())}")
    return values


# --------------------------------------------------------------------------- the table
register(Method("fta", "FTA", builtin.Gradient, {"target"}, 1, "once", score_options=True))
register(Method("fta_lin", "FTA + lin. aux", builtin.Refit, {"target", "train"}, 2))
register(Method("unfair_map", "Unfair Map", builtin.Refit, {"target", "train"}, 3, "tens",
                config_keys=("synthetic.unfair_map",)))
register(Method("fliptest", "FlipTest", builtin.Flip, {"target", "train", "gan"}, 4,
                report=True))
register(Method("faux", "fAux", builtin.Gradient, {"target", "aux"}, 5, score_options=True,
                report=True))
register(Method("faux_ng", "fAux+NG", builtin.Gradient, {"target", "aux"}, 6,
                score_options=True, report=True, config_keys=("synthetic.options.ng",)))
register(Method("faux_ig", "fAux+IG", builtin.Gradient, {"target", "aux"}, 7,
                score_options=True, report=True,
                config_keys=("synthetic.options.ig_steps", "synthetic.options.ig_baseline")))
register(Method("lic_ub", "LIC-UB", builtin.LicUB, {"target", "dxdc"}, 8, "once"))

#: the readings study's tests (issue 13): every registered test that needs no GAN, but Unfair
#: Map (optional there; its 200-step attack per row would be most of the study's time). Here,
#: not in faux.studies.readings, so that reports read it without importing Lightning.
READINGS_METHODS = tuple(n for n in names(provides=("target", "aux", "train", "dxdc"))
                         if n != "unfair_map")
