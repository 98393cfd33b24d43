import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]

# Tests read the offline datasets through FAUX_DATA_DIR (the Makefile sets it; default to
# ../shared/data beside the checkout when run directly with pytest).
if not os.environ.get("FAUX_DATA_DIR"):
    shared = ROOT.parent / "shared" / "data"
    if shared.exists():
        os.environ["FAUX_DATA_DIR"] = str(shared)

torch.set_num_threads(1)


@pytest.fixture
def data_dir() -> Path:
    return Path(os.environ["FAUX_DATA_DIR"])


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Trained artifacts of tests go to a per-session cache, never the user's outputs/."""
    cache = tmp_path_factory.getbasetemp() / "faux-cache"
    monkeypatch.setenv("FAUX_CACHE_DIR", str(cache))


#: the test files that take longest (each about 15 s or more on a 2-core machine, most of it
#: the subprocesses they start), longest first. ``make test`` runs pytest-xdist with
#: ``--dist loadfile --no-loadscope-reorder``: whole files go to the workers in collection
#: order, so these go first and the many short files even out the workers' ends (xdist's own
#: order, most tests first, handed these out last, leaving one worker alone on them). A file
#: not listed keeps its place; a name here that no longer exists changes nothing.
LONG_FIRST = (
    "test_run.py", "test_readings.py", "test_audit_ray.py", "test_harness_reliability.py",
    "test_harness_interrupt.py", "test_table1_harness.py", "test_research_scripts.py",
    "test_sweep_fig5.py", "test_models_adel.py", "test_progress.py", "test_generator_cache.py",
    "test_audit_safety.py", "test_audit_loaders_security.py", "test_audit_tree_files.py",
    "test_sweep_fig11.py",
    "test_wandb.py", "test_audit_missing.py", "test_harness_atomic.py",
    "test_artifact_purity.py", "test_audit_worked_example.py", "test_fairness_check.py",
    "test_synth_fig8.py",
)


def pytest_collection_modifyitems(config, items):
    """Put the files of :data:`LONG_FIRST` first, in its order; every file's tests stay
    together and in their own order (the sort is stable)."""
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
