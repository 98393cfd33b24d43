"""PMLB datasets, continuous features only (the paper's synthetic pipeline, A.7.3).

Rule for "continuous": the feature is stored as a float in PMLB's file. It reproduces the
paper's counts (backache 6, credit_g 7, australian 6, wdbc 30, magic 10) and PMLB's own
metadata (which, like the paper, counts backache's ``id`` column as continuous).
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faux.data.download import DownloadError, download_verified
from faux.errors import DataError
from faux.paths import data_root

#: datasets used by the paper (Table 2) and shipped offline; any other PMLB name also loads.
PAPER_PMLB = ("backache", "credit_g", "australian", "wdbc", "magic")
KNOWN_PMLB = (*PAPER_PMLB, "credit_a")

#: where PMLB's datasets are downloaded from (pmlb 1.0.1.post3's ``GITHUB_URL``)
PMLB_URL = "https://github.com/EpistasisLab/penn-ml-benchmarks/raw/master/datasets"

#: SHA-256 of each PMLB file we know: the bytes pmlb 1.0.1.post3 downloads (PMLB commit
#: b63dd80 / the LFS objects of tag v1.0.1.post3; see shared/data/README.md). A download of
#: one of these names that does not match is refused.
PMLB_SHA256 = {
    "australian": "7f3e5e96b80f5217830cdd198d33b4262cbded4f7cc22981daaa5d61fdcb8329",
    "backache": "21d506c397dfeb3edbbbc253b923f59be6edb516689677ebef535296c6c62242",
    "credit_a": "1d64387aa4bea78bd412ea3892bf17f48b32856074dfe3b5105f0bbc1b15603f",
    "credit_g": "039c48aaf10d8ca444c2799123ff37f99c5a98402884e2df66d92cdaac09f53b",
    "magic": "c823ea26d676538f9194d41f290798ff2f3fe59255c340418fd9439d8fc9c07f",
    "wdbc": "a39fc5f054db506e83a4a4ec47eba1f7f9bf9bfdc983174e699312f32f42f1f5",
}


@dataclass(frozen=True)
class TabularData:
    """Continuous features ``X`` (float64, n x d), binary labels ``y`` (int64), names."""

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


def pmlb_path(name: str, root=None) -> Path:
    return data_root(root) / "pmlb" / name / f"{name}.tsv.gz"


def _download(name: str, path: Path) -> None:
    """Fetch ``name`` from PMLB's repository into ``path`` (tries ``_deprecated_<name>`` too).

    The raw bytes are kept (no re-encoding) and checked against :data:`PMLB_SHA256`; each try
    is bounded by :data:`faux.data.download.DEFAULT_TIMEOUT`."""
    errors = []
    for remote in (name, f"_deprecated_{name}"):
        url = f"{PMLB_URL}/{remote}/{remote}.tsv.gz"
        try:  # a ChecksumError (wrong bytes) is not retried: it propagates
            download_verified(url, path, PMLB_SHA256.get(name))
        except DownloadError as exc:  # network errors, 404s, timeouts: try the other name
            errors.append(f"{remote}: {exc.reason}")
            continue
        return
    raise DataError(
        f"PMLB dataset '{name}' is not at {path} and could not be downloaded "
        f"({'; '.join(errors)}); set FAUX_DATA_DIR to a folder holding pmlb/{name}/{name}.tsv.gz"
    )


def read_pmlb_frame(name: str, root=None, download: bool = True) -> pd.DataFrame:
    """The raw PMLB frame (features + ``target``), read through ``pmlb.fetch_data``."""
    import pmlb

    path = pmlb_path(name, root)
    if not path.exists():
        if name not in KNOWN_PMLB and name not in pmlb.dataset_names:
            raise DataError(f"unknown dataset {name!r}: not a PMLB dataset and not at {path}; "
                            f"known: {', '.join(KNOWN_PMLB)} (or any name in pmlb.dataset_names)")
        if not download:
            raise DataError(f"PMLB dataset '{name}' not found at {path}; set FAUX_DATA_DIR "
                            f"to a folder holding pmlb/{name}/{name}.tsv.gz")
        _download(name, path)
    try:
        df = pmlb.fetch_data(name, local_cache_dir=str(path.parent.parent))
    except (EOFError, OSError, gzip.BadGzipFile, zlib.error, pd.errors.ParserError,
            UnicodeDecodeError) as exc:
        raise DataError(f"PMLB file {path} is corrupt or truncated ({type(exc).__name__}); "
                        f"delete it to re-download, or replace it with a good copy") from exc
    if "target" not in df.columns:
        raise DataError(f"PMLB file {path} has no 'target' column; replace it with a good copy")
    return df


def load_pmlb(name: str, root=None, download: bool = True) -> TabularData:
    """Continuous features and the binary label of a PMLB dataset."""
    if not isinstance(name, str) or not name or "/" in name:
        raise DataError(f"unknown dataset {name!r}; known PMLB datasets: {', '.join(KNOWN_PMLB)}")
    df = read_pmlb_frame(name, root, download)
    y_raw = df["target"].to_numpy()
    classes = np.unique(y_raw)
    if len(classes) != 2:
        raise DataError(f"PMLB dataset '{name}' has {len(classes)} classes; faux needs a "
                        f"binary label (choose a binary PMLB dataset)")
    features = df.drop(columns="target")
    cont = [c for c in features.columns if features[c].dtype.kind == "f"]
    if not cont:
        raise DataError(f"PMLB dataset '{name}' has no continuous features; choose another")
    X = features[cont].to_numpy(dtype=np.float64)
    y = (y_raw == classes[1]).astype(np.int64)
    return TabularData(name=name, X=X, y=y, feature_names=tuple(cont))
