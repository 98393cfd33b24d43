"""Sweep grids of the Section 4.4 studies (Fig. 5, Fig. 11): validation before any job runs.

A grid names datasets (``pair=xc/xy``), fusions, bias levels, architecture
draws, GAN transport weights. :func:`grid_problems` lists everything wrong with a grid's
values at once; :class:`GridCheck` is a Hydra callback (``hydra.callbacks`` of
``conf/experiment/fig5.yaml`` / ``fig11.yaml``) that expands the sweep exactly as Hydra's
basic sweeper does (``hydra.sweeper.params`` first, then the command line's overrides) and
refuses it in ``on_multirun_start``, before any job is launched, whatever the launcher. A
single run (``python -m faux.run experiment=fig5 pair=...``) is checked by the job itself
with :func:`check_cell`. The checks are plain functions of plain values.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Iterable

from faux.errors import ConfigError

log = logging.getLogger("faux.grid")

#: the five Table 2 datasets (A.7.5 pairs them all); other known PMLB sets are accepted too
TABLE2 = ("backache", "credit_g", "australian", "wdbc", "magic")
FUSIONS = ("concat", "outer")
#: every ordered pair of Table 2 datasets (xc != xy): A.7.5's 20 pairs
ALL_PAIRS = tuple(f"{a}/{b}" for a in TABLE2 for b in TABLE2 if a != b)


def known_datasets() -> tuple[str, ...]:
    from faux.data.pmlb_data import KNOWN_PMLB

    return tuple(KNOWN_PMLB)


# --------------------------------------------------------------------------- value checks


def parse_pair(value) -> tuple[str, str]:
    """``"xc/xy"`` -> ``(xc, xy)`` (ConfigError when malformed, unknown, or xc == xy)."""
    probs = _pair_problems(value)
    if probs:
        raise ConfigError(probs[0])
    xc, xy = str(value).split("/")
    return xc.strip(), xy.strip()


def _pair_problems(value) -> list[str]:
    parts = str(value).split("/")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        return [f"pair {value!r} is not 'xc/xy' (e.g. australian/credit_g)"]
    xc, xy = (p.strip() for p in parts)
    known = known_datasets()
    out = [f"pair {value!r}: unknown dataset {d!r}" for d in dict.fromkeys((xc, xy))
           if d not in known]
    if xc == xy:
        out.append(f"pair {value!r}: xc and xy must differ")
    return out


def _float(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _bias_problems(value) -> list[str]:
    v = _float(value)
    if v is None or not 0.0 <= v <= 1.0:
        return [f"bias {value} is outside [0, 1]"]
    return []


def _fusion_problems(value) -> list[str]:
    return [] if str(value) in FUSIONS else [
        f"fusion {value!r} is unknown (choose {', '.join(FUSIONS)})"]


def _nonneg_int_problems(name: str):
    def check(value) -> list[str]:
        v = _float(value)
        return [] if v is not None and v >= 0 and v == int(v) else [
            f"{name} {value} is not an integer >= 0"]
    return check


def _nonneg_float_problems(name: str):
    def check(value) -> list[str]:
        v = _float(value)
        return [] if v is not None and v >= 0 else [f"{name} {value} is not a number >= 0"]
    return check


def _dataset_problems(name: str):
    def check(value) -> list[str]:
        return [] if str(value) in known_datasets() else [
            f"{name} {value!r} is an unknown dataset"]
    return check


#: per study: config key -> check of one value (returns a list of problems)
RULES: dict[str, dict] = {
    "fig5": {"pair": _pair_problems, "fusion": _fusion_problems, "bias": _bias_problems,
             "draw": _nonneg_int_problems("draw"), "seed": _nonneg_int_problems("seed")},
    "fig11": {"column.xc": _dataset_problems("column.xc"),
              "column.xy": _dataset_problems("column.xy"),
              "column.bias": _bias_problems, "column.fusion": _fusion_problems,
              "model.gan.transport_weight": _nonneg_float_problems("transport weight"),
              "gan_seed": _nonneg_int_problems("gan_seed"), "seed": _nonneg_int_problems("seed")},
}


def grid_problems(study: str, values: dict[str, Iterable]) -> list[str]:
    """Everything wrong with a grid: ``values`` maps each key of ``RULES[study]`` to the
    values the sweep takes (keys absent from ``values`` are not checked)."""
    if study not in RULES:
        raise ConfigError(f"unknown study {study!r}; choose one of {', '.join(RULES)}")
    out: list[str] = []
    for key, check in RULES[study].items():
        for v in values.get(key, ()):
            out.extend(p for p in check(v) if p not in out)
    if study == "fig11":
        for xc in values.get("column.xc", ()):
            for xy in values.get("column.xy", ()):
                if str(xc) == str(xy):
                    out.append(f"column xc and xy must differ (both {xc!r})")
    return out


def refusal(study: str, problems: list[str], n_jobs: int | None = None) -> ConfigError:
    """The one-line error naming every problem (``n_jobs`` given: a whole sweep refused)."""
    what = (f"{study} grid refused, none of its {n_jobs} jobs started" if n_jobs is not None
            else f"{study} job refused")
    return ConfigError(f"{what}: " + "; ".join(problems)
                       + f" (known datasets: {', '.join(known_datasets())}; fix the overrides)")


def check_cell(study: str, values: dict) -> None:
    """One job's values (``key -> value``); raises one ConfigError listing every problem."""
    probs = grid_problems(study, {k: [v] for k, v in values.items()})
    if probs:
        raise refusal(study, probs)


