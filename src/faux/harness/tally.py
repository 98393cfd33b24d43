"""The launching process's count of a sweep (:class:`Tally`: the jobs' events, the time left)
and its display on stderr: a live ``rich`` bar on a terminal, one plain line per job
elsewhere."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field


def fmt_time(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


@dataclass
class Tally:
    """What the launching process knows: events seen so far, and the time left estimate."""

    total: int | None
    parallel: int | None = None
    started: float = field(default_factory=time.monotonic)
    events: dict[int, dict] = field(default_factory=dict)

    @property
    def done(self) -> int:
        return len(self.events)

    def computed(self) -> list[float]:
        return [e["seconds"] for e in self.events.values() if e["status"] != "cached"]

    def eta(self, now: float | None = None) -> float | None:
        """Time left: jobs left x mean duration of the jobs that computed / jobs at once.

        ``jobs at once`` is the launcher's parallelism when known (basic 1, joblib n_jobs),
        else the observed one (sum of durations / elapsed)."""
        if self.total is None:
            return None
        left = self.total - self.done
        if left <= 0:
            return 0.0
        d = self.computed()
        if not d:
            return None
        elapsed = (now or time.monotonic()) - self.started
        par = self.parallel or max(1.0, sum(d) / max(elapsed, 1e-9))
        return left * (sum(d) / len(d)) / min(par, left)

    def line(self, ev: dict, now: float | None = None) -> str:
        now = now or time.monotonic()
        n = "?" if self.total is None else str(self.total)
        text = f"[{self.done}/{n}] {ev['cell']} {ev['status']} {ev['seconds']:.1f}s"
        if ev.get("headline"):
            text += f" {ev['headline']}"
        if ev["status"] == "failed":
            text += f" ({ev.get('error', '')}; log: {ev.get('log')})"
        return text + f" | elapsed {fmt_time(now - self.started)}, left ~{fmt_time(self.eta(now))}"

    def summary(self, cells: dict[int, str] | None = None) -> list[str]:
        counts: dict[str, int] = {}
        for e in self.events.values():
            counts[e["status"]] = counts.get(e["status"], 0) + 1
        n = "?" if self.total is None else str(self.total)
        missing = [c for num, c in sorted((cells or {}).items()) if num not in self.events]
        parts = [f"{v} {k}" for k, v in sorted(counts.items())]
        if missing:            # every job counted: finished ones by status, the rest not run
            parts.append(f"{len(missing)} not run")
        lines = [f"[sweep] {self.done}/{n} jobs in {fmt_time(time.monotonic() - self.started)}: "
                 + (", ".join(parts) or "none finished")]
        for num in sorted(self.events):
            e = self.events[num]
            if e["status"] == "failed":
                lines.append(f"  failed: {e['cell']} (log: {e.get('log')})")
        if missing:
            lines.append(f"  not finished ({len(missing)}): " + ", ".join(missing))
        return lines


class _Plain:
    def __init__(self, stream):
        self.stream = stream

    def start(self, total):
        pass

    def job(self, line: str, tally: Tally):
        print(line, file=self.stream, flush=True)

    def stop(self, lines: list[str]):
        for line in lines:
            print(line, file=self.stream, flush=True)


class _Rich:
    def __init__(self, stream):
        from rich.console import Console

        self.console = Console(file=stream)
        self.progress = None

    def start(self, total):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("left ~{task.fields[eta]}"),
                                 console=self.console, transient=False)
        self.task = self.progress.add_task("sweep", total=total, eta="?")
        self.progress.start()

    def job(self, line: str, tally: Tally):
        self.progress.console.print(line, highlight=False, markup=False, soft_wrap=True)
        self.progress.update(self.task, completed=tally.done, eta=fmt_time(tally.eta()))

    def stop(self, lines: list[str]):
        self.progress.stop()
        for line in lines:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)


def display_for(mode: str, stream):
    """The display of ``mode`` (auto: rich on a terminal, plain elsewhere) on ``stream``."""
    if mode == "auto":
        mode = "rich" if stream.isatty() else "plain"
    return _Rich(stream) if mode == "rich" else _Plain(stream)
