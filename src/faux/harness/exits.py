"""How ``python -m faux.run`` ends: every error as one line on stderr and its exit code.

* an override of the removed ``launcher`` group, a config that does not compose (a wrong type
  or an unknown key against the schema, ``faux.harness.schema``; an unknown group option),
  a bad value (``faux.harness.validate``), a ``FauxError`` of a job: ``error: <line>``, exit 2;
* Ctrl-C: the resume hint (``faux.harness.guard.interrupt_message``), exit 130;
* a full disk (``faux.harness.disk``): the sweep's summary, then the path and the free space,
  exit 1;
* anything else: Hydra's own report (exit 1), unless ``HYDRA_FULL_ERROR`` was set by the
  user, who then gets the full traceback.

:func:`run_main` wraps Hydra's main with all of it; the entry point holds no error text.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

from faux.harness import disk, guard

_OLD_LAUNCHER = re.compile(r"^[+~]*launcher=")

_OVERRIDE = re.compile(r"(?:Error merging override|Could not override '[^']*'.*?use \+?)"
                       r"\s*([^\s]+=[^\s]*)", re.S)


def fail(line: str, code: int = 2) -> None:
    """``error: <line>`` on stderr, exit ``code``."""
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(code)


def old_launcher_override(args: list[str]) -> str | None:
    """One line for an override of the removed ``launcher`` group (the launchers are Hydra's
    own group now: ``hydra/launcher=<name>``), else None."""
    for a in args:
        if _OLD_LAUNCHER.match(a):
            name = a.split("=", 1)[1]
            return (f"error: {a}: the launcher group is Hydra's own now; "
                    f"use hydra/launcher={name}")
    return None


def composition_error(exc) -> str:
    """One line for a config that fails to compose (a ``ConfigCompositionException``: a wrong
    type or an unknown key against the schema; an unknown group option): the override and
    what it breaks (``faux.harness.validate``'s words where the key has a rule or a schema
    range)."""
    from faux.harness import validate

    text = str(exc).strip()
    first = text.splitlines()[0]
    cause = str(exc.__cause__).strip().splitlines()[0] if exc.__cause__ else ""
    found = _OVERRIDE.search(text)
    if found:
        key, value = found.group(1).lstrip("+~").split("=", 1)
        expected = validate.expected(key)
        if expected is not None and "not in" not in cause:
            return f"{key}={value}: {expected}"
        hint = f"; to add it: +{key}={value}" if "is not in struct" in cause else ""
        return f"{key}={value}: {cause or first}{hint}"
    if "Available options" in text:
        options = re.findall(r"^\t(\S+)$", text.split("Available options", 1)[1], re.M)
        return f"{first}; choose one of {', '.join(options)}"
    return f"{first} {cause}" if cause and cause != first else first


def disk_full(line: str) -> None:
    """A full disk: the sweep's summary (every job counted), then one line, exit 1."""
    from faux.harness import progress

    progress.close_all()
    fail(line, 1)


def hydra_report(exc: Exception) -> None:
    """Hydra's own report of an error (its traceback from Hydra's ``run_and_report`` on, the
    frames Hydra trims; exit 1)."""
    from hydra._internal.utils import run_and_report

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_name != "run_and_report":
        tb = tb.tb_next

    def again() -> None:
        raise exc.with_traceback(tb or exc.__traceback__)

    run_and_report(again)


def run_main(hydra_main: Callable[[], None], args: list[str]) -> None:
    """Run Hydra's main for the command line ``args`` with every error as above, and Ray's
    usage statistics off unless ``RAY_USAGE_STATS_ENABLED`` is set (the Ray launcher attaches
    from this process)."""
    from hydra.errors import ConfigCompositionException

    old = old_launcher_override(args)
    if old:
        print(old, file=sys.stderr)
        sys.exit(2)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    guard.install_interrupt_handler()
    # Hydra raises instead of printing its report, so that a composition error is one line
    # here; any other error gets Hydra's report as before (unless the user set the variable)
    report = "HYDRA_FULL_ERROR" not in os.environ
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    try:
        hydra_main()
    except (guard.Interrupted, KeyboardInterrupt):
        print(guard.interrupt_message(), file=sys.stderr, flush=True)
        sys.exit(130)
    except disk.SweepStopped as stop:
        disk_full(stop.line)
    except ConfigCompositionException as exc:
        if not report:
            raise
        fail(composition_error(exc))
    except Exception as exc:
        if disk.is_full(exc):       # e.g. Hydra writing a job's .hydra/ on a full disk
            disk_full(disk.message(exc))
        if not report:
            raise
        del os.environ["HYDRA_FULL_ERROR"]
        hydra_report(exc)
