"""`faux audit` meets broken input and a hostile disk: missing protected values and repeated
column names refused alike for CSV and Parquet, every usage error on one line, a full disk
reported in one line with nothing left behind, and outputs created with the user's umask."""

import errno
import os
import shutil
import stat
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
import torch

import faux
import faux.audit.core as core
import faux.audit.report.outputs as outputs
from faux.audit.cli import EXIT_INPUT, EXIT_OK, main
from faux.errors import FauxError
from test_audit_cli import Proxy
from test_audit_cli import _frame as _cli_frame

ROOT = Path(__file__).resolve().parents[1]
MARKER = ".faux-audit.json"


def _frame(n=400, seed=0):
    return _cli_frame(n, seed)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Proxy()), path)
    return path


def run(capsys, *args):
    rc = main(["audit", "--aux-epochs", "2", "--aux-seeds", "1", "--no-progress",
               *map(str, args)])
    return rc, capsys.readouterr().err


def _one_line(err, *needles):
    assert err.count("\n") == 1 and err.startswith("faux audit: error: "), err
    for n in needles:
        assert n in err, (n, err)


def _tree(folder):
    """Every path under ``folder`` with its bytes (folders: None)."""
    out = {}
    for root, dirs, names in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder)] = None
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, folder)] = Path(p).read_bytes()
    return out


def _write(df, path):
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


# --------------------------------------------------------------------------- missing values


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_missing_protected_values_are_refused_alike_for_csv_and_parquet(tmp_path, model,
                                                                         capsys, suffix):
    df = _frame().astype({"gender": object})
    df.loc[df.index[19::20], "gender"] = None  # a blank cell in the CSV, a null in Parquet
    data = _write(df, tmp_path / f"people{suffix}")
    before = _tree(tmp_path)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp_path / "out", "--batch-size", "64")
    assert rc == EXIT_INPUT
    _one_line(err, "protected column 'gender' is missing in 20 rows "
              "(first rows: 19, 39, 59, 79, 99, ...)", "fill or drop")
    assert _tree(tmp_path) == before  # nothing written


@pytest.mark.parametrize("blank", ["", "   "])
def test_one_blank_protected_value_in_a_csv_is_named_by_its_row(tmp_path, model, capsys,
                                                                 blank):
    df = _frame()
    data = tmp_path / "people.csv"
    df.to_csv(data, index=False)
    lines = data.read_text().splitlines()
    head = lines[0].split(",")
    j = head.index("gender")
    cells = lines[1 + 123].split(",")
    cells[j] = blank  # data row 123
    lines[1 + 123] = ",".join(cells)
    data.write_text("\n".join(lines) + "\n")
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp_path / "out")
    assert rc == EXIT_INPUT
    _one_line(err, "protected column 'gender' is missing in 1 row (first rows: 123)")
    assert not (tmp_path / "out").exists()


def test_missing_values_of_a_numeric_protected_column_name_their_rows(tmp_path, model,
                                                                      capsys):
    df = _frame().assign(age=lambda d: np.arange(len(d)) % 60 + 20.0)
    df.loc[[5, 6, 300], "age"] = np.nan
    data = _write(df, tmp_path / "people.csv")
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "age",
                  "--features", "x1", "x2", "x3", "proxy", "--out", tmp_path / "out")
    assert rc == EXIT_INPUT
    _one_line(err, "protected column 'age' is missing in 3 rows (first rows: 5, 6, 300)")


def test_valid_string_levels_are_kept_as_they_are(tmp_path, model, capsys):
    """A level that only looks like a missing marker ("NA" for North America) is a value."""
    df = _frame().assign(region=lambda d: np.where(np.arange(len(d)) % 2, "NA", "EU"))
    data = _write(df, tmp_path / "people.csv")
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "region",
                  "--features", "x1", "x2", "x3", "proxy", "--out", tmp_path / "out",
                  "--threshold", "0.1")
    assert rc == EXIT_OK, err
    import json

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["protected"]["levels"] == ["EU", "NA"]


