"""Every fairness test faux knows: name -> its class (``faux.methods.protocol.Base``).

Studies, reports, the audit and the Hydra sweep lists read this table (``names()``,
``get()``, ``label()``). Adding a method = one class following
:class:`faux.methods.protocol.FairnessTest` (``Class(config)``, ``fit(data, seed)``,
``score(target, batch)``) whose class attributes say what it is (``name``, ``label``,
``needs``, ``paper_row``, ``runs``, options, audit settings: ``faux.methods.protocol.Base``),
and one ``register(Class)`` (docs/add_method.md). Everything here is read when asked, never
computed at import, so the order of registrations does not matter. ``needs`` says what a
study must provide:

- ``target`` the model under test; ``aux`` an aux model predicting c (the study trains it);
- ``train`` training rows (x, c) to fit on; ``gan`` GAN settings (``MethodConfig.params``);
- ``dxdc`` the true derivative dx/dc (synthetic data only).

``runs``: ``"once"`` (deterministic given the target: one run), ``"seeds"`` (run seeds
base, base+1, ...), ``"tens"`` (10, 20, ...: Unfair Map's metric seeds, A.11.3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from faux.errors import ConfigError
from faux.methods import builtin
from faux.methods.protocol import NEEDS, RUNS, Base

#: a registered method: a subclass of Base (the class, not an instance)
Method = type[Base]


def check(method: Method) -> Method:
    """ConfigError unless ``method`` is a Base subclass with a name, a label, needs that
    include "target" drawn from NEEDS, and ``runs`` in RUNS; its needs become a frozenset."""
    if not (isinstance(method, type) and issubclass(method, Base)):
        raise ConfigError(f"register a subclass of faux.methods.protocol.Base, got {method!r}")
    name = method.name
    if not name or not method.label:
        raise ConfigError(f"method class {method.__name__}: set its name and label")
    needs = frozenset(method.needs)
    bad = sorted(needs - set(NEEDS))
    if bad or "target" not in needs:
        raise ConfigError(f"method {name!r}: needs must include 'target' and be drawn "
                          f"from {list(NEEDS)}, got {sorted(needs)}")
    if method.runs not in RUNS:
        raise ConfigError(f"method {name!r}: runs must be one of {RUNS}")
    method.needs = needs
    return method


_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add (or replace) a method class (checked by :func:`check`); returns it."""
    _METHODS[check(method).name] = method
    return method


def unregister(name: str) -> None:
    _METHODS.pop(name, None)


def get(name: str) -> Method:
    """The class of a registered method (ConfigError naming the choices otherwise)."""
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


def methods(provides: Iterable[str] | None = None, requires: Iterable[str] = ()) -> tuple:
    """The classes of :func:`names`, in the same order."""
    return tuple(_METHODS[n] for n in names(provides, requires))


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


def check_names(values: Iterable[str], what: str = "method list") -> list[str]:
    """``values`` as a list, ConfigError naming any unknown method (the one check of the
    YAML method lists, e.g. Table 1's sweep)."""
    values = [str(v).strip() for v in values]
    bad = [v for v in values if v not in _METHODS]
    if bad:
        raise ConfigError(f"{what}: unknown method(s) {bad}; choose from {', '.join(names())}")
    return values


def readings_methods() -> tuple[str, ...]:
    """The readings study's tests: every registered test that needs no GAN, but Unfair Map
    (optional there; its 200-step attack per row would be most of the study's time) and
    LIC-UB's path mean (a reading's ``lic_ub_at`` axis already takes it). Read when asked, so
    a test registered after this module loads is one of them. Here, not in
    faux.studies.readings, so that reports read it without importing Lightning."""
    return tuple(n for n in names(provides=("target", "aux", "train", "dxdc"))
                 if n not in (builtin.UnfairMapMethod.name, builtin.LicUBPathMethod.name))


def own_blocks(blocks, what: str) -> dict[str, dict]:
    """``blocks`` (method name -> its settings block, ``MethodConfig.params[name]``; None:
    none) as plain dicts; ConfigError naming an entry that is not a registered method with a
    block of its own (``own_params``) or whose block is not a mapping."""
    out = {}
    for name, block in dict(blocks or {}).items():
        if name not in _METHODS or not _METHODS[name].own_params:
            own = [m.name for m in methods() if m.own_params]
            raise ConfigError(f"{what}.{name}: not a method with settings of its own; "
                              f"choose from {', '.join(own)}")
        if block is not None and not isinstance(block, Mapping):
            raise ConfigError(f"{what}.{name} must map option names to values, got {block!r}")
        out[name] = dict(block or {})
    return out


# --------------------------------------------------------------------------- the table
for _method in (*builtin.PAPER, *builtin.EXTENSIONS):
    register(_method)
