"""Reading a ``torch.export`` file (``.pt2``) without letting the file run code.

``torch.export.load`` trusts its archive more than its promise suggests. Besides the graph
(JSON) and raw tensor bytes, an archive written by ``torch.export.save`` may hold
- weights or tensor constants marked ``"use_pickle": true``, read by
  ``torch.load(weights_only=False)``: a full unpickle;
- ``custom_obj_*`` constants (TorchScript pickles) and ``opaque_obj_*`` constants
  (``pickle.loads``);
- sample inputs that ``torch.load`` retries with ``weights_only=False`` when the safe
  load fails; legacy ``data/weights/<model>.pt`` / ``data/constants/<model>.pt`` files
  read the same way; AOTInductor folders (compiled shared libraries);
- symbolic shapes, given as strings that ``sympy.sympify`` evaluates (``eval``);
- node targets resolved by name from ``torch``, ``operator`` and ``math`` (any callable
  found there, ``torch.os.system`` included, becomes a call in the graph);
- ``guards_code``: Python source that ``ExportedProgram.module()`` ``exec``-s.

``check_archive`` reads the archive through the same reader torch uses (from bytes read
once, so the file cannot change between the check and the load) and lists what in it
could run code; ``load_program`` loads only an archive with nothing on that list (with
``torch.load`` forced to ``weights_only`` as a second guard), unless the caller trusts the
file. Anything the check cannot parse is refused, never trusted.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re

import torch

from faux.errors import DataError

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FIXED = {"archive_format", "archive_version", "byteorder", ".data/version",
          ".data/serialization_id"}
# higher-order operators that only run the archive's own subgraphs
_HOPS = {"cond", "while_loop", "map_impl", "scan", "associative_scan", "invoke_subgraph",
         "wrap_with_set_grad_enabled", "wrap_with_autocast", "auto_functionalized",
         "auto_functionalized_v2"}
# sympy names torch writes (``srepr``) and reads back (``GraphModuleDeserializer``)
_SYMPY = {
    "Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "Mod", "Max", "Min",
    "Abs", "floor", "ceiling", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "Equality", "Unequality",
    "StrictLessThan", "LessThan", "StrictGreaterThan", "GreaterThan", "And", "Or", "Not",
    "Piecewise", "ExprCondPair", "Tuple", "true", "false", "oo", "zoo", "nan", "Infinity",
    "NegativeInfinity", "NaN", "One", "Zero", "NegativeOne", "Half", "BooleanTrue",
    "BooleanFalse", "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv",
    "CeilToInt", "FloorToInt", "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow",
    "FloatTrueDiv", "IntTrueDiv", "IsNonOverlappingAndDenseIndicator", "TruncToFloat",
    "TruncToInt", "RoundToInt", "RoundDecimal", "ToFloat", "Identity"}
_SYMBOL = re.compile(r"[a-z]+[0-9]+\Z")
_STRING = re.compile(r"[A-Za-z0-9_.+\-]{1,64}\Z")
_AST_OK = (ast.Expression, ast.Call, ast.keyword, ast.Name, ast.Load, ast.Constant,
           ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
           ast.UnaryOp, ast.USub, ast.UAdd, ast.Not, ast.Compare, ast.Eq, ast.NotEq,
           ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.BoolOp, ast.And, ast.Or, ast.Tuple)


class Unreadable(ValueError):
    """The archive is not a well-formed ``torch.export.save`` file."""


def _plain_ops() -> set[str]:
    """The non-operator targets torch writes for symbolic arithmetic, by name."""
    import operator

    try:
        from torch._export.serde.serialize import _SYM_OPS
    except ImportError:
        _SYM_OPS = set()
    return {f"{f.__module__}.{f.__name__}" for f in (*_SYM_OPS, operator.getitem)}


def _target_ok(target: str, plain: set[str]) -> bool:
    """A graph node may call only torch operators (``torch.ops.aten/prims``), a few
    higher-order operators and symbolic arithmetic; never a function found by name."""
    if target in plain:
        return True
    m = re.fullmatch(rf"torch\.ops\.(aten|prims|higher_order)\.({_NAME})(?:\.({_NAME}))?",
                     target)
    if not m:
        return False
    ns, op, overload = m.groups()
    if ns == "higher_order":
        return overload is None and op in _HOPS and isinstance(
            getattr(torch.ops.higher_order, op, None), torch._ops.HigherOrderOperator)
    if overload is None:
        return False
    try:
        obj = getattr(getattr(getattr(torch.ops, ns), op), overload)
    except (AttributeError, RuntimeError):
        return False
    if not isinstance(obj, torch._ops.OpOverload):
        return False
    from faux.audit.loaders.torchscript_file import touches_files

    return not touches_files(obj._schema)


def expression_ok(text: str) -> bool:
    """A symbolic-shape string ``sympy.sympify`` may evaluate: sympy constructors, symbol
    names, numbers and arithmetic only (no attribute, subscript, lambda or import)."""
    if not isinstance(text, str) or len(text) > 2000:
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, _AST_OK):
            return False
        if isinstance(node, ast.Name) and not (node.id in _SYMPY or _SYMBOL.match(node.id)):
            return False
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            return False
        if isinstance(node, ast.keyword) and node.arg is None:
            return False
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, str) and not _STRING.match(v):
                return False
            if isinstance(v, int) and abs(v) > 2 ** 63:
                return False
            if not isinstance(v, str | int | float | bool | type(None)):
                return False
    return True


def _walk(obj, plain: set[str], hazards: list[str]) -> None:
    """Collect what in a model's JSON graph loading (or calling) would run as code."""
    if isinstance(obj, dict):
        for key, val in obj.items():
            if key in ("target", "as_operator") and isinstance(val, str):
                if not _target_ok(val, plain):
                    hazards.append(f"a call to {val[:80]!r}")
            elif key == "expr_str":
                if not expression_ok(val):
                    hazards.append(f"a symbolic expression {str(val)[:80]!r} that loading "
                                   "evaluates as Python")
            else:
                _walk(val, plain, hazards)
    elif isinstance(obj, list):
        for val in obj:
            _walk(val, plain, hazards)


