import logging
import multiprocessing as mp
import pickle

import pytest
import torch

from faux.cache import Cache, cache_root, file_checksum, key_of, torch_dumps, torch_loads


def _counting_build(counter, value):
    def build():
        counter.append(1)
        return value
    return build


def test_key_is_canonical_and_sensitive():
    a = key_of({"x": 1, "y": [1, 2], "z": {"b": 2.0, "a": "s"}})
    b = key_of({"z": {"a": "s", "b": 2.0}, "y": (1, 2), "x": 1})
    assert a == b
    assert a != key_of({"x": 2, "y": [1, 2], "z": {"b": 2.0, "a": "s"}})
    with pytest.raises(TypeError):
        key_of({"x": object()})


def test_root_from_env_and_arg(tmp_path, monkeypatch):
    monkeypatch.setenv("FAUX_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("FAUX_CACHE_DIR")
    assert str(cache_root()) == "outputs/cache"


def test_second_call_is_a_logged_hit_and_builds_nothing(tmp_path, caplog):
    calls = []
    c1 = Cache(tmp_path)
    assert c1.get_or_build("thing", {"a": 1}, _counting_build(calls, {"v": 3})) == {"v": 3}
    c2 = Cache(tmp_path)
    with caplog.at_level(logging.INFO, logger="faux.cache"):
        assert c2.get_or_build("thing", {"a": 1}, _counting_build(calls, {"v": 99})) == {"v": 3}
    assert len(calls) == 1 and c2.hits == 1 and c2.builds == 0
    assert any("cache hit" in r.getMessage() for r in caplog.records)
    # another key builds
    assert c2.get_or_build("thing", {"a": 2}, _counting_build(calls, 5)) == 5
    assert len(calls) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "bad_payload"])
def test_corrupt_entry_is_detected_and_rebuilt(tmp_path, caplog, damage):
    cache = Cache(tmp_path)
    sd = {"w": torch.arange(6.0)}
    cache.get_or_build("model", {"k": 1}, lambda: sd, dumps=torch_dumps, loads=torch_loads)
    path = cache.path("model", {"k": 1})
    raw = path.read_bytes()
    if damage == "flip":
        raw = raw[:-3] + bytes([raw[-3] ^ 0xFF]) + raw[-2:]
    elif damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "garbage":
        raw = b"not a cache entry at all"
    else:  # consistent header but a payload the loader cannot read
        import hashlib
        import json
        payload = b"\x00garbage"
        raw = json.dumps({"sha256": hashlib.sha256(payload).hexdigest(),
                          "length": len(payload), "key": {}}).encode() + b"\n" + payload
    path.write_bytes(raw)
    calls = []
    with caplog.at_level(logging.WARNING, logger="faux.cache"):
        out = cache.get_or_build("model", {"k": 1}, _counting_build(calls, sd),
                                 dumps=torch_dumps, loads=torch_loads)
    assert calls == [1]
    assert torch.equal(out["w"], sd["w"])
    assert any("corrupt" in r.getMessage() for r in caplog.records)
    # the rebuilt entry is good again
    again = Cache(tmp_path)
    again.get_or_build("model", {"k": 1}, lambda: pytest.fail("rebuilt twice"),
                       dumps=torch_dumps, loads=torch_loads)
    assert again.hits == 1


def _writer(root, i, n_bytes):
    cache = Cache(root)
    cache._write(cache.path("big", {"same": "key"}), {"same": "key"}, bytes([i]) * n_bytes)


def test_concurrent_writers_leave_one_complete_entry(tmp_path):
    ctx = mp.get_context("fork")  # writers only touch files
    procs = [ctx.Process(target=_writer, args=(tmp_path, i, 2_000_000)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = Cache(tmp_path)
    out = cache.get_or_build("big", {"same": "key"}, lambda: pytest.fail("entry was corrupt"),
                             loads=lambda b: b)
    assert len(out) == 2_000_000 and len(set(out)) == 1  # one writer's bytes, whole
    leftovers = [p for p in (tmp_path / "big").iterdir() if p.suffix == ".tmp"]
    assert leftovers == []


def test_failed_build_writes_nothing(tmp_path):
    cache = Cache(tmp_path)

    def boom():
        raise RuntimeError("no")
    with pytest.raises(RuntimeError):
        cache.get_or_build("x", {"a": 1}, boom)
    assert not cache.path("x", {"a": 1}).exists()


def test_file_checksum_changes_with_content(tmp_path):
    f = tmp_path / "d.bin"
    f.write_bytes(b"abc")
    a = file_checksum(f)
    f.write_bytes(b"abcd")
    assert file_checksum(f) != a
    assert len(a) == 64
    assert pickle.loads(pickle.dumps(a)) == a
