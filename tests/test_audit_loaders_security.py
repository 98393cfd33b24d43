"""Model files cannot choose to run code, and cannot hang or crash the audit.

Each hostile file here is a real file (``torch.export.save``, ``Booster.save_model``)
rewritten the way an attacker would; the payloads touch a marker file, and controls show
the same payload does run under the library's own loader, so the refusals are not vacuous.
"""

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from audit_world import proxy_world
from faux.audit.loaders.models import load_model
from faux.errors import ConfigError, DataError

SRC = str(Path(__file__).resolve().parents[1] / "src")
ENV = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}


class Boom:
    """Unpickling this runs ``touch <marker>``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _torch_pickle(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _rewrite(src: Path, dst: Path, edit, add=None) -> Path:
    """Copy the zip ``src`` to ``dst``; ``edit(name, bytes)`` returns the new bytes."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        root = zin.namelist()[0].split("/")[0]
        for info in zin.infolist():
            zout.writestr(info.filename, edit(info.filename.split("/", 1)[1],
                                              zin.read(info.filename)))
        for name, data in (add or {}).items():
            zout.writestr(f"{root}/{name}", data)
    return dst


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


@pytest.fixture
def pt2(tmp_path):
    """A clean dynamic-batch torch.export file of a 4-feature MLP, and the MLP."""
    net = _net().eval()
    dim = torch.export.Dim("batch")
    ep = torch.export.export(net, (torch.zeros(3, 4),), dynamic_shapes=({0: dim},))
    path = tmp_path / "clean.pt2"
    torch.export.save(ep, path)
    return path, net


def _pickled_weight(src, dst, marker):
    def edit(name, data):
        if name == "data/weights/model_weights_config.json":
            cfg = json.loads(data)
            first = next(iter(cfg["config"].values()))
            first["use_pickle"], first["path_name"] = True, "weight_0"
            return json.dumps(cfg).encode()
        return _torch_pickle(Boom(marker)) if name == "data/weights/weight_0" else data
    return _rewrite(src, dst, edit)


def _in_model_json(change):
    def edit(name, data):
        if name != "models/model.json":
            return data
        program = json.loads(data)
        change(program)
        return json.dumps(program).encode()
    return edit


def _first_expr(program, text):
    values = program["graph_module"]["graph"]["tensor_values"]
    values["input"]["sizes"][0]["as_expr"]["expr_str"] = text


def _hostile(kind, src, dst, marker):
    """A doctored copy of the clean archive ``src``: each kind is one way torch 2.13's
    loader runs code from the file."""
    cmd = f"__import__('os').system('touch {marker}')"
    if kind == "pickled weight":
        return _pickled_weight(src, dst, marker)
    if kind == "opaque constant":
        cfg = {"config": {"c": {"path_name": "opaque_obj_0", "is_param": False,
                                "use_pickle": True, "tensor_meta": None}}}

        def edit(name, data):
            return (json.dumps(cfg).encode()
                    if name == "data/constants/model_constants_config.json" else data)
        import pickle
        return _rewrite(src, dst, edit, {"data/constants/opaque_obj_0": pickle.dumps(
            Boom(marker))})
    if kind == "pickled sample inputs":
        return _rewrite(src, dst, lambda n, d: _torch_pickle(((Boom(marker),), {}))
                        if n == "data/sample_inputs/model.pt" else d)
    if kind == "symbolic expression":
        return _rewrite(src, dst, _in_model_json(lambda p: _first_expr(p, cmd)))
    if kind == "guard code":
        return _rewrite(src, dst, _in_model_json(
            lambda p: p.__setitem__("guards_code", [f"{cmd} == 0"])))
    if kind == "call by name":
        def target(p):
            p["graph_module"]["graph"]["nodes"][0]["target"] = "torch.os.system"
        return _rewrite(src, dst, _in_model_json(target))
    if kind == "native library":
        return _rewrite(src, dst, lambda n, d: d,
                        {"data/aotinductor/model/model.so": b"\x7fELF"})
    raise AssertionError(kind)


HOSTILE = ["pickled weight", "opaque constant", "pickled sample inputs",
           "symbolic expression", "guard code", "call by name", "native library"]
