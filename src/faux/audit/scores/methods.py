"""The audit's methods, read from the registered method classes (``faux.methods.protocol.Base``):
the ones offered (``audit_threshold`` set, needing only the target and an aux model), the
default list (``audit_default``), their thresholds, and which run on a black box
(``black_box``). Loaded without torch."""

from __future__ import annotations

from faux.methods import registry

#: what an audit provides a method: the model under test and the aux model it trains
PROVIDES = ("target", "aux")


def audit_methods(differentiable: bool = True) -> tuple[str, ...]:
    """The methods an audit can run, in registry order; for a black box (``differentiable``
    False) only those with a ``black_box`` estimate."""
    return tuple(m.name for m in registry.methods(provides=PROVIDES)
                 if m.audit_threshold is not None and (differentiable or m.black_box))


def default_methods() -> tuple[str, ...]:
    """The default method list (``audit_default``), the one with ``audit_flags`` first: the
    first method decides who is flagged."""
    names = [m for m in audit_methods() if registry.get(m).audit_default]
    return tuple(sorted(names, key=lambda m: not registry.get(m).audit_flags))


def threshold(method: str) -> float:
    """A method's default flagging threshold."""
    return float(registry.get(method).audit_threshold)


def thresholds_text() -> str:
    """``0.05 for faux, 0.5 for faux_ng, ...`` (the CLI's help)."""
    by: dict[float, list[str]] = {}
    for m in audit_methods():
        by.setdefault(threshold(m), []).append(m)
    return ", ".join(f"{t:g} for {' and '.join(ms)}" for t, ms in by.items())
