"""Real datasets with a protected attribute: Adult, Bank (UCI, as aif360 preprocesses them), SSL.

All three are built with ``aif360.datasets.StandardDataset`` from a DataFrame read here, with
the arguments aif360's own ``AdultDataset`` / ``BankDataset`` pass (those classes only read
from inside the installed package). The steps, in order:

1. read and check the raw file(s) (column count, numeric columns, label values;
   :mod:`faux.data.real_raw`), downloading a missing Adult or Bank file;
2. ``StandardDataset``: drop listed columns, drop rows with a missing value, one-hot encode
   the categorical features on the WHOLE table (so a level seen only in the test split is a
   column that is all zero in train), map the protected attribute(s) and the label to 0/1;
3. remove the protected attribute ``c`` from the features (``c`` is never a column of ``X``);
4. split rows into train / val / test (stratified on ``2*y + c`` when every stratum allows);
5. standardise the continuous columns with the TRAIN split's mean and std (one-hot and other
   0/1 columns are left as they are).

Each dataset is one :class:`RealSpec` in ``SPECS`` (raw files and their sources, the reader,
the aif360 arguments with the protected attribute and the label rule, labels of c and y); a
new dataset is one reader function (:mod:`faux.data.real_raw`) and one ``RealSpec`` entry
(and a ``conf/data`` file).

Encodings (1 = aif360's "privileged" value; the label 1 is the positive class):

* ``adult``: ``c = sex`` (1 = Male, 0 = Female); ``y = income > 50K``. aif360 also maps
  ``race`` to a protected 0/1 column (1 = White); the paper protects only sex, so ``race``
  stays in ``X`` as that 0/1 feature. Shape after aif360: 45,222 x 98 (race and sex included),
  so ``X`` has 97 columns. ``fnlwgt`` is dropped (as aif360 does).
* ``bank``: ``c = 1`` for ``age >= 25`` (the paper's "binarised at 25"; aif360 0.6.1's default
  privileged group is ``25 <= age < 60``, which we do NOT use), ``y = (y == "yes")``.
  Rows with an ``unknown`` value are dropped (aif360's ``na_values``). Shape after aif360:
  30,488 x 57 (age included), so ``X`` has 56 columns; age itself is only in ``c``.
* ``ssl``: Chicago Strategic Subject List, rows with race ``BLK`` or ``WHI`` only; ``c = 1``
  for White, 0 for Black; ``y = 1`` for ``SSL SCORE >= 250`` (high risk; FlipTest keeps the score
  as a regression target, a binary label needs a cut and 250 is mid-scale of 0..500). Features:
  the 8 ``PREDICTOR RAT ...`` columns (age bands such as ``"20-30"`` become the band's lower
  bound, ``"less than 20"`` -> 10, as FlipTest does) and ``SEX CODE CD`` one-hot.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faux.data.download import RECORDED_SHA256, download_verified, verify_file
from faux.data.real_raw import (
    BANK_FILE,
    SSL_RACE,
    SSL_SCORE,
    SSL_SEX,
    parse_adult_frame,
    parse_bank_frame,
    read_ssl_frame,
    ssl_candidates,
    ssl_path,
)
from faux.data.splits import check_fractions, split_indices
from faux.errors import DataError
from faux.paths import data_root

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
ADULT_URLS = {"adult.data": f"{UCI}/adult/adult.data", "adult.test": f"{UCI}/adult/adult.test"}
BANK_ZIP_URL = f"{UCI}/00222/bank-additional.zip"

ADULT_CATEGORICAL = ("workclass", "education", "marital-status", "occupation", "relationship",
                     "native-country")
BANK_CATEGORICAL = ("job", "marital", "education", "default", "housing", "loan", "contact",
                    "month", "day_of_week", "poutcome")
BANK_AGE_THRESHOLD = 25
SSL_THRESHOLD = 250.0


@dataclass(frozen=True, eq=False)
class _Encoding:
    """What a real table's columns mean (shared by the whole table and its splits)."""

    feature_names: tuple[str, ...]
    feature_groups: tuple[str, ...]
    protected: str
    categorical: tuple[str, ...]
    continuous: tuple[str, ...]
    c_labels: tuple[str, str]
    y_labels: tuple[str, str]


@dataclass(frozen=True, eq=False, kw_only=True)
class RealTable(_Encoding):
    """The whole preprocessed table before splitting; ``X`` is float64 and NOT standardised."""

    name: str
    X: np.ndarray
    y: np.ndarray
    c: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


