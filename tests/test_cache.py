import logging
import multiprocessing as mp
import pickle

import pytest
import torch

from faux.harness.cache import Cache, cache_root, file_checksum, key_of, torch_dumps, torch_loads


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
    assert sum("corrupt" in r.getMessage() for r in caplog.records) == 1  # said once
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


# --- reliability (issue 15): entries are data, not code; one build per key; no stale keys ---

class _Boom:
    """Unpickling this calls os.system, which would create the marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.marker}",))


def _hostile_payload(fmt: str, marker) -> bytes:
    import io
    if fmt == "pickle":
        return pickle.dumps({"state_dict": _Boom(marker)})
    buf = io.BytesIO()
    torch.save({"state_dict": _Boom(marker)}, buf)  # torch's zip format, pickle inside
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["pickle", "torch"])
def test_hostile_entry_with_valid_checksum_is_refused_not_executed(tmp_path, caplog, fmt):
    import hashlib
    import json
    marker = tmp_path / "pwned"
    cache = Cache(tmp_path / "cache")
    key = {"k": "victim"}
    good = {"w": torch.ones(3)}
    cache.get_or_build("model", key, lambda: good)
    path = cache.path("model", key)
    payload = _hostile_payload(fmt, marker)
    header = {"sha256": hashlib.sha256(payload).hexdigest(), "length": len(payload),
              "key": {"k": "victim"}}
    path.write_bytes(json.dumps(header).encode() + b"\n" + payload)
    # the payload is live: plain pickle would run it
    assert not marker.exists()
    calls = []
    with caplog.at_level(logging.WARNING, logger="faux.cache"):
        out = Cache(tmp_path / "cache").get_or_build("model", key, _counting_build(calls, good))
    assert not marker.exists()  # never executed
    assert calls == [1] and torch.equal(out["w"], good["w"])  # refused, so rebuilt
    assert any("not plain data" in r.getMessage() for r in caplog.records)


def test_hostile_payload_is_live_under_plain_pickle(tmp_path):
    """Control for the test above: the same payload does run code when fully unpickled."""
    marker = tmp_path / "pwned"
    pickle.loads(_hostile_payload("pickle", marker))
    assert marker.exists()


def test_torch_dumps_refuses_code_and_converts_numpy(tmp_path):
    import numpy as np
    from sklearn.mixture import GaussianMixture

    for bad in (object(), GaussianMixture(), torch.nn.Linear(2, 2), {"x": [1, {2}]},
                np.array(["a"], dtype=object), {("tuple", "key"): 1}):
        with pytest.raises(TypeError, match="plain data|not a str or int"):
            torch_dumps(bad)
    info = {"loss": np.float32(0.5), "epochs": np.int64(3), "hist": [np.float64(1.5)],
            "arr": np.arange(4.0), "shape": torch.Size([2, 3]), "ok": True, "none": None}
    back = torch_loads(torch_dumps(info))
    assert type(back["loss"]) is float and back["loss"] == 0.5
    assert type(back["epochs"]) is int and back["hist"] == [1.5]
    assert torch.equal(back["arr"], torch.arange(4.0, dtype=torch.float64))
    assert back["shape"] == (2, 3) and back["ok"] is True and back["none"] is None


def test_default_serialisation_is_the_safe_pair(tmp_path):
    import numpy as np
    cache = Cache(tmp_path)
    out = cache.get_or_build("x", {"a": 1}, lambda: {"v": np.ones(2), "n": np.float64(2.0)})
    # a fresh build comes back as it loads: arrays as tensors, numpy scalars as floats
    assert torch.equal(out["v"], torch.ones(2, dtype=torch.float64)) and out["n"] == 2.0
    with pytest.raises(TypeError):
        cache.get_or_build("x", {"a": 2}, lambda: {"v": object()})
    assert not cache.path("x", {"a": 2}).exists()
    assert not hasattr(__import__("faux.harness.cache").harness.cache, "pickle_dumps")


def _slow_counted_build(root, counter, out):
    import time as _t
    cache = Cache(root)

    def build():
        with open(counter, "a") as f:
            f.write("built\n")
        _t.sleep(1.0)
        return {"v": torch.arange(3)}
    val = cache.get_or_build("target", {"same": "key"}, build)
    with open(out, "a") as f:
        f.write(f"{val['v'].tolist()} {cache.builds} {cache.hits}\n")


def test_two_processes_build_one_key_once(tmp_path):
    ctx = mp.get_context("fork")
    counter, out = tmp_path / "counter", tmp_path / "out"
    procs = [ctx.Process(target=_slow_counted_build, args=(tmp_path / "c", counter, out))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert counter.read_text().splitlines() == ["built"]
    lines = sorted(out.read_text().splitlines())
    assert lines == ["[0, 1, 2] 0 1", "[0, 1, 2] 1 0"]  # one built, the other waited and hit


def _locked_section(root, log_file):
    import time as _t
    with Cache(root).lock("shared-build"):
        with open(log_file, "a") as f:
            f.write("enter\n")
            f.flush()
            _t.sleep(0.5)
            f.write("exit\n")


def test_lock_excludes_other_processes(tmp_path):
    ctx = mp.get_context("fork")
    log_file = tmp_path / "log"
    procs = [ctx.Process(target=_locked_section, args=(tmp_path, log_file)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert log_file.read_text().splitlines() == ["enter", "exit"] * 3  # never interleaved
    cache = Cache(tmp_path)
    assert cache.lock_path("a/../../b").parent == tmp_path / "locks"  # no escaping the folder
    with pytest.raises(ValueError):
        cache.lock_path(".hidden")
    with cache.lock("held") as held:
        assert held is True
        ctx.Process(target=_try_lock, args=(tmp_path, tmp_path / "nb")).start()
        _wait_for(tmp_path / "nb")
    assert (tmp_path / "nb").read_text() == "False"  # non-blocking attempt while held


def _try_lock(root, out):
    with Cache(root).lock("held", blocking=False) as held:
        out.write_text(str(held))


def _wait_for(path, timeout=30.0):
    import time as _t
    t0 = _t.time()
    while not path.exists() and _t.time() - t0 < timeout:
        _t.sleep(0.05)


def test_stale_tmp_files_are_removed_on_open(tmp_path):
    import os
    import time as _t
    folder = tmp_path / "target"
    folder.mkdir(parents=True)
    old, fresh = folder / ".abc.x1.tmp", folder / ".abd.x2.tmp"
    entry = folder / "abc.bin"
    for f in (old, fresh, entry):
        f.write_bytes(b"partial")
    week_ago = _t.time() - 7 * 24 * 3600
    os.utime(old, (week_ago, week_ago))
    os.utime(entry, (week_ago, week_ago))
    Cache(tmp_path)
    assert not old.exists()
    assert fresh.exists() and entry.exists()  # a writer may still own it; entries stay
    Cache(tmp_path, stale_tmp_hours=0)
    assert not fresh.exists() and entry.exists()


def test_code_version_follows_the_source(tmp_path, monkeypatch):
    import os
    import sys

    from faux.harness.cache import code_version
    mod = tmp_path / "faux_cv_probe.py"
    mod.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    v1 = code_version("faux_cv_probe")
    assert v1 == code_version("faux_cv_probe") and len(v1) == 16
    mod.write_text("X = 2\n")
    os.utime(mod, ns=(1, 1))  # a different mtime too
    v2 = code_version("faux_cv_probe")
    assert v2 != v1
    assert code_version("faux.synth.cvae", "faux.synth.encoding") == \
        code_version("faux.synth.encoding", "faux.synth.cvae")
    assert code_version("faux.synth.cvae") != code_version("faux.synth.encoding")
    with pytest.raises(ValueError):
        code_version("faux_no_such_module_xyz")
    sys.modules.pop("faux_cv_probe", None)


def test_data_checksum_sees_one_changed_row(tmp_path):
    from faux.harness.cache import data_checksum
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    rows = "x\ty\n1.0\t0\n2.0\t1\n"
    (a / "d.tsv").write_text(rows)
    (b / "d.tsv").write_text(rows)
    assert data_checksum(a / "d.tsv") == data_checksum([b / "d.tsv"])  # content, not folder
    assert data_checksum(a) == data_checksum(a / "d.tsv")
    (b / "d.tsv").write_text(rows.replace("2.0", "2.5"))
    assert data_checksum(b / "d.tsv") != data_checksum(a / "d.tsv")
    with pytest.raises(FileNotFoundError):
        data_checksum(tmp_path / "missing.tsv")
