"""The IFS threshold's settings are read where they are written: ``synthetic.threshold_k``
(conf/synthetic/default.yaml) and ``reading.fraction`` (the schema's default) reach every
synthetic study, change the labels of a tiny column when changed, and no source file under
src/ holds a copy of either value."""

import re
from pathlib import Path

import pytest

from faux.studies import synth_defaults

ROOT = Path(__file__).resolve().parents[1]
COLUMN = ("experiment=table1", "profile=tiny", "column=Synthetic-2")


def _compose(*overrides) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    import faux.run  # noqa: F401  (registers ${faux_methods:})

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[*overrides, "paths.output_dir=."])
    return OmegaConf.to_container(cfg, resolve=True)


def test_the_defaults_are_the_composed_values():
    cfg = _compose(*COLUMN)
    assert cfg["synthetic"]["threshold_k"] == synth_defaults.threshold_k() == 3.0
    assert cfg["reading"]["fraction"] == synth_defaults.fraction() == 0.3


def test_every_synthetic_study_reads_threshold_k_and_fraction():
    from faux.studies import fig5, fig8, fig11, readings, table1

    over = ("synthetic.threshold_k=2.5", "reading.fraction=0.2")
    settings = [
        table1.Settings.from_config(_compose(*COLUMN, *over)).synth,
        fig5.Settings.from_config(_compose("experiment=fig5", "profile=tiny", *over)).synth,
        fig11.Settings.from_config(_compose("experiment=fig11", "profile=tiny", *over)).synth,
        readings.Settings.from_config(_compose("experiment=readings", "profile=tiny",
                                               "column=Synthetic-2", *over)).synth]
    for s in settings:
        assert (s.threshold_k, s.top_fraction) == (2.5, 0.2)
    assert fig8.Settings.from_config(_compose("experiment=fig8", "profile=tiny", *over)).k == 2.5


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("threshold-cache")


def _labels(cache, *overrides):
    """The test labels of the tiny Synthetic-2 column under ``overrides`` (Table 1's job)."""
    from faux.studies import table1
    from faux.studies.column import prepare_shared
    from faux.studies.readings import calibration_ifs, labels_for

    s = table1.Settings.from_config(_compose(*COLUMN, f"paths.cache_dir={cache}", *overrides))
    pc = prepare_shared(s.column, s.synth, s.target, s.seed).pc
    labels, _ = labels_for(pc, s.threshold, s.synth,
                           calibration_ifs(s.column, s.synth, s.target, s.seed, s.threshold))
    return labels.numpy()


@pytest.mark.parametrize("reading", ["axes/softmax", "axes/softmax_kstd"])   # mean + k std, k std
def test_threshold_k_changes_the_labels(cache, reading):
    three = _labels(cache, f"reading={reading}")
    assert (three == _labels(cache, f"reading={reading}", "synthetic.threshold_k=3.0")).all()
    two = _labels(cache, f"reading={reading}", "synthetic.threshold_k=1.0")
    assert two.sum() > three.sum()                  # a lower threshold: more positives
    assert (two >= three).all()                     # every earlier positive stays one


def test_fraction_changes_the_labels(cache):
    default = _labels(cache, "reading=p30_softmax")
    assert default.mean() == pytest.approx(0.3, abs=0.01)
    fifth = _labels(cache, "reading=p30_softmax", "reading.fraction=0.2")
    assert fifth.mean() == pytest.approx(0.2, abs=0.01)
    assert (fifth <= default).all()


# a literal 0.3 given as a fraction (``fraction=0.3``, ``fraction: float = 0.3``,
# ``top_fraction_labels(v, 0.3)``, ``ap_top_fraction(v, s, 0.3)``) or 3.0 given as the
# threshold's k (``k=3.0``, ``K_STD = 3.0``, ``threshold_k ... 3.0``, ``ifs_threshold(v, 3.0)``)
_FRACTION = re.compile(r"fraction\w*\s*(?::\s*\w+\s*)?=\s*0?\.30*\b"
                       r"|(?:top_fraction_labels|ap_top_fraction)\([^)]*\b0?\.30*\s*\)")
_K = re.compile(r"\b(?:k|K_STD|k_std|threshold_k)\s*(?::\s*[\w| ]+)?=\s*3(?:\.0*)?\b"
                r"|ifs_threshold\([^)]*\b3(?:\.0*)?\s*\)")


def _code(line: str) -> str:
    return line.split("#", 1)[0]


def test_the_patterns_catch_the_old_hard_codes():
    for old in ("K_STD = 3.0", "k: float = 3.0,", "ifs_threshold(v_ref, k=3.0)",
                "ifs_threshold(v, 3.0)"):
        assert _K.search(old), old
    for old in ("fraction: float = 0.3", "top_fraction: float = 0.3    # the share",
                "ap_top_fraction(pc.ifs_test, scores, 0.3)", "fraction=0.3"):
        assert _FRACTION.search(_code(old)), old
    assert not _FRACTION.search("tau: float = 0.3") and not _K.search("tau=3.0")


def test_no_source_file_hard_codes_the_fraction_or_k():
    hits = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if _FRACTION.search(_code(line)) or _K.search(_code(line)):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)
