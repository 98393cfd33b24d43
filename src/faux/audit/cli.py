"""The ``faux`` console script: ``faux audit --model PATH --data PATH --protected COLUMN...``.

Exit codes: 0 the audit ran and no gate failed; 1 a gate failed (``--fail-above`` /
``--max-flagged-rate``; the outputs are written); 2 bad input or usage, or no space left on
the disk (one line on stderr, nothing written); 3 an unexpected error (traceback on stderr);
130 interrupted (Ctrl-C), 143 terminated (SIGTERM) (one line on stderr, nothing written).
Once the outputs are in place the status is the audit's: a Ctrl-C or SIGTERM while the
process prints its summary or shuts down ends it at once with that status.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
import warnings
from contextlib import contextmanager

from faux.errors import FauxError

EXIT_OK, EXIT_GATE, EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_TERMINATED = 143  # 128 + SIGTERM
INTERRUPTED = "faux audit: interrupted; nothing written"
TERMINATED = "faux audit: terminated; nothing written"

EPILOG = """exit codes: 0 = passed (or no gate set), 1 = gate failed (--max-flagged-rate, or
--fail-above under --verdict score; outputs still written), 2 = bad input or usage, or a full disk (one
line on stderr, nothing written), 3 = unexpected error, 130 = interrupted (Ctrl-C), 143 =
terminated (SIGTERM) (one line on stderr, nothing written).

where it writes: --out must be new, empty, or an earlier audit's output (its
.faux-audit.json marker lists the files that audit wrote, the only ones a rerun replaces);
any other folder is refused unless --force, which writes beside the files there and never
replaces, renames or deletes a file the audit did not write.

example (your model and data; public data sets the harness uses live under the data root
$FAUX_DATA_DIR, default ./data): exit 1 when more than 1% of the rows are flagged, i.e. their decision changes when sex, and what the aux
models read it from, take the other group's values
  faux audit --model model.skops --data adult.parquet --protected sex --label income \\
      --max-flagged-rate 0.01
"""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``faux audit: error: ...; see faux audit
    --help``) instead of the usage block; ``--help`` is unchanged."""

    def error(self, message):
        msg = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {msg}; see {self.prog} --help\n")


#: the hand-written inputs' flags, by the name a setting's help gives them (`label`)
INPUT_FLAGS = {"model": "--model", "data": "--data", "protected": "--protected",
               "label": "--label", "features": "--features", "out_dir": "--out"}


def _add_inputs(a) -> None:
    """The model, the data and the outputs: the arguments that are not settings."""
    from faux.audit.loaders.formats import model_help

    a.add_argument("--model", required=True, metavar="PATH",
                   help=f"the model under test: {model_help()}. It outputs a logit (torch) "
                   "or a probability of the positive class, or, a regressor, a predicted "
                   "value (see --task); a model that stores the names "
                   "of the columns it was fitted on reads them by name, any other the "
                   "feature columns in the given order")
    a.add_argument("--data", required=True, metavar="PATH",
                   help="CSV or Parquet file, one row per individual, read in batches")
    a.add_argument("--protected", required=True, nargs="+", metavar="COLUMN",
                   help="column(s) of the protected attribute(s) (each binary, categorical or "
                   "continuous; never a model input). The first decides who is flagged; each "
                   "gets its own aux model, scores and group view, and two or more categorical "
                   "ones also their intersection (see --min-cell)")
    a.add_argument("--label", metavar="COLUMN", default=None,
                   help="column of the true label (not a model input; needed by --aux adel)")
    a.add_argument("--features", nargs="+", metavar="COLUMN", default=None,
                   help="the model's input columns, in the model's order (default: every "
                   "column except --protected and --label; for a model that stores the names "
                   "of the columns it was fitted on, those, read by name in any order). "
                   "One-hot columns named 'feature=value' are grouped in the feature ranking")
    a.add_argument("--out", metavar="DIR", default=None,
                   help="output folder (default outputs/audit/<data file name>): new, empty, "
                   "or an earlier audit's output, whose files are replaced only once the "
                   "audit completes (see 'where it writes' below)")


class _Values(argparse.Action):
    """``nargs="+"``: the values as a tuple; for a setting whose default is one string
    (``--protected-type``), one value as that string."""

    def __call__(self, parser, namespace, values, option_string=None):
        one = len(values) == 1 and isinstance(self.default, str)
        setattr(namespace, self.dest, values[0] if one else tuple(values))


