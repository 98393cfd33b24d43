"""PMLB loader: the paper's continuous-feature counts, and its errors (never touching the network)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

import faux.data.pmlb_data as pm
from faux.errors import DataError

SHARED = Path(os.environ.get("FAUX_DATA_DIR")
              or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture(scope="module")
def shared_root():
    if not (SHARED / "pmlb" / "magic" / "magic.tsv.gz").is_file():
        pytest.skip(f"PMLB files not under {SHARED}; set FAUX_DATA_DIR")
    return SHARED


@pytest.fixture
def no_network(monkeypatch):
    """Any download attempt fails the test."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a test tried to download")

    monkeypatch.setattr(pm, "_download", forbidden)


# continuous features (the paper's Table 2 / A.7.3 counts), rows, positives
EXPECTED = {"backache": (6, 180, 25), "credit_g": (7, 1000, 700), "australian": (6, 690, 307),
            "wdbc": (30, 569, 212), "magic": (10, 19020, 6688), "credit_a": (4, 690, 383)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_continuous_feature_counts(name, shared_root, no_network):
    n_cont, n_rows, n_pos = EXPECTED[name]
    data = pm.load_pmlb(name, root=shared_root, download=False)
    assert data.n_features == n_cont == len(data.feature_names)
    assert data.X.shape == (n_rows, n_cont) and data.X.dtype == np.float64
    assert np.isfinite(data.X).all()
    assert data.y.dtype == np.int64 and set(np.unique(data.y)) == {0, 1}
    assert int(data.y.sum()) == n_pos
    assert "target" not in data.feature_names


def test_paper_datasets_are_known():
    assert set(pm.PAPER_PMLB) <= set(pm.KNOWN_PMLB)
    assert "credit_g" in pm.PAPER_PMLB and "credit-g" not in pm.KNOWN_PMLB


def test_unknown_name_is_rejected_without_network(tmp_path, no_network):
    with pytest.raises(DataError, match="unknown dataset 'nosuch'") as err:
        pm.load_pmlb("nosuch", root=tmp_path)  # download=True: still no network
    assert "magic" in str(err.value) and "\n" not in str(err.value)
    for bad in ("", "a/b", None):
        with pytest.raises(DataError, match="unknown dataset"):
            pm.load_pmlb(bad, root=tmp_path)


def test_missing_file_names_path_and_env(tmp_path, no_network):
    with pytest.raises(DataError) as err:
        pm.load_pmlb("magic", root=tmp_path, download=False)
    msg = str(err.value)
    assert str(tmp_path / "pmlb" / "magic" / "magic.tsv.gz") in msg
    assert "FAUX_DATA_DIR" in msg and "\n" not in msg


class _FakeGet:
    """Stands in for ``requests.get``: records URLs; serves ``payloads[remote name]`` or fails."""

    def __init__(self, payloads):
        self.payloads, self.urls = payloads, []

    def __call__(self, url, timeout=None):
        import requests

        assert timeout is not None  # a download must never hang
        self.urls.append(url)
        remote = url.rsplit("/", 2)[-2]
        if remote not in self.payloads:
            raise requests.ConnectionError("offline")
        return type("Resp", (), {"content": self.payloads[remote],
                                 "raise_for_status": lambda self: None})()


def test_failed_download_is_a_one_line_data_error(tmp_path, monkeypatch):
    import requests

    fake = _FakeGet({})
    monkeypatch.setattr(requests, "get", fake)
    with pytest.raises(DataError) as err:
        pm.load_pmlb("wdbc", root=tmp_path)
    msg = str(err.value)
    assert [u.rsplit("/", 2)[-2] for u in fake.urls] == ["wdbc", "_deprecated_wdbc"]
    assert str(tmp_path / "pmlb" / "wdbc" / "wdbc.tsv.gz") in msg
    assert "FAUX_DATA_DIR" in msg and "\n" not in msg
    assert not (tmp_path / "pmlb" / "wdbc" / "wdbc.tsv.gz").exists()


def test_download_falls_back_to_the_deprecated_name(tmp_path, monkeypatch):
    import requests

    table = b"f1\tf2\ttarget\n0.5\t1\t0\n1.5\t2\t1\n2.5\t3\t1\n"
    fake = _FakeGet({"_deprecated_wdbc": gzip.compress(table)})
    monkeypatch.setattr(requests, "get", fake)
    data = pm.load_pmlb("wdbc", root=tmp_path)
    assert (tmp_path / "pmlb" / "wdbc" / "wdbc.tsv.gz").is_file()
    assert data.feature_names == ("f1",) and data.y.tolist() == [0, 1, 1]
    fake.urls.clear()
    pm.load_pmlb("wdbc", root=tmp_path)  # now cached locally: no second download
    assert fake.urls == []


def _put(root: Path, name: str, data: bytes) -> Path:
    path = root / "pmlb" / name / f"{name}.tsv.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def test_garbage_bytes_are_corrupt(tmp_path, no_network):
    rng = np.random.default_rng(0)
    path = _put(tmp_path, "magic", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(DataError, match="corrupt") as err:
        pm.load_pmlb("magic", root=tmp_path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_truncated_gzip_is_corrupt(tmp_path, shared_root, no_network):
    good = (shared_root / "pmlb" / "magic" / "magic.tsv.gz").read_bytes()
    _put(tmp_path, "magic", good[: len(good) // 2])
    with pytest.raises(DataError, match="corrupt or truncated"):
        pm.load_pmlb("magic", root=tmp_path)


def test_table_without_target_is_rejected(tmp_path, no_network):
    _put(tmp_path, "magic", gzip.compress(b"a\tb\n1.0\t2.0\n3.0\t4.0\n"))
    with pytest.raises(DataError, match="no 'target' column"):
        pm.load_pmlb("magic", root=tmp_path)


def test_non_binary_target_is_rejected(tmp_path, no_network):
    _put(tmp_path, "magic", gzip.compress(b"a\ttarget\n1.0\t0\n3.0\t1\n2.5\t2\n"))
    with pytest.raises(DataError, match="3 classes"):
        pm.load_pmlb("magic", root=tmp_path)
