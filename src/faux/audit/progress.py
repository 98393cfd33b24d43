"""The audit's progress on stderr: a rich bar with rows/s on a terminal; where stderr is not
a terminal (a log file, a CI job, a pipe) one line every ``EVERY_S`` seconds, such as
``faux audit: scoring 40 % (12,000/30,000 rows), 8 s``, and the stage's last line once it
printed one (an audit shorter than ``EVERY_S`` prints none); ``enabled=False`` is silent."""

from __future__ import annotations

import sys
import time

EVERY_S = 10.0  # seconds between two progress lines where stderr is not a terminal


class Progress:
    def __init__(self, enabled: bool | None):
        tty = sys.stderr.isatty()
        self.enabled = tty if enabled is None else enabled
        self.lines = enabled is None and not tty
        self.bar = None

    def start(self, label: str, total: int | None):
        """A function ``advance(rows)`` for the stage ``label`` of ``total`` rows; each call
        first raises for a signal received meanwhile (``check_signals``)."""
        from faux.audit.interrupts import check_signals

        show = self._display(label, total)

        def advance(m):
            check_signals()
            show(m)

        return advance

    def _display(self, label: str, total: int | None):
        if self.lines:
            return _Lines(label, total)
        if not self.enabled:
            return lambda m: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        if self.bar is None:
            self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[rate]} rows/s"), TimeRemainingColumn(),
                           transient=False)
            self.bar.start()
        task = self.bar.add_task(label, total=total, rate="-")
        t0 = time.perf_counter()
        done = [0]

        def advance(m):
            done[0] += m
            rate = done[0] / max(time.perf_counter() - t0, 1e-9)
            self.bar.update(task, advance=m, rate=f"{rate:,.0f}")

        return advance

    def stop(self):
        if self.bar is not None:
            self.bar.stop()


class _Lines:
    """Periodic progress lines of one stage."""

    def __init__(self, label: str, total: int | None):
        self.label, self.total = label, total
        self.t0 = self.last = time.perf_counter()
        self.done = 0
        self.printed = False

    def __call__(self, m: int) -> None:
        self.done += m
        now = time.perf_counter()
        end = self.total is not None and self.done >= self.total
        if now - self.last >= EVERY_S or (end and self.printed):
            self.last = now
            self.printed = True
            print(self.text(now), file=sys.stderr, flush=True)

    def text(self, now: float) -> str:
        secs = f"{now - self.t0:,.0f} s"
        if self.total:
            pct = 100 * self.done / self.total
            return (f"faux audit: {self.label} {pct:.0f} % ({self.done:,}/{self.total:,} rows), "
                    f"{secs}")
        return f"faux audit: {self.label} {self.done:,} rows, {secs}"