class _Append(argparse.Action):
    """A repeated flag (``--trust-type``): each value added to a tuple."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, (*getattr(namespace, self.dest), values))


def _cli_default(f) -> str:
    """`` (default X)`` for the help of a setting with a value by default, else nothing."""
    from faux.audit.audit_doc import shown_default

    v = shown_default(f)
    if v is None or isinstance(v, bool) or v == ():
        return ""
    text = (f"{v:g}" if isinstance(v, float) else " ".join(map(str, v))
            if isinstance(v, tuple) else str(v))
    return f" (default {text})"


def _flag_of(name: str) -> str:
    import dataclasses

    from faux.audit.settings import AuditSettings

    if name in INPUT_FLAGS:
        return INPUT_FLAGS[name]
    flag = {f.name: f for f in dataclasses.fields(AuditSettings)}[name].metadata["flag"]
    if flag is None:
        raise KeyError(f"the setting {name} has no flag to name in the CLI's help")
    return flag


def setting_argument(f) -> tuple[str, dict]:
    """The flag of the setting ``f`` and its ``add_argument`` keywords, from its metadata:
    a bool is a switch (``--no-x`` turns it off), ``nargs`` and ``append`` give tuples, and
    the parsed value lands on the setting's name with the setting's default."""
    from faux.audit.audit_doc import help_text

    m = f.metadata
    text = help_text(f, _flag_of)  # a sentence; the CLI's help is a lower-case phrase
    text = text[0].lower() + text[1:].removesuffix(".") + _cli_default(f)
    kw = dict(m["cli"], dest=f.name, default=f.default, help=text.replace("%", "%%"))
    if callable(kw.get("choices")):
        kw["choices"] = kw["choices"]()
    if f.type.startswith("bool"):
        off = m["flag"].startswith("--no-")
        kw.update(action="store_const", const=not off)
    elif kw.get("action") == "append":
        kw["action"] = _Append
    elif "nargs" in kw:
        kw["action"] = _Values
    return m["flag"], kw


def _add_settings(a) -> None:
    """Every setting that has a flag, in ``AuditSettings``' order."""
    import dataclasses

    from faux.audit.settings import AuditSettings

    for f in dataclasses.fields(AuditSettings):
        if f.metadata["flag"] is not None:
            flag, kw = setting_argument(f)
            a.add_argument(flag, **kw)


