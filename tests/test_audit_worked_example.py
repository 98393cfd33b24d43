"""The worked example of docs/audit.md, run as written: its ``python`` blocks are saved under
the file name of their first line, its ``bash`` blocks are run line by line (``python X.py``
and ``faux audit ...``, in process), and each ``text`` block must match what the commands
since the previous one printed: every line of the block is found among the printed lines with
the same words, and its numbers agree (logistic regression and aux models trained on another
CPU may differ in the last digits; the seconds are not compared). The stable facts are then
checked as such: which features are held fixed and which move, that sex's flags exceed what
chance gives and race's do not, and that the Husband <-> Wife swap (the same marriage, the
other sex) is another question than the transport's. Needs Adult in the data root.
"""

import json
import re
import runpy
import shlex
from pathlib import Path

import pytest

from faux.data.real import is_present

DOC = Path(__file__).resolve().parents[1] / "docs" / "audit.md"
HEADING = "## Worked example"

pytestmark = pytest.mark.skipif(not is_present("adult"),
                                reason="UCI Adult is not in the data root; set FAUX_DATA_DIR")

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
SECONDS = re.compile(r"\bin [\d.]+ s\b")


def section(text: str) -> str:
    start = text.index(HEADING)
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.M | re.S)]


def shape(line: str) -> str:
    return NUMBER.sub("#", SECONDS.sub("in # s", line)).rstrip()


def numbers(line: str) -> list[float]:
    return [float(v.replace(",", "")) for v in NUMBER.findall(SECONDS.sub("", line))]


def close(a: float, b: float) -> bool:
    if abs(a) < 1e-3 and abs(b) < 1e-3:  # tiny p-values
        return True
    return abs(a - b) <= 0.25 * max(abs(a), abs(b)) + 0.02


def match(expected: str, printed: list[str]) -> None:
    """Every expected line among the printed ones (same words), with close numbers."""
    free = list(printed)
    for line in (ln for ln in expected.splitlines() if ln.strip()):
        same = [p for p in free if shape(p) == shape(line)]
        assert same, f"the docs show a line nothing printed:\n  {line}\nprinted:\n" + \
            "\n".join(f"  {p}" for p in printed)
        got = same[0]
        free.remove(got)
        pairs = list(zip(numbers(line), numbers(got), strict=True))
        assert all(close(a, b) for a, b in pairs), f"numbers differ:\n  docs: {line}\n  run:  {got}"


def run(command: str) -> None:
    argv = shlex.split(command)
    if argv[0] == "python":
        runpy.run_path(argv[1], run_name="__main__")
    elif argv[:2] == ["faux", "audit"]:
        from faux.audit.cli import main

        assert main(argv[1:]) == 0
    else:
        raise AssertionError(f"the worked example runs {command!r}; teach this test to run it")


def test_the_worked_example_prints_what_the_docs_show(tmp_path, monkeypatch, capsys):
    parts = blocks(section(DOC.read_text(encoding="utf-8")))
    assert [lang for lang, _ in parts].count("text") >= 2
    monkeypatch.chdir(tmp_path)
    printed: list[str] = []
    everything: list[str] = []
    for lang, body in parts:
        if lang == "python":
            name = body.splitlines()[0].removeprefix("#").strip()
            assert name.endswith(".py"), "a python block starts with '# <file>.py'"
            (tmp_path / name).write_text(body, encoding="utf-8")
        elif lang == "bash":
            for command in body.splitlines():
                if command.strip():
                    run(command)
                    out = capsys.readouterr()
                    printed += out.out.splitlines() + out.err.splitlines()
        elif lang == "text":
            match(body, printed)
            everything += printed
            printed = []
    assert not printed, "printed after the last text block:\n" + "\n".join(printed)

    s = json.loads((tmp_path / "audit" / "summary.json").read_text(encoding="utf-8"))
    assert s["data"]["protected"] == "sex" and list(s["effects"]) == ["sex", "race"]
    assert s["data"]["rows"] == 3000 and s["gate"]["passed"]
    sex, race = s["effects"]["sex"], s["effects"]["race"]
    assert {"education", "native-country"} <= set(sex["held_fixed"])
    assert {"relationship", "marital-status"} <= set(sex["moved"])
    moved = {m.split(":")[0] for r in sex["rows"] for m in r["moved"]}
    assert {"relationship", "marital-status"} <= moved
    # sex: far more flags than c-blind transports give; race: none beyond them
    assert sex["model_test"]["p_value"] < 1e-3
    assert sex["flagged"] > 10 * sex["expected_false_flags"]["count"]
    assert race["model_test"]["p_value"] > 0.05
    # the Husband <-> Wife swap asks another question: few of its flips are the transport's
    swap = next(ln for ln in everything if "married rows: the swap changes" in ln)
    married, changes, flagged = numbers(swap)
    assert married > changes > flagged > 0
