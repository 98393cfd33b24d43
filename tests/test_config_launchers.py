"""The launchers are Hydra's own group: ``hydra/launcher=<name>`` composes with every
experiment (conf/hydra/launcher/<name>.yaml sets faux's values on the plugin's config), the
experiments' default stays joblib, and the former ``launcher=<name>`` is refused in one line."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
TARGETS = {
    "basic": "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
    "joblib": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
    "ray": "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher",
    "submitit_local": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
    "submitit_slurm": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
}
PLUGINS = {"joblib": "hydra_plugins.hydra_joblib_launcher",
           "ray": "hydra_plugins.hydra_ray_launcher",
           "submitit_local": "hydra_plugins.hydra_submitit_launcher",
           "submitit_slurm": "hydra_plugins.hydra_submitit_launcher"}
SWEEPS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")
                if "hydra/launcher" in p.read_text())


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _launcher(*overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
    return cfg.hydra.launcher


def test_every_launcher_file_is_tested():
    assert {p.stem for p in (CONF / "hydra" / "launcher").glob("*.yaml")} | {"basic"} \
        == set(TARGETS)
    assert not (CONF / "launcher").exists()


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("experiment", ["table1", "real"])
def test_hydra_launcher_composes_over_an_experiment(name, experiment):
    if name in PLUGINS and not _installed(PLUGINS[name]):
        pytest.skip(f"{PLUGINS[name]} not installed (pip install -e '.[cluster]')")
    launcher = _launcher(f"experiment={experiment}", f"hydra/launcher={name}")
    assert launcher._target_ == TARGETS[name]
    file = CONF / "hydra" / "launcher" / f"{name}.yaml"
    if file.exists():                          # faux's values over the plugin's defaults
        mine = OmegaConf.to_container(OmegaConf.load(file))
        got = OmegaConf.to_container(launcher)
        assert {k: got[k] for k in mine} == mine
    else:                                      # Hydra's own basic launcher: nothing added
        assert set(launcher) == {"_target_"}


def test_basic_launcher_drops_the_joblib_settings_of_the_experiment():
    assert dict(_launcher("experiment=table1", "hydra/launcher=basic")) == {
        "_target_": TARGETS["basic"]}


@pytest.mark.parametrize("experiment", SWEEPS)
def test_sweep_experiments_default_to_joblib(experiment):
    launcher = _launcher(f"experiment={experiment}")
    assert launcher._target_ == TARGETS["joblib"]
    assert launcher.prefer == "processes" and launcher.verbose == 0


def test_joblib_jobs_follow_faux_jobs(monkeypatch):
    monkeypatch.setenv("FAUX_JOBS", "3")
    assert _launcher("hydra/launcher=joblib").n_jobs == 3
    monkeypatch.delenv("FAUX_JOBS")
    assert _launcher("hydra/launcher=joblib").n_jobs == -1


def test_without_an_experiment_the_launcher_is_hydras_basic():
    assert dict(_launcher()) == {"_target_": TARGETS["basic"]}


@pytest.mark.parametrize("arg", ["launcher=joblib", "+launcher=basic"])
def test_the_former_launcher_group_is_refused_in_one_line(arg, tmp_path):
    r = subprocess.run([sys.executable, "-m", "faux.run", "-m", "experiment=table1", arg,
                        f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    name = arg.split("=")[1]
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: {arg}: the launcher group is Hydra's own now; use hydra/launcher={name}"]
    assert not (tmp_path / "sweep").exists()


def test_the_launcher_file_warning_stays_quiet(tmp_path):
    """Hydra warns that merging a file onto a plugin's config of the same name is deprecated;
    faux.run silences that one warning (and only it)."""
    r = subprocess.run([sys.executable, "-m", "faux.run", "experiment=table1",
                        "hydra/launcher=joblib", "--cfg", "hydra", "-p", "hydra.launcher"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "JoblibLauncher" in r.stdout and "n_jobs" in r.stdout
    assert "Warning" not in r.stderr and "deprecated" not in r.stderr, r.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
@pytest.mark.parametrize("launcher,expected", [("basic", "hydra/launcher=basic"), ("", None)])
def test_make_passes_launcher_to_the_sweep(launcher, expected):
    r = subprocess.run(["make", "-n", "table1", f"LAUNCHER={launcher}", "PY=python"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if "-m faux.run" in x)
    assert "experiment=table1" in line
    if expected:
        assert expected in line.split()
    else:
        assert "launcher" not in line
