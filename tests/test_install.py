"""Install contract: the Makefile's Python check, ranges in pyproject, exact lines in constraints.txt."""

import ast
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
SUPPORTED = ("3.11", "3.12", "3.13")
# distributions a venv is seeded with and pip freeze leaves out
SEED = {"pip", "wheel"}

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make not installed")


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep and version and not any(c in version for c in "<>=!~*,;"), line
        pins[canonicalize_name(name)] = version
    return pins


def _requirements(extras=("audit", "cluster", "dev")) -> list[Requirement]:
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    return reqs


@pytest.fixture
def make_copy(tmp_path):
    """The Makefile and what its install target depends on, copied into an empty folder."""
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)

    def fake_python(version: str) -> Path:
        # answers the Makefile's version query the way a real interpreter of `version` would
        exe = tmp_path / f"python{version}"
        exe.write_text(f'#!/bin/sh\necho "{version} $0"\n')
        exe.chmod(0o755)
        return exe

    def make(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "--no-print-directory", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    return tmp_path, fake_python, make


@needs_make
@pytest.mark.parametrize("version", ["3.10", "3.14"])
@pytest.mark.parametrize("target", [["install"], ["-n", "install"], ["test"], ["python-check"]],
                         ids=["install", "dry-run", "test", "python-check"])
def test_make_refuses_unsupported_python_in_one_line(make_copy, version, target):
    folder, fake_python, make = make_copy
    exe = fake_python(version)
    out = make(*target, f"PYTHON={exe}")
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert out.returncode != 0
    assert len(lines) == 1, lines
    assert f"faux needs Python {SUPPORTED[0]}-{SUPPORTED[-1]}; found {version} at {exe}" in lines[0]
    assert "pass PYTHON=python3." in lines[0]
    assert not (folder / ".venv").exists()


@needs_make
def test_make_refuses_missing_interpreter_and_old_variable_name(make_copy):
    folder, fake_python, make = make_copy
    out = make("install", "PYTHON=no-such-python")
    assert out.returncode != 0
    assert "found no Python at 'no-such-python'" in out.stderr
    # PYTHON_SYS, the setting's older name, still chooses the interpreter
    out = make("install", f"PYTHON_SYS={fake_python('3.10')}")
    assert out.returncode != 0 and "found 3.10 at" in out.stderr
    assert not (folder / ".venv").exists()


@needs_make
@pytest.mark.parametrize("version", SUPPORTED)
def test_make_uses_a_supported_python_and_the_constraints(make_copy, version):
    _, fake_python, make = make_copy
    exe = fake_python(version)
    out = make("-n", "install", f"PYTHON={exe}")
    assert out.returncode == 0, out.stderr
    assert f"{exe} -m venv .venv" in out.stdout
    assert "pip install" in out.stdout and "-c constraints.txt" in out.stdout
    out = make("python-check", f"PYTHON={exe}")
    assert out.returncode == 0 and f"Python {version} at {exe}: supported" in out.stdout


def test_package_data_names_files_that_exist():
    """Each pattern of ``[tool.setuptools.package-data]`` matches a file of its package (the
    ``py.typed`` marker: faux's typed dataclasses are its public API)."""
    for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items():
        folder = ROOT / "src" / package.replace(".", "/")
        for pattern in patterns:
            assert any(p.is_file() for p in folder.glob(pattern)), f"{package}: {pattern}"
    assert (ROOT / "src" / "faux" / "py.typed").read_bytes() == b""


def test_requires_python_admits_exactly_the_supported_versions():
    spec = Requirement(f"faux{PROJECT['requires-python']}").specifier
    for minor in range(8, 16):
        version = f"3.{minor}"
        assert spec.contains(f"{version}.0") == (version in SUPPORTED), version


def test_dependencies_are_ranges_with_an_exact_tested_point():
    pins = _constraints()
    for req in _requirements():
        ops = {s.operator for s in req.specifier}
        assert not ops & {"==", "==="}, f"{req} is a pin: pyproject states ranges"
        assert ">=" in ops and "<" in ops, f"{req} needs a floor and a cap"
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} has no exact line in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])
    assert pins["torch"] == "2.13.0"
    assert pins["pandas"].startswith("2.") and Version(pins["omegaconf"]) < Version("2.4")


def test_captum_is_a_dev_tool_only():
    runtime = {canonicalize_name(Requirement(r).name) for r in PROJECT["dependencies"]}
    assert "captum" not in runtime
    extras = PROJECT["optional-dependencies"]
    assert [e for e in extras if any(Requirement(r).name == "captum" for r in extras[e])] == ["dev"]
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "captum" for n in names), f"{path} imports captum"


def test_installed_environment_is_the_constraints_set():
    """Every distribution faux[dev] pulls in, transitively, is installed at its constraints line."""
    pins = _constraints()
    env = default_environment()
    todo = _requirements(extras=("dev",))
    seen = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or name in SEED:
            continue
        seen.add(name)
        assert name in pins, f"{req.name} is installed but has no line in constraints.txt"
        installed = Version(metadata.version(req.name))
        assert installed.public == Version(pins[name]).public, (
            f"{req.name} {installed} installed, constraints.txt says {pins[name]}: "
            "reinstall with `make install`")
        for dep in metadata.requires(req.name) or []:
            dep = Requirement(dep)
            extras = ("", *req.extras)
            if dep.marker is None or any(dep.marker.evaluate({**env, "extra": e}) for e in extras):
                todo.append(dep)
    assert {"torch", "numpy", "captum", "pytest"} <= seen
