"""SIGTERM ends `faux audit` the way Ctrl-C does: exit 143, one line on stderr, nothing left
behind (no staging folder), the previous handlers restored; during the final moves into
place it waits and the outputs complete."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import joblib
import numpy as np
import pytest
import torch

import faux
import faux.audit.core as core
import faux.audit.report.outputs as outputs
from faux.audit.cli import EXIT_OK, main
from faux.audit.interrupts import Terminated
from test_audit_cli import Proxy
from test_audit_cli import _frame as _cli_frame

ROOT = Path(__file__).resolve().parents[1]
EXIT_TERMINATED = 143
TERMINATED = "faux audit: terminated; nothing written\n"

pytestmark = pytest.mark.skipif(
    signal.getsignal(signal.SIGTERM) != signal.SIG_DFL,
    reason="the test process has its own SIGTERM handler, which the audit leaves alone")


class SlowProxy:
    """A black box slow enough to be caught while scoring (pickled for the child process)."""

    def predict_proba(self, x):
        time.sleep(2e-4 * len(x))  # about 10 ms per 50-row batch
        z = 0.5 * x[:, 0] + 4.0 / (1 + np.exp(-8 * x[:, 1])) * (x[:, 3] - 0.5)
        p = 1 / (1 + np.exp(-z))
        return np.column_stack([1 - p, p])


def _frame(n=300, seed=0):
    return _cli_frame(n, seed)


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


def _tree(folder):
    out = {}
    for root, dirs, names in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder)] = None
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, folder)] = Path(p).read_bytes()
    return out


def _raise_sigterm():
    """SIGTERM to this process, unless nothing handles it (it would end the test run)."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        raise AssertionError("no SIGTERM handler while the audit runs")
    signal.raise_signal(signal.SIGTERM)


def _term():
    _raise_sigterm()
    raise AssertionError("SIGTERM was not turned into an exception")


def _term_in_aux_training(monkeypatch):
    from faux.audit.scores.aux_family import MemberStack
    from faux.models.mlp import BinaryClassifier

    monkeypatch.setattr(BinaryClassifier, "training_step", lambda self, *a, **k: _term())
    monkeypatch.setattr(MemberStack, "forward", lambda self, *a, **k: _term())  # stacked aux


def _term_while_scoring(monkeypatch):
    from faux.audit.scores.scoring import Scorer

    real, calls = Scorer.score, []

    def score(self, x):
        calls.append(1)
        if len(calls) > 3:  # past the sample's scores: the pass over the file
            _term()
        return real(self, x)

    monkeypatch.setattr(Scorer, "score", score)


def _term_inside_a_finaliser(monkeypatch):
    """SIGTERM while Python runs a ``__del__`` (as during garbage collection): the handler's
    exception is swallowed there ("Exception ignored in ...")."""
    class Dropped:
        def __del__(self):
            _raise_sigterm()

    real = core.stages.score

    def score(*stage_results):
        Dropped()  # finalised at once; the signal's exception is lost in __del__
        return real(*stage_results)

    monkeypatch.setattr(core.stages, "score", score)


def _term_while_writing(monkeypatch):
    import faux.audit.report.page

    monkeypatch.setattr(faux.audit.report.page, "write_report", lambda *a, **k: _term())


@pytest.mark.parametrize("where", [_term_in_aux_training, _term_while_scoring,
                                   _term_inside_a_finaliser, _term_while_writing])
@pytest.mark.parametrize("fresh", [True, False])
def test_sigterm_exits_143_and_leaves_nothing(files, capsys, monkeypatch, where, fresh):
    tmp, data, model = files
    out = tmp / "deep" / "out"
    base = ["--model", model, "--data", data, "--protected", "gender", "--out", out,
            "--batch-size", "50", "--threshold", "0.1"]
    if not fresh:  # an earlier output stays as it was
        assert run(capsys, *base)[0] == EXIT_OK
    before = _tree(tmp)
    where(monkeypatch)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    rc, err = run(capsys, *base)
    assert rc == EXIT_TERMINATED
    assert err.endswith(TERMINATED) and err.count("\n") <= 2  # (and Python's "ignored" line)
    assert _tree(tmp) == before
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


def test_python_api_raises_terminated_a_system_exit_143(tmp_path, monkeypatch):
    _term_while_writing(monkeypatch)
    df = _frame(200)
    with pytest.raises(SystemExit) as e:
        faux.audit(Proxy(), df.drop(columns="gender"), df.gender.values, aux_epochs=2,
                   progress=False, out_dir=tmp_path / "out", threshold=0.1)
    assert isinstance(e.value, Terminated) and e.value.code == EXIT_TERMINATED
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.parametrize("earlier,handled", [
    (False, (signal.SIGTERM,)), (True, (signal.SIGINT, signal.SIGTERM))],
    ids=["sigterm", "both-after-an-audit-ended-by-sigterm"])
