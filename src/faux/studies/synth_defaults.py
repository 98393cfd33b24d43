"""The threshold settings of the synthetic benchmark where no config was composed (a library
call, ``python -m faux.studies.fig8``): read from where they are written once, so the code
holds no copy of them.

* ``k`` of the IFS threshold rules: ``threshold_k`` in ``conf/synthetic/default.yaml``
  (every study reads the composed ``synthetic.threshold_k``);
* how a cell's aux retrainings are trained: ``aux_trainer`` in the same file (every study
  reads the composed ``synthetic.aux_trainer``);
* the top_fraction and calibrated rules' share of positives: the default of
  ``faux.harness.schema.Reading.fraction`` (every study reads the composed
  ``reading.fraction``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from faux.errors import ConfigError

SYNTHETIC_YAML = Path(__file__).resolve().parents[3] / "conf" / "synthetic" / "default.yaml"


@cache
def _synthetic(key: str):
    """``key`` of conf/synthetic/default.yaml."""
    import yaml

    try:
        return (yaml.safe_load(SYNTHETIC_YAML.read_text()) or {})[key]
    except (OSError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read {key} from {SYNTHETIC_YAML} ({exc}); pass it "
                          "explicitly") from None


def threshold_k() -> float:
    """``threshold_k`` of conf/synthetic/default.yaml."""
    return float(_synthetic("threshold_k"))


def aux_trainer() -> str:
    """``aux_trainer`` of conf/synthetic/default.yaml."""
    return str(_synthetic("aux_trainer"))


def fraction() -> float:
    """The default of the reading's ``fraction`` (faux.harness.schema.Reading)."""
    from faux.harness.schema import READING_NUMERIC

    return float(READING_NUMERIC["fraction"][0])
