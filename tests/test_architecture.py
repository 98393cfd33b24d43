"""The shape of the package (docs/architecture.md): no import cycles, imports that point down
the layers, one method registry that everything reads."""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """``module -> faux modules it imports``, from the source (ast), for every module of
    src/faux. Rule: every import statement counts, at module level and inside functions
    alike (a function-level import placed to dodge a cycle is still a cycle); ``from a import
    b`` is an edge to ``a.b`` when that is a module, else to ``a``. The implicit import of a
    parent package's ``__init__`` is not an edge (``faux/__init__.py`` re-exports lazily)."""
    files = {_module_name(p, src): p for p in (src / "faux").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                         for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in files:       # `import faux.a.b as x` etc.
                    name = name.rpartition(".")[0]
                if name.startswith("faux") and name != mod:
                    edges.add(name)
        graph[mod] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (a list of modules, first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles_in_src_faux():
    graph = import_graph()
    assert "faux.methods.gradients" in graph and "faux.studies.table1" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_function_level_cycles(tmp_path):
    pkg = tmp_path / "faux"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from faux.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from faux import a\n")
    graph = import_graph(tmp_path)
    assert graph["faux.a"] == {"faux.sub.b"} and graph["faux.sub.b"] == {"faux.a"}
    assert find_cycle(graph) == ["faux.a", "faux.sub.b", "faux.a"]
    (pkg / "sub" / "b.py").write_text("from .. import errors  # noqa\n")
    (pkg / "errors.py").write_text("")
    assert find_cycle(import_graph(tmp_path)) is None


#: docs/architecture.md's layers, bottom first: a module imports from its own layer or below
LAYERS = [
    {"faux.errors", "faux.paths", "faux.kernels", "faux.harness"},
    {"faux.data", "faux.metrics", "faux.models"},
    {"faux.synth", "faux.methods"},
    {"faux.studies", "faux.audit", "faux.worlds"},
    {"faux.run"},
    {"faux.reports"},
    {"faux.aggregate"},
    {"faux"},
]
#: upward edges the rules allow (none)
UPWARD: set[tuple[str, str]] = set()


def _unit(module: str) -> str:
    """``faux.studies.table1`` -> ``faux.studies``; ``faux.run`` and ``faux`` stay."""
    return ".".join(module.split(".")[:2])


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    layer = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    unplaced = sorted({_unit(m) for m in graph} - set(layer))
    assert not unplaced, f"add {unplaced} to LAYERS and docs/architecture.md"
    return [f"{m} -> {e}" for m, edges in sorted(graph.items()) for e in sorted(edges)
            if layer[_unit(e)] > layer[_unit(m)] and (_unit(m), _unit(e)) not in UPWARD]


def test_imports_point_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_docs_architecture_draws_the_same_layers():
    text = (SRC.parent / "docs" / "architecture.md").read_text()
    drawn = {int(line.split()[0]): line for line in text.splitlines()
             if line[:3].strip().isdigit() and line[:1] == " "}
    assert sorted(drawn) == list(range(len(LAYERS)))
    for i, units in enumerate(LAYERS):
        for unit in units:
            short = r"faux \(package\)" if unit == "faux" else unit.split(".")[1] + r"\b"
            assert re.search(rf"^ {i}  .*(?<![\w.]){short}", drawn[i]), (i, unit, drawn[i])


def test_nothing_in_the_package_imports_the_entry_point():
    """``faux.run`` is the Hydra entry point only: what other modules need of the harness is
    in ``faux.harness`` (the tests may import ``faux.run``)."""
    graph = import_graph()
    assert "faux.run" in graph
    assert sorted(m for m, edges in graph.items() if "faux.run" in edges) == []


def test_layer_check_finds_an_upward_import():
    graph = {**import_graph(), "faux.models.mlp": {"faux.studies.table1"}}
    assert upward_imports(graph) == ["faux.models.mlp -> faux.studies.table1"]


def test_only_the_registry_lists_the_method_names():
    """No module of src/faux spells out the method list beside the registry (a dispatcher
    or a report with its own list is what the registry replaced)."""
    offenders = []
    for path in (SRC / "faux").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple | ast.List) and len(node.elts) >= 4:
                vals = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if {"fta", "faux", "faux_ng", "faux_ig"} <= vals:
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    # faux.score finds its methods in the registry too (faux.methods.gradients)
    assert offenders == [], offenders


#: modules that may spell method names: the methods themselves and the paper's values
NAMES_ALLOWED_IN = ("faux/methods/", "faux/reports/paper_values.py")
#: keyword arguments whose value is the package's own name, not a method's
PACKAGE_NAME_KEYWORDS = ("prog", "project")


def method_name_literals(src: Path = SRC, names=None) -> list[str]:
    """``path:line: 'name'`` for every string constant of src/faux (outside
    NAMES_ALLOWED_IN) equal to a registered method's name: in calls, dict keys, subscripts,
    comparisons, defaults, tuples alike (docstrings and the package name passed as
    ``prog=``/``project=`` aside)."""
    if names is None:
        from faux.methods import registry

        names = set(registry.names())
    out = []
    for path in sorted((src / "faux").rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith(NAMES_ALLOWED_IN):
            continue
        tree = ast.parse(path.read_text())
        skip = set()
        for node in ast.walk(tree):
            if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                           | ast.AsyncFunctionDef) and node.body
                    and isinstance(node.body[0], ast.Expr)
                    and isinstance(node.body[0].value, ast.Constant)):
                skip.add(id(node.body[0].value))
            if isinstance(node, ast.keyword) and node.arg in PACKAGE_NAME_KEYWORDS:
                skip.add(id(node.value))
        hits = [node for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value in names and id(node) not in skip]
        hits.sort(key=lambda n: (n.lineno, n.col_offset))
        out += [f"{rel}:{node.lineno}: {node.value!r}" for node in hits]
    return out


