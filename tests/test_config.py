"""The config tree composes with every option of every group, and every _target_ builds."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
# groups whose options change Hydra's own settings (hydra/launcher: test_config_launchers.py)
# or stand for a whole job
SKIP_GROUPS = {"hydra", "experiment"}
PRIMARY = {"paths", "trainer", "logger", "profile", "data", "model/target", "model/aux",
           "model/fair", "model/gan", "synthetic", "reading"}


def options():
    """(group, option) of every config file of the groups composed here; conf/reading/ is
    composed and instantiated once per reading in tests/test_readings.py."""
    for group in sorted(p for p in CONF.iterdir() if p.is_dir() and p.name not in SKIP_GROUPS
                        and p.name != "reading"):
        for f in sorted(group.rglob("*.yaml")):
            yield group.name, str(f.relative_to(group).with_suffix(""))


def _targets(node, path=""):
    if OmegaConf.is_dict(node):
        if "_target_" in node:
            yield path, node
        for k in node:
            yield from _targets(node[k], f"{path}.{k}" if path else str(k))


@pytest.mark.parametrize("group,option", list(options()))
def test_every_option_composes_and_instantiates(group, option, tmp_path):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        key = group if "/" not in option else f"{group}/{option.rsplit('/', 1)[0]}"
        opt = option.rsplit("/", 1)[-1]
        # groups outside the primary defaults list (generator) are appended with "+"
        plus = "" if key in PRIMARY else "+"
        cfg = compose("config", overrides=[f"{plus}{key}={opt}", f"paths.output_dir={tmp_path}"])
    found = list(_targets(cfg))
    for path, node in found:
        obj = instantiate(node)
        assert obj is not None, path


def test_unknown_override_is_refused():
    r = subprocess.run([sys.executable, "-m", "faux.run", "data=nosuch"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "nosuch" in r.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_real_data_tables_come_from_the_one_real_sweep():
    """Fig. 4/10, Table 3 and Table 4 are reports of experiment=real (no experiment of their
    own): `make fig4 table3 table4` runs that one sweep and aggregates it three times."""
    for name in ("fig4", "table3", "table4"):
        assert not (CONF / "experiment" / f"{name}.yaml").exists()
    r = subprocess.run(["make", "-n", "fig4", "table3", "table4", "PY=python"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    runs = [x for x in r.stdout.splitlines() if "-m faux.run" in x]
    aggregates = [x for x in r.stdout.splitlines() if "-m faux.aggregate" in x]
    assert len(runs) == 1 and "experiment=real" in runs[0].split()
    assert [x.split("--table ")[1].split()[0] for x in aggregates] == ["fig4", "table3", "table4"]
    assert all("outputs/real/multiruns/" in x for x in aggregates)


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_fig8_passes_the_logger_and_extra_overrides():
    r = subprocess.run(["make", "-n", "fig8", "LOGGER=wandb", "ARGS=seed=3", "PY=python"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    run = [x for x in r.stdout.splitlines() if "-m faux.run" in x]
    assert len(run) == 1 and {"experiment=fig8", "logger=wandb", "seed=3"} <= set(run[0].split())


def test_aggregate_help_is_a_users_help():
    r = subprocess.run([sys.executable, "-m", "faux.aggregate", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for needle in ("example:", "--table table1", "exit codes", "outputs/results", "W&B"):
        assert needle in r.stdout
    assert "``" not in r.stdout                 # no module docstring internals


def test_the_synthetic_benchmark_choices_are_the_synthetic_group():
    """conf/synthetic/ (the former `study` group, a name the package faux.studies also has):
    its keys are read as synthetic.*, and study.* overrides are refused."""
    from hydra.errors import ConfigCompositionException

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=table1", "synthetic.threshold_k=2"])
        assert "study" not in cfg and cfg.synthetic.threshold_k == 2
        assert cfg.synthetic.options == {} and cfg.reading.ng in ("feature", "sample")
        with pytest.raises(ConfigCompositionException, match="study"):
            compose("config", overrides=["experiment=table1", "study.threshold_k=2"])
