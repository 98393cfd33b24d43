"""``--engine ray``: the same answer as the local engine (a TorchScript model, a skops
Pipeline with its own encoders, a LightGBM model) on a local Ray of 2 CPUs, started once for
the module; the inputs it refuses in one line before anything is written."""

import json
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faux.audit.cli import main
from faux.errors import ConfigError, DataError

ray = pytest.importorskip("ray")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_world import proxy_world  # noqa: E402

#: summary.json keys that differ between two identical runs (time, place) or by engine
VOLATILE = {"seconds", "seconds_total", "rows_per_s", "timings", "file", "out_dir", "engine"}


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray of 2 CPUs for the module (the audits join it and leave it running).
    ``ray.init`` installs its own SIGINT/SIGTERM handlers in this process and shutdown does
    not restore them: the handlers before it are put back, for the tests that follow."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    ray.init(num_cpus=2, _temp_dir="/tmp/faux-ray-tests", include_dashboard=False,
             log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _stable(obj, skip=()):
    if isinstance(obj, dict):
        return {k: _stable(v, skip) for k, v in obj.items() if k not in VOLATILE
                and k not in skip}
    if isinstance(obj, list):
        return [_stable(v, skip) for v in obj]
    return obj


def _outputs(out: Path, skip=()) -> tuple[pd.DataFrame, dict]:
    scores = pd.read_parquet(out / "scores.parquet")
    return scores, _stable(json.loads((out / "summary.json").read_text()), skip)


