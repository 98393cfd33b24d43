"""Tables and figures from job results: one module per artifact, each with ``NAME`` and
``build(sweep, results_dir, figures_dir) -> faux.reports.base.Report``; ``BUILDERS`` lists
them (``python -m faux.aggregate --table <name>``). A new table or figure: one module here
and one line in ``BUILDERS``."""

from __future__ import annotations

import importlib

#: artifact name -> module of faux.reports
BUILDERS = {"table1": "table1", "fig4": "fig4", "table3": "table3", "table4": "table4",
            "fig5": "fig5", "fig11": "fig11", "readings": "readings"}


def builders() -> dict:
    """Every table/figure builder by name."""
    return {name: builder(name) for name in BUILDERS}


def builder(name: str):
    """The builder of one table/figure (imports only its module: the readings report pulls
    in torch, a table1 aggregation need not)."""
    return importlib.import_module(f"faux.reports.{BUILDERS[name]}").build
