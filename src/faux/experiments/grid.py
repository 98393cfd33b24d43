"""Sweep grids of the Section 4.4 studies (Fig. 5, Fig. 11): validation, shared artifacts.

Validation. A grid names datasets (``pair=xc/xy``), fusions, bias levels, architecture
draws, GAN transport weights. :func:`grid_problems` lists everything wrong with a grid's
values at once; :class:`GridCheck` is a Hydra callback (``hydra.callbacks`` of
``conf/experiment/fig5.yaml`` / ``fig11.yaml``) that expands the sweep exactly as Hydra's
basic sweeper does (``hydra.sweeper.params`` first, then the command line's overrides) and
refuses it in ``on_multirun_start``, before any job is launched, whatever the launcher. A
single run (``python -m faux.run experiment=fig5 pair=...``) is checked by the job itself
with :func:`check_cell`. The checks are plain functions of plain values.

Shared artifacts. Each dataset's CVAE is trained once in total: :func:`ensure_generators`
builds (or loads) them one dataset at a time under an exclusive file lock in the cache
folder, so concurrent jobs (joblib workers) that need the same CVAE wait for the first
instead of training it again. :func:`cache_lock` serialises any other shared build (a
column's target and bias-0 reference). Locks are ``fcntl.flock`` locks: they hold between
processes of one machine (and on shared file systems that support flock).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

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

    ``hydra.callbacks.grid_check: {_target_: faux.experiments.grid.GridCheck, study: fig5}``.
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


# --------------------------------------------------------------------------- shared builds


def _lock_path(cache_root, name: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))
    if len(safe) > 120:
        safe = safe[:80] + hashlib.sha256(safe.encode()).hexdigest()[:16]
    path = Path(cache_root) / "locks" / f"{safe}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def cache_lock(cache_root, name: str, blocking: bool = True) -> Iterator[bool]:
    """An exclusive lock ``<cache_root>/locks/<name>.lock`` held for the ``with`` block.

    Yields True when held; with ``blocking=False`` yields False at once (holding nothing)
    when another process holds it."""
    with open(_lock_path(cache_root, name), "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def key_name(prefix: str, key: dict) -> str:
    """A short lock name for a key dict (``prefix-<hash>``)."""
    blob = json.dumps(key, sort_keys=True, default=str).encode()
    return f"{prefix}-{hashlib.sha256(blob).hexdigest()[:16]}"


def ensure_generators(datasets: Iterable[str], *, gen_cfgs: dict | None, gen_opts: dict | None,
                      cache, root=None) -> dict[str, bool]:
    """Build (or load) each dataset's CVAE under its lock, through
    :func:`faux.experiments.synthetic.make_generator` (so the cache key is the one
    ``prepare_column`` uses). A dataset whose lock another job holds is left for later (that
    job is building it), so two jobs build two different CVAEs at once rather than one job
    waiting. Returns ``{dataset: built_here}``."""
    from faux.experiments.synthetic import Column, make_generator

    def build(name):
        before = _n_entries(cache.root)
        make_generator(Column(name, name, 0.0, "concat"), gen_cfgs, gen_opts, cache, root=root)
        return _n_entries(cache.root) > before

    built: dict[str, bool] = {}
    pending = list(dict.fromkeys(datasets))
    while pending:
        for name in list(pending):                 # first every dataset nobody is building
            with cache_lock(cache.root, f"generator-{name}", blocking=False) as held:
                if held:
                    built[name] = build(name)
                    pending.remove(name)
        if pending:                                # then wait for the ones being built
            name = pending.pop(0)
            with cache_lock(cache.root, f"generator-{name}"):
                built[name] = build(name)
    return {name: built[name] for name in dict.fromkeys(datasets)}


def _n_entries(root) -> int:
    return len(list((Path(root) / "generator").glob("*.bin")))
