"""Signals during an audit: a Ctrl-C anywhere raises ``KeyboardInterrupt`` and a SIGTERM
``Terminated`` (a ``SystemExit`` with status 143), each once the audit removed what it had
created; while the outputs are moved into place (milliseconds) both wait, so that a folder
is never left half replaced.

A handler's exception is lost when the signal lands while Python runs a finaliser (a
``__del__`` or a callback of the garbage collector: "Exception ignored in ..."). So the
handlers also record the signal, and the audit calls ``check_signals`` between stages, at
every batch and before its outputs are written: a signal is never swallowed."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from faux.audit.notices import warn

EXIT_TERMINATED = 128 + signal.SIGTERM  # the shell's status of a process ended by SIGTERM


class Terminated(SystemExit):
    """SIGTERM during the audit, raised once the audit removed what it had created: like the
    signal's default action, the process exits with status 143 unless this is caught."""

    def __init__(self):
        super().__init__(EXIT_TERMINATED)




class AuditInterrupted(BaseException):
    """Ctrl-C during the audit. Not a KeyboardInterrupt, which Lightning's trainer turns
    into ``sys.exit(1)``; converted to KeyboardInterrupt once the audit has cleaned up."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class AuditTerminated(AuditInterrupted):
    """SIGTERM during the audit; converted to ``Terminated`` once the audit has cleaned up."""


#: the signals received by ``interruptible``'s handlers since it was entered (signals are
#: process-wide, so this record is too)
_RECEIVED: list[int] = []


def replaceable(handler):
    """Mark ``handler`` (the ``faux`` command's own) as one an audit replaces while it runs,
    as it replaces the default handlers, and restores afterwards."""
    handler.faux_replaceable = True
    return handler


def _raise_for(signum: int):
    raise AuditTerminated if signum == signal.SIGTERM else AuditInterrupted


def check_signals() -> None:
    """Raise for a signal the handlers received even if their own raise was swallowed."""
    if _RECEIVED:
        _raise_for(_RECEIVED[0])


@contextmanager
def interruptible():
    """SIGINT raises ``AuditInterrupted`` in the audit (when it would raise KeyboardInterrupt),
    SIGTERM ``AuditTerminated`` (when it would end the process); a repeated signal is only
    recorded, so the cleanup the first one started completes. The previous handlers are
    restored afterwards, also when a library replaced them. A handler someone else installed
    is left alone (unless marked ``replaceable``)."""
    if not _main_thread():
        yield
        return
    prev = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(signum, frame):
        first = not _RECEIVED
        _RECEIVED.append(signum)
        if first:  # a repeated signal must not break the cleanup the first one started
            _raise_for(signum)

    on_signal.faux_audit_handler = True
    ours = [sig for sig, default in ((signal.SIGINT, signal.default_int_handler),
                                     (signal.SIGTERM, signal.SIG_DFL))
            if prev[sig] == default or getattr(prev[sig], "faux_replaceable", False)]
    if not any(getattr(h, "faux_audit_handler", False) for h in prev.values()):
        _RECEIVED.clear()  # not inside another audit: what earlier audits received is theirs
    for sig in ours:
        signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in prev.items():
            if handler is not None:  # None: installed outside Python, cannot be restored
                signal.signal(sig, handler)


@contextmanager
def deferred_interrupt():
    """SIGINT and SIGTERM wait while the outputs are moved into place (milliseconds), so
    that a folder is never left half replaced; the audit then completes."""
    if not _main_thread():
        yield
        return
    hit = []
    prev = {sig: signal.signal(sig, lambda signum, frame: hit.append(signum))
            for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in prev.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if hit:
            warn("interrupt received while the outputs were moved into place; they are "
                  "complete")
