"""The columns an audit reads: the protected and label columns named, the feature columns
chosen, each checked against the header (a misspelled name is refused with the close ones
suggested, a repeated one with its positions)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from faux.errors import ConfigError, DataError


def protected_list(protected) -> list[str]:
    """The protected column names: one name, or a list of names."""
    if protected is None:
        return []
    return [protected] if isinstance(protected, str) else list(protected)


def suggestion(name: str, columns: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(columns), n=3, cutoff=0.5)
    if close:
        return f"did you mean {', '.join(repr(c) for c in close)}?"
    shown = ", ".join(list(columns)[:12]) + (", ..." if len(columns) > 12 else "")
    return f"columns are: {shown}"


def check_columns(columns: Sequence[str], protected, label: str | None,
                  features: Sequence[str] | None, what: str) -> list[str]:
    """The feature columns; one-line DataError for a missing or misspelled name.
    ``protected``: one column name or a list of them. A protected column is a feature only
    when ``features`` name it (a model that reads the attribute itself)."""
    cols = list(columns)
    prot = protected_list(protected)
    if len(set(prot)) != len(prot):
        raise ConfigError(f"protected columns are repeated: {prot}")
    if label is not None and label in prot:
        raise ConfigError(f"label column {label!r} is also a protected column; pass it once")
    for role, name in [*(("protected", p) for p in prot), ("label", label)]:
        if name is not None and name not in cols:
            raise DataError(f"{role} column {name!r} is not in {what}; {suggestion(name, cols)}")
    if features:
        for name in features:
            if name not in cols:
                raise DataError(f"feature column {name!r} is not in {what}; "
                                f"{suggestion(name, cols)}")
        feats = list(features)
        if label is not None and label in feats:
            raise ConfigError(f"label column {label!r} is also listed in --features; the "
                              "model must not read it (remove it from --features)")
    else:
        feats = [c for c in cols if c not in (*prot, label)]
    if not feats:
        raise DataError(f"{what} has no feature columns besides the protected/label ones")
    refuse_repeated(cols, {*prot, label, *feats}, what)
    return feats


def refuse_repeated(cols: list[str], used, what: str) -> None:
    """One-line DataError when a column the audit reads has its name more than once in the
    header (a reader would silently take one of them)."""
    seen: dict[str, list[int]] = {}
    for j, name in enumerate(cols, start=1):
        seen.setdefault(name, []).append(j)
    for name, pos in seen.items():
        if len(pos) > 1 and name in used:
            where = ", ".join(map(str, pos[:-1])) + f" and {pos[-1]}"
            raise DataError(f"column {name!r} appears {len(pos)} times in {what} (columns "
                            f"{where}); rename or drop all but one")