def _same(local: Path, on_ray: Path, n_rows: int, batch: int, skip=()) -> dict:
    """The two runs' scores and summaries equal (timings and places aside); the Ray run's
    scores one file per batch, row ids 0 .. n - 1. Returns the Ray run's summary."""
    a, sa = _outputs(local, skip)
    b, sb = _outputs(on_ray, skip)
    parts = sorted(p.name for p in (on_ray / "scores.parquet").iterdir())
    assert parts == [f"part-{i:06d}.parquet" for i in range(-(-n_rows // batch))]
    assert b["row_id"].tolist() == list(range(n_rows))
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert sa == sb
    summary = json.loads((on_ray / "summary.json").read_text())
    assert summary["scoring"]["engine"]["name"] == "ray"
    return summary


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    """3,000 rows of the planted-proxy world with a gender and a region column, a 0/1 label,
    as one Parquet file and as a folder of three files of the same rows, in row groups of
    400 rows."""
    tmp = tmp_path_factory.mktemp("ray-people")
    X, c = proxy_world(3000, seed=0)
    rng = np.random.default_rng(3)
    df = X.assign(gender=np.array(["f", "m"])[c],
                  region=rng.choice(["north", "south", "west"], len(X)),
                  y=(X.x1 + X.proxy + rng.normal(size=len(X)) > 0.5).astype(int))
    # row groups of 400 rows: the batches cross them, and Ray must hand them out in order
    df.to_parquet(tmp / "people.parquet", index=False, row_group_size=400)
    (tmp / "parts").mkdir()
    for i, (s, e) in enumerate([(0, 1100), (1100, 1200), (1200, 3000)]):
        df.iloc[s:e].to_parquet(tmp / "parts" / f"p{i}.parquet", index=False,
                                row_group_size=400)
    (tmp / "parts" / "_SUCCESS").write_text("")
    return tmp, df


def test_a_torchscript_model_on_a_folder_of_files_as_on_one_file(local_ray, people, tmp_path):
    """The aux counterfactual's passes; the folder's rows are the file's (row ids global):
    every output equal but the data's identity (a folder hashes its files)."""
    import torch

    import faux

    tmp, df = people

    class Proxy(torch.nn.Module):
        def forward(self, x):
            return 2.0 * x[:, 0] + 3.0 * (x[:, 3] - 0.5)

    model = tmp_path / "proxy.pt"
    torch.jit.save(torch.jit.script(Proxy()), model)
    kw = dict(protected="gender", features=["x1", "x2", "x3", "proxy"], aux_epochs=3,
              batch_size=700, counterfactual="aux", progress=False)
    faux.audit(str(model), data=str(tmp / "people.parquet"), out_dir=tmp_path / "local", **kw)
    # the Ray run replaces an earlier local output in place (its scores.parquet a file)
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    res = faux.audit(str(model), data=str(tmp / "parts"), out_dir=tmp_path / "ray",
                     engine="ray", workers=2, name="people", **kw)
    s = _same(tmp_path / "local", tmp_path / "ray", len(df), 700, skip={"provenance"})
    assert s["provenance"]["data"]["files"] == 3 and res.summary["scoring"]["engine"] == {
        "name": "ray", "workers": 2, "ray": "already running"}
    assert s["flagged"]["count"] > 0 and s["effects"]["gender"]["rows"]


def test_a_skops_pipeline_with_its_encoders(local_ray, people, tmp_path):
    """A black box after its encoders: transport effects, the sample's scores, outcomes."""
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    tmp, df = people
    pipe = Pipeline([("pre", ColumnTransformer([
        ("text", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["region"]),
        ("numbers", StandardScaler(), ["x1", "x2", "proxy"])])),
        ("gbt", HistGradientBoostingClassifier(max_iter=20, random_state=0))])
    pipe.fit(df[["region", "x1", "x2", "proxy"]], df["y"])
    sio.dump(pipe, tmp_path / "pipe.skops")
    argv = ["audit", "--model", str(tmp_path / "pipe.skops"), "--data",
            str(tmp / "people.parquet"), "--protected", "gender", "--label", "y",
            "--trust-type", "numpy.dtype", "--aux-epochs", "3", "--batch-size", "1000",
            "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "local")]) in (0, 1)
    assert main([*argv, "--out", str(tmp_path / "ray"), "--engine", "ray", "--workers",
                 "1"]) in (0, 1)
    s = _same(tmp_path / "local", tmp_path / "ray", len(df), 1000)
    assert s["outcomes"]["settings"]["label"] and s["scoring"]["rows_scored_are"] == "sample"
    assert _page(tmp_path / "local") == _page(tmp_path / "ray")


def _page(out: Path) -> str:
    """report.html without what differs between two runs: its time, and the token that
    names each table's sort buttons (drawn for every page)."""
    import re

    html = (out / "report.html").read_text()
    html = re.sub(r"<td>time</td><td>[^<]*</td>", "<td>time</td><td></td>", html)
    return re.sub(r'name="sort-(\d+)-[0-9a-f]+"', r'name="sort-\1"', html)


def test_a_lightgbm_model_by_score_and_fdr_with_two_attributes(local_ray, people, tmp_path):
    """The score verdict's Benjamini-Hochberg cut (the flags of every part file rewritten),
    two attributes and their intersection, from a glob."""
    import lightgbm as lgb

    tmp, df = people
    X = df[["x1", "x2", "x3", "proxy"]]
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 8,
                         "deterministic": True, "num_threads": 1},
                        lgb.Dataset(X.values, df["y"]), 20)
    booster.save_model(tmp_path / "lgbm.txt")
    argv = ["audit", "--model", str(tmp_path / "lgbm.txt"), "--protected", "gender",
            "region", "--features", "x1", "x2", "x3", "proxy", "--verdict", "score",
            "--fdr", "--aux-epochs", "3", "--batch-size", "800", "--no-progress"]
    assert main([*argv, "--data", str(tmp / "people.parquet"), "--out",
                 str(tmp_path / "local")]) in (0, 1)
    assert main([*argv, "--data", str(tmp / "parts" / "p*.parquet"), "--out",
                 str(tmp_path / "ray"), "--engine", "ray"]) in (0, 1)
    s = _same(tmp_path / "local", tmp_path / "ray", len(df), 800,
              skip={"provenance", "name"})
    assert s["calibration"]["rule"] == "benjamini-hochberg"
    assert len(s["groups"]["views"]) == 3  # gender, region and their intersection
    b = pd.read_parquet(tmp_path / "ray" / "scores.parquet")
    assert b["flagged"].sum() == s["flagged"]["count"]


def _refused(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("faux audit: error: "), err
    return err[0]


@pytest.fixture
def model_file(tmp_path):
    import torch

    class Lin(torch.nn.Module):
        def forward(self, x):
            return x[:, 0]

    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(Lin()), path)
    return path


def test_bad_inputs_are_one_line_and_write_nothing(tmp_path, capsys, model_file):
    out = tmp_path / "out"
    base = ["audit", "--model", str(model_file), "--protected", "c", "--engine", "ray",
            "--out", str(out), "--no-progress"]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pd.DataFrame({"a": [1.0, 2.0], "c": [0, 1]}).to_parquet(mixed / "1.parquet")
    pd.DataFrame({"a": ["x", "y"], "c": [0, 1]}).to_parquet(mixed / "2.parquet")
    assert "different columns: 2.parquet differs from 1.parquet (a is" in _refused(
        [*base, "--data", str(mixed)], capsys)
    assert "matches no file" in _refused([*base, "--data", str(tmp_path / "no*.parquet")],
                                         capsys)
    pd.DataFrame({"a": [1.0], "c": [0]}).to_csv(tmp_path / "d.csv", index=False)
    assert "reads Parquet files" in _refused([*base, "--data", str(tmp_path / "d.csv")],
                                             capsys)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "without Parquet files" in _refused([*base, "--data", str(empty)], capsys)
    assert "--engine ray" in _refused(
        ["audit", "--model", str(model_file), "--protected", "c", "--data",
         str(mixed / "1.parquet"), "--workers", "2", "--out", str(out)], capsys)
    assert not out.exists()
    with pytest.raises(ConfigError, match="data in memory"):
        import faux

        faux.audit(str(model_file), np.zeros((10, 1)), np.zeros(10), engine="ray")
    with pytest.raises(ConfigError, match="engine"):
        faux.audit(str(model_file), np.zeros((10, 1)), np.zeros(10), engine="spark")


def test_a_ray_address_that_does_not_answer_is_one_line(tmp_path, model_file, monkeypatch):
    """In a process of its own (this module's Ray is already running here)."""
    import socket
    import subprocess

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pd.DataFrame({"a": np.arange(300.0), "c": np.arange(300) % 2}).to_parquet(
        tmp_path / "d.parquet")
    out = tmp_path / "out"
    env = {**__import__("os").environ, "RAY_ADDRESS": f"127.0.0.1:{port}"}
    proc = subprocess.run([sys.executable, "-m", "faux.audit.cli", "audit", "--model",
                           str(model_file), "--data", str(tmp_path / "d.parquet"),
                           "--protected", "c", "--engine", "ray", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"RAY_ADDRESS=127.0.0.1:{port} does not answer within" \
        in lines[0], lines
    assert not out.exists()


@pytest.mark.parametrize("start,stop", [(0, 3000), (700, 1400), (1050, 1250), (2800, 3000),
                                        (1100, 1200), (0, 1)])
def test_any_rows_of_the_files_are_read_in_the_batches_from_their_start(people, start, stop):
    """Rows [start, stop) of a folder of files (row groups of 400 rows, files of 1,100, 100
    and 1,800 rows): the rows of the one table, in tables of exactly the batch size from
    ``start`` (across row groups and files), each one chunk."""
    from faux.audit.engine.dataset import open_dataset, read_rows

    tmp, df = people
    files = open_dataset(str(tmp / "parts")).files
    tables = list(read_rows(files, start, stop, 350, ["x1", "gender"]))
    sizes = [t.num_rows for t in tables]
    assert sum(sizes) == stop - start and all(n == 350 for n in sizes[:-1])
    assert all(t.column("x1").num_chunks == 1 for t in tables)
    got = pd.concat([t.to_pandas() for t in tables], ignore_index=True)
    pd.testing.assert_frame_equal(got, df[["x1", "gender"]].iloc[start:stop]
                                  .reset_index(drop=True))


def test_a_file_shorter_than_listed_is_one_line(people, tmp_path):
    from faux.audit.engine.dataset import open_dataset, read_rows

    tmp, df = people
    shutil.copytree(tmp / "parts", tmp_path / "parts")
    files = open_dataset(str(tmp_path / "parts")).files
    df.iloc[1200:2900].to_parquet(tmp_path / "parts" / "p2.parquet", index=False,
                                  row_group_size=400)
    with pytest.raises(DataError, match="p2.parquet has fewer rows than when the audit"):
        list(read_rows(files, 2000, 3000, 300, ["x1"]))


@pytest.mark.parametrize("n,group,batch,workers", [(10_000_000, 1 << 18, 65_536, 2),
                                                   (3000, 400, 700, 2), (3000, 400, 100, 1),
                                                   (5, 5, 10, 4), (1_000_000, 1 << 20,
                                                                   65_536, 2)])
def test_spans_are_whole_batches_that_cover_the_rows_once(n, group, batch, workers):
    from faux.audit.engine.dataset import IN_FLIGHT, SPANS_PER_WORKER, Files, spans

    groups = (group,) * (n // group) + ((n % group,) if n % group else ())
    got = spans(Files(("a",), (n,), (groups,)), batch, workers)
    assert got[0][0] == 0 and got[-1][1] == n
    assert all(a % batch == 0 and b > a for a, b in got)
    assert all(b == a2 for (_, b), (a2, _) in zip(got, got[1:], strict=False))
    n_batches = -(-n // batch)
    # about a row group each, fewer rows where that leaves too few spans per worker
    assert len(got) >= min(n_batches, SPANS_PER_WORKER * workers)
    assert all(b - a <= max(batch, -(-group // batch) * batch) for a, b in got)
    # the last ones a batch each: the workers end together
    assert all(b - a <= batch for a, b in got[-IN_FLIGHT * workers:])


def test_several_files_are_read_in_batches_across_their_ends(people):
    from faux.audit.engine.dataset import open_dataset

    tmp, df = people
    ds = open_dataset(str(tmp / "parts"))
    assert [Path(p).name for p in ds.files.paths] == ["p0.parquet", "p1.parquet", "p2.parquet"]
    assert ds.files.rows == (1100, 100, 1800)
    assert ds.files.groups == ((400, 400, 300), (100,), (400, 400, 400, 400, 200))
    batches = list(ds.source.batches(["x1", "proxy"], ["gender"], "y", 700))
    assert [b.start for b in batches] == [0, 700, 1400, 2100, 2800]
    assert [len(b.x) for b in batches] == [700, 700, 700, 700, 200]
    np.testing.assert_array_equal(np.concatenate([b.x for b in batches]),
                                  df[["x1", "proxy"]].to_numpy())
    assert open_dataset(str(tmp / "people.parquet")).source.name == "people"


def _ray_processes_of(driver_pid: int) -> list[int]:
    """The processes of the Ray a ``faux audit`` process (``driver_pid``) started: their
    command lines name its session folder (``session_<time>_<driver pid>``)."""
    import os

    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if f"_{driver_pid}/" in cmd and "faux-ray" in cmd:
                found.append(int(p))
    return found


@pytest.fixture(scope="module")
def bigger(tmp_path_factory):
    """60,000 planted-proxy rows and a TorchScript model of them."""
    import torch

    tmp = tmp_path_factory.mktemp("ray-bigger")
    X, c = proxy_world(60_000, seed=1)
    X.assign(gender=np.array(["f", "m"])[c]).to_parquet(tmp / "people.parquet", index=False)

    class Proxy(torch.nn.Module):
        def forward(self, x):
            return 2.0 * x[:, 0] + 3.0 * (x[:, 3] - 0.5)

    torch.jit.save(torch.jit.script(Proxy()), tmp / "proxy.pt")
    return tmp


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_retried_and_the_answer_is_the_same(local_ray, bigger,
                                                                     tmp_path):
    """Default settings on 60,000 rows in 30 batches; one actor is killed (SIGKILL) once a
    few batches are written: Ray restarts it and retries its batch, and the outputs are the
    local engine's."""
    import os
    import signal
    import threading

    import faux

    kw = dict(data=str(bigger / "people.parquet"), protected="gender", aux_epochs=3,
              batch_size=2000, progress=False)
    faux.audit(str(bigger / "proxy.pt"), out_dir=tmp_path / "local", **kw)
    killed = []

    def kill_one_actor():
        for _ in range(1200):
            staged = list(tmp_path.glob(".ray.tmp-*/scores.parquet/part-*"))
            actors = [p for p in _ray_actors()]
            if len(staged) >= 4 and actors:
                os.kill(actors[0], signal.SIGKILL)
                killed.append(actors[0])
                return
            threading.Event().wait(0.25)

    t = threading.Thread(target=kill_one_actor, daemon=True)
    t.start()
    faux.audit(str(bigger / "proxy.pt"), out_dir=tmp_path / "ray", engine="ray", workers=2,
               **kw)
    t.join(timeout=1)
    assert killed, "no actor was killed: the pass ended first"
    _same(tmp_path / "local", tmp_path / "ray", 60_000, 2000)


def _ray_actors() -> list[int]:
    """This process's Ray actors that score batches (descendants of this process)."""
    import os

    from faux.harness.procs import cmdline, descendants

    return [p for p in descendants(os.getpid()) if b"MapBatches(BatchScorer)" in cmdline(p)]


def _scoring(tmp_path, proc) -> bool:
    return bool(list(tmp_path.glob(".out.tmp-*/scores.parquet/part-*")))


def _waiting(tmp_path, proc) -> bool:
    """The actors started (they wait for the driver's fit) and no batch scored yet."""
    from faux.harness.procs import cmdline, descendants

    actors = [p for p in descendants(proc.pid) if b"MapBatches(BatchScorer)" in cmdline(p)]
    return bool(actors) and not _scoring(tmp_path, proc)


@pytest.mark.slow
@pytest.mark.parametrize("sig,status,line,when,epochs", [
    ("SIGINT", 130, "interrupted", _scoring, 3), ("SIGTERM", 143, "terminated", _scoring, 3),
    ("SIGINT", 130, "interrupted", _waiting, 60)],
    ids=["SIGINT-scoring", "SIGTERM-scoring", "SIGINT-fitting"])
def test_a_signal_while_the_actors_score_stops_everything(bigger, tmp_path, sig, status,
                                                         line, when, epochs):
    """``faux audit --engine ray`` starts its own Ray; a Ctrl-C (or SIGTERM) while the rows
    are scored, or while the driver still fits and the actors wait for it, ends it with its
    status and one line, nothing written and no Ray process left."""
    import signal
    import subprocess
    import threading

    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(bigger / "proxy.pt"),
         "--data", str(bigger / "people.parquet"), "--protected", "gender", "--aux-epochs",
         str(epochs), "--batch-size", "2000", "--engine", "ray", "--out", str(out)],
        stderr=subprocess.PIPE, text=True)
    reached = False
    while proc.poll() is None and not reached:
        reached = when(tmp_path, proc)
        threading.Event().wait(0 if reached else 0.1)
    assert reached, "the audit ended before the moment to stop it"
    proc.send_signal(getattr(signal, sig))
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == status
    assert f"faux audit: {line}; nothing written" in rest.splitlines()
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert _ray_processes_of(proc.pid) == []


def test_the_help_and_the_local_engine_do_not_import_ray():
    import subprocess

    code = ("import sys, contextlib, io, numpy as np\n"
            "from faux.audit.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['audit', '--help']) == 0\n"
            "import faux\n"
            "rng = np.random.default_rng(0)\n"
            "X = rng.normal(size=(400, 3)); c = (X[:, 0] + rng.normal(size=400) > 0) * 1\n"
            "faux.audit(lambda x: 1 / (1 + np.exp(-x[:, 0])), X, c, aux_epochs=1,\n"
            "           null_permutations=1, aux_seeds=1, progress=False, report=False)\n"
            "assert 'ray' not in sys.modules, 'ray imported'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_ray_failure_is_one_line():
    from faux.audit.engine.ray_pass import RayPassError, ray_failure

    err = ray_failure(ray.exceptions.RayError("ray::MapWorker.submit() (pid=1)\n  trace\n"
                                              "The actor died unexpectedly before finishing"))
    assert isinstance(err, RayPassError) and "\n" not in str(err)
    assert "RayError: The actor died unexpectedly before finishing" in str(err)


def _actors_of_the_pass() -> list[int]:
    """This process's Ray actors of a pass: the scoring ones and the mailbox."""
    import os

    from faux.harness.procs import cmdline, descendants

    return [p for p in descendants(os.getpid())
            if b"MapBatches(BatchScorer)" in cmdline(p) or b"ray::Mailbox" in cmdline(p)]


def test_an_audit_that_fails_before_its_pass_leaves_no_worker_running(local_ray, people,
                                                                      tmp_path):
    """The workers start with the session, before the rows are scanned; a model the scan
    refuses (it answers NaN) ends the audit with that one line, nothing written, and the
    waiting workers and their mailbox gone (the Ray, the caller's, left running)."""
    import time

    import torch

    import faux
    from faux.errors import FauxError

    class Undefined(torch.nn.Module):
        def forward(self, x):
            return x[:, 0] * float("nan")

    model = tmp_path / "nan.pt"
    torch.jit.save(torch.jit.script(Undefined()), model)
    tmp, _ = people
    with pytest.raises(FauxError):
        faux.audit(str(model), data=str(tmp / "parts"), out_dir=tmp_path / "out",
                   protected="gender", features=["x1", "x2", "x3", "proxy"], engine="ray",
                   workers=2, progress=False)
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == [model]
    for _ in range(100):  # Ray ends a finished pipeline's actors soon after, not at once
        if not _actors_of_the_pass():
            break
        time.sleep(0.1)
    assert _actors_of_the_pass() == []
    assert ray.is_initialized()


def test_the_command_prints_the_audits_lines_not_ray_datas(people, tmp_path, model_file):
    """``faux audit --engine ray`` on its own Ray: the audit's summary on stdout and no line
    of Ray Data's own (its execution plan, its progress, its start and end) on stderr."""
    import subprocess

    tmp, _ = people
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(model_file),
         "--data", str(tmp / "parts"), "--protected", "gender", "--features", "x1", "x2",
         "x3", "proxy", "--aux-epochs", "2", "--batch-size", "700", "--engine", "ray",
         "--workers", "2", "--no-progress", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("audited 3,000 rows")
    ray_data = [line for line in proc.stderr.splitlines()
                if "streaming_executor" in line or "Progress bars" in line
                or "ray.data" in line or "Dataset dataset_" in line]
    assert ray_data == []
    assert (out / "scores.parquet").is_dir()
