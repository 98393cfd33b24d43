"""`faux audit` end to end: exit codes, gates, refusals with one line, nothing partial written."""

import json

import joblib
import numpy as np
import pandas as pd
import pytest
import torch

from audit_world import proxy_world
from faux.audit.cli import EXIT_GATE, EXIT_INPUT, EXIT_OK, build_parser, main


class Proxy(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x[:, 0] + 4.0 * torch.sigmoid(8 * x[:, 1]) * (x[:, 3] - 0.5)


class NaNModel(torch.nn.Module):
    def forward(self, x):
        return torch.log(x[:, 0] - 1e9)


def _frame(n=500, seed=0):
    X, c = proxy_world(n, seed)
    return X.assign(gender=np.array(["f", "m"])[c])


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "people.csv"
    _frame().to_csv(data, index=False)
    model = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Proxy()), model)
    return tmp_path, data, model


def run(capsys, *args):
    rc = main(["audit", "--aux-epochs", "5", "--no-progress", *map(str, args)])
    err = capsys.readouterr().err
    return rc, err


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["audit", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--model", "--data", "--protected", "--label", "--features", "--out",
                 "--methods", "--trust-pickle", "--fail-above", "--max-flagged-rate", "--aux",
                 "--sample", "--batch-size", "--threshold", "--fd-step", "--alpha",
                 "--null-permutations", "--fdr", "exit codes"):
        assert flag in text, flag


def test_gate_exit_codes_and_outputs(files, capsys):
    tmp, data, model = files
    out = tmp / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out]
    rc, _ = run(capsys, *base)
    assert rc == EXIT_OK
    s = json.loads((out / "summary.json").read_text())
    assert s["gate"]["passed"] and s["protected"]["levels"] == ["f", "m"]
    # the default effect verdict: where x2 opens the gate, moving the proxy by the gap
    # between the groups changes the decision, for a large share of the rows
    assert s["settings"]["verdict"] == "effect" and s["flagged"]["rate"] > 0.1
    # the score verdict: the threshold is calibrated on permuted-c aux models; this model is
    # far more sensitive to its gate x2 than to the proxy, so fAux flags few rows by it
    rc, _ = run(capsys, *base, "--verdict", "score")
    assert rc == EXIT_OK
    s = json.loads((out / "summary.json").read_text())
    assert s["calibration"]["rule"] == "null quantile"
    assert s["flagged"]["rate"] <= 0.05
    rc, _ = run(capsys, *base, "--verdict", "score", "--threshold", "0.05")  # earlier default
    assert rc == EXIT_OK
    rate = json.loads((out / "summary.json").read_text())["flagged"]["rate"]
    assert 0 < rate < 1
    # --fail-above: any row above delta fails (exit 1), outputs still complete
    rc, err = run(capsys, *base, "--verdict", "score", "--fail-above", "0.02")
    assert rc == EXIT_GATE and "gate failed" in err
    s = json.loads((out / "summary.json").read_text())
    assert not s["gate"]["passed"] and s["settings"]["threshold"] == 0.02
    assert (out / "report.html").exists() and (out / "scores.parquet").exists()
    # a tolerated flagged rate passes; a stricter one fails
    flagged = pd.read_parquet(out / "scores.parquet").flagged.mean()
    rc, _ = run(capsys, *base, "--verdict", "score", "--fail-above", "0.02", "--max-flagged-rate", flagged + 0.01)
    assert rc == EXIT_OK
    rc, _ = run(capsys, *base, "--verdict", "score", "--fail-above", "0.02", "--max-flagged-rate", flagged / 2)
    assert rc == EXIT_GATE
    rc, _ = run(capsys, *base, "--verdict", "score", "--fail-above", "1e6")
    assert rc == EXIT_OK
    assert _leftovers(tmp) == []