@dataclass(frozen=True, eq=False, kw_only=True)
class RealData(_Encoding):
    """A split, encoded real dataset.

    ``X_*`` float32 (continuous columns standardised with train statistics ``mean``/``scale``,
    which are 0/1 for the other columns); ``y_*``, ``c_*`` int64 in {0, 1};
    ``feature_groups[j]`` is the original feature of column ``j`` (a one-hot column maps to its
    categorical feature); ``*_idx`` are the rows of the full table in each split.
    ``c_labels = (meaning of c=0, meaning of c=1)``, likewise ``y_labels``.
    """

    name: str
    X_train: np.ndarray
    X_val: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_val: np.ndarray
    y_test: np.ndarray
    c_train: np.ndarray
    c_val: np.ndarray
    c_test: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    seed: int

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def continuous_idx(self) -> np.ndarray:
        """Column indices of the standardised (continuous) features."""
        cont = set(self.continuous)
        return np.array([j for j, g in enumerate(self.feature_names) if g in cont], dtype=np.int64)


# ----------------------------------------------------------------------------- raw files

def raw_paths(name: str, root=None) -> list[Path]:
    """The raw files a dataset is read from (for ``ssl``: the folder holding the CSV)."""
    base = data_root(root)
    return [base / f for f in spec(name).files]


def is_present(name: str, root=None) -> bool:
    """Whether the raw file(s) of ``name`` exist locally (no download, no parsing)."""
    if spec(name).user_file:
        return bool(ssl_candidates(raw_paths(name, root)[0]))
    return all(p.is_file() for p in raw_paths(name, root))


def _fetch(url: str, dest: Path, timeout=None) -> None:
    """Download ``url`` to ``dest`` atomically, checked against the recorded SHA-256 of
    ``dest.name`` (:data:`faux.data.download.RECORDED_SHA256`; none recorded: logged) and
    bounded by a short connect/read timeout (tests replace this to forbid the network)."""
    download_verified(url, dest, RECORDED_SHA256.get(dest.name), timeout=timeout)


def _download_bank(dest: Path) -> None:
    """The Bank CSV out of UCI's zip; the extracted file must match its recorded SHA-256
    before it is put at ``dest``."""
    with tempfile.TemporaryDirectory() as tmp:
        zpath = Path(tmp) / "bank-additional.zip"
        _fetch(BANK_ZIP_URL, zpath)
        with zipfile.ZipFile(zpath) as zf:
            member = next((m for m in zf.namelist() if m.endswith("/" + BANK_FILE)
                           and "__MACOSX" not in m), None)
            if member is None:
                raise OSError(f"{BANK_FILE} not in the archive")
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = dest.with_name(dest.name + ".part")
            try:
                with zf.open(member) as src, open(part, "wb") as out:
                    shutil.copyfileobj(src, out)
                if dest.name in RECORDED_SHA256:
                    verify_file(part, RECORDED_SHA256[dest.name])
                part.replace(dest)
            finally:
                part.unlink(missing_ok=True)


def _ensure_raw(name: str, root, download: bool) -> list[Path]:
    paths = raw_paths(name, root)
    for path in paths:
        if path.is_file():
            continue
        url = spec(name).urls[path.name]
        if not download:
            raise DataError(f"{name}: raw file {path.name} not found at {path}; set FAUX_DATA_DIR "
                            f"or place the file there (source: {url})")
        try:
            if url.endswith(".zip"):
                _download_bank(path)
            else:
                _fetch(url, path)
        except Exception as exc:  # offline, HTTP error, read-only data root, bad archive
            why = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise DataError(f"{name}: raw file {path.name} not found at {path} and the download "
                            f"from {url} failed ({type(exc).__name__}: {why}); set FAUX_DATA_DIR "
                            f"or place the file there") from None
    return paths


def read_adult_frame(root=None, download: bool = True) -> pd.DataFrame:
    """The raw Adult table as aif360's ``AdultDataset`` reads it (test rows first, then train)."""
    train_path, test_path = _ensure_raw("adult", root, download)
    return parse_adult_frame(train_path, test_path)


def read_bank_frame(root=None, download: bool = True) -> pd.DataFrame:
    """The raw Bank table as aif360's ``BankDataset`` reads it (``unknown`` as missing)."""
    (path,) = _ensure_raw("bank", root, download)
    return parse_bank_frame(path)


# ----------------------------------------------------------------------------- preprocessing