LIVE = ["pickled weight", "opaque constant", "pickled sample inputs", "symbolic expression",
        "guard code"]


def _python(code, timeout=240):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def test_control_torch_export_load_runs_the_payload(pt2, tmp_path):
    """Without the checks the payloads are live: torch.export.load, then .module() and a
    call, as the audit does, runs each of them (one interpreter loads every file in turn; a
    file whose load fails after its payload ran does not stop the next)."""
    evil = {kind: _hostile(kind, pt2[0], tmp_path / f"evil{i}.pt2", tmp_path / f"pwned{i}")
            for i, kind in enumerate(LIVE)}
    _python(f"""
        import torch
        for path in {[str(p) for p in evil.values()]!r}:
            try:
                torch.export.load(path).module()(torch.zeros(2, 4))
            except Exception:
                pass
    """)
    assert [k for i, k in enumerate(LIVE) if not (tmp_path / f"pwned{i}").exists()] == []


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_pt2_is_refused_and_runs_nothing(pt2, tmp_path, kind):
    marker = tmp_path / "pwned"
    evil = _hostile(kind, pt2[0], tmp_path / "evil.pt2", marker)
    with pytest.raises(ConfigError, match="--trust-pickle") as err:
        load_model(evil, 4)
    assert "\n" not in str(err.value) and "runs code" in str(err.value)
    assert not marker.exists()


def test_hostile_pt2_is_refused_by_the_cli_in_one_line(pt2, tmp_path):
    marker = tmp_path / "pwned"
    evil = _pickled_weight(pt2[0], tmp_path / "evil.pt2", marker)
    X, c = proxy_world(200)
    X.assign(gender=np.array(["f", "m"])[c]).to_csv(tmp_path / "people.csv", index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(evil), "--data",
         str(tmp_path / "people.csv"), "--protected", "gender", "--out", str(tmp_path / "out"),
         "--no-progress"], env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--trust-pickle" in lines[0] and "evil.pt2" in lines[0]
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_clean_pt2_loads_and_gives_the_modules_outputs(pt2):
    path, net = pt2
    tm = load_model(path, 4)
    x = np.random.default_rng(0).normal(size=(37, 4))
    with torch.no_grad():
        want = torch.sigmoid(net(torch.as_tensor(x, dtype=torch.float32))).reshape(-1)
    assert tm.loader == "torch.export" and tm.differentiable
    np.testing.assert_allclose(tm.proba(x), want.double().numpy(), rtol=1e-6, atol=1e-7)


def test_trusted_pt2_is_loaded_with_a_warning(pt2, tmp_path, capsys):
    """--trust-pickle loads a file the checks refuse (here a harmless guard), and says so."""
    path = _rewrite(pt2[0], tmp_path / "guarded.pt2", _in_model_json(
        lambda p: p.__setitem__("guards_code", ["True"])))
    with pytest.raises(ConfigError):
        load_model(path, 4)
    tm = load_model(path, 4, trust_pickle=True)
    assert tm.proba(np.zeros((2, 4))).shape == (2,)
    err = capsys.readouterr().err
    assert "runs code from the file" in err and "--trust-pickle" in err


@pytest.mark.parametrize("manifest", [b"{", b"[]", b'{"config": {"w": 3}}'])
def test_unparsable_manifest_is_refused_not_trusted(pt2, tmp_path, manifest):
    bad = _rewrite(pt2[0], tmp_path / "bad.pt2", lambda n, d: manifest
                   if n == "data/weights/model_weights_config.json" else d)
    with pytest.raises(DataError, match="cannot read the torch.export file"):
        load_model(bad, 4)


@pytest.mark.parametrize("expr,ok", [
    ("Symbol('s31', positive=True, integer=True)", True),
    ("Add(Mul(Integer(2), Symbol('s0')), Integer(-1))", True),
    ("FloorDiv(s0, 2) + 1", True),
    ("__import__('os').system('true')", False),
    ("Symbol('s0').__class__", False),
    ("Symbol('a b; c')", False),
    ("(lambda: 1)()", False),
    ("s0[0]", False),
    ("exec('1')", False),
])
def test_symbolic_expressions_allowed_are_plain_sympy(expr, ok):
    from faux.audit.loaders.export_file import expression_ok

    assert expression_ok(expr) is ok


