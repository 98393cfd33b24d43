"""What every job shares that needs the methods, the data loaders or the synthetic
benchmark: its config hash (less the keys only other methods read), the data files it names
(their checksum is in the hash), the checks before training, and the config resolvers.

The harness parts (the hash itself, folder names, result files) are in
:mod:`faux.harness.identity` and :mod:`faux.harness.results`; ``python -m faux.run`` and the
aggregation (``faux.reports.sweep``) both compute a job's hash through :func:`config_hash`.
"""

from __future__ import annotations

import re
from pathlib import Path

from faux.harness import identity


def register_resolvers() -> None:
    """``${faux_methods:}``: the registered method names, comma-separated (Table 1's sweep
    list in conf/experiment/table1.yaml reads the registry through it); ``${faux_job_dir:}``:
    a multirun job's folder (:func:`faux.harness.identity.job_dir_name`)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("faux_methods"):
        def methods() -> str:
            from faux.methods import registry

            return ",".join(registry.names())

        OmegaConf.register_new_resolver("faux_methods", methods)
    identity.register_job_dir_resolver()


def config_hash(cfg: dict, data_sha256: str | None = None) -> str:
    """:func:`faux.harness.identity.config_hash` of a job's plain config; a one-method job
    leaves out the keys only other methods read (:func:`faux.studies.config.foreign_keys`)."""
    foreign: tuple[str, ...] = ()
    if isinstance(cfg.get("method"), str):
        from faux.methods import registry
        from faux.studies.config import foreign_keys

        if cfg["method"] in registry.names():
            foreign = tuple(foreign_keys(cfg["method"]))
    return identity.config_hash(cfg, data_sha256, foreign)


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def _strings(node) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_strings(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_strings(v) for v in node)) if node else set()
    return {node} if isinstance(node, str) and _NAME.match(node) else set()


def job_data_files(plain: dict) -> list[Path]:
    """The data files a job may read: for every string value of its config (paths, hydra and
    logging left out) that names a PMLB dataset or a real dataset, its file(s) under the
    data root (``paths.data_dir``) that exist. Over-inclusive by design: a file is never
    missed; naming one more costs at most a rerun."""
    from faux.data.pmlb_data import pmlb_path
    from faux.data.real import REAL_DATASETS, raw_paths

    root = (plain.get("paths") or {}).get("data_dir")
    names = _strings({k: v for k, v in plain.items() if k not in identity.VOLATILE})
    files: list[Path] = []
    for name in sorted(names):
        p = pmlb_path(name, root)
        if p.is_file():
            files.append(p)
        if name in REAL_DATASETS:
            files += [q for q in raw_paths(name, root) if q.exists()]
    return files


def data_sha256(plain: dict) -> str | None:
    """:func:`faux.harness.cache.data_checksum` of :func:`job_data_files` (None: the job
    names none)."""
    from faux.harness.cache import data_checksum

    files = job_data_files(plain)
    return data_checksum(files) if files else None


def validate(plain: dict) -> None:
    """The job's own checks that need no training, run once before the study (the harness's
    numbers, ``faux.harness.validate``, are checked before this by ``faux.run``): a synthetic
    job's column options (``faux.synth.generator_settings.check_synthetic_options``: datasets, bias,
    fusion, decoding, tau) and its method name (the registry). Raises a one-line
    ConfigError."""
    from faux.errors import ConfigError

    column = plain.get("column")
    columns = plain.get("columns")
    if isinstance(column, str) and isinstance(columns, dict):
        if column not in columns:
            raise ConfigError(f"unknown column {column!r}; choose one of {', '.join(columns)}")
        column = columns[column]
    if isinstance(column, dict) and {"xc", "xy"} <= set(column):
        from faux.synth.generator_settings import check_synthetic_options

        known = ("xc", "xy", "bias", "fusion")          # the fields of studies.column.Column
        extra = sorted(set(column) - set(known))
        if extra:
            raise ConfigError(f"unknown column option(s) {extra}; a column has "
                              f"{', '.join(known)}")
        opts = {k: column[k] for k in known if k in column}
        if "bias" not in opts or "fusion" not in opts:
            raise ConfigError(f"column {column} needs bias and fusion")
        check_synthetic_options(root=(plain.get("paths") or {}).get("data_dir"), **opts)
        method = plain.get("method")
        if method is not None:
            from faux.methods import registry

            registry.check_names([method], "method")
