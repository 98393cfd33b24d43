"""scripts/research/: the one-off measurements behind numbers in docs/ still start from
their folder (imports, paths to conf/ and tests/), and its README lists every one."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESEARCH = ROOT / "scripts" / "research"
SCRIPTS = sorted(p.name for p in RESEARCH.glob("*.py"))


def test_the_readme_lists_every_script_with_its_command():
    readme = (RESEARCH / "README.md").read_text()
    assert SCRIPTS == ["adel_trajectory.py", "audit_fingerprint.py", "counterfactual_choices.py",
                       "diagnose_column.py", "diagnose_real.py", "fair_recipes.py",
                       "generator_determinism.py", "report_screenshots.py"]
    for name in SCRIPTS:
        assert f"| `{name}` |" in readme and f"`scripts/research/{name} " in readme, name
    assert sorted(p.name for p in (ROOT / "scripts").glob("*.py")) == ["make_docs.py"]


#: runs each script given on the command line as ``__main__`` from its file with ``--help``
#: (its folder first on ``sys.path``, as ``python <script>`` has it) and prints one JSON line
#: per script: its exit code and whether it printed its usage
_STARTS = """
import contextlib, io, json, os, runpy, sys
for path in sys.argv[1:]:
    out, code = io.StringIO(), 0
    sys.argv = [path, "--help"]
    sys.path[0] = os.path.dirname(os.path.abspath(path))   # as `python path` sets it
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = exc.code
    print(json.dumps({"script": path, "code": code, "usage": out.getvalue().startswith("usage: ")}))
"""


def test_every_script_starts():
    """Every script runs from its file as a program and prints its usage. One interpreter runs
    them all, one after the other, so torch and Lightning are imported once, not per script."""
    r = subprocess.run([sys.executable, "-c", _STARTS, *(str(RESEARCH / n) for n in SCRIPTS)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    runs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [Path(x["script"]).name for x in runs] == SCRIPTS, r.stderr[-2000:]
    assert [x["script"] for x in runs if x["code"] != 0 or not x["usage"]] == []


def test_the_start_check_sees_a_script_that_fails(tmp_path):
    good, bad, broken = tmp_path / "good.py", tmp_path / "bad.py", tmp_path / "broken.py"
    good.write_text("import argparse\nargparse.ArgumentParser().parse_args()\n")
    bad.write_text("import sys\nsys.exit(3)\n")
    broken.write_text("import no_such_module_here\n")
    r = subprocess.run([sys.executable, "-c", _STARTS, str(good), str(bad)], capture_output=True,
                       text=True, timeout=60)
    runs = {Path(x["script"]).name: x for x in map(json.loads, r.stdout.splitlines())}
    assert runs["good.py"] == {"script": str(good), "code": 0, "usage": True}
    assert runs["bad.py"]["code"] == 3 and not runs["bad.py"]["usage"]
    r = subprocess.run([sys.executable, "-c", _STARTS, str(broken)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "no_such_module_here" in r.stderr


def test_diagnose_real_composes_the_checkouts_config():
    spec = importlib.util.spec_from_file_location("diagnose_real", RESEARCH / "diagnose_real.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.CONF == ROOT / "conf" and (mod.CONF / "experiment" / "real.yaml").is_file()


def test_fair_recipes_toy_reads_the_tests_toy():
    """``--toy`` imports tests/test_models_adel.py's toy from the checkout's tests/."""
    r = subprocess.run([sys.executable, str(RESEARCH / "fair_recipes.py"), "--toy",
                        "--toy-rows", "200", "--toy-epochs", "2", "--recipes", "default",
                        "--seeds", "0"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("toy default seed 0: probe c accuracy ")
