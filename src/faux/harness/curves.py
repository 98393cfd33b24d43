"""The training curves of a job: which Lightning logger a trainer gets, and what the model
it trains is to the job.

``faux.harness.joblog`` opens the cell's run and sets a logger factory (:func:`curves_to`)
around the job; ``faux.models.training.fit`` asks :func:`job_logger` for its Trainer's
logger (``False``, none, outside the block); a caller names the model it trains with
:func:`training_role` (``target``, ``aux``, ``fair``, ``gan``, ...). Context variables, so a
job's curves never reach another job's run.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Sequence

#: the job's curve logger factory (``faux.harness.joblog`` sets it when ``logger=wandb``):
#: ``factory(role, seed)`` -> a Lightning logger for one ``fit``; None: trainers log nothing
_CURVES: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("faux_curves",
                                                                         default=None)
#: what the model being trained is to its job (``target``, ``aux``, ``fair``, ``gan``, ...)
_ROLE: contextvars.ContextVar[str | None] = contextvars.ContextVar("faux_role", default=None)


@contextlib.contextmanager
def curves_to(factory: Callable | None):
    """Inside the block, every ``faux.models.training.fit`` called without a ``logger`` trains with
    ``factory(role, seed)`` as its Lightning logger (the role: :func:`training_role`, else
    the module's class name in lower case). Logging never changes what is trained."""
    token = _CURVES.set(factory)
    try:
        yield
    finally:
        _CURVES.reset(token)


@contextlib.contextmanager
def training_role(role: str | None):
    """Name what the models trained inside the block are (their curves' metric prefix)."""
    token = _ROLE.set(role)
    try:
        yield
    finally:
        _ROLE.reset(token)


def curve_loggers(seeds: Sequence[int], default_role: str) -> list | None:
    """For a loop that trains several seeds at once without a Trainer: one curve logger
    per seed (``logger.log_metrics(metrics, step)``) inside :func:`curves_to`, else None."""
    factory = _CURVES.get()
    if factory is None:
        return None
    role = _ROLE.get() or default_role
    return [factory(role, int(s)) for s in seeds]


def job_logger(module, seed: int):
    """The curve logger of one ``fit`` of ``module`` (False outside :func:`curves_to`)."""
    factory = _CURVES.get()
    if factory is None:
        return False
    return factory(_ROLE.get() or type(module).__name__.lower(), int(seed))
