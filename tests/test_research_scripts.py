"""scripts/research/: the one-off measurements behind numbers in docs/ still start from
their folder (imports, paths to conf/ and tests/), and its README lists every one."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESEARCH = ROOT / "scripts" / "research"
SCRIPTS = sorted(p.name for p in RESEARCH.glob("*.py"))


def test_the_readme_lists_every_script_with_its_command():
    readme = (RESEARCH / "README.md").read_text()
    assert SCRIPTS == ["adel_trajectory.py", "counterfactual_choices.py", "diagnose_column.py",
                       "diagnose_real.py", "fair_recipes.py", "generator_determinism.py"]
    for name in SCRIPTS:
        assert f"| `{name}` |" in readme and f"`scripts/research/{name} " in readme, name
    assert sorted(p.name for p in (ROOT / "scripts").glob("*.py")) == ["make_docs.py"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_starts(name):
    r = subprocess.run([sys.executable, str(RESEARCH / name), "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("usage: ")


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