# --------------------------------------------------------------------------- Hydra sweep


def _select(cfg, key: str):
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key, default=None)


def sweep_values(cfg, keys: Iterable[str]) -> tuple[dict[str, list[str]], int]:
    """The values each of ``keys`` takes in the multirun ``cfg`` describes, and the number of
    jobs: ``hydra.sweeper.params`` then ``hydra.overrides.task``, expanded like Hydra's
    BasicSweeper (a later override of a key replaces an earlier one). Keys the sweep does not
    set take their value from ``cfg``."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    params = _select(cfg, "hydra.sweeper.params") or {}
    strings = [f"{k}={v}" for k, v in params.items()]
    task = _select(cfg, "hydra.overrides.task")
    strings += list(OmegaConf.to_container(task, resolve=False)) if task is not None else []
    parser = OverridesParser.create()
    swept: dict[str, list[str]] = {}
    for ov in parser.parse_overrides(strings):
        key = ov.get_key_element()
        key = key.lstrip("+~")
        if ov.is_sweep_override():
            if not ov.is_discrete_sweep():
                raise ConfigError(f"sweep of {key!r} is not a list, range or choice; "
                                  "the basic sweeper runs discrete sweeps only")
            swept[key] = list(ov.sweep_string_iterator())
        else:
            swept[key] = [ov.get_value_element_as_str()]
    n_jobs = 1
    for v in swept.values():
        n_jobs *= max(1, len(v))
    out = {}
    for k in keys:
        if k in swept:
            out[k] = swept[k]
        else:
            v = _select(cfg, k)
            out[k] = [] if v is None else [str(v)]
    return out, n_jobs


try:
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover - hydra < 1.1
    _Callback = object


class GridCheck(_Callback):
    """Hydra callback: refuse a study's sweep before any job starts when a value is bad.

    ``hydra.callbacks.grid_check: {_target_: faux.studies.grid.GridCheck, study: fig5}``.
    """

    def __init__(self, study: str):
        if study not in RULES:
            raise ConfigError(f"unknown study {study!r}; choose one of {', '.join(RULES)}")
        self.study = study

    def check(self, config) -> int:
        """Raise ConfigError listing every bad value of the sweep; else the number of jobs."""
        values, n_jobs = sweep_values(config, RULES[self.study])
        probs = grid_problems(self.study, values)
        if probs:
            raise refusal(self.study, probs, n_jobs)
        return n_jobs

    def on_multirun_start(self, config, **kwargs) -> None:
        # Hydra turns an exception raised by a callback into a warning and goes on launching
        # the jobs; SystemExit is not an Exception, so it stops the sweep here.
        try:
            n_jobs = self.check(config)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        log.info("%s grid: %d jobs; values checked", self.study, n_jobs)