def test_no_method_name_literal_outside_the_methods():
    """Studies, reports and the audit name a method through its class (``FAuxMethod.name``)
    or the registry, never by a string: one rename, one place."""
    assert method_name_literals() == []


def test_method_name_scan_sees_keys_comparisons_and_calls(tmp_path):
    (tmp_path / "faux" / "reports").mkdir(parents=True)
    (tmp_path / "faux" / "methods").mkdir()
    (tmp_path / "faux" / "methods" / "x.py").write_text('A = {"faux": 1}\n')
    (tmp_path / "faux" / "reports" / "paper_values.py").write_text('A = {"faux": 1}\n')
    (tmp_path / "faux" / "reports" / "r.py").write_text(
        '"""faux"""\nA = {"faux": 1}\nif m == "fta":\n    f("lic_ub", prog="faux")\n'
        'def g(m="faux_ng"):\n    """fta"""\n    return d["fliptest"]\n')
    found = method_name_literals(tmp_path, {"faux", "fta", "lic_ub", "faux_ng", "fliptest"})
    assert found == ["faux/reports/r.py:2: 'faux'", "faux/reports/r.py:3: 'fta'",
                     "faux/reports/r.py:4: 'lic_ub'", "faux/reports/r.py:5: 'faux_ng'",
                     "faux/reports/r.py:7: 'fliptest'"]


def test_no_hydra_key_paths_in_the_methods():
    """Where a method's settings sit in the config tree is the edge's business
    (faux.studies.config), not the methods'."""
    keys = re.compile(r"^(synthetic|model|profile|real_study|reading|trainer)\.[a-z_.]+$")
    found = [f"{p.relative_to(SRC)}:{n.lineno}: {n.value!r}"
             for p in sorted((SRC / "faux" / "methods").rglob("*.py"))
             for n in ast.walk(ast.parse(p.read_text()))
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and keys.match(n.value)]
    assert found == []


@pytest.mark.parametrize("name", ["fta", "fta_lin", "unfair_map", "fliptest", "faux",
                                  "faux_ng", "faux_ig", "lic_ub"])
def test_registry_has_the_paper_methods_in_row_order(name):
    from faux.methods import registry

    m = registry.get(name)
    assert registry.names().index(name) == m.paper_row - 1
    assert m.label and "target" in m.needs


def private_imports(src: Path = SRC) -> list[str]:
    """``path:line: module._name`` for every import, in src/faux, of a private name (one
    leading underscore, not a dunder) from another module of the package: module level and
    inside functions alike, relative imports resolved. A name another module needs is part
    of its owner's interface: it gets a public name there (``import ... as _alias`` of a
    public name is fine)."""
    out = []
    for path in sorted((src / "faux").rglob("*.py")):
        mod = _module_name(path, src)
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if not base.startswith("faux"):
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    out.append(f"{path.relative_to(src).as_posix()}:{node.lineno}: {base}.{name}")
    return out


def test_no_module_imports_a_private_name_of_another():
    """``from faux.x import _name`` reaches into another module's internals: what one module
    needs of another has a public name in the module that owns it."""
    assert private_imports() == []


def test_private_import_scan_sees_relative_and_function_level_imports(tmp_path):
    pkg = tmp_path / "faux"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from faux.sub.b import public as _alias\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from faux.a import _hidden, __version__\n")
    (pkg / "sub" / "c.py").write_text("from . import _b_private\nfrom .b import ok\n"
                                      "from collections import _private\n")
    assert private_imports(tmp_path) == ["faux/sub/b.py:2: faux.a._hidden",
                                         "faux/sub/c.py:1: faux.sub._b_private"]