# --------------------------------------------------------------------------- LightGBM


@pytest.fixture(scope="module")
def lgbm_text(tmp_path_factory):
    """A real LightGBM text model (4 features, 5 trees) and its booster."""
    import lightgbm as lgb

    X, _ = proxy_world(400)
    y = (X.x1 + X.proxy > 0.5).astype(int)
    booster = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 4},
                        lgb.Dataset(X.values, y), 5)
    path = tmp_path_factory.mktemp("lgbm") / "model.txt"
    booster.save_model(path)
    return path.read_bytes(), booster


def _garbled(text: bytes) -> dict[str, bytes]:
    t = text.decode()
    end = t.index("end of trees")
    tree1 = t.index("Tree=1")
    return {
        "six bytes": b"tree\n\0",
        "header only": t[:t.index("Tree=0")].encode(),
        "cut in a tree": text[:tree1 + 40],
        "cut before the end marker": text[:end],
        "cut mid number": text[:t.index("leaf_value=", tree1) + 20],
        "NUL inside": text[:200] + b"\0" + text[201:],
        "tree numbering": t.replace("Tree=1\n", "Tree=7\n").encode(),
        "tree sizes": t.replace("tree_sizes=", "tree_sizes=1").encode(),
        "split feature out of range": t.replace("split_feature=", "split_feature=99 ", 1)
        .replace("tree_sizes=", "tree_sizes_=").encode(),
        "short leaf values": t.replace("leaf_value=", "leaf_value=1 ", 1)
        .replace("tree_sizes=", "tree_sizes_=").encode(),
        "not text": b"tree\n" + bytes(range(128, 256)),
    }


