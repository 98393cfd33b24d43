"""The file primitives (faux.harness.files): a file's SHA-256 and the atomic writes that the
harness and the audit share."""

import errno
import hashlib
import json
import os
import stat

import pytest

from faux.harness import files
from faux.harness.disk import DiskFull


def test_file_sha256_is_the_hash_of_the_bytes_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "CHUNK", 7)          # many chunks and a short last one
    data = bytes(range(256)) * 3 + b"tail"
    (tmp_path / "f").write_bytes(data)
    assert files.file_sha256(tmp_path / "f") == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert files.file_sha256(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()


def test_the_file_shas_of_the_package_are_one_function(tmp_path):
    from faux.audit.loaders import models
    from faux.audit.sources import provenance
    from faux.data import download
    from faux.harness.cache import file_checksum

    (tmp_path / "f").write_bytes(b"abc")
    want = hashlib.sha256(b"abc").hexdigest()
    assert provenance.file_sha256 is files.file_sha256
    assert download.sha256_of is files.file_sha256
    assert models.file_sha256 is files.file_sha256
    assert file_checksum(tmp_path / "f") == want


def test_write_atomic_replaces_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    files.write_json_atomic(path, {"a": [1, 2]}, sync_dir=True)
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    files.write_text_atomic(path, "text")
    files.write_atomic(path, b"bytes", mode=0o600)
    assert path.read_bytes() == b"bytes"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_the_temporary_file_is_named_as_the_caller_asks(tmp_path, monkeypatch):
    seen = []
    real = os.replace

    def replace(src, dst):
        seen.append(os.path.basename(src))
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    files.write_atomic(tmp_path / "a.bin", b"x")
    files.write_atomic(tmp_path / "b.json", b"x", prefix="b.json.", suffix=".part")
    assert seen[0].startswith(".a.bin.") and seen[0].endswith(".tmp")
    assert seen[1].startswith("b.json.") and seen[1].endswith(".part")


@pytest.mark.parametrize("code,kind", [(errno.ENOSPC, DiskFull), (errno.EACCES, PermissionError)])
def test_a_failed_write_removes_its_temporary_and_names_a_full_disk(tmp_path, monkeypatch,
                                                                     code, kind):
    path = tmp_path / "r.json"
    path.write_text("old")

    def replace(src, dst):
        raise OSError(code, os.strerror(code), str(src))

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError) as exc:
        files.write_json_atomic(path, {"new": 1})
    assert isinstance(exc.value, kind) and exc.value.errno == code
    if kind is DiskFull:
        assert exc.value.path == path                # the target, not the temporary file
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
