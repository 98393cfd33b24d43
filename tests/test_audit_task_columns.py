"""The audit knows the model's task, feeds a model its columns by name, and never guesses a
label:

1. a regressor is audited on its predicted value (flagged when it moves by at least
   ``materiality``, in the output's units, which must be given), never decided at 0.5 as a
   "probability"; the task is read from the model (scikit-learn's ``is_regressor`` /
   ``is_classifier``, a LightGBM Booster's objective; a torch model is a classifier returning
   logits unless ``task="regression"``) or set with ``--task``; a classifier whose
   probability stays on one side of the decision threshold is warned about;
2. a model that stores its feature names (``feature_names_in_``, a Booster's
   ``feature_name()``) reads the data's columns by name: reordered columns give the same
   result, a missing or renamed one (or ``--features`` that disagree) is refused in one line;
3. a label that is not 0/1 gets its positive class from ``--positive-label`` or the model's
   ``classes_[1]`` (stated in the summary), else the audit refuses in one line;
4. protected values that differ only in case or surrounding spaces are refused;
5. a plain estimator fitted on a DataFrame is fed DataFrames: sklearn's "X does not have
   valid feature names" warning is never printed.

Small worlds (tests/audit_world.py), few aux epochs and a small sample: each test takes
seconds. The CLI runs as ``python -m faux.audit.cli`` in a subprocess, as a user runs it.
"""

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.linear_model import LinearRegression, LogisticRegression

import faux
from audit_world import proxy_world
from faux.audit.cli import build_parser
from faux.errors import ConfigError, DataError

N = 400
KW = dict(sample=N, aux_epochs=3, aux_seeds=2, null_permutations=2, progress=False)
CLI = ["--sample", str(N), "--aux-epochs", "3", "--aux-seeds", "2", "--null-permutations", "2",
       "--no-progress"]


def _world(n=N, seed=0):
    X, c = proxy_world(n, seed)
    noise = np.random.default_rng(seed + 1).normal(size=n)
    return X, c, noise


