"""One place that knows every dataset faux uses: the PMLB sources and the real datasets."""

from __future__ import annotations

from faux.data.pmlb_data import KNOWN_PMLB, load_pmlb, pmlb_path
from faux.data.real import REAL_DATASETS, is_present, load_real, load_table, raw_paths, spec
from faux.errors import DataError

#: every dataset name ``load`` and ``describe`` accept, PMLB first.
DATASETS = (*KNOWN_PMLB, *REAL_DATASETS)


def kind(name: str) -> str:
    """``"pmlb"`` or ``"real"``; ``DataError`` (listing the valid names) for any other name."""
    if name in KNOWN_PMLB:
        return "pmlb"
    if name in REAL_DATASETS:
        return "real"
    raise DataError(f"unknown dataset {name!r}; valid: {', '.join(DATASETS)}")


def load(name: str, **kw):
    """``load_pmlb(name, **kw)`` (a ``TabularData``) or ``load_real(name, **kw)`` (a ``RealData``)."""
    if kind(name) == "pmlb":
        return load_pmlb(name, **kw)
    return load_real(name, **kw)


def _rate(v) -> float:
    return round(float(v.mean()), 6)


def describe(name: str, root=None) -> dict:
    """Facts about a dataset's local copy; never downloads. Sizes are ``None`` when absent.

    Keys: ``name, kind, present, n_rows, n_features, positive_rate, path`` and, for real
    datasets, ``protected, protected_rate`` (the share of ``c = 1``). ``n_features`` is the
    number of columns faux feeds a model: continuous features for PMLB (what the paper's
    synthetic pipeline uses), encoded columns without ``c`` for real datasets.
    """
    k = kind(name)
    if k == "pmlb":
        path = pmlb_path(name, root)
        out = dict(name=name, kind=k, present=path.is_file(), n_rows=None, n_features=None,
                   positive_rate=None, path=str(path))
        if out["present"]:
            data = load_pmlb(name, root=root, download=False)
            out.update(n_rows=data.n_rows, n_features=data.n_features,
                       positive_rate=_rate(data.y))
        return out
    paths = raw_paths(name, root)
    out = dict(name=name, kind=k, present=is_present(name, root), n_rows=None, n_features=None,
               positive_rate=None, protected=None, protected_rate=None,
               path=str(paths[0] if spec(name).user_file else paths[0].parent))
    if out["present"]:
        table = load_table(name, root=root, download=False)
        out.update(n_rows=table.n_rows, n_features=table.n_features,
                   positive_rate=_rate(table.y), protected=table.protected,
                   protected_rate=_rate(table.c))
    return out
