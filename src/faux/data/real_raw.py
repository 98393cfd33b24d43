"""The raw files of Adult, Bank and SSL: their columns, and reading and checking them.

Each reader turns the file(s) as published into a DataFrame with the columns aif360's
``StandardDataset`` expects, and checks them first (column count, numeric columns, label
values): a corrupt or truncated file is a one-line ``DataError`` naming the file and the fix.
A new dataset's reader goes here, its ``RealSpec`` in :mod:`faux.data.real`.
Where the files are and how a missing one is downloaded: :mod:`faux.data.real`.

SSL (the Chicago Strategic Subject List) is a file the user places: rows with race ``BLK``
or ``WHI`` only; the 8 ``PREDICTOR RAT ...`` columns (age bands such as ``"20-30"`` become
the band's lower bound, ``"less than 20"`` -> 10, as FlipTest does), ``SEX CODE CD``, the race
and the score.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from faux.errors import DataError
from faux.paths import data_root

BANK_FILE = "bank-additional-full.csv"

ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income-per-year")
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week")
ADULT_LABELS = ("<=50K", ">50K", "<=50K.", ">50K.")

BANK_COLUMNS = ("age", "job", "marital", "education", "default", "housing", "loan", "contact",
                "month", "day_of_week", "duration", "campaign", "pdays", "previous", "poutcome",
                "emp.var.rate", "cons.price.idx", "cons.conf.idx", "euribor3m", "nr.employed", "y")
BANK_NUMERIC = ("age", "duration", "campaign", "pdays", "previous", "emp.var.rate",
                "cons.price.idx", "cons.conf.idx", "euribor3m", "nr.employed")

SSL_SCORE = "SSL SCORE"
SSL_AGE = "PREDICTOR RAT AGE AT LATEST ARREST"
SSL_PREDICTORS = (SSL_AGE, "PREDICTOR RAT VICTIM SHOOTING INCIDENTS",
                  "PREDICTOR RAT VICTIM BATTERY OR ASSAULT",
                  "PREDICTOR RAT ARRESTS VIOLENT OFFENSES", "PREDICTOR RAT GANG AFFILIATION",
                  "PREDICTOR RAT NARCOTIC ARRESTS", "PREDICTOR RAT TREND IN CRIMINAL ACTIVITY",
                  "PREDICTOR RAT UUW ARRESTS")
SSL_SEX = "SEX CODE CD"
SSL_RACE = "RACE CODE CD"
SSL_COLUMNS = (SSL_SCORE, *SSL_PREDICTORS, SSL_SEX, SSL_RACE)
SSL_HINT = ("download the 'Strategic Subject List - Historical' export (dataset 4aki-r3np) "
            "from the Chicago data portal and place it there")


def _read_csv(path: Path, **kw) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError,
            OSError, EOFError) as exc:
        why = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise DataError(f"{path} is corrupt or truncated ({type(exc).__name__}: {why}); replace "
                        f"it with a good copy (or delete it to re-download)") from None


def _check_numeric(df: pd.DataFrame, columns, path: Path) -> None:
    for col in columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            bad = pd.to_numeric(df[col], errors="coerce").isna() & df[col].notna()
            example = df.loc[bad, col].iloc[0] if bad.any() else "?"
            raise DataError(f"{path} is corrupt: column {col!r} has non-numeric values such as "
                            f"{example!r}; replace it with a good copy")


def _check_labels(values: pd.Series, valid, path: Path) -> None:
    bad = ~values.isin(valid)
    if bad.any():
        example = values[bad].iloc[0]
        raise DataError(f"{path} is corrupt or truncated: {int(bad.sum())} row(s) have label "
                        f"{example!r} (expected one of {', '.join(valid)}); replace it with a "
                        f"good copy")



def parse_adult_frame(train_path: Path, test_path: Path) -> pd.DataFrame:
    """The raw Adult table as aif360's ``AdultDataset`` reads it (test rows first, then train)."""
    parts = []
    for path, skip in ((test_path, 1), (train_path, 0)):  # adult.test starts with '|1x3 ...'
        df = _read_csv(path, header=None, skiprows=skip, skipinitialspace=True, na_values=["?"])
        if df.shape[1] != len(ADULT_COLUMNS):
            raise DataError(f"{path} is corrupt: {df.shape[1]} columns, expected "
                            f"{len(ADULT_COLUMNS)} (comma-separated UCI format); replace it")
        df.columns = list(ADULT_COLUMNS)
        _check_numeric(df, ADULT_NUMERIC, path)
        _check_labels(df["income-per-year"], ADULT_LABELS, path)
        parts.append(df)
    return pd.concat(parts, ignore_index=True)



