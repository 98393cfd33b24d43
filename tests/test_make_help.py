"""``make help``: every target with a ``##`` text, once, under one of the four sections."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["main job", "tables and figures", "audit", "development"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_help_lists_every_target_once_by_section():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    headers = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert headers == SECTIONS
    documented = re.findall(r"^([a-zA-Z0-9_-]+):.*?## ", (ROOT / "Makefile").read_text(), re.M)
    listed = [m.group(1) for m in re.finditer(r"^  ([a-zA-Z0-9_-]+) +\S", out, re.M)
              if m.group(1) in documented]
    assert sorted(listed) == sorted(documented)
    assert "faux audit --model" in out.split("audit\n", 1)[1].split("development", 1)[0]
