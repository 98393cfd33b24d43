"""How an audit warns: ``FauxAuditWarning``, raised with ``warnings.warn`` and recorded for
the audit under way (``collecting``), so that its result can list them."""

from __future__ import annotations

import contextvars
import os
import sys
import warnings

#: the faux package's folder, with a separator (so that ``faux_other/`` is not inside it)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class FauxAuditWarning(UserWarning):
    """A warning about an audit's result (see ``AuditResult.warnings``)."""


_collected: contextvars.ContextVar[list | None] = contextvars.ContextVar("faux_audit_warnings",
                                                                          default=None)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the faux package: a warning then names
    the user's line that called the audit, however deep in the pipeline it was raised."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def warn(msg: str, stacklevel: int | None = None) -> None:
    """One warning (whitespace collapsed to one line): ``FauxAuditWarning``, and recorded for
    the audit under way (``collecting``). By default it names the first line outside faux
    (the user's call of the audit)."""
    msg = " ".join(msg.split())
    got = _collected.get()
    if got is not None and msg not in got:
        got.append(msg)
    level = _caller_level() if stacklevel is None else stacklevel
    warnings.warn(msg, FauxAuditWarning, stacklevel=level)


def current() -> list[str]:
    """The warnings of the audit under way so far."""
    return list(_collected.get() or [])


class collecting:
    """``with collecting() as found:`` the warnings of the audit inside, in order."""

    def __enter__(self) -> list:
        self.found: list[str] = []
        self.token = _collected.set(self.found)
        return self.found

    def __exit__(self, *exc) -> None:
        _collected.reset(self.token)
