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