def test_python_api_refuses_blank_protected_values(tmp_path):
    df = _frame(200)
    c = df.gender.to_numpy(dtype=object)
    c[[3, 4]] = ""
    with pytest.raises(faux.errors.DataError,
                       match=r"missing in 2 rows \(first rows: 3, 4\)"):
        faux.audit(Proxy(), df.drop(columns="gender"), c, aux_epochs=2, progress=False)


# --------------------------------------------------------------------------- repeated names


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("dup,needle", [
    ("gender", "column 'gender' appears 2 times in people"),
    ("x2", "column 'x2' appears 2 times in people"),
])
def test_repeated_column_names_are_refused_naming_both_positions(tmp_path, model, capsys,
                                                                 suffix, dup, needle):
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = _frame()
    names = list(df.columns)  # x1 x2 x3 proxy gender
    cols = [pa.array(df[n]) for n in names] + [pa.array(df[dup])]
    table = pa.table(cols, names=[*names, dup])
    data = tmp_path / f"people{suffix}"
    if suffix == ".csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, data)
    else:
        pq.write_table(table, data)
    before = _tree(tmp_path)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp_path / "out")
    assert rc == EXIT_INPUT
    first = names.index(dup) + 1
    _one_line(err, needle, f"(columns {first} and 6)", "rename")
    assert _tree(tmp_path) == before


# --------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize("args,needle", [
    (["--sample", "0"], "argument --sample: must be a positive integer, got '0'"),
    (["--threshold", "-1"], "argument --threshold: must be a non-negative number, got '-1'"),
    (["--batch-size", "1e9"], "argument --batch-size: must be a positive integer, got '1e9'"),
    (["--aux", "svm"], "argument --aux: invalid choice: 'svm'"),
    (["--seed", "one"], "argument --seed: invalid int value: 'one'"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_usage_errors_are_one_line(tmp_path, model, capsys, args, needle):
    data = _write(_frame(), tmp_path / "people.csv")
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp_path / "out", *args)
    assert rc == EXIT_INPUT
    _one_line(err, needle, "faux audit --help")
    assert "usage:" not in err
    assert not (tmp_path / "out").exists()


def test_a_missing_required_flag_and_a_missing_command_are_one_line(capsys):
    assert main(["audit", "--data", "x.csv"]) == EXIT_INPUT
    _one_line(capsys.readouterr().err, "the following arguments are required: --model, "
              "--protected")
    assert main([]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("faux: error: "), err


def test_help_is_intact(capsys):
    assert main(["audit", "--help"]) == EXIT_OK
    cap = capsys.readouterr()
    assert cap.out.startswith("usage: faux audit") and "exit codes" in cap.out
    assert cap.err == ""


def test_the_console_script_prints_one_line():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "faux.audit.cli", "audit", "--model", "m.pt",
                           "--data", "d.csv", "--protected", "sex", "--sample", "0"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == EXIT_INPUT
    assert proc.stderr.splitlines() == [
        "faux audit: error: argument --sample: must be a positive integer, got '0'; "
        "see faux audit --help"]
    assert proc.stdout == ""


# --------------------------------------------------------------------------- a full disk


Usage = namedtuple("Usage", "total used free")
FREE = 123_456_789  # what the full disk reports as free (117.7 MiB)


def _enospc(path):
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _full_in_scores(monkeypatch):
    import pyarrow.parquet as pq

    real = pq.ParquetWriter.write_table
    calls = []

    def write_table(self, table, *a, **k):
        calls.append(1)
        if len(calls) == 2:  # the second batch: the file is already half written
            raise _enospc(self.where)
        return real(self, table, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)


def _full_in_scores_as_pyarrow_says_it(monkeypatch):
    """pyarrow's own error for a full disk: errno 28 and no file name (seen on a full tmpfs:
    ``OSError(28, 'Error writing bytes to file. Detail: [errno 28] No space left on
    device')``)."""
    import pyarrow.parquet as pq

    real = pq.ParquetWriter.write_table
    calls = []

    def write_table(self, table, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No "
                          "space left on device")
        return real(self, table, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)


def _full_in_report(monkeypatch):
    import faux.audit.report.page

    def write_report(result, path):
        Path(path).write_text("<html>half")
        raise _enospc(path)

    monkeypatch.setattr(faux.audit.report.page, "write_report", write_report)


def _full_in_marker(monkeypatch):
    real = outputs._write_json_atomic

    def write(path, obj):
        if Path(path).name == MARKER:
            raise _enospc(path)
        return real(path, obj)

    monkeypatch.setattr(outputs, "_write_json_atomic", write)


@pytest.mark.parametrize("where", [_full_in_scores, _full_in_scores_as_pyarrow_says_it,
                                   _full_in_report, _full_in_marker])
@pytest.mark.parametrize("fresh", [True, False])
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, model, capsys, monkeypatch,
                                                    where, fresh):
    data = _write(_frame(), tmp_path / "people.csv")
    out = tmp_path / "deep" / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out,
            "--threshold", "0.1", "--batch-size", "100"]
    if not fresh:  # an earlier output stays as it was
        assert run(capsys, *base)[0] == EXIT_OK
    before = _tree(tmp_path)
    where(monkeypatch)
    seen = []

    def usage(path):
        seen.append(Path(path))
        return Usage(10 * FREE, 9 * FREE, FREE)

    monkeypatch.setattr(shutil, "disk_usage", usage)
    rc, err = run(capsys, *base)
    assert rc == EXIT_INPUT
    _one_line(err, "no space left on the disk", str(out), "117.7 MiB free", "nothing written")
    written = {_full_in_report: "report.html", _full_in_marker: MARKER}.get(where,
                                                                           "scores.parquet")
    assert f"({written};" in err
    assert "Traceback" not in err
    assert _tree(tmp_path) == before
    assert seen and all(p.exists() for p in seen)


