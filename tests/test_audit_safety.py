"""`faux audit` as a careless or hostile user meets it: it writes only into what it owns,
refuses every bad flag in one line before reading the data, writes with unique temporary
names, exits 130 on Ctrl-C leaving nothing behind, and records a trusted pickle."""

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import joblib
import pandas as pd
import pytest
import torch

import faux
import faux.audit.core as core
import faux.audit.inputs
import faux.audit.report.outputs as outputs
import faux.audit.settings as settings
import faux.audit.stages as stages
from faux.audit.cli import EXIT_GATE, EXIT_INPUT, EXIT_OK, build_parser, main
from faux.errors import ConfigError
from test_audit_cli import Proxy
from test_audit_cli import _frame as _cli_frame

EXIT_INTERRUPTED = 130
MARKER = ".faux-audit.json"


def _frame(n=300, seed=0):
    return _cli_frame(n, seed)


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "people.csv"
    _frame().to_csv(data, index=False)
    model = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Proxy()), model)
    return tmp_path, data, model


@pytest.fixture
def pickled(tmp_path):
    from sklearn.linear_model import LogisticRegression

    df = _frame()
    lr = LogisticRegression().fit(df[["x1", "x2", "x3", "proxy"]].values, df.x1 > 0)
    path = tmp_path / "model.joblib"
    joblib.dump(lr, path)
    return path


def run(capsys, *args):
    rc = main(["audit", "--aux-epochs", "2", "--no-progress", *map(str, args)])
    cap = capsys.readouterr()
    return rc, cap.err


def _tree(folder):
    """Every path under ``folder`` with its bytes (folders: None)."""
    out = {}
    for root, dirs, names in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder)] = None
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = f.read()
    return out


def _one_line(err, *needles):
    assert err.count("\n") == 1 and err.startswith("faux audit: error:"), err
    for n in needles:
        assert n in err, (n, err)


def _boom(*a, **k):
    raise AssertionError("the audit started its work before refusing")


@pytest.fixture
def no_scan(monkeypatch):
    """Fail loudly if the audit scans the data or trains the aux."""
    import faux.audit.scores.aux

    monkeypatch.setattr(stages, "scan", _boom)
    monkeypatch.setattr(faux.audit.scores.aux, "train_aux", _boom)


@pytest.fixture
def no_work(no_scan, monkeypatch):
    """Fail loudly if the audit even opens the data file (to read its header)."""
    monkeypatch.setattr(faux.audit.inputs, "open_source", _boom)


# --------------------------------------------------------------------------- --out ownership


def test_out_naming_a_folder_of_other_files_is_refused_and_left_alone(files, capsys):
    tmp, data, model = files
    (tmp / "notes").mkdir()
    (tmp / "notes" / "todo.txt").write_text("keep me")
    before = _tree(tmp)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp)  # the folder holding the model and the data
    assert rc == EXIT_INPUT
    _one_line(err, "--force", str(tmp))
    assert _tree(tmp) == before


def test_out_naming_an_existing_file_is_refused_even_with_force(files, capsys):
    tmp, data, model = files
    target = tmp / "results.txt"
    target.write_text("mine")
    before = _tree(tmp)
    for extra in ([], ["--force"]):
        rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                      "--out", target, *extra)
        assert rc == EXIT_INPUT
        _one_line(err, "results.txt", "is a file")
        assert _tree(tmp) == before


def test_out_dot_is_refused_in_a_used_folder_and_works_in_an_empty_one(files, capsys,
                                                                        monkeypatch):
    tmp, data, model = files
    monkeypatch.chdir(tmp)
    before = _tree(tmp)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", ".")
    assert rc == EXIT_INPUT
    _one_line(err, "--force")
    assert _tree(tmp) == before
    empty = tmp / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", ".")
    assert rc == EXIT_OK, err
    assert sorted(p.name for p in empty.iterdir()) == sorted(
        [MARKER, "report.html", "scores.parquet", "summary.json"])
    marker = json.loads((empty / MARKER).read_text())
    summary = json.loads((empty / "summary.json").read_text())
    assert marker["schema_version"] == summary["schema_version"] == outputs.SUMMARY_SCHEMA
    assert sorted(marker["files"]) == ["report.html", "scores.parquet", "summary.json"]
    # a second run into its own previous output is allowed and replaces it
    rc, _ = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                "--out", ".", "--methods", "faux")
    assert rc == EXIT_OK
    assert json.loads((empty / "summary.json").read_text())["settings"]["methods"] == ["faux"]
    assert [p.name for p in empty.iterdir() if ".tmp" in p.name] == []


