"""``python -m faux.run --help`` (conf/hydra/help/faux.yaml): one line for every experiment
and every group, then Hydra's list of each group's options."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def _section(text: str, title: str) -> list[str]:
    """The lines of ``== <title> ...`` up to the next blank line."""
    block = text.split(f"== {title}", 1)[1].split("\n", 1)[1]
    return block.split("\n\n", 1)[0].splitlines()


def _groups() -> set[str]:
    """Every config group a user picks from: conf/<group>/ and conf/model/<group>/, and
    hydra/launcher (the schema is faux's own, not a choice)."""
    out = {p.name for p in CONF.iterdir() if p.is_dir()} - {"hydra", "model", "schema"}
    out |= {f"model/{p.name}" for p in (CONF / "model").iterdir() if p.is_dir()}
    return out | {"hydra/launcher"}


def test_help_names_every_experiment_and_group_on_one_line_each():
    r = subprocess.run([sys.executable, "-m", "faux.run", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    named = {}
    for title in ("Experiments", "Groups"):
        lines = _section(r.stdout, title)
        assert all(re.match(r"^  \S+ +\S", line) for line in lines), lines   # one line each
        named[title] = [line.split()[0] for line in lines]
    experiments = {p.stem for p in (CONF / "experiment").glob("*.yaml")}
    assert set(named["Experiments"]) - {"(none)"} == experiments
    assert set(named["Groups"]) == _groups()
    # then Hydra's own list of the options: the readings a user picks from, the axes apart
    options = dict(line.split(": ", 1) for line in _section(r.stdout, "Options of every group"))
    assert "p30_softmax" in options["reading"].split(", ")
    assert "gumbel" in options["reading/axes"].split(", ")
    assert "gumbel" not in options["reading"].split(", ")
