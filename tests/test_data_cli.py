"""The dataset registry and ``python -m faux.data``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from faux.data import registry
from faux.data.pmlb_data import KNOWN_PMLB, TabularData
from faux.data.real import RealData
from faux.errors import DataError

SHARED = Path(os.environ.get("FAUX_DATA_DIR")
              or Path(__file__).resolve().parents[2] / "shared" / "data")
KEYS = {"name", "kind", "present", "n_rows", "n_features", "positive_rate"}


@pytest.fixture(scope="module")
def shared_root():
    if not (SHARED / "pmlb" / "magic" / "magic.tsv.gz").is_file():
        pytest.skip(f"data files not under {SHARED}; set FAUX_DATA_DIR")
    return SHARED


def _cli(*args, root):
    env = {**os.environ, "FAUX_DATA_DIR": str(root), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "faux.data", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_registry_names():
    assert registry.DATASETS == (*KNOWN_PMLB, "adult", "bank", "ssl")
    assert [registry.kind(n) for n in ("magic", "adult")] == ["pmlb", "real"]
    with pytest.raises(DataError, match="unknown dataset 'nosuch'; valid: backache, .*ssl"):
        registry.load("nosuch")
    with pytest.raises(DataError, match="valid:"):
        registry.describe("nosuch")


def test_load_dispatch(shared_root):
    magic = registry.load("magic", root=shared_root, download=False)
    assert isinstance(magic, TabularData) and magic.X.shape == (19020, 10)
    bank = registry.load("bank", root=shared_root, seed=2, download=False)
    assert isinstance(bank, RealData) and bank.seed == 2 and bank.protected == "age"


def test_describe_present_and_absent(shared_root, tmp_path):
    d = registry.describe("magic", root=shared_root)
    assert KEYS <= set(d) and d["kind"] == "pmlb" and d["present"] is True
    assert (d["n_rows"], d["n_features"]) == (19020, 10)
    assert d["positive_rate"] == pytest.approx(6688 / 19020, abs=1e-6)
    a = registry.describe("adult", root=shared_root)
    assert (a["n_rows"], a["n_features"], a["protected"]) == (45222, 97, "sex")
    assert 0.67 < a["protected_rate"] < 0.68 and 0.24 < a["positive_rate"] < 0.25
    for name in ("magic", "adult", "ssl"):
        e = registry.describe(name, root=tmp_path)  # empty root: nothing there, no download
        assert e["present"] is False
        assert e["n_rows"] is e["n_features"] is e["positive_rate"] is None
        assert ("protected_rate" in e) == (name != "magic")
    assert not any(tmp_path.iterdir())


def test_cli_list(shared_root):
    out = _cli("list", root=shared_root)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 + len(registry.DATASETS)
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == set(registry.DATASETS)
    assert rows["magic"][1:5] == ["pmlb", "yes", "19020", "10"]
    assert rows["adult"][1:5] == ["real", "yes", "45222", "97"]
    assert rows["bank"][1:5] == ["real", "yes", "30488", "56"]
    assert float(rows["credit_g"][5]) == pytest.approx(0.7)


def test_cli_info(shared_root):
    out = _cli("info", "magic", root=shared_root)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert KEYS <= set(info) and info["n_rows"] == 19020 and info["present"] is True


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    out = _cli("info", "nosuch", root=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert "unknown dataset 'nosuch'" in out.stderr and "magic" in out.stderr
    from faux.data.__main__ import main

    for argv in ([], ["frobnicate"], ["info"]):  # usage errors: argparse would print 2+ lines
        assert main(argv) == 2
        err = capsys.readouterr()
        assert err.out == "" and len(err.err.strip().splitlines()) == 1


def test_cli_lists_a_corrupt_dataset_without_failing(tmp_path):
    bad = tmp_path / "pmlb" / "wdbc" / "wdbc.tsv.gz"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(np.random.default_rng(0).integers(0, 256, 512, dtype=np.uint8).tobytes())
    out = _cli("list", root=tmp_path)
    assert out.returncode == 0, out.stderr
    (row,) = [line for line in out.stdout.splitlines() if line.startswith("wdbc")]
    assert "error" in row and "corrupt" in row
    info = _cli("info", "wdbc", root=tmp_path)
    assert info.returncode == 2 and "corrupt" in info.stderr
    assert len(info.stderr.strip().splitlines()) == 1