def test_force_writes_beside_other_files_and_never_replaces_them(files, capsys):
    tmp, data, model = files
    out = tmp / "shared"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out]
    rc, err = run(capsys, *base)
    assert rc == EXIT_INPUT
    _one_line(err, "--force", "notes.txt")
    rc, err = run(capsys, *base, "--force")
    assert rc == EXIT_OK, err
    assert (out / "notes.txt").read_text() == "keep me"
    assert {"summary.json", "scores.parquet", "report.html", MARKER} <= {
        p.name for p in out.iterdir()}
    # now a previous audit output (its marker): a rerun needs no --force, notes.txt stays
    rc, err = run(capsys, *base)
    assert rc == EXIT_OK, err
    assert (out / "notes.txt").read_text() == "keep me"
    # a file the audit would write but did not: refused, even with --force
    other = tmp / "other"
    other.mkdir()
    (other / "summary.json").write_text('{"mine": true}')
    for extra in ([], ["--force"]):
        rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                      "--out", other, *extra)
        assert rc == EXIT_INPUT
        _one_line(err, "summary.json")
        assert (other / "summary.json").read_text() == '{"mine": true}'
        assert sorted(p.name for p in other.iterdir()) == ["summary.json"]


def test_only_the_files_the_marker_lists_are_replaced(files, capsys):
    tmp, data, model = files
    out = tmp / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out]
    assert run(capsys, *base)[0] == EXIT_OK
    marker = json.loads((out / MARKER).read_text())
    marker["files"] = [f for f in marker["files"] if f != "report.html"]
    (out / MARKER).write_text(json.dumps(marker))
    (out / "report.html").write_text("the user's own page")
    for extra in ([], ["--force"]):
        rc, err = run(capsys, *base, *extra)
        assert rc == EXIT_INPUT
        _one_line(err, "report.html")
        assert (out / "report.html").read_text() == "the user's own page"


def test_an_output_of_an_earlier_version_without_marker_is_replaced(files, capsys):
    tmp, data, model = files
    out = tmp / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out]
    assert run(capsys, *base)[0] == EXIT_OK
    (out / MARKER).unlink()  # what the audit wrote before it had a marker
    rc, err = run(capsys, *base, "--methods", "faux")
    assert rc == EXIT_OK, err
    assert (out / MARKER).exists()