def cli(*args, timeout=300):
    """``python -m faux.audit.cli audit ARGS`` in a subprocess: (exit code, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "faux.audit.cli", "audit", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("faux audit: error: "), err
    return lines[0]


def _regressor(X, noise):
    """A linear regression of a target in the tens: x1 and the proxy move it by units."""
    r = 10 + 2 * X.x1 + 3 * X.proxy + 0.5 * noise
    return LinearRegression().fit(X, r)


# --------------------------------------------------------------------------- 1. the task


def test_a_regressor_needs_a_materiality_in_its_output_units():
    X, c, noise = _world()
    reg = _regressor(X, noise)
    with pytest.raises(ConfigError) as e:
        faux.audit(reg, X, c, **KW)
    msg = str(e.value)
    assert "\n" not in msg and "regress" in msg and "materiality" in msg, msg
    # a materiality above 1 is a change of probability for a classifier: refused unless the
    # task is said to be regression
    with pytest.raises(ConfigError, match="task"):
        faux.audit(reg, X, c, materiality=2.0, **KW)


def test_a_regressor_is_flagged_by_its_predicted_value_moving(tmp_path):
    X, c, noise = _world()
    reg = _regressor(X, noise)
    res = faux.audit(reg, X, c, materiality=1.0, out_dir=tmp_path / "out", **KW)
    s = res.summary
    assert s["model"]["task"] == "regression" and "is_regressor" in s["model"]["task_from"]
    sc = res.scores
    # the model's own output, not a probability: predictions around 10
    np.testing.assert_allclose(sc["p"].to_numpy(), reg.predict(X), rtol=1e-6)
    # flagged: |output(x') - output(x)| >= 1 under every aux model, with one sign
    lo, hi = sc["effect_lo"].to_numpy(), sc["effect_hi"].to_numpy()
    expect = (lo >= 1.0 - 1e-9) | (hi <= -1.0 + 1e-9)
    assert sc["flagged"].to_numpy().sum() > 0
    np.testing.assert_array_equal(sc["flagged"].to_numpy(), expect)
    assert "decision_changes" not in sc.columns  # a regressor makes no decision
    e = s["effects"]["c"]
    words = " ".join([e["headline"], s["verdict"]["text"], *[r["text"] for r in e["rows"]],
                      repr(res)])
    assert "predicted value" in words, words
    assert "probability" not in words and "decision" not in words, words
    html = (tmp_path / "out" / "report.html").read_text()
    assert "predicted value" in html and "predicted probability" not in html
    assert s["outcomes"]["views"] == {} and "regress" in s["outcomes"]["settings"]["note"]


def test_a_lightgbm_regressor_is_not_judged_as_a_classifier(tmp_path):
    import lightgbm as lgb

    X, c, noise = _world()
    r = 0.05 * (X.x1 + X.proxy) + 0.01 * noise  # never near 0.5
    booster = lgb.train({"objective": "regression", "verbosity": -1, "num_leaves": 4,
                         "min_data_in_leaf": 5}, lgb.Dataset(X, r), 10)
    model = tmp_path / "reg.txt"
    booster.save_model(model)
    data = tmp_path / "d.csv"
    X.assign(gender=np.array(["f", "m"])[c]).to_csv(data, index=False)
    out = tmp_path / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out, *CLI]
    rc, _, err = cli(*base, "--max-flagged-rate", "0")
    line = _one_line(err)
    assert rc == 2 and "regress" in line and "--materiality" in line and "objective" in line
    assert not out.exists()
    rc, _, err = cli(*base, "--task", "classification")  # the objective says otherwise
    line = _one_line(err)
    assert rc == 2 and "--task classification" in line and "regression" in line
    rc, stdout, err = cli(*base, "--materiality", "0.02", "--max-flagged-rate", "0")
    assert rc == 1, err  # the gate: rows whose predicted value moves by 0.02 are flagged
    s = json.loads((out / "summary.json").read_text())
    assert s["model"]["task"] == "regression" and s["flagged"]["count"] > 0
    assert "predicted value" in stdout and "probability" not in stdout
    assert "decision" not in stdout


def test_a_torch_model_is_a_classifier_unless_told_it_regresses():
    X, c, _ = _world()

    class Linear(torch.nn.Module):
        def forward(self, x):
            return 5.0 + 2.0 * x[:, 0] + 3.0 * x[:, 3]

    net = Linear()
    res = faux.audit(net, X, c, **KW)
    assert res.summary["model"]["task"] == "classification"
    assert ((res.scores["p"] > 0) & (res.scores["p"] < 1)).all()  # sigmoid of the logit
    with pytest.raises(ConfigError, match="materiality"):
        faux.audit(net, X, c, task="regression", **KW)
    res = faux.audit(net, X, c, task="regression", materiality=1.0, **KW)
    s = res.summary
    assert s["model"]["task"] == "regression" and s["model"]["task_from"].startswith("task=")
    expect = 5.0 + 2.0 * X.x1.to_numpy() + 3.0 * X.proxy.to_numpy()
    np.testing.assert_allclose(res.scores["p"].to_numpy(), expect, rtol=1e-5)
    assert res.flagged_rate > 0.5  # the proxy moves by about 1: the output by about 3


def test_a_classifier_output_outside_zero_one_is_refused():
    X, c, _ = _world()
    with pytest.raises(DataError) as e:
        faux.audit(lambda x: 0.3 * x[:, 0] + 0.5, X, c, **KW)
    msg = str(e.value)
    assert "\n" not in msg and "probabilit" in msg and "task" in msg, msg


def test_a_classifier_that_never_crosses_its_threshold_is_warned_about():
    X, c, _ = _world()

    def timid(x):  # a probability that never reaches 0.5
        return 0.05 + 0.3 / (1 + np.exp(-(x[:, 0] + 2 * x[:, 3])))

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        res = faux.audit(timid, X, c, **KW)
    said = [w for w in res.warnings if "0.5" in w and "every" in w]
    assert said, res.warnings
    assert any(issubclass(w.category, faux.FauxAuditWarning) and said[0] in str(w.message)
               for w in got)
    assert res.flagged_rate == 0


def test_a_bad_or_contradicting_task_is_refused_in_one_line():
    X, c, noise = _world()
    with pytest.raises(ConfigError, match="task"):
        faux.audit(lambda x: x[:, 0], X, c, task="ranking", **KW)
    with pytest.raises(ConfigError) as e:
        faux.audit(_regressor(X, noise), X, c, task="classification", **KW)
    assert "\n" not in str(e.value) and "is_regressor" in str(e.value)
    y = (X.proxy > 0.5).astype(int)
    with pytest.raises(ConfigError, match="classifier"):
        faux.audit(LogisticRegression().fit(X, y), X, c, task="regression", materiality=0.1,
                   **KW)


# --------------------------------------------------------------------------- 2. by name


def _lr(X, noise):
    y = (X.x1 + 1.5 * X.proxy + 0.3 * noise > 0.75).astype(int)
    return LogisticRegression().fit(X, y), y


def test_a_plain_estimator_reads_its_columns_by_name():
    X, c, noise = _world()
    lr, _ = _lr(X, noise)
    ref = faux.audit(lr, X, c, **KW)
    shuffled = X[["proxy", "x3", "x1", "x2"]]
    res = faux.audit(lr, shuffled, c, **KW)
    assert res.summary["data"]["features"] == ["x1", "x2", "x3", "proxy"]
    np.testing.assert_allclose(res.scores["p"], ref.scores["p"])
    np.testing.assert_array_equal(res.scores["flagged"], ref.scores["flagged"])
    with pytest.raises(DataError) as e:
        faux.audit(lr, X.rename(columns={"x2": "x2_new"}), c, **KW)
    msg = str(e.value)
    assert "\n" not in msg and "'x2'" in msg and "x2_new" in msg, msg
    with pytest.raises(ConfigError) as e:
        faux.audit(lr, X.assign(x4=0.0), c, features=["x1", "x2", "x4", "proxy"], **KW)
    msg = str(e.value)
    assert "\n" not in msg and "'x3'" in msg and "'x4'" in msg, msg


def test_the_cli_feeds_a_file_model_by_name(tmp_path):
    import skops.io as sio

    X, c, noise = _world()
    lr, _ = _lr(X, noise)
    sio.dump(lr, tmp_path / "m.skops")
    frame = X.assign(gender=np.array(["f", "m"])[c])
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame[["gender", "proxy", "x3", "x1", "x2"]].to_csv(tmp_path / "shuffled.csv", index=False)
    frame.rename(columns={"x3": "x3b"}).to_csv(tmp_path / "renamed.csv", index=False)
    counts = []
    for name in ("d.csv", "shuffled.csv"):
        out = tmp_path / f"out_{name}"
        rc, _, err = cli("--model", tmp_path / "m.skops", "--data", tmp_path / name,
                         "--protected", "gender", "--out", out, *CLI)
        assert rc == 0, err
        assert "valid feature names" not in err, err  # 5: fed a DataFrame with its names
        counts.append(pd.read_parquet(out / "scores.parquet")["flagged"].to_numpy())
    np.testing.assert_array_equal(counts[0], counts[1])
    rc, _, err = cli("--model", tmp_path / "m.skops", "--data", tmp_path / "renamed.csv",
                     "--protected", "gender", "--out", tmp_path / "o3", *CLI)
    line = _one_line(err)
    assert rc == 2 and "'x3'" in line and "x3b" in line
    rc, _, err = cli("--model", tmp_path / "m.skops", "--data", tmp_path / "d.csv",
                     "--protected", "gender", "--features", "x1", "x2", "proxy",
                     "--out", tmp_path / "o4", *CLI)
    line = _one_line(err)
    assert rc == 2 and "--features" in line and "'x3'" in line


def test_a_lightgbm_booster_with_named_features_reads_them_by_name(tmp_path):
    import lightgbm as lgb

    from faux.audit.loaders.models import as_target

    X, c, noise = _world()
    y = (X.x1 + 1.5 * X.proxy + 0.3 * noise > 0.75).astype(int)
    named = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 4}, lgb.Dataset(X, y),
                      5)
    plain = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 4},
                      lgb.Dataset(X.to_numpy(), y), 5)
    assert as_target(named).feature_names == ["x1", "x2", "x3", "proxy"]
    assert as_target(plain).feature_names is None  # Column_0 ... : no names to read by
    ref = faux.audit(named, X, c, **KW)
    res = faux.audit(named, X[["x3", "proxy", "x2", "x1"]], c, **KW)
    np.testing.assert_allclose(res.scores["p"], ref.scores["p"])
    np.testing.assert_array_equal(res.scores["flagged"], ref.scores["flagged"])
    with pytest.raises(DataError, match="'proxy'"):
        faux.audit(named, X.drop(columns="proxy").assign(other=0.0), c, **KW)


# --------------------------------------------------------------------------- 3. the label


def _labelled(tmp_path, y, model):
    import skops.io as sio

    X, c, _ = _world()
    data = tmp_path / "d.csv"
    X.assign(gender=np.array(["f", "m"])[c], decision=y).to_csv(data, index=False)
    sio.dump(model, tmp_path / "m.skops")
    return data, tmp_path / "m.skops"


def test_a_string_label_needs_its_positive_class(tmp_path):
    X, c, noise = _world()
    lr, y01 = _lr(X, noise)  # trained on 0/1: its classes_ do not say which string is 1
    y = np.where(y01 == 1, "approved", "denied")
    with pytest.raises(ConfigError) as e:
        faux.audit(lr, X.assign(decision=y), c, y="decision", **KW)
    msg = str(e.value)
    assert "\n" not in msg and "positive_label" in msg and "'approved'" in msg, msg
    res = faux.audit(lr, X.assign(decision=y), c, y="decision", positive_label="approved", **KW)
    o = res.summary["outcomes"]["settings"]
    assert o["positive_label"] == "approved" and "positive_label" in o["positive_label_from"]
    assert res.summary["performance"]["accuracy"] > 0.75
    with pytest.raises(ConfigError, match="'granted'"):
        faux.audit(lr, X.assign(decision=y), c, y="decision", positive_label="granted", **KW)
    # the CLI: one line asking for --positive-label
    data, model = _labelled(tmp_path, y, lr)
    rc, _, err = cli("--model", model, "--data", data, "--protected", "gender", "--label",
                     "decision", "--out", tmp_path / "out", *CLI)
    line = _one_line(err)
    assert rc == 2 and "--positive-label" in line
    rc, _, err = cli("--model", model, "--data", data, "--protected", "gender", "--label",
                     "decision", "--positive-label", "approved", "--out", tmp_path / "out",
                     *CLI)
    assert rc == 0, err
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["performance"]["accuracy"] > 0.75
    assert s["outcomes"]["settings"]["positive_label"] == "approved"


def test_a_model_that_knows_its_classes_names_the_positive_one():
    X, c, noise = _world()
    _, y01 = _lr(X, noise)
    y = np.where(y01 == 1, "approved", "denied")
    model = LogisticRegression().fit(X, y)  # classes_ ["approved", "denied"]: p is P(denied)
    res = faux.audit(model, X.assign(decision=y), c, y="decision", **KW)
    o = res.summary["outcomes"]["settings"]
    assert o["positive_label"] == "denied" and "classes_" in o["positive_label_from"]
    assert res.summary["performance"]["accuracy"] > 0.75
    with pytest.raises(ConfigError, match="classes_"):  # says the opposite of the model
        faux.audit(model, X.assign(decision=y), c, y="decision", positive_label="approved",
                   **KW)


def test_a_model_without_classes_never_guesses_a_string_label():
    X, c, _ = _world()
    y = np.where(X.proxy > 0.5, "yes", "no")
    with pytest.raises(ConfigError) as e:
        faux.audit(lambda x: 1 / (1 + np.exp(-x[:, 3])), X.assign(lab=y), c, y="lab", **KW)
    assert "\n" not in str(e.value) and "positive_label" in str(e.value)
    res = faux.audit(lambda x: 1 / (1 + np.exp(-x[:, 3])), X.assign(lab=y), c, y="lab",
                     positive_label="yes", **KW)
    assert res.summary["outcomes"]["settings"]["positive_label"] == "yes"
    # a 0/1 label needs nothing: 1 is the positive class
    res = faux.audit(lambda x: 1 / (1 + np.exp(-x[:, 3])), X.assign(lab=(y == "yes") * 1), c,
                     y="lab", **KW)
    assert res.summary["outcomes"]["settings"]["positive_label"] == "1"


# --------------------------------------------------------------------------- 4. protected


@pytest.mark.parametrize("where", ["csv", "parquet", "memory"])
def test_protected_values_differing_only_in_case_or_spaces_are_refused(tmp_path, where):
    X, c, _ = _world()
    sex = np.array(["Male", "Female"], dtype=object)[c]
    sex[:5] = ["female", " Female", "FEMALE", "Female", "Male"]
    f = lambda x: 1 / (1 + np.exp(-x[:, 3]))  # noqa: E731
    frame = X.assign(sex=sex)
    if where == "memory":
        with pytest.raises(DataError) as e:
            faux.audit(f, frame, "sex", **KW)
        msg = str(e.value)
    else:
        data = tmp_path / f"d.{where}"
        frame.to_csv(data, index=False) if where == "csv" else frame.to_parquet(data)
        torch.jit.save(torch.jit.script(_Logit()), tmp_path / "m.pt")
        rc, _, err = cli("--model", tmp_path / "m.pt", "--data", data, "--protected", "sex",
                         "--out", tmp_path / "out", *CLI)
        assert rc == 2
        msg = _one_line(err)
        assert not (tmp_path / "out").exists()
    assert "\n" not in msg and "'sex'" in msg, msg
    for v in ("'female'", "' Female'", "'FEMALE'", "'Female'"):
        assert v in msg, msg
    assert "case" in msg and "clean" in msg, msg


class _Logit(torch.nn.Module):
    def forward(self, x):
        return x[:, 0] + 2 * x[:, 3] - 1


# --------------------------------------------------------------------------- 5. warnings


def test_a_black_box_fitted_on_a_frame_prints_no_feature_name_warning(tmp_path):
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    X, c, noise = _world()
    y = (X.x1 + 1.5 * X.proxy + 0.3 * noise > 0.75).astype(int)
    rf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    sio.dump(rf, tmp_path / "rf.skops")
    X.assign(gender=c).to_csv(tmp_path / "d.csv", index=False)
    rc, _, err = cli("--model", tmp_path / "rf.skops", "--data", tmp_path / "d.csv",
                     "--protected", "gender", "--out", tmp_path / "out", *CLI)
    assert rc == 0, err
    assert "valid feature names" not in err, err
    with warnings.catch_warnings():  # in Python too
        warnings.filterwarnings("error", message=".*valid feature names.*")
        faux.audit(rf, X, c, **KW)


def test_help_shows_the_new_flags_with_their_defaults(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--task {auto,classification,regression}" in text
    assert "(default auto)" in text
    assert "--positive-label VALUE" in text
    args = build_parser().parse_args(["audit", "--model", "m", "--data", "d", "--protected",
                                      "s"])
    assert args.task == "auto" and args.positive_label is None