def test_python_api_raises_a_one_line_error_that_is_also_an_oserror(tmp_path, monkeypatch):
    _full_in_report(monkeypatch)
    df = _frame(200)
    with pytest.raises(FauxError) as e:
        faux.audit(Proxy(), df.drop(columns="gender"), df.gender.values, aux_epochs=2,
                   progress=False, out_dir=tmp_path / "out", threshold=0.1)
    assert isinstance(e.value, OSError) and e.value.errno == errno.ENOSPC
    assert "\n" not in str(e.value) and str(tmp_path / "out") in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_turns_any_enospc_into_one_line(tmp_path, capsys, monkeypatch):
    """A full disk met outside the outputs' writing (a library's temporary file, say)."""
    target = tmp_path / "scratch" / "cache.bin"

    def audit(*a, **k):
        raise _enospc(target)

    monkeypatch.setattr(core, "audit", audit)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10 * FREE, 9 * FREE, FREE))
    rc, err = run(capsys, "--model", "m.pt", "--data", "d.csv", "--protected", "g")
    assert rc == EXIT_INPUT
    _one_line(err, "no space left on the disk", str(target), "117.7 MiB free")


def test_other_os_errors_still_show_their_traceback(tmp_path, capsys, monkeypatch):
    def audit(*a, **k):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(core, "audit", audit)
    rc, err = run(capsys, "--model", "m.pt", "--data", "d.csv", "--protected", "g")
    assert rc == 3 and "Traceback" in err


# --------------------------------------------------------------------------- file modes


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(p):
    return stat.S_IMODE(p.stat().st_mode)


def test_outputs_are_created_with_the_users_umask(tmp_path, umask):
    df = _frame(200)
    X, c = df.drop(columns="gender"), df.gender.values
    out = tmp_path / "new" / "out"
    want_dir, want_file = 0o777 & ~umask, 0o666 & ~umask
    for _ in range(2):  # a new folder, then a rerun replacing its files
        faux.audit(Proxy(), X, c, out_dir=out, aux_epochs=2, progress=False, threshold=0.1)
        assert _mode(tmp_path / "new") == want_dir
        assert _mode(out) == want_dir, oct(_mode(out))
        names = sorted(p.name for p in out.iterdir())
        assert names == sorted([MARKER, "scores.parquet", "summary.json", "report.html"])
        for name in names:
            assert _mode(out / name) == want_file, (name, oct(_mode(out / name)))
    other = tmp_path / "shared"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    faux.audit(Proxy(), X, c, out_dir=other, aux_epochs=2, progress=False, threshold=0.1,
               force=True)
    for name in (MARKER, "scores.parquet", "summary.json", "report.html"):
        assert _mode(other / name) == want_file, name