def _bank_privileged(age) -> bool:
    return age >= BANK_AGE_THRESHOLD


def _ssl_high_risk(score) -> bool:
    return score >= SSL_THRESHOLD


def _standard_dataset(df: pd.DataFrame, **kw):
    """aif360's ``StandardDataset`` (its "Missing Data: n rows removed" line is kept quiet)."""
    from aif360.datasets import StandardDataset

    root_logger = logging.getLogger()
    level = root_logger.level
    root_logger.setLevel(logging.ERROR)
    try:
        return StandardDataset(df=df, **kw)
    except (ValueError, TypeError, KeyError) as exc:
        raise DataError(f"aif360 could not preprocess the table ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:120] if str(exc) else ''}); check the raw "
                        f"file") from None
    finally:
        root_logger.setLevel(level)


def aif360_dataset(name: str, root=None, download: bool = True):
    """The aif360 ``StandardDataset`` of ``name``, before ``c`` is removed and rows are split."""
    sp = spec(name)
    df = sp.read(root) if sp.user_file else sp.read(root, download)
    return _standard_dataset(df, **sp.aif360)


# ----------------------------------------------------------------------------- the datasets


@dataclass(frozen=True)
class RealSpec:
    """Everything faux knows about one real dataset, in one place."""

    name: str
    files: tuple[str, ...]          # raw files under the data root (a folder: a user's CSV)
    urls: dict                      # raw file name -> where a missing one is downloaded from
    read: Callable                  # (root, download) -> the raw DataFrame (user file: root)
    aif360: dict                    # StandardDataset arguments (label rule, protected, ...)
    protected: str                  # the aif360 column that becomes c
    c_labels: tuple[str, str]       # meaning of c = 0, c = 1
    y_labels: tuple[str, str]
    user_file: bool = False         # a CSV the user places (never downloaded)


SPECS: dict[str, RealSpec] = {s.name: s for s in (
    RealSpec("adult", tuple(f"aif360/adult/{f}" for f in ADULT_URLS), ADULT_URLS,
             read_adult_frame,
             dict(label_name="income-per-year", favorable_classes=[">50K", ">50K."],
                  protected_attribute_names=["race", "sex"],
                  privileged_classes=[["White"], ["Male"]],
                  categorical_features=list(ADULT_CATEGORICAL), features_to_keep=[],
                  features_to_drop=["fnlwgt"], na_values=["?"]),
             "sex", ("Female", "Male"), ("income <=50K", "income >50K")),
    RealSpec("bank", (f"aif360/bank/{BANK_FILE}",), {BANK_FILE: BANK_ZIP_URL}, read_bank_frame,
             dict(label_name="y", favorable_classes=["yes"], protected_attribute_names=["age"],
                  privileged_classes=[_bank_privileged],
                  categorical_features=list(BANK_CATEGORICAL), features_to_keep=[],
                  features_to_drop=[], na_values=["unknown"]),
             "age", (f"age < {BANK_AGE_THRESHOLD}", f"age >= {BANK_AGE_THRESHOLD}"),
             ("no deposit", "deposit")),
    RealSpec("ssl", ("ssl",), {}, read_ssl_frame,
             dict(label_name=SSL_SCORE, favorable_classes=_ssl_high_risk,
                  protected_attribute_names=[SSL_RACE], privileged_classes=[["WHI"]],
                  categorical_features=[SSL_SEX], features_to_keep=[], features_to_drop=[],
                  na_values=[]),
             SSL_RACE, ("Black (BLK)", "White (WHI)"),
             (f"SSL score < {SSL_THRESHOLD:g}", f"SSL score >= {SSL_THRESHOLD:g}"),
             user_file=True),
)}
REAL_DATASETS = tuple(SPECS)


def spec(name: str) -> RealSpec:
    """The spec of a real dataset; DataError listing the valid names for any other."""
    if name not in SPECS:
        raise DataError(f"unknown real dataset {name!r}; choose one of {', '.join(SPECS)}")
    return SPECS[name]


