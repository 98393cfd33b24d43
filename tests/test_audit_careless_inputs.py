"""What a careless user meets: each odd input is one line that says what the input is and
what to do, and the words fit the caller (flags for the command line, keyword arguments for
Python)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import faux
from audit_world import proxy_world
from faux.audit.cli import EXIT_INPUT, main
from faux.errors import ConfigError
from test_audit_cli import Proxy, _frame


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "people.csv"
    _frame().to_csv(data, index=False)
    model = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Proxy()), model)
    return tmp_path, data, model


def run(capsys, *args):
    rc = main(["audit", "--aux-epochs", "2", "--aux-seeds", "1", "--no-progress",
               *map(str, args)])
    return rc, capsys.readouterr().err


def _one_line(err, *needles):
    assert err.count("\n") == 1 and err.startswith("faux audit: error: "), err
    for n in needles:
        assert n in err, (n, err)


@pytest.mark.parametrize("what, kind", [("fifo", "not a regular file"),
                                        ("/dev/zero", "not a regular file"),
                                        ("folder", "is a folder")])
@pytest.mark.parametrize("role", ["--model", "--data"])
def test_a_fifo_a_device_or_a_folder_is_named_for_what_it_is(files, capsys, what, kind, role):
    tmp, data, model = files
    if what == "fifo":
        os.mkfifo(tmp / "fifo")
    (tmp / "folder").mkdir()
    odd = what if what.startswith("/") else str(tmp / what)
    given = {"--model": model, "--data": data, role: odd}
    rc, err = run(capsys, "--model", given["--model"], "--data", given["--data"],
                  "--protected", "gender", "--out", tmp / "out")
    assert rc == EXIT_INPUT
    _one_line(err, kind, role)
    assert "not found" not in err and not (tmp / "out").exists()


def test_an_out_through_a_symlink_loop_is_named_a_loop(files, capsys):
    tmp, data, model = files
    os.symlink(tmp / "b", tmp / "a")
    os.symlink(tmp / "a", tmp / "b")
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp / "a")
    assert rc == EXIT_INPUT
    _one_line(err, "symbolic link that loops")


@pytest.mark.parametrize("n", [2, 5, 19])
def test_too_few_rows_say_so_rather_than_ask_for_a_larger_sample(files, capsys, n):
    tmp, _, model = files
    data = tmp / "few.csv"
    frame = _frame(200)
    frame.iloc[np.r_[0:n]].assign(gender=np.array(["f", "m"] * n)[:n]).to_csv(data,
                                                                            index=False)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp / "out")
    assert rc == EXIT_INPUT
    _one_line(err, f"has {n} rows", "at least 20")
    assert "--sample" not in err


def test_a_value_too_large_to_compute_with_names_its_column_and_row(files, capsys):
    tmp, _, model = files
    frame = _frame(300)
    frame.loc[4, "x2"], frame.loc[9, "x2"] = 1e308, -1e308
    frame.to_csv(tmp / "big.csv", index=False)
    rc, err = run(capsys, "--model", model, "--data", tmp / "big.csv", "--protected",
                  "gender", "--out", tmp / "out")
    assert rc == EXIT_INPUT
    _one_line(err, "column 'x2'", "row 4", "2 rows")


def test_onnxruntime_prints_nothing_of_its_own(tmp_path):
    """A model with an unused initializer makes onnxruntime log a coloured warning line at
    session creation; the audit's stderr holds only its own lines."""
    import onnx
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 1], vals=np.full(4, 0.5, np.float32))
    unused = helper.make_tensor("unused", TensorProto.FLOAT, [2], vals=np.ones(2, np.float32))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["z"]),
         helper.make_node("Sigmoid", ["z"], ["prob"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [None, 1])], [w, unused])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    code = ("import onnxruntime as ort, sys; ort.InferenceSession(sys.argv[1], "
            "providers=['CPUExecutionProvider'])")
    control = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, timeout=120)
    assert "onnxruntime" in control.stderr  # the library does print, left to itself
    code = "import sys; from faux.audit.loaders.models import load_model; load_model(sys.argv[1], 4)"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_python_callers_are_told_keyword_arguments_not_flags(tmp_path, files, capsys):
    tmp, data, model = files
    (tmp_path / "notes.txt").write_text("keep")
    X, c = proxy_world(200)
    with pytest.raises(ConfigError) as err:
        faux.audit(Proxy(), X, c, aux_epochs=2, progress=False, out_dir=tmp_path)
    msg = str(err.value)
    assert "out_dir" in msg and "force=True" in msg and "--" not in msg
    res = faux.audit(Proxy(), X, c, aux_epochs=2, progress=False)
    with pytest.raises(ConfigError) as err:
        res.save(tmp_path)
    assert "force=True" in str(err.value) and "--" not in str(err.value)
    assert (tmp_path / "notes.txt").read_text() == "keep"
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp_path)              # the command line keeps its flags
    assert rc == EXIT_INPUT
    _one_line(err, "--out", "--force")