def parse_bank_frame(path: Path) -> pd.DataFrame:
    """The raw Bank table as aif360's ``BankDataset`` reads it (``unknown`` as missing)."""
    df = _read_csv(path, sep=";", na_values=["unknown"])
    if tuple(df.columns) != BANK_COLUMNS:
        missing = [c for c in BANK_COLUMNS if c not in df.columns]
        raise DataError(f"{path} is corrupt: {df.shape[1]} columns"
                        f"{', missing ' + ', '.join(missing) if missing else ''}; expected the "
                        f"21 ';'-separated columns of {BANK_FILE}; replace it")
    _check_numeric(df, BANK_NUMERIC, path)
    _check_labels(df["y"], ("no", "yes"), path)
    return df


def ssl_candidates(folder: Path) -> list[Path]:
    """The CSV files (``.csv``, ``.csv.gz``) in ``folder`` (none when it is not a folder)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and (p.name.endswith(".csv") or p.name.endswith(".csv.gz")))


def ssl_path(root=None) -> Path:
    """The one SSL CSV in ``<data root>/ssl/``."""
    folder = data_root(root) / "ssl"
    found = ssl_candidates(folder)
    if not found:
        raise DataError(f"no SSL CSV in {folder}; {SSL_HINT}")
    if len(found) > 1:
        raise DataError(f"several SSL CSVs in {folder} ({', '.join(p.name for p in found)}); "
                        f"keep exactly one there")
    return found[0]


_AGE_LESS = re.compile(r"^(?:less than|under|<)\s*(\d+)$")
_AGE_START = re.compile(r"^(\d+)\s*(?:-\s*\d+|\+|or more|and over|and older)?$")


def ssl_age(value) -> float:
    """An SSL age band as a number: the band's lower bound, ``"less than 20"`` -> 10."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return np.nan
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    text = str(value).strip().lower()
    if not text:
        return np.nan
    m = _AGE_LESS.match(text)
    if m:
        return float(m.group(1)) - 10.0
    m = _AGE_START.match(text)
    if m:
        return float(m.group(1))
    raise ValueError(text)


def read_ssl_frame(root=None) -> pd.DataFrame:
    """The SSL columns faux uses, numeric, rows of race BLK or WHI only."""
    path = ssl_path(root)
    header = _read_csv(path, nrows=0)
    columns = {str(c).strip(): c for c in header.columns}
    missing = [c for c in SSL_COLUMNS if c not in columns]
    if missing:
        raise DataError(f"SSL file {path} lacks column(s) {', '.join(repr(c) for c in missing)}; "
                        f"use the portal export of dataset 4aki-r3np with its column names")
    df = _read_csv(path, usecols=[columns[c] for c in SSL_COLUMNS], dtype=str,
                   keep_default_na=True)
    df.columns = [str(c).strip() for c in df.columns]
    df = df[list(SSL_COLUMNS)]
    for col in (SSL_SEX, SSL_RACE):
        df[col] = df[col].str.strip()
    df = df[df[SSL_RACE].isin(["BLK", "WHI"])].copy()
    if df.empty:
        raise DataError(f"SSL file {path} has no rows with {SSL_RACE} BLK or WHI; check the file")
    try:
        df[SSL_AGE] = df[SSL_AGE].map(ssl_age)
    except ValueError as exc:
        raise DataError(f"SSL file {path}: unreadable age band {str(exc)!r} in {SSL_AGE!r} "
                        f"(expected e.g. 'less than 20', '20-30'); fix the file") from None
    for col in (SSL_SCORE, *SSL_PREDICTORS[1:]):
        num = pd.to_numeric(df[col].str.replace(",", "", regex=False).str.strip(),
                            errors="coerce")
        bad = num.isna() & df[col].notna() & (df[col].str.strip() != "")
        if bad.any():
            raise DataError(f"SSL file {path}: column {col!r} has non-numeric values such as "
                            f"{df.loc[bad, col].iloc[0]!r}; fix the file")
        df[col] = num
    return df.reset_index(drop=True)