def _table_from_aif360(name: str, ds) -> RealTable:
    sp = spec(name)
    protected, c_labels, y_labels = sp.protected, sp.c_labels, sp.y_labels
    names = list(ds.feature_names)
    categorical = tuple(sp.aif360["categorical_features"])
    keep = [j for j, n in enumerate(names) if n != protected]
    X = np.asarray(ds.features, dtype=np.float64)[:, keep]
    feature_names = tuple(names[j] for j in keep)
    groups = []
    for n in feature_names:
        head = n.split("=", 1)[0]
        groups.append(head if "=" in n and head in categorical else n)
    continuous = tuple(n for j, n in enumerate(feature_names)
                       if groups[j] == n and not np.isin(X[:, j], (0.0, 1.0)).all())
    c = ds.protected_attributes[:, list(ds.protected_attribute_names).index(protected)]
    y = ds.labels.ravel()
    if not (np.isin(c, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        raise DataError(f"{name}: protected attribute or label is not 0/1 after preprocessing; "
                        f"check the raw file")
    if len(y) == 0:
        raise DataError(f"{name}: no rows left after dropping missing values; check the raw file")
    c_arr, y_arr = c.astype(np.int64), y.astype(np.int64)
    for arr in (X, c_arr, y_arr):  # the table is cached and shared: keep it immutable
        arr.setflags(write=False)
    return RealTable(name=name, X=X, y=y_arr, c=c_arr, feature_names=feature_names,
                     feature_groups=tuple(groups), protected=protected, categorical=categorical,
                     continuous=continuous, c_labels=c_labels, y_labels=y_labels)


_TABLES: dict[tuple, RealTable] = {}


def _signature(name: str, root) -> tuple:
    paths = [ssl_path(root)] if spec(name).user_file else raw_paths(name, root)
    sig = []
    for p in paths:
        st = p.stat() if p.is_file() else None
        sig.append((str(p), st.st_size if st else -1, st.st_mtime_ns if st else -1))
    return (name, *sig)


def load_table(name: str, root=None, download: bool = True) -> RealTable:
    """The whole preprocessed table (cached per file path, size and mtime; arrays read-only)."""
    if not spec(name).user_file:
        _ensure_raw(name, root, download)
    key = _signature(name, root)
    if key not in _TABLES:
        _TABLES[key] = _table_from_aif360(name, aif360_dataset(name, root, download))
    return _TABLES[key]


def _split(table: RealTable, seed: int, val_frac: float, test_frac: float):
    strata = 2 * table.y + table.c
    try:
        return split_indices(table.n_rows, seed, val_frac, test_frac, stratify=strata)
    except DataError:  # a (y, c) stratum too small to stratify: plain random split
        return split_indices(table.n_rows, seed, val_frac, test_frac, stratify=None)


def split_table(table: RealTable, seed: int = 0, val_frac: float = 0.15,
                test_frac: float = 0.15) -> RealData:
    """Split ``table`` (stratified on ``2*y + c`` where possible), standardise on train."""
    check_fractions(val_frac, test_frac)
    tr, va, te = _split(table, seed, val_frac, test_frac)
    for label, idx in (("train", tr), ("val", va), ("test", te)):
        values = np.unique(table.c[idx])
        if len(values) < 2:
            raise DataError(f"{table.name}: protected attribute {table.protected!r} takes the "
                            f"single value {values.tolist()} in the {label} split ({len(idx)} "
                            f"rows, seed {seed}); try another seed or larger val_frac/test_frac")
    cont = set(table.continuous)
    cols = np.array([n in cont for n in table.feature_names], dtype=bool)
    mean = np.zeros(table.n_features)
    scale = np.ones(table.n_features)
    if cols.any():
        Xc = table.X[tr][:, cols]
        mean[cols] = Xc.mean(axis=0)
        std = Xc.std(axis=0)
        scale[cols] = np.where(std > 0, std, 1.0)

    def prep(idx):
        return ((table.X[idx] - mean) / scale).astype(np.float32)

    return RealData(
        name=table.name, X_train=prep(tr), X_val=prep(va), X_test=prep(te),
        y_train=table.y[tr].copy(), y_val=table.y[va].copy(), y_test=table.y[te].copy(),
        c_train=table.c[tr].copy(), c_val=table.c[va].copy(), c_test=table.c[te].copy(),
        feature_names=table.feature_names, feature_groups=table.feature_groups,
        protected=table.protected, categorical=table.categorical, continuous=table.continuous,
        c_labels=table.c_labels, y_labels=table.y_labels, mean=mean, scale=scale,
        train_idx=tr, val_idx=va, test_idx=te, seed=int(seed))


def load_real(name: str, seed: int = 0, root=None, val_frac: float = 0.15,
              test_frac: float = 0.15, download: bool = True) -> RealData:
    """Adult, Bank or SSL: split by ``seed``, one-hot encoded, standardised on train."""
    return split_table(load_table(name, root, download), seed, val_frac, test_frac)
