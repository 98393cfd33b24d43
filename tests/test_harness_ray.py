"""Ray's usage statistics stay off wherever faux starts or documents starting Ray."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]


def test_ray_launcher_config_passes_the_variable_to_the_workers():
    cfg = OmegaConf.load(ROOT / "conf" / "hydra" / "launcher" / "ray.yaml")
    env = OmegaConf.select(cfg, "ray.init.runtime_env.env_vars")
    assert env["RAY_USAGE_STATS_ENABLED"] == "0"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(not _installed("hydra_plugins.hydra_ray_launcher"),
                    reason="hydra-ray-launcher not installed (pip install -e '.[cluster]')")
def test_composed_ray_launcher_carries_the_variable():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["hydra/launcher=ray"], return_hydra_config=True)
    env = cfg.hydra.launcher.ray.init.runtime_env.env_vars
    assert env.RAY_USAGE_STATS_ENABLED == "0"


def _env_seen_by_hydra(**env) -> str:
    """RAY_USAGE_STATS_ENABLED as the process that launches the sweep (and attaches to Ray)
    has it when Hydra starts."""
    code = ("import os, faux.run as r; "
            "r._hydra_main = lambda: print(os.environ.get('RAY_USAGE_STATS_ENABLED')); r.main()")
    base = {k: v for k, v in os.environ.items() if k != "RAY_USAGE_STATS_ENABLED"}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**base, **env},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_faux_run_turns_usage_stats_off_before_hydra_starts():
    assert _env_seen_by_hydra() == "0"
    assert _env_seen_by_hydra(RAY_USAGE_STATS_ENABLED="1") == "1"     # an explicit choice wins


@pytest.mark.parametrize("doc", ["README.md", "conf/hydra/launcher/ray.yaml"])
def test_every_documented_ray_start_turns_usage_stats_off(doc):
    text = (ROOT / doc).read_text()
    starts = [m.start() for m in re.finditer(r"\bray start\b", text)]
    assert starts, doc
    for i in starts:
        before = text[max(0, i - 40):i]
        assert re.search(r"RAY_USAGE_STATS_ENABLED=0 (\S*/)?$", before), text[i - 80:i + 40]
