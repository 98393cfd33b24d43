"""Where an audit's inputs came from, for ``summary["provenance"]`` and the report's header:
the data file's sha256 (read in chunks), or for data in memory a sha256 over pandas' row
hashes of the frame (``pandas.util.hash_pandas_object``; stated as such, it is not a file's
hash), the model file's sha256 (``faux.audit.loaders.models``) and the model's version as the user
names it, and the versions of faux, Python, torch, scikit-learn, numpy and pandas."""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path

import numpy as np
import pandas as pd

from faux.harness.files import file_sha256


def frame_sha256(frame: pd.DataFrame, extra: dict | None = None) -> str:
    """sha256 of the row hashes of ``frame`` (index included) and of each array of
    ``extra`` (name -> values, e.g. the protected values and the label passed apart)."""
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    h.update(",".join(map(str, frame.columns)).encode())
    for name, values in sorted((extra or {}).items()):
        if values is None:
            continue
        h.update(str(name).encode())
        s = pd.Series(np.asarray(values, dtype=object).astype(str))
        h.update(pd.util.hash_pandas_object(s, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


#: this package's distribution name (the top of this module's dotted name)
DIST = __name__.split(".")[0]


def versions() -> dict:
    out = {DIST: _version(DIST) or "unknown", "python": platform.python_version()}
    for name, dist in (("torch", "torch"), ("sklearn", "scikit-learn"), ("numpy", "numpy"),
                       ("pandas", "pandas")):
        out[name] = _version(dist)
    return out


def data_provenance(source) -> dict:
    """The data's identity: a file's path and sha256, or the in-memory frame's hash (a
    source of several files says its own: ``provenance()``)."""
    own = getattr(source, "provenance", None)
    if callable(own):
        return own()
    path = getattr(source, "path", None)
    if path is not None:
        p = Path(path)
        return {"file": str(p.resolve()), "sha256": file_sha256(p), "hash_of": "file bytes"}
    frame = getattr(source, "frame", None)
    if frame is None:
        return {"sha256": None, "hash_of": "unknown source"}
    extra = dict(getattr(source, "cs", {}) or {})
    extra["__label__"] = getattr(source, "y", None)
    return {"file": None, "sha256": frame_sha256(frame, extra),
            "hash_of": "in-memory data: sha256 of pandas.util.hash_pandas_object row hashes "
                       "(features, protected values, label), not of a file"}


def provenance(source, model_info: dict, model_version: str | None = None) -> dict:
    """``summary["provenance"]``: the data's and the model's identity (``model_version``: the
    model's own version as the user names it, ``--model-version``) and the versions of the
    libraries."""
    return {"data": data_provenance(source),
            "model": {"file": model_info.get("file"), "sha256": model_info.get("sha256"),
                      "version": model_version},
            "versions": versions()}
