"""Rules the test suite keeps: no test measures a duration. A margin on wall-clock time fails
on a busy machine (an interpreter start under load ate a 2.5 s margin once); speed belongs in
``bench/``, and a test checks the order of events or counts what happened instead."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"time", "perf_counter", "monotonic", "time_ns", "perf_counter_ns", "monotonic_ns"}


def _is_clock(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in CLOCKS and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "time")


def durations(source: str) -> list[int]:
    """The lines of ``source`` that subtract clock readings (``time.monotonic() - t0``, where
    ``t0`` was read from a clock too)."""
    tree = ast.parse(source)
    names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and _is_clock(node.value, set()) for t in node.targets if isinstance(t, ast.Name)}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)
            and _is_clock(node.left, names) and _is_clock(node.right, names)]


def test_the_rule_sees_a_measured_duration():
    assert durations("import time\nt0 = time.monotonic()\nx = 1\nd = time.monotonic() - t0\n"
                     ) == [4]
    assert durations("import time\nstart = time.perf_counter()\n"
                     "assert time.perf_counter() - start < 5\n") == [3]
    assert durations("import time\nt = time.time()\nold = t - 1000\n") == []
    assert durations("import time\ndeadline = time.monotonic() + 30\n"
                     "assert time.monotonic() < deadline\n") == []


def test_no_test_measures_a_duration():
    found = {p.name: lines for p in sorted(TESTS.glob("*.py"))
             if (lines := durations(p.read_text()))}
    assert found == {}, f"tests that measure durations (use bench/, or check the order of " \
                        f"events): {found}"