def test_a_handler_of_the_caller_is_left_alone(tmp_path, earlier, handled):
    """The caller's handler gets the SIGTERM its model raises, and the audit completes; also
    after an audit ended by SIGTERM (the record of received signals is the process's) with
    handlers for both signals, so that the audit installs none."""
    df = _frame(200)
    X, c = df.drop(columns="gender"), df.gender.values
    if earlier:
        class Ends(Proxy):
            def forward(self, x):
                signal.raise_signal(signal.SIGTERM)
                return super().forward(x)

        with pytest.raises(Terminated):
            faux.audit(Ends(), X, c, aux_epochs=2, progress=False, out_dir=tmp_path / "first",
                       threshold=0.1)
    seen = []

    def mine(signum, frame):
        seen.append(signum)

    prev = {sig: signal.signal(sig, mine) for sig in handled}
    try:
        class Model(Proxy):
            def forward(self, x):
                if not seen:
                    signal.raise_signal(signal.SIGTERM)
                return super().forward(x)

        res = faux.audit(Model(), X, c, aux_epochs=2, progress=False,
                         out_dir=tmp_path / "out", threshold=0.1)
        assert seen == [signal.SIGTERM] and res.out_dir == tmp_path / "out"
        assert all(signal.getsignal(sig) is mine for sig in handled)
    finally:
        for sig, handler in prev.items():
            signal.signal(sig, handler)


def test_sigterm_while_moving_into_place_waits_and_the_outputs_complete(files, capsys,
                                                                        monkeypatch):
    tmp, data, model = files
    out = tmp / "out"
    real = outputs._write_json_atomic

    def write(path, obj):
        _raise_sigterm()
        return real(path, obj)

    monkeypatch.setattr(outputs, "_write_json_atomic", write)
    rc, err = run(capsys, "--model", model, "--data", data, "--protected", "gender",
                  "--out", out, "--threshold", "0.1")
    assert rc == EXIT_OK, err
    assert "they are complete" in err
    assert sorted(p.name for p in out.iterdir()) == [
        ".faux-audit.json", "report.html", "scores.parquet", "summary.json"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def _staging_with_scores(folder: Path):
    """The staging folder of a new --out once the pass over the rows has written scores."""
    for p in folder.iterdir():
        if ".tmp-" in p.name and p.is_dir() and (p / "scores.parquet").exists():
            return p
    return None


def test_sigterm_to_a_child_process_while_scoring(tmp_path):
    """The real thing: SIGTERM to a `faux audit` process while it scores the file."""
    data = tmp_path / "people.csv"
    _frame(3000).to_csv(data, index=False)
    model = tmp_path / "slow.joblib"
    joblib.dump(SlowProxy(), model)
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    cmd = [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(model),
           "--trust-pickle", "--data", str(data), "--protected", "gender", "--out",
           str(tmp_path / "out"), "--aux-epochs", "2", "--aux-seeds", "1", "--threshold",
           "0.1", "--methods", "faux", "--sample", "500", "--batch-size", "50",
           "--no-progress"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        deadline = time.monotonic() + 240
        staging = None
        while staging is None and proc.poll() is None and time.monotonic() < deadline:
            staging = _staging_with_scores(tmp_path)
            time.sleep(0.01)
        assert staging is not None, proc.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_TERMINATED, err
    lines = [ln for ln in err.splitlines() if "pickle" not in ln]
    assert lines == [TERMINATED.strip()], err
    assert out == ""
    assert not (tmp_path / "out").exists() and not staging.exists()
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def _cli_child(tmp_path, *extra, pre=""):
    """A `faux audit` process (the console entry point) on a small file, and its --out."""
    data = tmp_path / "people.csv"
    _frame(300).to_csv(data, index=False)
    model = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Proxy()), model)
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    args = ["audit", "--model", str(model), "--data", str(data), "--protected", "gender",
            "--out", str(tmp_path / "out"), "--aux-epochs", "2", "--aux-seeds", "1",
            "--no-progress", *extra]
    code = f"{pre}\nimport sys; sys.argv = ['faux', *{args!r}]\nfrom faux.audit.cli import " \
           "console; console()"
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("gate, status", [([], EXIT_OK), (["--max-flagged-rate", "0"], 1)])
def test_a_signal_after_the_outputs_are_written_keeps_the_audits_status(tmp_path, gate,
                                                                         status):
    """The interpreter's shutdown after the summary (held open here by an exit hook that
    waits) is no time for SIGTERM to replace the gate's status with 143."""
    pre = "import atexit, time; atexit.register(time.sleep, 60)"
    proc = _cli_child(tmp_path, *gate, pre=pre)
    try:
        first = proc.stdout.readline()          # the summary: the outputs are in place
        assert first.startswith("audited "), proc.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, err
    assert "SIGTERM after the outputs were written" in err
    assert (tmp_path / "out" / "summary.json").exists()


def test_repeated_sigterms_exit_143_once_and_leave_nothing(tmp_path):
    """SIGTERM every few milliseconds from the moment the audit reads its data until it
    ends: one line, 143, no staging folder, whatever moment each one lands."""
    proc = _cli_child(tmp_path, "--sample", "300")
    try:
        while proc.poll() is None and not list(tmp_path.glob(".out.tmp-*")):
            time.sleep(0.005)
        for _ in range(400):
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.005)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_TERMINATED, err
    assert err.strip().splitlines()[-1] == TERMINATED.strip(), err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []
