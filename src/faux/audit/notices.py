"""How an audit warns: ``FauxAuditWarning``, raised with ``warnings.warn`` and recorded for
the audit under way (``collecting``), so that its result can list them."""

from __future__ import annotations

import contextvars
import warnings


class FauxAuditWarning(UserWarning):
    """A warning about an audit's result (see ``AuditResult.warnings``)."""


_collected: contextvars.ContextVar[list | None] = contextvars.ContextVar("faux_audit_warnings",
                                                                          default=None)


def warn(msg: str, stacklevel: int = 3) -> None:
    """One warning (whitespace collapsed to one line): ``FauxAuditWarning``, and recorded for
    the audit under way (``collecting``)."""
    msg = " ".join(msg.split())
    got = _collected.get()
    if got is not None and msg not in got:
        got.append(msg)
    warnings.warn(msg, FauxAuditWarning, stacklevel=stacklevel)


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
