"""The model formats are one table (``faux.audit.loaders.formats.FORMATS``): detection, the
messages, ``--model``'s help and docs/audit.md's table are all read from its rows, so a
format added there is recognised, loaded, named and documented with no other edit."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from faux.audit.loaders import formats
from faux.audit.loaders.formats import FORMATS, ModelFormat, Probe, detect
from faux.audit.loaders.models import load_model
from faux.audit.loaders.target import from_callable
from faux.errors import ConfigError, DataError

DOCS = Path(__file__).resolve().parents[1] / "docs" / "audit.md"


def _zip(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for n in names:
            z.writestr(n, b"x")
    return path


def _files(tmp: Path) -> dict[str, Path]:
    """One file per row, recognised the way its sniff reads it (suffix, zip names, head)."""
    (tmp / "m.skops").write_bytes(b"anything")
    (tmp / "m.onnx").write_bytes(b"anything")
    (tmp / "booster.txt").write_bytes(b"tree\nversion=v4\n")
    (tmp / "m.joblib").write_bytes(b"anything")
    return {"skops": tmp / "m.skops", "onnxruntime": tmp / "m.onnx",
            "torch.export": _zip(tmp / "p.pt2", ["p/models/model.json"]),
            "torch.jit": _zip(tmp / "s.pt", ["s/code/__torch__.py", "s/data.pkl"]),
            "lightgbm": tmp / "booster.txt",
            "pickle": _zip(tmp / "whole.pt", ["whole/data.pkl"])}


def test_each_row_recognises_its_files_and_detection_tries_the_rows_in_order(tmp_path):
    files = _files(tmp_path)
    assert sorted(files) == sorted(f.name for f in FORMATS)
    for name, path in files.items():
        assert detect(Probe.of(path)).name == name, path
    assert detect(Probe.of(tmp_path / "m.joblib")).name == "pickle"
    # TorchScript archives also hold data.pkl: the earlier row wins
    assert [f.name for f in FORMATS].index("torch.jit") < [f.name for f in FORMATS].index("pickle")
    (tmp_path / "noise.bin").write_bytes(np.random.default_rng(0).bytes(200))
    assert detect(Probe.of(tmp_path / "noise.bin")) is None


def test_an_unknown_file_is_refused_naming_every_format(tmp_path):
    path = tmp_path / "noise.bin"
    path.write_bytes(np.random.default_rng(0).bytes(200))
    with pytest.raises(DataError) as err:
        load_model(path, 3)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("cannot tell the format of noise.bin")
    for f in FORMATS:
        assert f.label in msg, f.label


def test_a_pickle_is_refused_naming_the_formats_that_run_no_code(tmp_path):
    path = tmp_path / "m.joblib"
    path.write_bytes(b"not even a pickle")
    with pytest.raises(ConfigError) as err:
        load_model(path, 3)
    msg = str(err.value)
    assert "--trust-pickle" in msg
    safe = [f for f in FORMATS if not f.trusted_only]
    assert safe and all(f.label in msg for f in safe)
    assert not any(f.label in msg for f in FORMATS if f.trusted_only)


def test_the_cli_help_of_model_lists_every_format(capsys):
    from faux.audit.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere
    start = text.index("--modelPATHthe")
    model = text[start:text.index("--task", start)]
    for f in FORMATS:
        assert "".join(f.help.split()) in model, f.help


def _docs_rows() -> list[list[str]]:
    text = DOCS.read_text()
    part = text[text.index("## Models, and which files are safe to load"):]
    part = part[part.index("| format |"):]
    lines = part[:part.index("\n\n")].splitlines()[2:]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]


def test_the_docs_table_of_formats_is_the_table():
    """docs/audit.md lists the rows of FORMATS, in their order, each by its help line (in
    code font where the docs quote code), and names every row's loader."""
    rows = _docs_rows()
    assert [r[0].replace("`", "") for r in rows] == [f.help for f in FORMATS]
    text = DOCS.read_text()
    loaders = text[text.index("`loader` ("):text.index(": the row's name")]
    assert re.findall(r"`([a-z.]+)`", loaders)[1:] == [f.name for f in FORMATS]


def test_a_format_added_as_one_row_is_loaded_named_and_listed(tmp_path, monkeypatch):
    """What docs/add_method.md says adding a format takes: a loader function and one row."""

    def load_toy(probe, request):
        w = np.frombuffer(probe.path.read_bytes()[4:], dtype=np.float64)
        return from_callable(lambda x: 1 / (1 + np.exp(-(np.asarray(x) @ w))), "toy model")

    toy = ModelFormat("toy", "a toy file (.toy)", "a toy linear model (.toy)",
                      lambda p: p.head.startswith(b"TOY1"), load_toy)
    monkeypatch.setattr(formats, "FORMATS", (*FORMATS, toy))
    path = tmp_path / "m.toy"
    path.write_bytes(b"TOY1" + np.array([1.0, -2.0]).tobytes())
    tm = load_model(path, 2)
    assert tm.loader == "toy" and tm.file == str(path.resolve())
    np.testing.assert_allclose(tm.proba(np.array([[2.0, 1.0]])), [0.5])
    assert "a toy linear model (.toy)" in formats.model_help()
    (tmp_path / "other.bin").write_bytes(b"???")
    with pytest.raises(DataError, match=re.escape("a toy file (.toy)")):
        load_model(tmp_path / "other.bin", 2)
