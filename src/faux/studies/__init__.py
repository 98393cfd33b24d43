"""The studies: one module per table/figure study, each with a ``Settings`` dataclass
(``Settings.from_config(cfg)``: the only code that reads config keys) and one
``run(settings, out_dir, log) -> metrics``. ``faux.run`` picks the module by ``cfg.job``.

A new study: one module here with ``JOB``, ``Settings`` and ``run``, one line in ``STUDIES``
and one ``conf/experiment/<name>.yaml`` setting ``job: <JOB>``.
"""

from __future__ import annotations

import importlib

from faux.errors import ConfigError

#: job name (``job:`` in the config, ``job`` in result.json) -> module of faux.studies
STUDIES = {"summary": "summary", "table1_cell": "table1", "fig5_cell": "fig5",
           "fig11_cell": "fig11", "fig8": "fig8", "real_cell": "real",
           "readings_cell": "readings"}

#: jobs whose output is result.json and files it names: ``faux.run`` may reuse an identical
#: job's result (same config hash, same faux code) from the cache instead of recomputing it;
#: the reused result points at the scores.npz of the job that computed them
MEMO_JOBS = frozenset({"table1_cell"})


def get(job: str):
    """The study module that runs ``job``."""
    if job not in STUDIES:
        raise ConfigError(f"unknown job {job!r}; choose one of {', '.join(STUDIES)}")
    return importlib.import_module(f"faux.studies.{STUDIES[job]}")