def _payloads(reader, config_file: str, prefix: str, hazards: list[str],
              records: set[str], base: str) -> set[str]:
    """Check one payload manifest (weights or constants); the record names it uses."""
    try:
        config = json.loads(reader.read_string(config_file))["config"]
        items = list(config.items())
    except Exception as err:
        raise Unreadable(f"its manifest {config_file} cannot be read") from err
    used = set()
    for fqn, meta in items:
        if not isinstance(meta, dict) or not isinstance(meta.get("path_name"), str):
            raise Unreadable(f"its manifest {config_file} is malformed")
        path = meta["path_name"]
        pickled = meta.get("use_pickle")
        if pickled is not False or not re.fullmatch(rf"{prefix}[0-9]+", path):
            hazards.append(f"{fqn!s:.60} stored as a pickle")
            continue
        if not isinstance(meta.get("tensor_meta"), dict) or base + path not in records:
            raise Unreadable(f"its manifest {config_file} names a missing tensor")
        used.add(base + path)
    return used


def check_archive(data: bytes) -> list[str]:
    """What in the ``torch.export`` archive ``data`` could run code when loaded, in words
    (empty: nothing). Raises ``Unreadable`` for a file that is not a well-formed archive."""
    from torch.export.pt2_archive._package import PT2ArchiveReader

    try:
        reader = PT2ArchiveReader(io.BytesIO(data))
        records = set(reader.get_file_names())
        version = reader.read_string("archive_version")
    except Exception as err:
        raise Unreadable("it is not a torch.export archive") from err
    if version.strip() != "0":
        raise Unreadable(f"its archive version {version.strip()[:20]!r} is not 0")
    models = sorted(r for r in records if re.fullmatch(rf"models/{_NAME}\.json", r))
    if "models/model.json" not in models:
        raise Unreadable("it holds no models/model.json")
    hazards: list[str] = []
    allowed = set(_FIXED) | set(models)
    plain = _plain_ops()
    for path in models:
        name = path[len("models/"):-len(".json")]
        wcfg, ccfg = f"data/weights/{name}_weights_config.json", \
            f"data/constants/{name}_constants_config.json"
        sample = f"data/sample_inputs/{name}.pt"
        if wcfg not in records or ccfg not in records:
            raise Unreadable(f"it holds no weights or constants manifest for {name}")
        allowed |= {wcfg, ccfg, sample}
        allowed |= _payloads(reader, wcfg, "weight_", hazards, records, "data/weights/")
        allowed |= _payloads(reader, ccfg, "tensor_", hazards, records, "data/constants/")
        try:
            program = json.loads(reader.read_string(path))
        except Exception as err:
            raise Unreadable(f"its graph {path} is not JSON") from err
        if not isinstance(program, dict):
            raise Unreadable(f"its graph {path} is malformed")
        if program.get("guards_code"):
            hazards.append("Python guard code")
        _walk(program, plain, hazards)
        if sample in records and not _weights_only(reader.read_bytes(sample)):
            hazards.append("sample inputs that only a full unpickle reads")
    extra = sorted(r for r in records - allowed if not r.startswith("extra/"))
    hazards += [f"{r!s:.80}, which loading would unpickle or execute" for r in extra]
    return hazards


def _weights_only(blob: bytes) -> bool:
    try:
        torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        return True
    except Exception:
        return False


@contextlib.contextmanager
def _weights_only_loads():
    """Every ``torch.load`` inside reads plain tensors only, whatever it asks for."""
    old = os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
        else:
            os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = old


def load_checked(data: bytes):
    """The ``ExportedProgram`` of an archive ``check_archive`` found nothing in, read from
    the same bytes; ``torch.load`` is forced to ``weights_only`` and the legacy fallback of
    ``torch.export.load`` (a second, unchecked format) is never taken."""
    from torch.export.pt2_archive._package import load_pt2

    with _weights_only_loads():
        contents = load_pt2(io.BytesIO(data))
    if "model" not in contents.exported_programs:
        raise DataError("the torch.export file holds no program named 'model'; save it "
                        "again with torch.export.save")
    return contents.exported_programs["model"]