@pytest.mark.parametrize("package", ["faux", "faux.methods", "faux.metrics", "faux.audit"])
def test_the_public_packages_list_what_they_export(package):
    """Each public package has an ``__all__`` whose names all resolve (an attribute of the
    package, or one of its modules), sorted, without private names."""
    import importlib

    mod = importlib.import_module(package)
    names = list(mod.__all__)
    assert names and names == sorted(names)
    for name in names:
        assert not (name.startswith("_") and not name.startswith("__")), name
        if not hasattr(mod, name):
            importlib.import_module(f"{package}.{name}")


MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def sizes(src: Path = SRC) -> tuple[list[str], list[str]]:
    """The modules of src/faux over MAX_MODULE_LINES lines and the functions (methods and
    nested functions included, docstrings counted) over MAX_FUNCTION_LINES."""
    modules, functions = [], []
    for path in sorted((src / "faux").rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            modules.append(f"{_module_name(path, src)} ({text.count(chr(10))} lines)")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    functions.append(f"{_module_name(path, src)}.{node.name} ({n} lines)")
    return modules, functions


def test_no_module_over_500_lines_and_no_function_over_80():
    modules, functions = sizes()
    assert not modules, f"split by job: {modules}"
    assert not functions, f"split by step: {functions}"


def test_the_size_check_sees_a_long_function_and_a_long_module(tmp_path):
    pkg = tmp_path / "faux"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(85))
    (pkg / "long.py").write_text("def f():\n" + body + "\n" * 420)
    modules, functions = sizes(tmp_path)
    assert modules == ["faux.long (506 lines)"] and functions == ["faux.long.f (86 lines)"]


#: the audit's own floors, bottom first: a module of one imports from its floor or below.
#: Floor 0 holds the audit's small shared modules (warnings, signals, progress, words for
#: Python callers); the wings sit above them; the top level (settings, stages, the entry
#: points) above the wings. docs/architecture.md draws the same.
AUDIT_FLOORS = [
    {"notices", "interrupts", "progress", "api_words", "face"},
    {"sources"},
    {"loaders"},
    {"scores"},
    {"verdict"},
    {"counterfactual"},
    {"passes"},
    {"engine"},
    {"report"},
]
AUDIT_WINGS = set().union(*AUDIT_FLOORS[1:])


def _audit_floor(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["faux", "audit"] or len(parts) < 3:
        return None
    for i, floor in enumerate(AUDIT_FLOORS):
        if parts[2] in floor:
            return i
    return len(AUDIT_FLOORS)  # the top level: settings, stages, core, cli, result, docs


def audit_upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} -> {e}" for m, edges in sorted(graph.items()) for e in sorted(edges)
            if _audit_floor(m) is not None and _audit_floor(e) is not None
            and _audit_floor(e) > _audit_floor(m)]


def test_the_audit_wings_import_down_their_floors():
    graph = import_graph()
    assert {m.split(".")[2] for m in graph if m.startswith("faux.audit.")} >= AUDIT_WINGS
    assert audit_upward_imports(graph) == []
    assert audit_upward_imports({"faux.audit.sources.data": {"faux.audit.report.page"}}) == [
        "faux.audit.sources.data -> faux.audit.report.page"]


def test_every_audit_module_sits_in_a_wing_or_the_short_top_level():
    """The audit's top level holds its entry points and settings only; the rest is in
    wings, each a package with a face (``__init__`` with ``__all__``)."""
    audit = SRC / "faux" / "audit"
    top = sorted(p.stem for p in audit.glob("*.py") if p.stem != "__init__")
    assert len(top) <= 12, top
    for wing in sorted(AUDIT_WINGS):
        face = audit / wing / "__init__.py"
        assert face.exists(), wing
        assert "__all__" in face.read_text(), wing


