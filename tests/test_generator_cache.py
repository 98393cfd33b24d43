"""Generators in the cache (issue 15): keyed by data checksum and code, stored as plain data,
rebuilt when a data row changes, and the same from two cold builds."""

import gzip
import shutil

import pytest
import torch

from faux.harness.cache import Cache, torch_loads
from faux.synth.dataset_generator import GENERATOR_VERSION, build_dataset_generator

TINY = {"epochs": 2, "max_steps": 20, "hidden": 16, "depth": 1}


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A private FAUX_DATA_DIR holding a copy of backache."""
    from faux.paths import data_root

    src = data_root() / "pmlb" / "backache"
    dst = tmp_path / "data" / "pmlb" / "backache"
    shutil.copytree(src, dst)
    monkeypatch.setenv("FAUX_DATA_DIR", str(tmp_path / "data"))
    return dst / "backache.tsv.gz"


def _change_one_row(path):
    lines = gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)
    cells = lines[1].rstrip("\n").split("\t")
    cells[0] = str(float(cells[0]) + 1.0)  # one value of the first data row
    lines[1] = "\t".join(cells) + "\n"
    path.write_bytes(gzip.compress("".join(lines).encode()))


def test_changed_data_row_changes_the_key_and_rebuilds(data_copy, tmp_path):
    cache = Cache(tmp_path / "cache")
    g1 = build_dataset_generator("backache", TINY, cache=cache)
    assert cache.builds == 1
    build_dataset_generator("backache", TINY, cache=cache)
    assert (cache.builds, cache.hits) == (1, 1)
    assert g1.key["code"] == GENERATOR_VERSION and len(g1.key["data_sha256"]) == 64
    _change_one_row(data_copy)
    g2 = build_dataset_generator("backache", TINY, cache=cache)
    assert g2.key["data_sha256"] != g1.key["data_sha256"]
    assert cache.builds == 2  # rebuilt on the new data, not served from the old entry
    assert cache.path("generator", g2.key) != cache.path("generator", g1.key)


def test_generator_entry_is_plain_data(tmp_path):
    cache = Cache(tmp_path)
    gen = build_dataset_generator("backache", TINY, cache=cache)
    raw = cache.path("generator", gen.key).read_bytes()
    bundle = torch_loads(raw.split(b"\n", 1)[1])  # weights_only=True: fails on any object
    assert set(bundle) == {"encoder", "cvae", "p_label", "info"}
    assert all(isinstance(g["means"], torch.Tensor) for g in bundle["encoder"]["gmms"])
    # the loaded generator encodes and decodes exactly like the freshly trained one
    again = build_dataset_generator("backache", TINY, cache=Cache(tmp_path))
    x1, _ = gen.sample(50, seed=3)
    x2, _ = again.sample(50, seed=3)
    assert torch.equal(x1, x2)
    xr1, _ = gen.real_encoded()
    xr2, _ = again.real_encoded()
    assert (xr1 == xr2).all()


_COLD_BUILD = """
import sys, torch
from faux.harness.cache import Cache
from faux.synth.sampler import build_dataset_generator
cfg = {"epochs": 2, "max_steps": 60, "hidden": 16, "depth": 1, "n_components": 4}
g = build_dataset_generator("backache", cfg, cache=Cache(sys.argv[1]))
x, y = g.sample(200, seed=7)
gmm = [torch.from_numpy(m.means_) for m in g.encoder.gmms_]
torch.save({"sd": g.cvae.state_dict(), "x": x, "y": y, "gmm": gmm}, sys.argv[2])
"""


def test_two_cold_builds_are_bit_identical(tmp_path):
    """Finding 6: the same generator built twice from empty caches, here and in a process
    with another hash seed and thread count, gives the same weights, mixtures and samples."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONHASHSEED": "12345", "OMP_NUM_THREADS": "2"}
    out = tmp_path / "other.pt"
    r = subprocess.run([sys.executable, "-c", _COLD_BUILD, str(tmp_path / "cache_b"), str(out)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    b = torch.load(out, weights_only=True)
    cfg = {**TINY, "max_steps": 60, "n_components": 4}
    g = build_dataset_generator("backache", cfg, cache=Cache(tmp_path / "cache_a"))
    x, y = g.sample(200, seed=7)
    sd = g.cvae.state_dict()
    assert all(torch.equal(sd[k], b["sd"][k]) for k in sd)
    assert all(torch.equal(torch.from_numpy(m.means_), n) for m, n in zip(g.encoder.gmms_, b["gmm"]))
    assert torch.equal(x, b["x"]) and torch.equal(y, b["y"])


def test_column_options_are_checked_before_training():
    from faux.errors import ConfigError
    from faux.synth.generator_settings import check_synthetic_options

    ok = check_synthetic_options(xc="australian", xy="credit_g", bias=1, fusion="outer")
    assert ok["bias"] == 1.0 and set(ok["generator_cfgs"]) == {"australian", "credit_g"}
    assert ok["generator_cfgs"]["credit_g"]["hidden"] == 874
    good = {"xc": "magic", "xy": "backache", "bias": 0.5, "fusion": "concat"}
    for bad, match in [({"fusion": "sum"}, "unknown fusion 'sum'"),
                       ({"bias": "abc"}, "bias must be a number"),
                       ({"bias": 1.5}, "bias must be a number"),
                       ({"bias": True}, "bias must be a number"),
                       ({"xc": "nosuch_dataset"}, "unknown dataset 'nosuch_dataset'"),
                       ({"decoding": "argmax"}, "decoding must be one of"),
                       ({"tau": 0}, "tau must be"),
                       ({"dxdc_at": "end"}, "dxdc_at"),
                       ({"generator_cfgs": {"wdbc": {}}}, "not in the pair"),
                       ({"generator_cfgs": {"magic": {"hiden": 3}}}, "unknown generator option"),
                       ({"generator_cfgs": {"magic": {"hidden": 0}}}, "hidden"),
                       ({"generator_cfgs": {"magic": {"depth": 1.5}}}, "depth")]:
        with pytest.raises(ConfigError, match=match) as err:
            check_synthetic_options(**{**good, **bad})
        assert "\n" not in str(err.value)


def test_cvae_trains_on_one_cpu_thread_whatever_the_setting(monkeypatch, tmp_path):
    """A cached generator must not depend on the machine that built it: train_cvae asks for
    the CPU explicitly (accelerator="auto" would pick a GPU where one exists) and one torch
    thread (2 threads gave another australian CVAE), and restores the caller's threads."""
    import faux.models.training as training

    seen = []
    real_fit = training.fit

    def spy(*args, **kwargs):
        seen.append((kwargs.get("accelerator", "auto"), torch.get_num_threads()))
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(training, "fit", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        build_dataset_generator("backache", TINY, cache=Cache(tmp_path))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert seen == [("cpu", 1)]


def test_generator_key_records_the_cpu_kernels():
    """AVX2 and AVX-512 kernels round differently (a CVAE trained under one is not the one
    trained under the other), so a shared cache keeps them apart."""
    import os
    import subprocess
    import sys

    import faux.kernels
    from faux.kernels import cpu_kernels
    from faux.synth.dataset_generator import generator_cache_key
    from faux.synth.generator_settings import generator_config

    key = generator_cache_key("backache", generator_config("backache"))
    assert key["cpu"] == cpu_kernels() and key["cpu"].startswith(
        torch.backends.cpu.get_cpu_capability())
    # the key's function is faux.kernels' (the other process loads only that module, not the
    # whole sampler with Lightning: seconds less, the same function)
    assert cpu_kernels is faux.kernels.cpu_kernels
    code = "from faux.kernels import cpu_kernels; print(cpu_kernels())"
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "AVX2",
           "ONEDNN_MAX_CPU_ISA": "AVX2"}
    other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=120).stdout.strip()
    assert other == "DEFAULT/mkl_cbwr=AVX2/onednn=AVX2" != key["cpu"]


def test_cached_target_key_holds_the_thread_count_and_device(tmp_path):
    """A target trained on CPU with 1 thread sums in another order than with 2: a shared cache
    keeps them apart (and a second call with the same setting is a hit)."""
    from faux.models.mlp import MLPSpec
    from faux.studies.column import cached_mlp

    g = torch.Generator().manual_seed(0)
    x, t = torch.randn(64, 3, generator=g), torch.randint(0, 2, (64,), generator=g)
    spec = MLPSpec(width=4, depth=1, max_epochs=1, batch_size=32)
    cache, before = Cache(tmp_path / "c"), torch.get_num_threads()
    try:
        for n in (1, 1, 2):
            torch.set_num_threads(n)
            cached_mlp(cache, "target", {"k": 1}, spec, x, t, x, t, seed=0, accelerator="cpu")
    finally:
        torch.set_num_threads(before)
    assert (cache.builds, cache.hits) == (2, 1)


def test_fig8_target_key_holds_the_data_checksums_and_code(data_copy, tmp_path, monkeypatch):
    """Fig. 8's cached targets are keyed by the generators' keys (data checksums, code
    version), not a hand-bumped constant: a changed row makes a new key."""
    from faux.studies import fig8
    from faux.synth.sampler import SyntheticGenerator

    keys, real = [], Cache.get_or_build

    def capture(self, kind, key, build, **kw):
        if kind != "fig8_target":
            return real(self, kind, key, build, **kw)
        keys.append(key)
        raise RuntimeError("stop")                    # the key is all this test needs

    monkeypatch.setattr(Cache, "get_or_build", capture)
    cache = Cache(tmp_path / "cache")
    kw = dict(fusion="concat", bias=0.5, n_train=50, width=4, depth=1, epochs=1, seed=0,
              train_seed=0)
    for change in (False, True):
        if change:
            _change_one_row(data_copy)
        gen = SyntheticGenerator("backache", "backache", {"backache": TINY},
                                 cache_dir=cache.root)
        with pytest.raises(RuntimeError):
            fig8._target(gen, cache, **kw)
    a, b = keys
    assert a["code"] == fig8.FIG8_CODE and a["threads"] == torch.get_num_threads()
    assert a["gen"]["c"]["data_sha256"] != b["gen"]["c"]["data_sha256"]
    assert cache.path("fig8_target", a) != cache.path("fig8_target", b)


def test_column_sets_are_sampled_once_and_load_bit_identical(tmp_path):
    """Every job of a column loads the sets sampled by the first (decoding through the CVAEs
    is most of a warm job's time); what it loads equals what sampling gives."""
    from faux.models.mlp import MLPSpec
    from faux.studies.column import Column, prepare_column
    from faux.synth.sampler import SyntheticGenerator

    cache = Cache(tmp_path / "cache")
    col = Column("backache", "backache", 0.5, "outer")
    kw = dict(sizes={"n_train": 60, "n_val": 20, "n_test": 40},
              target_spec=MLPSpec(width=4, depth=1, max_epochs=1, batch_size=32),
              gen_cfgs={"backache": TINY}, gen_opts={"decoding": "softmax", "tau": 0.3},
              cache=cache, accelerator="cpu")
    a = prepare_column(col, **kw)
    assert len(list((cache.root / "column_sets").glob("*.bin"))) == 2   # the column, bias 0
    b = prepare_column(col, **kw)
    assert len(list((cache.root / "column_sets").glob("*.bin"))) == 2
    fresh = SyntheticGenerator("backache", "backache", {"backache": TINY}, cache_dir=cache.root,
                               decoding="softmax").sample(40, 0.5, "outer", seed=3)
    for name in ("x", "x_cf", "y", "c", "dx_dc", "x_hat", "x_tilde", "w_tilde"):
        assert torch.equal(getattr(a.test, name), getattr(b.test, name)), name
        assert torch.equal(getattr(b.test, name), getattr(fresh, name)), name
    assert (a.test.joint == fresh.joint).all() and a.test.joint.dtype == fresh.joint.dtype
    assert torch.equal(a.labels, b.labels) and a.threshold == b.threshold
    assert {"sampling", "target", "reference"} <= set(b.timings)
    # another LIC-UB evaluation point gives other dx/dc: another entry
    prepare_column(col, **{**kw, "gen_opts": {**kw["gen_opts"], "dxdc_at": "observed"}})
    assert len(list((cache.root / "column_sets").glob("*.bin"))) == 4
