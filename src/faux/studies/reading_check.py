"""The readings study's checks, apart from the study so that they load without torch: a
reading's axis values (:func:`check_reading`) and the Hydra callback that refuses a readings
sweep before any job starts (:class:`ReadingCheck`). A sweep's launching process imports only
this module; each job imports :mod:`faux.studies.readings`, which re-exports these names.
"""

from __future__ import annotations

import logging
import sys

from faux.errors import ConfigError
from faux.harness.schema import READING_CHOICES, READING_NUMERIC, Reading

#: axis -> allowed values (the first is the project's earlier default): the choices of
#: the schema's reading fields (faux.harness.schema.Reading); conf/reading/*.yaml cite the
#: sentence of the paper each axis reads
AXES: dict[str, tuple] = READING_CHOICES
#: numeric reading fields with their default and open-closed range (lo, hi]
NUMERIC: dict[str, tuple[float, float, float]] = READING_NUMERIC
#: the output axes the ``output`` switch sets (LIC-UB's follows: it reads the IFS's or the
#: target's, equal under the switch)
OUTPUT_AXES = ("ifs_output", "target_output", "aux_output")
OUTPUT_WORDS = {"prob": "probability", "logit": "logit"}


def check_reading(reading: dict, name: str = "reading") -> dict:
    """The reading's axis values, checked by the schema (:class:`faux.harness.schema.Reading`):
    every axis present and every value among its choices; otherwise a ConfigError naming the
    choices. ``generators`` (per-dataset CVAE settings) is in the result only when set."""
    r = {k: v for k, v in dict(reading).items() if k != "name"}
    if "generators" in r:
        r["generators"] = _plain(r["generators"])
    unknown = sorted(set(r) - set(AXES) - set(NUMERIC) - {"generators"})
    if unknown:
        raise ConfigError(f"{name}: unknown axis {unknown[0]!r}; axes: "
                          f"{', '.join([*AXES, *NUMERIC, 'generators'])}")
    try:
        checked = Reading(name=name.removeprefix("reading "), **r)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {str(exc).split(': ', 1)[1]}") from None
    check_output_switch(checked, name)
    gens = {d: dict(g) for d, g in checked.generators.items()}
    return {**{k: getattr(checked, k) for k in (*r, *AXES) if k != "generators"},
            **{k: float(getattr(checked, k)) for k in NUMERIC},
            **({"generators": gens} if gens else {})}


def _plain(value):
    """A config mapping as plain dicts (a DictConfig from a composed reading, or a dict)."""
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def check_output_switch(r: Reading, name: str = "reading") -> None:
    """Under ``output: prob|logit`` every output axis (:data:`OUTPUT_AXES`) must be that output
    (a reading file writes them as ``${.output}``, so the switch sets them); a ConfigError
    naming the axis and the fix otherwise. ``per_axis`` leaves them as written."""
    o = r.output
    if o == "per_axis":
        return
    for axis in OUTPUT_AXES:
        if getattr(r, axis) != o:
            raise ConfigError(f"{name}: output={o} puts every test on the target's "
                              f"{OUTPUT_WORDS[o]} but "
                              f"{axis}={getattr(r, axis)}; set reading.{axis}={o}, use a "
                              f"reading that follows the switch (p30_softmax_{o}), or set "
                              f"reading.output=per_axis")


def sweep_readings(config) -> list[str]:
    """The reading names a multirun sweeps: the command line's ``reading=...`` if given,
    else ``hydra.sweeper.params.reading``, else the config's one reading."""
    names = None
    params = config.hydra.sweeper.get("params") or {}
    if params.get("reading") is not None:
        names = str(params["reading"])
    for o in config.hydra.overrides.task:
        if o.startswith("reading="):
            names = o.split("=", 1)[1]
    if names is None:
        return [str(config.reading.get("name", "?"))]
    return [n.strip() for n in names.split(",") if n.strip()]


try:                                   # Hydra is present wherever a sweep runs
    from hydra.experimental.callback import Callback as _Callback
except ImportError:                    # pragma: no cover
    _Callback = object


class ReadingCheck(_Callback):
    """Hydra callback: refuse a sweep before any job starts when a reading name is unknown
    or a reading's axis value is outside its choices (one line naming the choices)."""

    def check(self, config) -> int:
        from hydra.core.global_hydra import GlobalHydra

        loader = GlobalHydra.instance().config_loader()
        options = loader.get_group_options("reading")
        axes = [f"axes/{o}" for o in loader.get_group_options("reading/axes")]
        names = sweep_readings(config)
        bad = [n for n in names if n not in options + axes]
        if bad:
            raise ConfigError(f"unknown reading {bad[0]!r}; choose from {', '.join(options)}, "
                              f"or axes/<name> of conf/reading/axes/")
        check_reading(config.reading, f"reading {config.reading.get('name', '?')}")
        return len(names)

    def on_multirun_start(self, config, **kwargs) -> None:
        try:
            n = self.check(config)
        except ConfigError as exc:      # SystemExit: Hydra would only warn on an exception
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        logging.getLogger("faux.studies").info("readings: %d readings checked", n)