@pytest.mark.parametrize("wing", sorted(AUDIT_WINGS))
def test_an_audit_face_resolves_its_names_without_loading_torch(wing):
    import importlib
    import subprocess
    import sys

    code = (f"import sys, faux.audit.{wing} as w; assert 'torch' not in sys.modules; "
            "print(len(w.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    face = importlib.import_module(f"faux.audit.{wing}")
    assert face.__all__ == sorted(face.__all__)
    for name in face.__all__:
        assert getattr(face, name) is not None


MAX_AUDIT_PARAMETERS = 12


def many_parameters(src: Path = SRC, limit: int = MAX_AUDIT_PARAMETERS) -> list[str]:
    """The functions of src/faux/audit with more than ``limit`` parameters (positional,
    keyword-only, ``*args`` and ``**kwargs`` each counting one; ``self``/``cls`` not)."""
    out = []
    for path in sorted((src / "faux" / "audit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            a = node.args
            names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
            names = [n for n in names if n not in ("self", "cls")]
            n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
            if n > limit:
                out.append(f"{_module_name(path, src)}.{node.name} ({n})")
    return out


def test_no_audit_function_takes_more_than_12_parameters():
    """A function that needs more takes a settings or stage-result object."""
    assert many_parameters() == []


def test_parameter_count_sees_keyword_only_and_star_args(tmp_path):
    (tmp_path / "faux" / "audit").mkdir(parents=True)
    (tmp_path / "faux" / "audit" / "m.py").write_text(
        "def f(a, b, *c, d, e, **f): pass\nclass K:\n    def g(self, a, b): pass\n")
    assert many_parameters(tmp_path, limit=5) == ["faux.audit.m.f (6)"]
    assert many_parameters(tmp_path, limit=6) == []


#: module-level state that is the process's, not an audit's: signals reach the process
PROCESS_STATE = {"faux.audit.interrupts._RECEIVED"}
MUTATORS = {"append", "extend", "update", "clear", "setdefault", "pop", "popitem", "add",
            "insert", "discard", "remove", "__setitem__"}
CACHE_DECORATORS = {"cache", "lru_cache", "cached_property"}


def module_caches(src: Path = SRC) -> list[str]:
    """``module.NAME`` for every module-level container of src/faux/audit that the code
    mutates (``NAME[k] = v``, ``NAME.update(...)``, ``del NAME[k]``, ...), every
    module-level instance of a class the module defines (a memo object; a frozen dataclass is a value), and every
    module-level function memoised by ``functools.cache``/``lru_cache``: state that would
    outlive one audit and be shared by the next in the same process (PROCESS_STATE aside)."""
    out = []
    for path in sorted((src / "faux" / "audit").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        mod = _module_name(path, src)
        names = set()
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)
                   and not any(isinstance(d, ast.Call) and any(
                       k.arg == "frozen" and getattr(k.value, "value", False) for k in d.keywords)
                       for d in n.decorator_list)}
        for node in tree.body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name) and node.value.func.id in classes):
                out += [f"{mod}.{t.id}" for t in node.targets if isinstance(t, ast.Name)]
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    f = d.func if isinstance(d, ast.Call) else d
                    word = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                    if word in CACHE_DECORATORS:
                        out.append(f"{mod}.{node.name} (@{word})")
        mutated = set()
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name)):
                mutated.add(node.func.value.id)
            targets = (node.targets if isinstance(node, ast.Assign | ast.Delete)
                       else [node.target] if isinstance(node, ast.AugAssign) else [])
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    mutated.add(t.value.id)
        out += [f"{mod}.{n}" for n in sorted(names & mutated)]
    return [o for o in out if o not in PROCESS_STATE]


def test_no_module_level_cache_in_the_audit():
    """Two audits in one process share nothing: a memo belongs to the object of one audit."""
    assert module_caches() == []


def test_module_cache_scan_sees_writes_and_memo_decorators(tmp_path):
    (tmp_path / "faux" / "audit").mkdir(parents=True)
    (tmp_path / "faux" / "audit" / "m.py").write_text(
        "import functools\nMEMO = {}\nCONST = {'a': 1}\nSEEN = set()\n"
        "def f(k):\n    MEMO[k] = 1\n    SEEN.add(k)\n    return CONST[k]\n"
        "@functools.lru_cache(maxsize=8)\ndef g(x):\n    return x\n"
        "def h():\n    local = {}\n    local['x'] = 1\n"
        "class Memo:\n    pass\nMEMO2 = Memo()\n"
        "@dataclass(frozen=True)\nclass V:\n    a: int = 1\nDEFAULT = V()\n")
    assert module_caches(tmp_path) == ["faux.audit.m.g (@lru_cache)", "faux.audit.m.MEMO2",
                                       "faux.audit.m.MEMO", "faux.audit.m.SEEN"]


def f401_outside_faces(src: Path = SRC) -> list[str]:
    """``path:line`` of every ``noqa: F401`` (an import kept only to re-export it) in a
    module of src/faux that is not a package's ``__init__``."""
    return [f"{p.relative_to(src).as_posix()}:{i}"
            for p in sorted((src / "faux").rglob("*.py")) if p.name != "__init__.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if "noqa: F401" in line]


def test_re_exports_only_in_package_faces():
    """Importers point at the module that defines a name; only a package's face re-exports."""
    assert f401_outside_faces() == []
