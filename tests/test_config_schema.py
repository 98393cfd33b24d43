"""The typed schema of the profile, synthetic and reading groups (faux.harness.schema): a
wrong type or an unknown key fails at composition, in one line from ``python -m faux.run``."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from faux.errors import ConfigError
from faux.harness import schema, validate
from faux.harness.exits import composition_error
from faux.studies.reading_check import AXES, NUMERIC

ROOT = Path(__file__).resolve().parents[1]
BASE = ["experiment=readings", "profile=tiny", "column=Synthetic-2"]

#: override -> the one line composition reports
BAD = [
    ("profile.max_epochs=abc", "profile.max_epochs=abc: expected an integer >= 1"),
    ("profile.patience=soon", "profile.patience=soon: expected an integer >= 0 or null"),
    ("profile.synth.n_test=1.5", "profile.synth.n_test=1.5: expected an integer >= 1"),
    ("profile.fig5.draws=two", "profile.fig5.draws=two: expected an integer >= 1"),
    ("profile.bogus=1", "profile.bogus=1: Key 'bogus' not in 'Profile'"),
    ("profile.synth.n_rows=3", "profile.synth.n_rows=3: Key 'n_rows' not in 'SynthSizes'"),
    ("synthetic.threshold_k=big", "synthetic.threshold_k=big: expected a finite number >= 0"),
    ("synthetic.bogus=1", "synthetic.bogus=1: Key 'bogus' not in 'Synthetic'"),
    ("synthetic.options.ig_steps=8", "synthetic.options.ig_steps=8: Key 'ig_steps' is not in "
     "struct; to add it: +synthetic.options.ig_steps=8"),
    ("reading.fraction=high", "reading.fraction=high: expected a finite number in (0, 1]"),
    ("reading.tau=hot", "reading.tau=hot: expected one of 0.3, 1.0"),
    ("reading.colour=red", "reading.colour=red: Key 'colour' not in 'Reading'"),
    ("profile=nope", "In 'config': Could not find 'profile/nope'; choose one of paper, quick, "
     "tiny"),
]


def _compose(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[*BASE, *overrides])


@pytest.mark.parametrize("override,line", BAD)
def test_a_wrong_type_or_unknown_key_fails_at_composition_in_one_line(override, line):
    with pytest.raises(ConfigCompositionException) as exc:
        _compose(override)
    assert composition_error(exc.value) == line


@pytest.mark.parametrize("override,line", [BAD[0], BAD[7], BAD[9], BAD[11]])
def test_the_entry_point_prints_the_line_and_exits_2(tmp_path, override, line):
    r = subprocess.run([sys.executable, "-m", "faux.run", *BASE, override,
                        f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env={**os.environ,
                                                    "FAUX_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip().splitlines() == [f"error: {line}"]
    assert not list(tmp_path.iterdir())            # nothing written


@pytest.mark.parametrize("override,key", [("+synthetic.bogus=1", "synthetic.bogus"),
                                          ("+reading.colour=red", "reading.colour"),
                                          ("+profile.synth.n_rows=3", "profile.synth.n_rows")])
def test_a_key_added_with_plus_is_refused_before_the_run(override, key):
    """Hydra lets ``+`` add a key to a schema node; the check before a run refuses it."""
    cfg = _compose(override)
    plain = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in schema.SCHEMAS}
    with pytest.raises(ConfigError, match=f"^{key}: not a key of the "):
        validate.check(plain)


# every reading composing under the schema: tests/test_readings.py (one composition per
# reading serves both files' checks)


def test_axes_are_the_schemas_choices():
    fields = {f.name: f for f in dataclasses.fields(schema.Reading)}
    assert AXES == {k: f.metadata["choices"] for k, f in fields.items() if "choices" in f.metadata}
    assert set(fields) == {"name", *AXES, *NUMERIC, "generators"}
    assert NUMERIC == {"fraction": (0.3, 0.0, 1.0)}


def test_the_synthetic_group_holds_no_reading_value():
    """The reading is applied once (faux.studies.readings.synth_settings), not also by
    interpolation in conf/synthetic/."""
    text = (ROOT / "conf" / "synthetic" / "default.yaml").read_text()
    assert "${reading." not in text


def test_synth_settings_applies_the_reading_and_synthetic_options_override_it():
    from faux.studies.readings import reading_of, synth_settings

    def settings(*overrides):
        cfg = _compose("reading=axes/softmax", *overrides)
        plain = {k: OmegaConf.to_container(cfg[k], resolve=True)
                 for k in ("profile", "synthetic", "reading", "trainer")}
        plain["paths"] = {"cache_dir": "/nonexistent", "data_dir": "/nonexistent"}
        return synth_settings(plain, reading_of(plain)[1], ("magic", "backache"))

    s = settings()
    assert (s.options.output, s.options.ng, s.options.ig_steps) == ("prob", "feature", 50)
    assert s.output == "prob" and s.gen_opts == {"decoding": "softmax", "tau": 0.3,
                                                 "dxdc_at": "mid"}
    s = settings("+synthetic.options.ng=sample", "+synthetic.options.ig_steps=8")
    assert (s.options.ng, s.options.ig_steps) == ("sample", 8)
