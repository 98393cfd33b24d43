"""Every world of the suite, by profile: the DoWhy worlds (4 families x weak/strong), the
causal-profiler SCMs and the project's planted world. A world is built only when asked for
(``builders`` maps names to functions)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from faux.worlds.world import World


@dataclass(frozen=True)
class Profile:
    """Sizes of a suite run."""

    name: str
    dowhy_rows: int
    profiler_count: int
    profiler_rows: int
    planted_rows: int

    def with_rows(self, rows: int | None, profiler_count: int | None = None) -> Profile:
        """The same profile with every world at ``rows`` rows and/or ``profiler_count``
        causal-profiler worlds (for small runs)."""
        from dataclasses import replace

        out = self
        if rows is not None:
            out = replace(out, dowhy_rows=rows, profiler_rows=rows, planted_rows=rows)
        if profiler_count is not None:
            out = replace(out, profiler_count=profiler_count)
        return out

    def text(self) -> str:
        return (f"8 DoWhy worlds x {self.dowhy_rows:,} rows, {self.profiler_count} "
                f"causal-profiler SCMs x {self.profiler_rows:,} rows, the planted world x "
                f"{self.planted_rows:,} rows")


PROFILES = {
    "default": Profile("default", dowhy_rows=8000, profiler_count=20, profiler_rows=6000,
                       planted_rows=8000),
    "quick": Profile("quick", dowhy_rows=2000, profiler_count=6, profiler_rows=2000,
                     planted_rows=2000),
}


def builders(profile: Profile) -> dict[str, tuple[str, Callable[[], World]]]:
    """name -> (source, build) for every world of ``profile``, in the suite's order."""
    from faux.worlds.dowhy_worlds import dowhy_worlds
    from faux.worlds.planted import planted_world
    from faux.worlds.profiler_worlds import profiler_worlds

    out: dict[str, tuple[str, Callable[[], World]]] = {}
    for name, build in dowhy_worlds(profile.dowhy_rows).items():
        out[name] = ("dowhy", build)
    for name, build in profiler_worlds(profile.profiler_count, profile.profiler_rows).items():
        out[name] = ("causal-profiler", build)
    out["planted"] = ("planted", lambda: planted_world(profile.planted_rows))
    return out