def settings_of(args):
    """The ``AuditSettings`` of parsed arguments: each setting that has a flag by its
    field's name, the others at their defaults."""
    import dataclasses

    from faux.audit.settings import AuditSettings

    return AuditSettings(**{f.name: getattr(args, f.name)
                            for f in dataclasses.fields(AuditSettings) if f.metadata["flag"]})


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="faux", description="faux: individual-fairness testing by gradient "
                "alignment (fAux).")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser(
        "audit", help="audit a model for individual unfairness on a data set",
        description="Audit every row of a data set for individual unfairness of MODEL with "
        "respect to protected attributes: aux models learn each attribute from the features, "
        "and a row is flagged when the model's decision changes at its counterfactual (the "
        "attribute, and what the aux models read it from, moved to the other group's "
        "values) under every aux model (--verdict effect, the default). The fAux scores "
        "(eq. 9, eq. 10) are diagnostic columns, or decide with --verdict score. Writes "
        "scores.parquet, summary.json and a self-contained report.html.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_inputs(a)
    _add_settings(a)
    p.set_defaults(parser_of={"audit": a})
    return p


def _parse(argv):
    """The parsed arguments; an unknown flag is reported by the subcommand's parser, so
    that every usage error starts with ``faux audit: error:``."""
    p = build_parser()
    args, extra = p.parse_known_args(argv)
    if extra:
        sub = getattr(args, "parser_of", {}).get(getattr(args, "command", None), p)
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


@contextmanager
def _warnings_as_lines():
    """The audit's ``FauxAuditWarning``s as ``faux audit: warning: ...`` lines on stderr, each
    when it is raised; other warnings as Python shows them."""
    from faux.audit.notices import FauxAuditWarning

    with warnings.catch_warnings():
        warnings.simplefilter("always", FauxAuditWarning)
        default = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, FauxAuditWarning):
                print(f"faux audit: warning: {message}", file=sys.stderr)
            else:
                default(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def console() -> None:
    """The ``faux`` command: ``main`` on the command line's arguments, exiting with its
    status. A SIGINT or SIGTERM while the audit runs is the audit's to handle (130 or 143,
    nothing written); outside it (starting, printing the summary, shutting down, which takes
    a second or more) it ends the process at once: with the audit's status once the audit
    settled it, else with the signal's (nothing was written)."""
    from faux.audit.interrupts import replaceable

    status: list[int] = []

    @replaceable
    def stop(signum, frame):
        if not status:
            print(INTERRUPTED if signum == signal.SIGINT else TERMINATED, file=sys.stderr)
        elif status[0] not in (EXIT_INTERRUPTED, EXIT_TERMINATED):
            print(f"faux audit: {signal.Signals(signum).name} after the outputs were "
                  f"written; exit status {status[0]} is the audit's", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        code = status[0] if status else (
            EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_TERMINATED)
        os._exit(code)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    sys.exit(main(settled=status.append))


def main(argv=None, settled=None) -> int:
    """``faux`` with ``argv`` (default: the command line); returns the exit status.
    ``settled(status)``, when given, is called once the status is known: as soon as the
    outputs are in place, or once the audit ended otherwise."""
    known: list[int] = []

    def settle(status: int) -> None:
        if not known and settled is not None:
            settled(status)
        known.append(status)

    status = _run(argv, settle)
    settle(status)
    return status


def _run(argv, settled) -> int:
    from faux.audit.core import Terminated

    try:
        return _main(argv, settled)
    except KeyboardInterrupt:  # Ctrl-C before or after the audit proper
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(TERMINATED, file=sys.stderr)
        return EXIT_TERMINATED


def _main(argv, settled) -> int:
    try:
        args = _parse(argv)
    except SystemExit as stop:  # a usage error (one line printed) or --help
        return stop.code if isinstance(stop.code, int) else EXIT_INPUT
    from faux.audit.core import Terminated, audit
    from faux.harness.malloc import keep_freed_memory

    keep_freed_memory()  # this process streams the batches: each reuses the last one's memory
    try:
        protected = args.protected[0] if len(args.protected) == 1 else args.protected
        with _warnings_as_lines():
            res = audit(args.model, data=args.data, protected=protected, label=args.label,
                        features=args.features, out_dir=args.out, settings=settings_of(args))
    except FauxError as err:
        print(f"faux audit: error: {' '.join(str(err).split())}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(TERMINATED, file=sys.stderr)
        return EXIT_TERMINATED
    except OSError as err:
        from faux.harness.disk import DISK_FULL, disk_full_message

        if err.errno not in DISK_FULL:
            traceback.print_exc()
            return EXIT_INTERNAL
        where = err.filename or args.out or "."
        print(f"faux audit: error: {disk_full_message(where)}", file=sys.stderr)
        return EXIT_INPUT
    except Exception:
        traceback.print_exc()
        return EXIT_INTERNAL
    status = EXIT_OK if res.passed else EXIT_GATE
    settled(status)
    s = res.summary
    q = s["aux_quality"]
    qual = f"R2 {q['r2']:.3f}" if "r2" in q else f"AUROC {q['auroc']:.3f}"
    effects = s.get("effects") or {}
    rule = ("by the effect verdict" if effects else
            f"with {s['settings']['primary']} > {s['settings']['threshold']:.4g} "
            f"({s['calibration']['rule']})")
    print(f"audited {s['data']['rows']:,} rows in {s['seconds_total']:.1f} s; aux {qual}; "
          f"flagged {s['flagged']['count']:,} ({s['flagged']['rate']:.3%}) {rule}; "
          f"outputs in {res.out_dir}")
    for e in effects.values():
        print(f"  {e['headline']}")
    views = s.get("groups", {}).get("views", {})
    if len(views) > 1:  # several protected attributes: one line per view
        for vname, v in views.items():
            diff, ratio = v["largest_difference"], v["largest_ratio"]
            by = "its effects" if v.get("flagged_by") == "effect" else "its own score"
            print(f"  {vname}: {len(v['rows'])} groups, flagged by {by} "
                  f"{sum(r['flagged'] for r in v['rows']):,}; largest difference of the "
                  f"flagged rate {diff:.3%}, ratio {ratio:.3f}")
    if not res.passed:
        print("gate failed: " + "; ".join(s["gate"]["reasons"]), file=sys.stderr)
    return status


if __name__ == "__main__":
    console()
