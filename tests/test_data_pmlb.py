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


@pytest.fixture
def http_server():
    """A local HTTP server on 127.0.0.1: serves ``files[path]`` (else 404), records paths."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    files: dict[str, bytes] = {}
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", files, seen
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def silent_server():
    """A TCP port on 127.0.0.1 that accepts connections (kernel backlog) and never answers."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


def test_recorded_checksums_match_the_shared_files(shared_root):
    from faux.data.download import sha256_of

    assert set(pm.PMLB_SHA256) == set(pm.KNOWN_PMLB)
    for name, digest in pm.PMLB_SHA256.items():
        assert sha256_of(pm.pmlb_path(name, shared_root)) == digest, name


def test_failed_download_is_a_one_line_data_error(tmp_path, monkeypatch, http_server):
    url, _files, seen = http_server
    monkeypatch.setattr(pm, "PMLB_URL", url)
    with pytest.raises(DataError) as err:
        pm.load_pmlb("wdbc", root=tmp_path)
    msg = str(err.value)
    assert seen == ["/wdbc/wdbc.tsv.gz", "/_deprecated_wdbc/_deprecated_wdbc.tsv.gz"]
    assert "404" in msg and str(tmp_path / "pmlb" / "wdbc" / "wdbc.tsv.gz") in msg
    assert "FAUX_DATA_DIR" in msg and "\n" not in msg
    assert not (tmp_path / "pmlb" / "wdbc").exists() or \
        list((tmp_path / "pmlb" / "wdbc").iterdir()) == []


def test_download_falls_back_to_the_deprecated_name(tmp_path, monkeypatch, http_server,
                                                    shared_root):
    url, files, seen = http_server
    good = pm.pmlb_path("wdbc", shared_root).read_bytes()
    files["/_deprecated_wdbc/_deprecated_wdbc.tsv.gz"] = good
    monkeypatch.setattr(pm, "PMLB_URL", url)
    data = pm.load_pmlb("wdbc", root=tmp_path)
    assert pm.pmlb_path("wdbc", tmp_path).read_bytes() == good  # raw bytes, verified
    assert data.n_features == 30 and data.n_rows == 569
    seen.clear()
    pm.load_pmlb("wdbc", root=tmp_path)  # now local: no second download
    assert seen == []


def test_wrong_bytes_are_refused(tmp_path, monkeypatch, http_server, shared_root):
    from faux.data.download import ChecksumError

    url, files, seen = http_server
    good = pm.pmlb_path("wdbc", shared_root).read_bytes()
    table = gzip.decompress(good).replace(b"\t0\n", b"\t1\n", 1)  # one label flipped
    files["/wdbc/wdbc.tsv.gz"] = gzip.compress(table)
    files["/_deprecated_wdbc/_deprecated_wdbc.tsv.gz"] = good
    monkeypatch.setattr(pm, "PMLB_URL", url)
    with pytest.raises(ChecksumError, match="sha256") as err:
        pm.load_pmlb("wdbc", root=tmp_path)
    assert "\n" not in str(err.value) and "refused" in str(err.value)
    assert seen == ["/wdbc/wdbc.tsv.gz"]  # a mismatch is final, not retried elsewhere
    folder = tmp_path / "pmlb" / "wdbc"
    assert not pm.pmlb_path("wdbc", tmp_path).exists() and list(folder.iterdir()) == []


def test_silent_server_costs_a_bounded_time(tmp_path, monkeypatch, silent_server):
    """A server that never answers costs two tries, each bounded by the (connect, read)
    timeout: every request is made with it, and there are no more tries."""
    import requests

    import faux.data.download as dl

    assert dl.DEFAULT_TIMEOUT == (10.0, 30.0)  # connect, read: not the old 60-120 s
    monkeypatch.setattr(dl, "DEFAULT_TIMEOUT", (1.0, 1.0))
    monkeypatch.setattr(pm, "PMLB_URL", silent_server)
    calls, get = [], requests.get

    def recorded(url, **kw):
        calls.append(kw.get("timeout"))
        return get(url, **kw)

    monkeypatch.setattr(requests, "get", recorded)
    with pytest.raises(DataError, match="ReadTimeout|timed out") as err:
        pm.load_pmlb("backache", root=tmp_path)
    assert calls == [(1.0, 1.0)] * 2
    assert "\n" not in str(err.value)
    assert not pm.pmlb_path("backache", tmp_path).exists()


def test_download_verified_without_a_record_logs_and_keeps(tmp_path, http_server, caplog):
    import hashlib
    import logging

    from faux.data.download import download_verified

    url, files, _ = http_server
    files["/x.bin"] = b"payload"
    with caplog.at_level(logging.WARNING, logger="faux.data"):
        out = download_verified(f"{url}/x.bin", tmp_path / "x.bin", None, timeout=(2, 2))
    assert out.read_bytes() == b"payload"
    assert any("unverified" in r.getMessage() for r in caplog.records)
    digest = hashlib.sha256(b"payload").hexdigest()
    out2 = download_verified(f"{url}/x.bin", tmp_path / "y.bin", digest.upper(), timeout=(2, 2))
    assert out2.read_bytes() == b"payload"


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


def test_recorded_real_data_checksums_and_verify_file(tmp_path):
    from faux.data.download import RECORDED_SHA256, ChecksumError, verify_file

    aif = SHARED / "aif360"
    if not (aif / "adult" / "adult.data").is_file():
        pytest.skip(f"real data not under {aif}")
    for folder in ("adult", "bank"):
        for f in (aif / folder).iterdir():
            assert verify_file(f, RECORDED_SHA256[f.name]) == f
    bad = tmp_path / "adult.data"
    bad.write_bytes((aif / "adult" / "adult.data").read_bytes()[:-10])
    with pytest.raises(ChecksumError, match="replace it with a good copy"):
        verify_file(bad, RECORDED_SHA256["adult.data"])