def test_parquet_in_small_batches_matches_one_batch(files, capsys):
    tmp, _, model = files
    data = tmp / "people.parquet"
    _frame().to_parquet(data, index=False)
    a, b = tmp / "a", tmp / "b"
    assert run(capsys, "--model", model, "--data", data, "--protected", "gender", "--out", a,
               "--batch-size", "37", "--sample", "400")[0] == EXIT_OK
    assert run(capsys, "--model", model, "--data", data, "--protected", "gender", "--out", b,
               "--sample", "400")[0] == EXIT_OK
    sa, sb = pd.read_parquet(a / "scores.parquet"), pd.read_parquet(b / "scores.parquet")
    assert (sa.row_id.values == np.arange(500)).all()
    np.testing.assert_allclose(sa.faux.values, sb.faux.values, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(sa.faux_ng.values, sb.faux_ng.values, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("args,needle", [
    (["--protected", "gendr"], "did you mean 'gender'"),
    (["--protected", "gender", "--label", "incme"], "label column 'incme' is not in"),
    (["--protected", "gender", "--features", "x1", "x2", "x3", "proxi"], "did you mean 'proxy'"),
    (["--protected", "gender", "--features", "x1", "x2", "x3"], "fails on rows of 3 features"),
    (["--protected", "gender", "--methods", "faux", "faux"], "repeated"),
    (["--protected", "x1", "--features", "x2", "x3", "proxy", "gender"],
     "feature column 'gender' is not numeric"),
])
def test_bad_columns_and_options_are_refused_with_one_line(files, capsys, args, needle):
    tmp, data, model = files
    rc, err = run(capsys, "--model", model, "--data", data, "--out", tmp / "out", *args)
    assert rc == EXIT_INPUT
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("faux audit: error:")
    assert not (tmp / "out").exists() and _leftovers(tmp) == []


def test_bad_data_is_refused(files, capsys):
    tmp, _, model = files
    df = _frame()
    const = tmp / "const.csv"
    df.assign(gender="f").to_csv(const, index=False)
    rc, err = run(capsys, "--model", model, "--data", const, "--protected", "gender")
    assert rc == EXIT_INPUT and "constant" in err
    bad = tmp / "nan.csv"
    df2 = df.copy()
    df2.loc[[7, 30, 31], "x2"] = np.nan
    df2.loc[99, "x3"] = np.inf
    df2.to_csv(bad, index=False)
    rc, err = run(capsys, "--model", model, "--data", bad, "--protected", "gender",
                  "--batch-size", "16")
    assert rc == EXIT_INPUT and "NaN or inf in 4 rows (first rows: 7, 30, 31, 99)" in err
    empty = tmp / "empty.csv"
    empty.write_text("")
    rc, err = run(capsys, "--model", model, "--data", empty, "--protected", "gender")
    assert rc == EXIT_INPUT and "empty" in err
    header = tmp / "header.csv"
    header.write_text("x1,x2,x3,proxy,gender\n")
    rc, err = run(capsys, "--model", model, "--data", header, "--protected", "gender")
    assert rc == EXIT_INPUT and "no rows" in err
    rc, err = run(capsys, "--model", model, "--data", tmp / "missing.csv", "--protected", "g")
    assert rc == EXIT_INPUT and "not found" in err
    assert not (tmp / "out").exists() and not any(tmp.glob("outputs"))


def test_bad_models_are_refused(files, capsys):
    tmp, data, model = files
    base = ["--data", data, "--protected", "gender", "--out", tmp / "out"]
    garbage = tmp / "garbage.pt"
    garbage.write_bytes(b"\x00not a model" * 10)
    rc, err = run(capsys, "--model", garbage, *base)
    assert rc == EXIT_INPUT and "garbage.pt" in err
    broken = tmp / "broken.onnx"
    broken.write_bytes(b"not onnx")
    rc, err = run(capsys, "--model", broken, *base)
    assert rc == EXIT_INPUT and "cannot read the ONNX model" in err
    nan_model = tmp / "nan.pt"
    torch.jit.save(torch.jit.script(NaNModel()), nan_model)
    rc, err = run(capsys, "--model", nan_model, *base)
    assert rc == EXIT_INPUT and "not finite" in err
    assert not (tmp / "out").exists() and _leftovers(tmp) == []


def test_pickle_needs_trust_pickle(files, capsys):
    from sklearn.linear_model import LogisticRegression

    tmp, data, _ = files
    df = _frame()
    lr = LogisticRegression().fit(df[["x1", "x2", "x3", "proxy"]].values, df.x1 > 0)
    pkl = tmp / "model.joblib"
    joblib.dump(lr, pkl)
    base = ["--model", pkl, "--data", data, "--protected", "gender", "--out", tmp / "out",
            "--methods", "faux"]
    rc, err = run(capsys, *base)
    assert rc == EXIT_INPUT and "skops" in err and "--trust-pickle" in err
    assert not (tmp / "out").exists()
    rc, _ = run(capsys, *base, "--trust-pickle")
    assert rc == EXIT_OK
    s = json.loads((tmp / "out" / "summary.json").read_text())
    assert s["model"]["exact_from"] == "sklearn LogisticRegression"  # scored by autograd
    assert s["scoring"]["model_calls_per_row"] == 0
    rc, _ = run(capsys, *base, "--trust-pickle", "--no-exact")  # the black box: 2 calls a row
    assert rc == EXIT_OK
    s = json.loads((tmp / "out" / "summary.json").read_text())
    assert "exact_from" not in s["model"] and s["scoring"]["model_calls_per_row"] == 2


def test_failed_rerun_keeps_the_previous_complete_outputs(files, capsys):
    tmp, data, model = files
    out = tmp / "out"
    assert run(capsys, "--model", model, "--data", data, "--protected", "gender",
               "--out", out)[0] == EXIT_OK
    before = (out / "summary.json").read_text()
    rc, _ = run(capsys, "--model", model, "--data", data, "--protected", "gender", "--out", out,
                "--features", "x1", "x2")
    assert rc == EXIT_INPUT
    assert (out / "summary.json").read_text() == before and _leftovers(tmp) == []


def test_black_box_width_mismatch_is_refused():
    from sklearn.linear_model import LogisticRegression

    import faux
    from faux.errors import DataError

    df = _frame(200)
    lr = LogisticRegression().fit(df[["x1", "x2", "x3", "proxy"]].values, df.x1 > 0)
    with pytest.raises(DataError, match="reads 4 features but the data has 3"):
        faux.audit(lr, df[["x1", "x2", "x3"]], df.gender.values, progress=False)


def test_a_failure_while_writing_leaves_nothing(files, monkeypatch):
    import faux.audit.report.page

    tmp, data, model = files

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(faux.audit.report.page, "write_report", broken)
    from faux.audit.core import audit

    with pytest.raises(OSError, match="disk full"):
        audit(str(model), data=str(data), protected="gender", out_dir=tmp / "out",
              aux_epochs=3, progress=False)
    assert not (tmp / "out").exists() and _leftovers(tmp) == []