def test_garbled_lightgbm_files_are_refused_in_one_line_within_seconds(lgbm_text, tmp_path):
    """Each garbled file in a child (a hang or an abort fails the test rather than hanging
    or killing it): a DataError, and nothing on the C-level stderr."""
    text, _ = lgbm_text
    paths = {}
    for i, (name, data) in enumerate(_garbled(text).items()):
        paths[name] = str(tmp_path / f"m{i}.txt")
        Path(paths[name]).write_bytes(data)
    proc = _python(f"""
        import json
        from faux.audit.loaders.models import load_model
        out = {{}}
        for name, path in {paths!r}.items():
            try:
                load_model(path, 4)
                out[name] = "loaded"
            except Exception as err:
                out[name] = type(err).__name__ + ": " + str(err)
        print(json.dumps(out))
    """, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""  # LightGBM never got to print its own lines
    out = json.loads(proc.stdout)
    for name, msg in out.items():
        assert msg.startswith("DataError: ") and "\n" not in msg, (name, msg)
        assert "Booster.save_model" in msg, (name, msg)


@pytest.mark.parametrize("change", ["six bytes", "objective"])
def test_cli_refuses_a_bad_lightgbm_file_with_exactly_one_line(lgbm_text, tmp_path, change):
    """The CLI in a child with a timeout: exit 2, faux's one line and nothing from
    LightGBM (the 'objective' file passes the shape check and is rejected by LightGBM
    itself, whose [Fatal] line stays off the terminal)."""
    text, _ = lgbm_text
    data = (b"tree\n\0" if change == "six bytes" else
            text.replace(b"objective=binary sigmoid:1", b"objective=nonsense"))
    model = tmp_path / "m.txt"
    model.write_bytes(data)
    X, c = proxy_world(200)
    X.assign(gender=np.array(["f", "m"])[c]).to_csv(tmp_path / "people.csv", index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(model), "--data",
         str(tmp_path / "people.csv"), "--protected", "gender", "--out", str(tmp_path / "out"),
         "--no-progress"], env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("faux audit: error: ") and "m.txt" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_well_formed_lightgbm_files_still_load_and_predict_alike(lgbm_text, tmp_path):
    import lightgbm as lgb

    text, booster = lgbm_text
    X, c = proxy_world(300, seed=1)
    lin = lgb.train({"objective": "binary", "verbosity": -1, "num_leaves": 3,
                     "linear_tree": True}, lgb.Dataset(X.values, c), 3)
    lin.save_model(tmp_path / "linear.txt")
    (tmp_path / "crlf.txt").write_bytes(text.replace(b"\n", b"\r\n"))
    (tmp_path / "plain.txt").write_bytes(text)
    for name, ref in [("plain.txt", booster), ("crlf.txt", booster), ("linear.txt", lin)]:
        tm = load_model(tmp_path / name, 4)
        assert tm.loader == "lightgbm"
        np.testing.assert_allclose(tm.proba(X.values), ref.predict(X.values), rtol=1e-12)


# --------------------------------------------------------------------------- TorchScript


class _Writes(torch.nn.Module):
    def __init__(self, marker: str):
        super().__init__()
        self.marker = marker

    def forward(self, x):
        torch.save(x, self.marker)
        return x[:, 0]


def test_torchscript_that_writes_files_is_refused_and_writes_nothing(tmp_path):
    marker = tmp_path / "written"
    path = tmp_path / "w.pt"
    torch.jit.save(torch.jit.script(_Writes(str(marker))), path)
    torch.jit.load(path)(torch.zeros(2, 4))  # control: the file's code does write
    assert marker.exists()
    marker.unlink()
    with pytest.raises(ConfigError, match="--trust-pickle") as err:
        load_model(path, 4)
    assert "\n" not in str(err.value) and "save" in str(err.value)
    assert not marker.exists()


class _Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = "x"

    def forward(self, x):
        return x[:, 0]

    @torch.jit.export
    def __getstate__(self) -> tuple[str, bool]:
        return (self.m, self.training)

    @torch.jit.export
    def __setstate__(self, state: tuple[str, bool]) -> None:
        self.m = state[0]
        self.training = state[1]


#: edits of a clean archive's code that write the marker MARK: at each call (in forward) or
#: at load (in __setstate__), spelled so that no ``save(`` appears in the source text
_BYPASSES = {
    "comment before the call": ("forward", '(torch.save  # a comment\n      (x, "MARK"))'),
    "backslash line break": ("forward", 'torch.save \\\n(x, "MARK")'),
    "getattr by string": ("forward", 'getattr(torch, "save")(x, "MARK")'),
    "ops.aten by name": ("forward", 'ops.aten.save(x, "MARK")'),
    "at load, in __setstate__": ("setstate", 'torch.save \\\n(torch.zeros(1), "MARK")'),
}
_AT = {"forward": "    return torch.select(torch.slice(x), 1, 0)\n",
       "setstate": "    self.m = (state)[0]\n"}


def _forged_torchscript(tmp_path: Path, where: str, line: str, marker: Path) -> Path:
    clean = tmp_path / "clean.pt"
    torch.jit.save(torch.jit.script(_Plain()), clean)

    edited = []

    def edit(name, data):
        if not (name.startswith("code/") and name.endswith(".py")):
            return data
        edited.append(name)
        return data.decode().replace(_AT[where], "    " + line.replace("MARK", str(marker))
                                     + "\n" + _AT[where], 1).encode()

    forged = _rewrite(clean, tmp_path / "forged.pt", edit)
    assert len(edited) == 1
    return forged


@pytest.mark.parametrize("case", list(_BYPASSES))
def test_torchscript_file_calls_are_refused_however_spelled(tmp_path, case):
    """The check reads what the code calls, not its text: each spelling is refused in one
    line before anything runs, while plain torch.jit.load (and a call) writes the marker."""
    marker = tmp_path / "written"
    path = _forged_torchscript(tmp_path, *_BYPASSES[case], marker)
    with pytest.raises(ConfigError, match="--trust-pickle") as err:
        load_model(path, 4)
    assert "\n" not in str(err.value) and "save" in str(err.value)
    assert not marker.exists()
    torch.jit.load(path)(torch.zeros(2, 4))  # control: the file's code does write
    assert marker.exists()


def test_torchscript_that_writes_at_load_is_refused_by_the_cli_in_one_line(tmp_path):
    marker = tmp_path / "written"
    path = _forged_torchscript(tmp_path, *_BYPASSES["at load, in __setstate__"], marker)
    X, c = proxy_world(200)
    X.assign(gender=np.array(["f", "m"])[c]).to_csv(tmp_path / "people.csv", index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(path), "--data",
         str(tmp_path / "people.csv"), "--protected", "gender", "--out", str(tmp_path / "out"),
         "--no-progress"], env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--trust-pickle" in lines[0] and "forged.pt" in lines[0]
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_torchscript_with_foreign_operators_or_unparsable_code_is_refused(tmp_path):
    marker = tmp_path / "never"
    path = _forged_torchscript(tmp_path, "forward", "_0 = ops.mylib.anything(x)", marker)
    with pytest.raises(ConfigError, match="namespace 'mylib'"):
        load_model(path, 4)
    path = _forged_torchscript(tmp_path, "forward", "x = (x", marker)
    with pytest.raises(ConfigError, match="cannot be parsed"):
        load_model(path, 4)


def test_compiled_graphs_are_checked_for_file_operators():
    from faux.audit.loaders.torchscript_file import graph_calls

    assert graph_calls(torch.jit.script(_Writes("/nonexistent/m"))) == ["forward: aten::save"]
    assert graph_calls(torch.jit.script(torch.nn.Sequential(_Plain()))) == []


def test_clean_torchscript_with_state_methods_loads_and_predicts(tmp_path):
    path = tmp_path / "clean.pt"
    net = _net().eval()
    torch.jit.save(torch.jit.script(torch.nn.Sequential(net, _Plain())), path)
    tm = load_model(path, 4)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    with torch.no_grad():
        ref = torch.sigmoid(net(torch.as_tensor(x))[:, 0]).numpy()
    np.testing.assert_allclose(tm.proba(x), ref, rtol=1e-6)


def test_trusted_torchscript_that_writes_is_loaded_with_a_warning(tmp_path, capsys):
    marker = tmp_path / "written"
    path = _forged_torchscript(tmp_path, *_BYPASSES["getattr by string"], marker)
    tm = load_model(path, 4, trust_pickle=True)
    assert tm.loader == "torch.jit"
    assert "trusted by --trust-pickle" in capsys.readouterr().err


def test_forged_torchscript_with_a_python_pickle_runs_nothing(tmp_path):
    """A torch.save pickle whose unpickling runs os.system, dressed as TorchScript (a code/
    entry): TorchScript's unpickler cannot name a Python function, so it fails."""
    marker = tmp_path / "pwned"
    blob = _torch_pickle(Boom(marker))
    src = tmp_path / "plain.pt"
    src.write_bytes(blob)
    forged = _rewrite(src, tmp_path / "forged.pt", lambda n, d: d,
                      {"code/__torch__.py": b"class M(Module):\n  pass\n"})
    with pytest.raises(DataError, match="cannot load the model") as err:
        load_model(forged, 4)
    assert "\n" not in str(err.value)
    assert not marker.exists()
    torch.load(src, weights_only=False)  # control: the pickle is live
    assert marker.exists()


# --------------------------------------------------------------------------- ONNX


def _onnx_file(folder: Path, location=None, domain=None) -> Path:
    """A one-node ONNX graph; its weight stored as external data at ``location``, or its
    node an operator of the custom ``domain``."""
    import onnx
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 1], vals=np.zeros(4, np.float32))
    if location:
        w.ClearField("float_data")
        w.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("length", "16")):
            e = w.external_data.add()
            e.key, e.value = k, v
    node = helper.make_node("Evil" if domain else "MatMul", ["x", "w"], ["prob"],
                            domain=domain or "")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [None, 1])], [w])
    ops = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=ops), path)
    return path


@pytest.mark.parametrize("case", ["outside the folder", "absolute path", "custom operator"])
def test_onnx_cannot_read_files_outside_its_folder_or_name_unknown_operators(tmp_path, case):
    """onnxruntime resolves external data only inside the model's folder and runs only its
    registered operators (a file cannot load an operator library)."""
    (tmp_path / "secret.bin").write_bytes(b"0123456789abcdef")
    folder = tmp_path / "model"
    folder.mkdir()
    path = _onnx_file(folder, location={"outside the folder": "../secret.bin",
                                        "absolute path": str(tmp_path / "secret.bin")
                                        }.get(case), domain="evil.ops" if "custom" in case
                      else None)
    with pytest.raises(DataError, match="cannot read the ONNX model") as err:
        load_model(path, 4)
    assert "\n" not in str(err.value)
