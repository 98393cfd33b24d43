"""Adult, Bank (aif360 preprocessing) and SSL (fixture CSV) loaders, and the splits."""

from __future__ import annotations

import gzip
import io
import os
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import faux.data.real as real
import faux.data.real_raw as real_raw
from faux.data.real import RealTable, load_real, load_table, split_table
from faux.data.splits import split_indices
from faux.errors import ConfigError, DataError

SHARED = Path(os.environ.get("FAUX_DATA_DIR")
              or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture(scope="module")
def shared_root():
    if not (SHARED / "aif360" / "adult" / "adult.data").is_file():
        pytest.skip(f"UCI raw files not under {SHARED}; set FAUX_DATA_DIR")
    return SHARED


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def forbidden(url, dest, timeout=60.0):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(real, "_fetch", forbidden)


@pytest.fixture(scope="module")
def adult(shared_root):
    return load_real("adult", seed=0, root=shared_root, download=False)


@pytest.fixture(scope="module")
def bank(shared_root):
    return load_real("bank", seed=0, root=shared_root, download=False)


# ----------------------------------------------------------------------------- splits

def test_split_indices_partition_sizes_and_determinism():
    n = 1000
    tr, va, te = split_indices(n, seed=3, val_frac=0.2, test_frac=0.1)
    assert np.array_equal(np.sort(np.concatenate([tr, va, te])), np.arange(n))
    assert (len(tr), len(va), len(te)) == (700, 200, 100)
    again = split_indices(n, seed=3, val_frac=0.2, test_frac=0.1)
    assert all(np.array_equal(a, b) for a, b in zip((tr, va, te), again))
    other = split_indices(n, seed=4, val_frac=0.2, test_frac=0.1)
    assert not np.array_equal(te, other[2])


def test_split_indices_stratifies():
    labels = np.r_[np.zeros(900), np.ones(100)].astype(int)
    for seed in range(3):
        parts = split_indices(1000, seed, 0.15, 0.15, stratify=labels)
        for idx in parts:
            assert abs(labels[idx].mean() - 0.1) < 0.005


def test_split_errors():
    with pytest.raises(ConfigError, match="val_frac"):
        split_indices(100, 0, val_frac=0.0)
    with pytest.raises(ConfigError, match="< 1"):
        split_indices(100, 0, val_frac=0.5, test_frac=0.5)
    with pytest.raises(DataError, match="cannot split 2 rows"):
        split_indices(2, 0)
    with pytest.raises(DataError, match="stratify"):
        split_indices(100, 0, stratify=np.r_[np.zeros(99), 1])  # a class with one member


# ----------------------------------------------------------------------------- Adult / Bank

def _redirected_pandas(folder: Path):
    """aif360's own dataset module, with its file reads redirected to ``folder``."""

    def read_csv(path, *args, **kwargs):
        return pd.read_csv(folder / Path(path).name, *args, **kwargs)

    return SimpleNamespace(read_csv=read_csv, concat=pd.concat)


def _same(ref, ours):
    assert list(ref.feature_names) == list(ours.feature_names)
    np.testing.assert_array_equal(ref.features, ours.features)
    np.testing.assert_array_equal(ref.labels, ours.labels)
    np.testing.assert_array_equal(ref.protected_attributes, ours.protected_attributes)


def test_adult_equals_aif360_adultdataset(shared_root, monkeypatch):
    import aif360.datasets.adult_dataset as mod

    monkeypatch.setattr(mod, "pd", _redirected_pandas(shared_root / "aif360" / "adult"))
    ref = mod.AdultDataset()
    ours = real.aif360_dataset("adult", root=shared_root, download=False)
    assert ours.features.shape == (45222, 98)
    assert list(ours.protected_attribute_names) == ["race", "sex"]
    _same(ref, ours)


def test_bank_equals_aif360_bankdataset_with_age_cut_at_25(shared_root, monkeypatch):
    import aif360.datasets.bank_dataset as mod

    monkeypatch.setattr(mod, "pd", _redirected_pandas(shared_root / "aif360" / "bank"))
    ref = mod.BankDataset(privileged_classes=[lambda x: x >= 25])  # the paper's binarisation
    ours = real.aif360_dataset("bank", root=shared_root, download=False)
    assert ours.features.shape == (30488, 57)
    _same(ref, ours)


def _all(data, part):
    return np.concatenate([getattr(data, f"{part}_{s}") for s in ("train", "val", "test")])


@pytest.mark.parametrize("name,rows,cols,protected", [("adult", 45222, 97, "sex"),
                                                      ("bank", 30488, 56, "age")])
def test_shapes_dtypes_and_c_not_in_x(name, rows, cols, protected, adult, bank):
    data = adult if name == "adult" else bank
    assert data.protected == protected and protected not in data.feature_names
    X = _all(data, "X")
    c = _all(data, "c")
    assert X.shape == (rows, cols) and X.dtype == np.float32
    assert len(data.feature_names) == len(data.feature_groups) == cols
    for part in ("y", "c"):
        assert _all(data, part).dtype == np.int64 and set(np.unique(_all(data, part))) == {0, 1}
    # no column of X is c itself (nor its complement)
    for j in range(cols):
        assert not np.array_equal(X[:, j] > 0.5, c == 1)
        assert not np.array_equal(X[:, j] > 0.5, c == 0)


def test_adult_encodings_follow_raw_file(shared_root, adult):
    raw = real.read_adult_frame(shared_root, download=False).dropna(
        subset=[c for c in real_raw.ADULT_COLUMNS if c != "fnlwgt"]).reset_index(drop=True)
    table = load_table("adult", shared_root, download=False)
    assert table.n_rows == len(raw) == 45222
    np.testing.assert_array_equal(table.c, (raw["sex"] == "Male").to_numpy().astype(int))
    np.testing.assert_array_equal(table.y, raw["income-per-year"].str.startswith(">50K")
                                  .to_numpy().astype(int))
    j = table.feature_names.index("race")  # kept as aif360's 0/1 feature, 1 = White
    np.testing.assert_array_equal(table.X[:, j], (raw["race"] == "White").to_numpy())
    assert adult.c_labels == ("Female", "Male")
    assert "fnlwgt" not in table.feature_names


def test_bank_protected_is_age_at_least_25(shared_root, bank):
    raw = real.read_bank_frame(shared_root, download=False).dropna().reset_index(drop=True)
    table = load_table("bank", shared_root, download=False)
    assert table.n_rows == len(raw) == 30488
    np.testing.assert_array_equal(table.c, (raw["age"] >= 25).to_numpy().astype(int))
    assert ((raw["age"] >= 60) & (table.c == 1)).any()  # not aif360's default 25 <= age < 60
    np.testing.assert_array_equal(table.y, (raw["y"] == "yes").to_numpy().astype(int))
    assert "age" not in table.feature_names


def test_feature_groups(adult, bank):
    for data in (adult, bank):
        groups = set(data.feature_groups)
        assert set(data.categorical) <= groups
        for name, group in zip(data.feature_names, data.feature_groups):
            if "=" in name:
                assert name.startswith(group + "=") and group in data.categorical
            else:
                assert group == name
    assert set(adult.feature_groups) == {*adult.categorical, "age", "education-num", "race",
                                         "capital-gain", "capital-loss", "hours-per-week"}
    assert adult.feature_groups.count("workclass") == 7
    assert adult.continuous == ("age", "education-num", "capital-gain", "capital-loss",
                                "hours-per-week")
    assert len(bank.continuous) == 9 and len(set(bank.feature_groups)) == 9 + 10


@pytest.mark.parametrize("name", ["adult", "bank"])
def test_standardised_with_train_statistics_only(name, adult, bank, shared_root):
    data = adult if name == "adult" else bank
    table = load_table(name, shared_root, download=False)
    j = data.continuous_idx
    assert len(j) == len(data.continuous) > 0
    np.testing.assert_allclose(data.X_train[:, j].mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(data.X_train[:, j].std(0), 1.0, atol=1e-3)
    raw_tr = table.X[data.train_idx][:, j]
    np.testing.assert_allclose(data.mean[j], raw_tr.mean(0))
    assert not np.allclose(data.mean[j], table.X[:, j].mean(0), rtol=0, atol=1e-9)
    expected = (table.X[data.test_idx] - data.mean) / data.scale
    np.testing.assert_allclose(data.X_test, expected.astype(np.float32), rtol=1e-6, atol=1e-6)
    others = np.setdiff1d(np.arange(data.n_features), j)
    for part in ("X_train", "X_val", "X_test"):  # one-hot / 0-1 columns untouched
        assert np.isin(getattr(data, part)[:, others], (0.0, 1.0)).all()


def test_splits_deterministic_per_seed(adult, shared_root):
    again = load_real("adult", seed=0, root=shared_root, download=False)
    for part in ("X_train", "X_val", "X_test", "y_test", "c_val", "train_idx"):
        assert np.array_equal(getattr(adult, part), getattr(again, part))
    other = load_real("adult", seed=1, root=shared_root, download=False)
    assert not np.array_equal(adult.test_idx, other.test_idx)
    assert not np.array_equal(adult.X_train, other.X_train[: len(adult.X_train)])
    n = 45222
    idx = np.concatenate([adult.train_idx, adult.val_idx, adult.test_idx])
    assert np.array_equal(np.sort(idx), np.arange(n))
    assert abs(len(adult.test_idx) / n - 0.15) < 0.001 and abs(len(adult.val_idx) / n - 0.15) < 0.001
    for s in ("train", "val", "test"):  # stratified on (y, c)
        assert abs(getattr(adult, f"c_{s}").mean() - 0.675) < 0.005
        assert abs(getattr(adult, f"y_{s}").mean() - 0.248) < 0.005


def test_level_seen_only_outside_train_is_an_all_zero_train_column(shared_root):
    table = load_table("adult", shared_root, download=False)
    col = table.feature_names.index("native-country=Holand-Netherlands")  # one person
    (row,) = np.flatnonzero(table.X[:, col])
    for seed in range(50):
        data = load_real("adult", seed=seed, root=shared_root, download=False)
        if row not in data.train_idx:
            break
    else:
        pytest.fail("the row landed in train for 50 seeds")
    assert data.feature_names[col] == "native-country=Holand-Netherlands"
    assert data.feature_groups[col] == "native-country"
    assert (data.X_train[:, col] == 0).all()
    assert (data.X_val[:, col] == 1).sum() + (data.X_test[:, col] == 1).sum() == 1
    assert np.isfinite(data.X_test).all() and np.isfinite(data.X_val).all()


def _tiny_table(c):
    n = len(c)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    X.setflags(write=False)
    return RealTable(name="tiny", X=X, y=np.arange(n) % 2, c=np.asarray(c),
                     feature_names=("a", "b"), feature_groups=("a", "b"), protected="p",
                     categorical=(), continuous=("a", "b"), c_labels=("0", "1"),
                     y_labels=("0", "1"))


def test_protected_single_valued_in_a_split_is_an_error():
    c = np.zeros(40, dtype=np.int64)
    c[7] = 1  # one privileged row: two of the three splits see only c = 0
    with pytest.raises(DataError, match=r"single value \[0\] in the (train|val|test) split") as err:
        split_table(_tiny_table(c), seed=0)
    assert "another seed" in str(err.value) and "\n" not in str(err.value)
    ok = split_table(_tiny_table(np.arange(40) % 2), seed=0)
    assert ok.X_train.shape == (28, 2) and ok.X_test.shape == (6, 2)


def test_bad_fractions(adult, shared_root):
    with pytest.raises(ConfigError):
        load_real("adult", root=shared_root, val_frac=0.6, test_frac=0.5, download=False)


# ----------------------------------------------------------------------------- missing / corrupt

@pytest.mark.parametrize("name,fname", [("adult", "adult.data"), ("bank", real_raw.BANK_FILE)])
def test_missing_raw_file(tmp_path, name, fname):
    where = tmp_path / "aif360" / name / fname
    with pytest.raises(DataError) as err:
        load_real(name, root=tmp_path, download=False)
    msg = str(err.value)
    assert fname in msg and str(where) in msg and "FAUX_DATA_DIR" in msg and "\n" not in msg
    with pytest.raises(DataError, match="download .* failed") as err:  # download=True, offline
        load_real(name, root=tmp_path)
    assert str(where) in str(err.value) and "set FAUX_DATA_DIR or place the file there" in str(
        err.value)


def test_download_fills_the_data_root(tmp_path, shared_root, monkeypatch):
    """The downloader's output lands in the data root and then loads (network faked)."""
    src = shared_root / "aif360"

    def fake_fetch(url, dest, timeout=60.0):
        dest.parent.mkdir(parents=True, exist_ok=True)
        if url.endswith(".zip"):
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as zf:
                zf.writestr("__MACOSX/bank-additional/._bank-additional-full.csv", b"junk")
                zf.write(src / "bank" / real_raw.BANK_FILE, f"bank-additional/{real_raw.BANK_FILE}")
            dest.write_bytes(buf.getvalue())
        else:
            dest.write_bytes((src / "adult" / url.rsplit("/", 1)[-1]).read_bytes())

    monkeypatch.setattr(real, "_fetch", fake_fetch)
    bank = load_real("bank", root=tmp_path)
    assert (tmp_path / "aif360" / "bank" / real_raw.BANK_FILE).is_file()
    assert sum(len(getattr(bank, f"y_{s}")) for s in ("train", "val", "test")) == 30488
    assert real.is_present("adult", tmp_path) is False
    real._ensure_raw("adult", tmp_path, download=True)
    assert real.is_present("adult", tmp_path) is True


def _adult_root(tmp_path, shared_root, data_bytes=None):
    folder = tmp_path / "aif360" / "adult"
    folder.mkdir(parents=True)
    (folder / "adult.test").write_bytes((shared_root / "aif360/adult/adult.test").read_bytes())
    good = (shared_root / "aif360/adult/adult.data").read_bytes()
    (folder / "adult.data").write_bytes(good if data_bytes is None else data_bytes(good))
    return folder / "adult.data"


@pytest.mark.parametrize("corrupt,match", [
    (lambda good: np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes(),
     "corrupt"),
    (lambda good: good[: len(good) // 2], "truncated"),  # cut mid-line
    (lambda good: good.replace(b", State-gov,", b", State-gov, extra,", 1), "corrupt"),
    (lambda good: good.replace(b"39, State-gov", b"xx, State-gov", 1), "non-numeric"),
    (lambda good: b"", "corrupt"),
])
def test_corrupt_adult_file(tmp_path, shared_root, corrupt, match):
    path = _adult_root(tmp_path, shared_root, corrupt)
    with pytest.raises(DataError, match=match) as err:
        load_real("adult", root=tmp_path, download=False)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_corrupt_bank_file(tmp_path, shared_root):
    folder = tmp_path / "aif360" / "bank"
    folder.mkdir(parents=True)
    good = (shared_root / "aif360/bank" / real_raw.BANK_FILE).read_bytes()
    (folder / real_raw.BANK_FILE).write_bytes(good.replace(b'"age";', b"", 1))  # header lost a column
    with pytest.raises(DataError, match="missing age"):
        load_real("bank", root=tmp_path, download=False)
    (folder / real_raw.BANK_FILE).write_bytes(good[: len(good) - 40])  # last row cut short
    with pytest.raises(DataError, match="truncated"):
        load_real("bank", root=tmp_path, download=False)


# ----------------------------------------------------------------------------- SSL

AGES = ["less than 20", "20-30", "30-40", "40-50", "50-60", "60-70", "70-80"]


def _ssl_frame(n=240, seed=0, extra=True):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "SSL SCORE": rng.integers(150, 501, n),
        real_raw.SSL_AGE: rng.choice(AGES, n),
        **{col: rng.integers(0, 6, n) for col in real_raw.SSL_PREDICTORS[1:]},
        "SEX CODE CD": rng.choice(["M", "F"], n, p=[0.8, 0.2]),
        "RACE CODE CD": rng.choice(["BLK", "WHI", "WWH", "API"], n, p=[0.5, 0.3, 0.15, 0.05]),
    })
    df.loc[3, "PREDICTOR RAT GANG AFFILIATION"] = np.nan  # a missing value: row dropped
    if extra:  # the portal export has many more columns
        df.insert(0, "SUBJECT ID", np.arange(n))
        df["LATITUDE"] = rng.normal(41.8, 0.1, n)
    return df


def _write_ssl(root: Path, df: pd.DataFrame, name="Strategic_Subject_List.csv") -> Path:
    folder = root / "ssl"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            df.to_csv(fh, index=False)
    else:
        df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("fname", ["Strategic_Subject_List.csv", "chicago-ssl-clean.csv.gz"])
def test_ssl_fixture_loads(tmp_path, fname):
    df = _ssl_frame()
    _write_ssl(tmp_path, df, fname)
    keep = df[df["RACE CODE CD"].isin(["BLK", "WHI"])].dropna(subset=list(real_raw.SSL_COLUMNS))
    table = load_table("ssl", tmp_path)
    assert table.n_rows == len(keep) and table.protected == "RACE CODE CD"
    assert table.feature_names == (*real_raw.SSL_PREDICTORS, "SEX CODE CD=F", "SEX CODE CD=M")
    assert table.feature_groups[-2:] == ("SEX CODE CD", "SEX CODE CD")
    assert table.categorical == ("SEX CODE CD",) and table.continuous == real_raw.SSL_PREDICTORS
    np.testing.assert_array_equal(table.c, (keep["RACE CODE CD"] == "WHI").to_numpy())
    np.testing.assert_array_equal(table.y, (keep["SSL SCORE"] >= 250).to_numpy())
    age = {"less than 20": 10, "20-30": 20, "30-40": 30, "40-50": 40, "50-60": 50, "60-70": 60,
           "70-80": 70}
    np.testing.assert_array_equal(table.X[:, 0], keep[real_raw.SSL_AGE].map(age).to_numpy())
    np.testing.assert_array_equal(table.X[:, -1], (keep["SEX CODE CD"] == "M").to_numpy())
    data = load_real("ssl", seed=1, root=tmp_path)
    assert data.X_train.shape[1] == 10 and data.X_train.dtype == np.float32
    assert len(data.y_train) + len(data.y_val) + len(data.y_test) == len(keep)
    np.testing.assert_allclose(data.X_train[:, :8].mean(0), 0.0, atol=1e-5)


def test_ssl_numeric_age_column_is_accepted():
    assert real_raw.ssl_age("less than 20") == 10.0 and real_raw.ssl_age(" 20-30 ") == 20.0
    assert real_raw.ssl_age(35) == 35.0 and real_raw.ssl_age("80+") == 80.0 and np.isnan(real_raw.ssl_age(""))
    with pytest.raises(ValueError):
        real_raw.ssl_age("old")


def test_ssl_missing_columns_are_named(tmp_path):
    df = _ssl_frame().drop(columns=["PREDICTOR RAT UUW ARRESTS", "SEX CODE CD"])
    path = _write_ssl(tmp_path, df)
    with pytest.raises(DataError) as err:
        load_real("ssl", root=tmp_path)
    msg = str(err.value)
    assert "'PREDICTOR RAT UUW ARRESTS'" in msg and "'SEX CODE CD'" in msg and str(path) in msg
    assert "'SSL SCORE'" not in msg and "\n" not in msg


def test_ssl_missing_file_message(tmp_path):
    for setup in (lambda: None, lambda: (tmp_path / "ssl").mkdir()):
        setup()
        with pytest.raises(DataError) as err:
            load_real("ssl", root=tmp_path)
        msg = str(err.value)
        assert msg.startswith(f"no SSL CSV in {tmp_path / 'ssl'}")
        assert "4aki-r3np" in msg and "Chicago data portal" in msg


def test_ssl_bad_content(tmp_path):
    df = _ssl_frame()
    df.loc[df["RACE CODE CD"] == "BLK", real_raw.SSL_AGE] = "ancient"
    _write_ssl(tmp_path, df)
    with pytest.raises(DataError, match="unreadable age band 'ancient'"):
        load_table("ssl", tmp_path)
    df = _ssl_frame()
    df["SSL SCORE"] = df["SSL SCORE"].astype(str)
    df.loc[df["RACE CODE CD"] == "WHI", "SSL SCORE"] = "high"
    _write_ssl(tmp_path, df)
    with pytest.raises(DataError, match="'SSL SCORE' has non-numeric values such as 'high'"):
        load_table("ssl", tmp_path)
    _write_ssl(tmp_path, _ssl_frame(), "second.csv")
    with pytest.raises(DataError, match="several SSL CSVs"):
        load_table("ssl", tmp_path)


def test_ssl_without_black_or_white_rows(tmp_path):
    df = _ssl_frame()
    df["RACE CODE CD"] = "API"
    _write_ssl(tmp_path, df)
    with pytest.raises(DataError, match="no rows with RACE CODE CD BLK or WHI"):
        load_table("ssl", tmp_path)


def test_unknown_real_name():
    with pytest.raises(DataError, match="adult, bank, ssl"):
        load_real("compas")


_REAL_FETCH = real._fetch      # before the autouse fixture replaces it


def test_downloads_are_verified_against_the_recorded_sha256(tmp_path, monkeypatch):
    """Adult/Bank go through download_verified with the recorded sum and the short timeout."""
    from faux.data import download

    calls = []

    def fake_verified(url, dest, sha256, timeout=None, max_seconds=None):
        calls.append((url, Path(dest).name, sha256, timeout))
        raise download.DownloadError(f"download of {url} failed (offline)", "offline")

    monkeypatch.setattr(real, "download_verified", fake_verified)
    monkeypatch.setattr(real, "_fetch", _REAL_FETCH)      # the real seam, network faked below it
    with pytest.raises(DataError, match="adult.data.*download.*failed"):
        real._ensure_raw("adult", tmp_path, download=True)
    assert calls == [(real.ADULT_URLS["adult.data"], "adult.data",
                      download.RECORDED_SHA256["adult.data"], None)]
    assert download.DEFAULT_TIMEOUT == (10.0, 30.0)


def test_bank_archive_with_other_bytes_is_refused(tmp_path, shared_root, monkeypatch):
    """A zip whose CSV differs from the recorded one (one byte): refused, nothing written."""
    good = (shared_root / "aif360" / "bank" / real_raw.BANK_FILE).read_bytes()
    bad = good.replace(b"housemaid", b"housemaiD", 1)
    assert bad != good

    def fake_fetch(url, dest, timeout=None):
        with zipfile.ZipFile(dest, "w") as zf:
            zf.writestr(f"bank-additional/{real_raw.BANK_FILE}", bad)

    monkeypatch.setattr(real, "_fetch", fake_fetch)
    with pytest.raises(DataError, match="sha256") as err:
        real._ensure_raw("bank", tmp_path, download=True)
    assert "\n" not in str(err.value)
    folder = tmp_path / "aif360" / "bank"
    assert not any(folder.iterdir()) if folder.exists() else True