def test_the_feature_ranking_keeps_names_with_an_equals_sign_whole():
    X, c = proxy_world(400)
    X = X.rename(columns={"proxy": "ratio=a/b", "x1": "score=1"})
    res = faux.audit(Proxy(), X, c, aux_epochs=2, progress=False)
    assert set(res.feature_ranking) == {"ratio=a/b", "score=1", "x2", "x3"}
    assert next(iter(res.feature_ranking)) == "ratio=a/b"


def test_text_categories_that_look_like_numbers_read_alike_from_csv_and_parquet(tmp_path,
                                                                               capsys):
    """Codes "01", "02", "10" of a Pipeline's encoder: a CSV reader would make them 1, 2, 10
    (then refused as unseen); they are kept as text, and the audit equals Parquet's."""
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    X, c = proxy_world(400)
    X["code"] = np.random.default_rng(0).choice(["01", "02", "10"], len(X))
    y = (X.x1 + (X.code == "10") + X.proxy > 1).astype(int)
    pipe = Pipeline([("pre", ColumnTransformer([("cat", OneHotEncoder(), ["code"])],
                                               remainder="passthrough")),
                     ("lr", LogisticRegression())]).fit(X, y)
    sio.dump(pipe, tmp_path / "m.skops")
    frame = X.assign(gender=np.array(["f", "m"])[c])
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    for name in ("d.csv", "d.parquet"):
        rc, err = run(capsys, "--model", tmp_path / "m.skops", "--data", tmp_path / name,
                      "--protected", "gender", "--out", tmp_path / f"out_{name}")
        assert rc == 0, err
    assert ((tmp_path / "out_d.csv" / "scores.parquet").read_bytes()
            == (tmp_path / "out_d.parquet" / "scores.parquet").read_bytes())


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_missing_categories_in_a_file_read_as_the_same_frame_in_memory(tmp_path, kind):
    """An encoder fitted with NaN as a category: a file's null (None once read) is that
    missing value, as NaN is in memory (scikit-learn would encode None as never seen)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    X, c = proxy_world(400)
    job = np.random.default_rng(0).choice(["a", "b", None], len(X)).astype(object)
    X["job"] = np.where(job == None, np.nan, job)  # noqa: E711 (elementwise)
    y = (X.x1 + (X.job == "a") + X.proxy > 1).astype(int)
    pipe = Pipeline([("pre", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"),
                                                 ["job"])], remainder="passthrough")),
                     ("lr", LogisticRegression())]).fit(X, y)
    frame = X.assign(gender=np.array(["f", "m"])[c])
    path = tmp_path / f"d.{kind}"
    getattr(frame, f"to_{kind}")(path, index=False)
    kw = dict(aux_epochs=2, progress=False)
    from_file = faux.audit(pipe, data=path, protected="gender", **kw)
    in_memory = faux.audit(pipe, X, c, **kw)
    cols = ["p", "p_cf", "effect", "flagged"]
    assert not any("never saw" in w for w in from_file.warnings)
    assert from_file.scores[cols].equals(in_memory.scores[cols])
