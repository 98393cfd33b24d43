"""What a TorchScript archive's own code may do before the audit runs it.

``torch.jit.load`` unpickles with TorchScript's C++ unpickler (no Python class or function
can be named) and compiles the archive's ``code/`` sources; no Python runs. The compiled
TorchScript does run, at load (a module's ``__setstate__``) and at every call, and it can
reach the file system through a few operators: ``aten::save`` (writes a file anywhere the
user can), ``aten::from_file`` (reads one, and writes it when shared), and operators that
leave the process (``prim::rpc_*``) or load by name (``debugprims::load_tensor``).
Operators of other namespaces are whatever libraries the process happens to have loaded.

The archive is judged by what its code calls, not by how the call is spelled, in two
checks:

- **before loading** (``source_calls``): every source the loader could compile is parsed
  as the Python syntax TorchScript's printer writes; every name and every word of every
  string in it is compared with the names of those operators (``torch.save``, ``ops.aten.
  save`` and ``getattr(torch, "save")`` all carry the word ``save``; comments and line
  breaks are gone after parsing), and operator namespaces outside ``NAMESPACES`` are
  refused. A source that does not parse is refused. This check is what keeps
  ``__setstate__`` from running a file operator during ``torch.jit.load``;
- **after loading, before the first call** (``graph_calls``): every method of every module
  is compiled to its graph, calls inlined, and each node's operator is checked against the
  same list and namespaces.
"""

from __future__ import annotations

import ast
import io
import re

import torch

#: operator namespaces a model's code may call: torch's own. Any other is a library loaded
#: into the process whose operators faux cannot vouch for.
NAMESPACES = frozenset({"aten", "prim", "prims", "quantized", "_quantized", "prepacked",
                        "profiler"})

#: operators refused whatever their arguments: they leave the process or load by name.
_ALWAYS = ("prim::rpc_async", "prim::rpc_remote", "prim::rpc_sync")
_FILE_ARG = re.compile(r"file|path|dir", re.I)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def touches_files(schema) -> bool:
    """Whether an operator (its ``torch._C.FunctionSchema``) can reach the file system or
    leave the process: a string argument named like a file, path or folder, any operator of
    the ``debugprims`` namespace, or a remote call."""
    return schema.name in _ALWAYS or schema.name.startswith("debugprims::") or any(
        str(a.type) in ("str", "Optional[str]") and _FILE_ARG.search(a.name)
        for a in schema.arguments)


def file_ops() -> frozenset[str]:
    """The registered operators that ``touches_files`` (``aten::save``, ...)."""
    return frozenset(s.name for s in torch._C._jit_get_all_schemas() if touches_files(s)
                     ) | frozenset(_ALWAYS)


def _words(tree: ast.AST):
    """Every identifier in ``tree`` (names, attributes, arguments, imports) and every word of
    every string constant."""
    for node in ast.walk(tree):
        for value in vars(node).values():
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str):
                    yield from _WORD.findall(text)


def _namespaces(tree: ast.AST):
    """The ``ns`` of every ``ops.ns.name`` / ``torch.ops.ns.name`` in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute | ast.Name):
            inner = node.value
            base = inner.id if isinstance(inner, ast.Name) else inner.attr
            if base == "ops":
                yield node.attr


def source_calls(data: bytes, ops: frozenset[str] | None = None) -> list[str]:
    """``["code/__torch__.py: save", ...]``: what the archive's TorchScript sources name that
    reads or writes files, leaves the process or belongs to a foreign operator namespace
    (empty: nothing). A source that cannot be read or parsed counts as such a call."""
    ops = file_ops() if ops is None else ops
    names = {op.split("::", 1)[1].split(".")[0] for op in ops} | {
        op.split("::", 1)[0] for op in ops if op.startswith("debugprims::")}
    reader = torch._C.PyTorchFileReader(io.BytesIO(data))
    found = []
    for rec in reader.get_all_records():
        if not rec.endswith(".py"):
            continue
        try:
            tree = ast.parse(bytes(reader.get_record(rec)).decode("utf-8"))
        except (UnicodeDecodeError, RuntimeError, SyntaxError, ValueError):
            found.append(f"{rec}: source that cannot be parsed")
            continue
        found += [f"{rec}: {w}" for w in dict.fromkeys(_words(tree)) if w in names]
        found += [f"{rec}: operators of namespace {ns!r}"
                  for ns in dict.fromkeys(_namespaces(tree)) if ns not in NAMESPACES]
    return found


def _nodes(block):
    for node in block.nodes():
        yield node
        for inner in node.blocks():
            yield from _nodes(inner)


def graph_calls(module: torch.jit.ScriptModule, ops: frozenset[str] | None = None
                ) -> list[str]:
    """``["forward: aten::save", ...]``: the operators that touch files, leave the process
    or belong to a foreign namespace in the compiled graphs of every method of ``module``
    and its submodules, with calls inlined (empty: none)."""
    ops = file_ops() if ops is None else ops
    found = []
    for prefix, mod in module.named_modules():
        for name in mod._c._method_names():
            graph = mod._c._get_method(name).graph.copy()
            torch._C._jit_pass_inline(graph)
            where = f"{prefix}.{name}" if prefix else name
            for node in _nodes(graph):
                kind = node.kind()
                if kind in ops or kind.split("::", 1)[0] not in NAMESPACES:
                    found.append(f"{where}: {kind}")
    return list(dict.fromkeys(found))


def load_checked(data: bytes, name: str, trust: bool, warn) -> torch.jit.ScriptModule:
    """The TorchScript module in ``data``; one whose code touches files, leaves the process or
    calls foreign operators (by its sources, then by its compiled graphs) is refused
    (``ConfigError``) unless ``trust``, then loaded after ``warn(what)``."""
    from faux.errors import ConfigError

    def refuse(what: str):
        raise ConfigError(f"{name} is TorchScript whose code reads or writes files, leaves the "
                          f"process or calls operators faux does not know ({what}): loading "
                          "or running it can touch your files. Save the model without those "
                          "calls, or pass --trust-pickle if you trust its author")

    ops = file_ops()
    calls = source_calls(data, ops)
    if calls and not trust:
        refuse(calls[0])
    module = torch.jit.load(io.BytesIO(data), map_location="cpu")
    calls = calls or graph_calls(module, ops)
    if calls and not trust:
        refuse(calls[0])
    if calls:
        warn(calls[0])
    return module