def test_python_api_follows_the_same_rule(tmp_path):
    df = _frame(200)
    X, c = df.drop(columns="gender"), df.gender.values
    (tmp_path / "keep.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="force"):
        faux.audit(Proxy(), X, c, out_dir=tmp_path, aux_epochs=2, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    res = faux.audit(Proxy(), X, c, out_dir=tmp_path, aux_epochs=2, progress=False,
                     force=True)
    assert res.out_dir == tmp_path and (tmp_path / "keep.txt").read_text() == "keep me"
    assert (tmp_path / MARKER).exists()
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        faux.audit(Proxy(), X, c, out_dir=f, aux_epochs=2, progress=False, force=True)


# --------------------------------------------------------------------------- flags first


@pytest.mark.parametrize("h", ["1e6", "inf", "-inf", "nan", "0", "-1", "1.5"])
def test_bad_fd_step_is_refused_before_any_work(files, capsys, no_work, h):
    tmp, data, model = files
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp / "out", f"--fd-step={h}")
    assert rc == EXIT_INPUT
    _one_line(err, "--fd-step", "standard deviations")
    assert not (tmp / "out").exists()


def test_fd_step_bounds_are_in_help_and_default_is_well_inside(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"at most {settings.FD_STEP_MAX:g}" in text and f"above {settings.FD_STEP_WARN:g}" in text
    assert 0 < 0.1 < settings.FD_STEP_WARN / 2 < settings.FD_STEP_MAX
    with pytest.raises(ConfigError, match="fd_step"):
        faux.audit(Proxy(), _frame(50).drop(columns="gender"), _frame(50).gender.values,
                   fd_step=math.inf, progress=False)


def test_coarse_fd_step_warns_once_for_a_black_box(pickled, capsys):
    from faux.audit.loaders.models import load_model

    df = _frame(200)
    box = load_model(pickled, 4, trust_pickle=True, exact=False)
    capsys.readouterr()
    with pytest.warns(faux.FauxAuditWarning) as got:
        res = faux.audit(box, df.drop(columns="gender"), df.gender.values, methods=["faux"],
                         fd_step=0.5, aux_epochs=2, progress=False)
    steps = [str(w.message) for w in got if "--fd-step" in str(w.message)]
    assert len(steps) == 1 and "--fd-step 0.5" in steps[0] and "\n" not in steps[0], steps
    assert steps[0] in res.warnings
    assert res.summary["scoring"]["fd_step_std"] == 0.5


@pytest.mark.parametrize("args,needle", [
    (["--seed", "-1"], "seed"),
    (["--methods", "faux_ig", "--no-exact"], "faux_ig"),  # a black box cannot run IG
    (["--aux", "adel"], "--label"),
    (["--out", "/proc/faux-audit-cannot-write/out"], "cannot write"),
    (["--alpha", "0"], "--alpha"), (["--alpha", "1.5"], "--alpha"),
    (["--alpha", "nan"], "--alpha"), (["--null-permutations", "0"], "--null-permutations"),
    (["--fdr", "--threshold", "0.1"], "--fdr"),
])
def test_other_bad_flags_are_refused_before_the_scan(files, pickled, capsys, no_scan, args,
                                                     needle):
    tmp, data, _ = files
    base = ["--model", pickled, "--trust-pickle", "--data", data, "--protected", "gender"]
    if "--out" not in args:
        base += ["--out", tmp / "out"]
    rc, err = run(capsys, *base, *args)
    assert rc == EXIT_INPUT
    lines = [ln for ln in err.splitlines() if "warning" not in ln]  # the pickle warning
    _one_line("\n".join(lines) + "\n", needle)
    assert not (tmp / "out").exists()


def test_out_below_a_file_is_refused_before_any_work(files, capsys, no_work):
    tmp, data, model = files
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", data / "out")
    assert rc == EXIT_INPUT
    _one_line(err, "people.csv")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_parent_is_refused_before_any_work(files, capsys, no_work):
    tmp, data, model = files
    ro = tmp / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                      "--out", ro / "sub" / "out")
    finally:
        ro.chmod(0o700)
    assert rc == EXIT_INPUT
    _one_line(err, "cannot write")


@pytest.mark.parametrize("kw,needle", [
    ({"seed": -1}, "seed"), ({"aux_width": 0}, "aux_width"), ({"aux_depth": -1}, "aux_depth"),
    ({"threshold": float("nan")}, "threshold"), ({"fail_above": -0.1}, "fail_above"),
    ({"protected_type": "ordinal"}, "protected_type"), ({"aux": "svm"}, "aux"),
    ({"fd_step": 0.0}, "fd_step"),
])
def test_python_api_refuses_bad_settings_before_any_work(no_work, kw, needle):
    df = _frame(50)
    with pytest.raises(ConfigError, match=needle):
        faux.audit(Proxy(), df.drop(columns="gender"), df.gender.values, progress=False, **kw)


# --------------------------------------------------------------------------- concurrency


def test_concurrent_audits_into_one_folder_and_its_siblings_all_finish(files, monkeypatch):
    tmp, data, model = files
    barrier = threading.Barrier(3, timeout=120)
    real = core.move_into_place

    def together(*a, **k):
        barrier.wait()  # all three move their outputs into place at the same moment
        return real(*a, **k)

    core.audit(str(model), data=str(data), protected="gender", out_dir=tmp / "same",
               methods=["faux"], aux_epochs=2, progress=False, report=False)
    monkeypatch.setattr(core, "move_into_place", together)
    outs = [tmp / "same", tmp / "same", tmp / "sibling"]
    errors = []

    def one(out, methods):
        try:
            core.audit(str(model), data=str(data), protected="gender", out_dir=out,
                       methods=methods, aux_epochs=2, progress=False, report=False)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)
            barrier.abort()

    threads = [threading.Thread(target=one, args=(o, m))
               for o, m in zip(outs, (["faux"], ["faux", "faux_ng"], ["faux"]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for out in (tmp / "same", tmp / "sibling"):
        s = json.loads((out / "summary.json").read_text())
        cols = pd.read_parquet(out / "scores.parquet").columns
        assert [m for m in cols if m.startswith("faux")] == s["settings"]["methods"]
    left = [p.name for p in tmp.rglob("*") if ".tmp" in p.name or ".old-" in p.name]
    assert left == []


def test_a_folder_named_like_an_old_temporary_name_is_not_touched(files, capsys):
    tmp, data, model = files
    out = tmp / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out]
    assert run(capsys, *base)[0] == EXIT_OK
    stale = tmp / f".out.old-{os.getpid()}"  # a name an audit once used for every rerun
    stale.mkdir()
    (stale / "keep.txt").write_text("keep me")
    rc, err = run(capsys, *base, "--methods", "faux")
    assert rc == EXIT_OK, err
    assert (stale / "keep.txt").read_text() == "keep me"
    assert json.loads((out / "summary.json").read_text())["settings"]["methods"] == ["faux"]


# --------------------------------------------------------------------------- interrupts


def _interrupt_in_aux_training(monkeypatch, how):
    from faux.audit.scores.aux_family import MemberStack
    from faux.models.mlp import BinaryClassifier

    def step(self, *a, **k):
        if how == "signal":
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, delivered to this process
        raise KeyboardInterrupt

    monkeypatch.setattr(BinaryClassifier, "training_step", step)  # one aux through Lightning
    monkeypatch.setattr(MemberStack, "forward", step)  # the audit's stacked aux training


def _interrupt_while_scoring(monkeypatch, how):
    from faux.audit.scores.scoring import Scorer

    def score(self, x):
        raise KeyboardInterrupt

    monkeypatch.setattr(Scorer, "score", score)


def _interrupt_while_writing(monkeypatch, how):
    import faux.audit.report.page

    def report(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(faux.audit.report.page, "write_report", report)


@pytest.mark.parametrize("where,how", [
    (_interrupt_in_aux_training, "signal"), (_interrupt_in_aux_training, "raise"),
    (_interrupt_while_scoring, "raise"), (_interrupt_while_writing, "raise"),
])
@pytest.mark.parametrize("fresh", [True, False])
def test_ctrl_c_exits_130_and_leaves_nothing(files, capsys, monkeypatch, where, how, fresh):
    tmp, data, model = files
    out = tmp / "deep" / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out]
    if not fresh:  # a previous output stays as it was
        assert run(capsys, *base)[0] == EXIT_OK
    before = _tree(tmp)
    where(monkeypatch, how)
    handler = signal.getsignal(signal.SIGINT)
    rc, err = run(capsys, *base)
    assert rc == EXIT_INTERRUPTED
    assert err == "faux audit: interrupted; nothing written\n"
    assert _tree(tmp) == before
    assert signal.getsignal(signal.SIGINT) is handler


def test_ctrl_c_in_a_child_process(files, pickled):
    """The real thing: SIGINT to a `faux audit` process during its aux training."""
    tmp, data, _ = files
    big = tmp / "big.csv"
    _frame(100_000).to_csv(big, index=False)  # about 8 s of aux training
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(pickled),
           "--trust-pickle", "--data", str(big), "--protected", "gender", "--out",
           str(tmp / "out"), "--aux-epochs", "400", "--no-progress", "--sample", "100000"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = proc.stderr.readline()  # the pickle warning: the model is loaded
    assert "pickle" in line
    time.sleep(4)  # the scan, then into the aux training (any moment must give 130)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert err.strip().splitlines() == ["faux audit: interrupted; nothing written"]
    assert not (tmp / "out").exists()
    assert [p.name for p in tmp.iterdir() if ".tmp" in p.name] == []


def test_exit_codes_are_in_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for code in ("0 =", "1 = gate failed", "2 = bad input", "130 = interrupted"):
        assert code in text, code
    assert EXIT_GATE == 1


# --------------------------------------------------------------------------- pickle trust


def test_trusted_pickle_is_warned_about_and_recorded(files, pickled, capsys):
    tmp, data, model = files
    out = tmp / "out"
    rc, err = run(capsys, "--model", pickled, "--trust-pickle", "--data", data, "--protected",
                  "gender", "--out", out, "--methods", "faux")
    assert rc == EXIT_OK
    warn = [ln for ln in err.splitlines() if "pickle" in ln]
    assert len(warn) == 1 and warn[0].startswith("faux audit: warning:"), err
    assert str(pickled) in warn[0]
    sha = hashlib.sha256(pickled.read_bytes()).hexdigest()
    m = json.loads((out / "summary.json").read_text())["model"]
    assert m["file"] == str(pickled) and m["sha256"] == sha and m["loader"] == "pickle"
    assert m["class"] == "sklearn.linear_model._logistic.LogisticRegression"
    assert {"source", "kind", "differentiable"} <= set(m)  # the keys it had
    html = (out / "report.html").read_text()
    assert sha in html and "pickle" in html
    # a TorchScript file: recorded, no warning; a refused pickle: no warning either
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", tmp / "out2")
    assert rc == EXIT_OK and "warning" not in err
    m = json.loads((tmp / "out2" / "summary.json").read_text())["model"]
    assert m["loader"] == "torch.jit" and m["sha256"] == hashlib.sha256(
        model.read_bytes()).hexdigest()
    rc, err = run(capsys, "--model", pickled, "--data", data, "--protected", "gender",
                  "--out", tmp / "out3")
    assert rc == EXIT_INPUT and "warning" not in err
