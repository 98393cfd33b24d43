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


def _positive_int(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v!r}")
    return n


def _nonneg_float(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        x = -1.0
    if not x >= 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {v!r}")
    return x


def _number(v: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {v!r}") from None


def _int(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {v!r}") from None


def _add_inputs(a) -> None:
    """The model, the data, the outputs and what may be loaded."""
    from faux.audit.loaders.formats import model_help
    from faux.audit.loaders.task import TASKS
    from faux.audit.scores.methods import audit_methods, default_methods
    from faux.audit.settings import DEFAULTS as D

    a.add_argument("--model", required=True, metavar="PATH",
                   help=f"the model under test: {model_help()}. It outputs a logit (torch) "
                   "or a probability of the positive class, or, a regressor, a predicted "
                   "value (see --task); a model that stores the names "
                   "of the columns it was fitted on reads them by name, any other the "
                   "feature columns in the given order")
    a.add_argument("--task", choices=TASKS, default=D.task,
                   help="what the model's output is: auto reads it from the model "
                   "(scikit-learn's is_classifier/is_regressor, a LightGBM objective, an ONNX "
                   "model's class outputs; a torch model returns a classifier's logits); "
                   "regression audits the predicted value itself, flagging a row when it "
                   f"moves by at least --materiality, in the output's units (default {D.task})")
    a.add_argument("--data", required=True, metavar="PATH",
                   help="CSV or Parquet file, one row per individual, read in batches")
    a.add_argument("--protected", required=True, nargs="+", metavar="COLUMN",
                   help="column(s) of the protected attribute(s) (each binary, categorical or "
                   "continuous; never a model input). The first decides who is flagged; each "
                   "gets its own aux model, scores and group view, and two or more categorical "
                   "ones also their intersection (see --min-cell)")
    a.add_argument("--label", metavar="COLUMN", default=None,
                   help="column of the true label (not a model input; needed by --aux adel)")
    a.add_argument("--positive-label", metavar="VALUE", default=D.positive_label,
                   help="the --label value that is the positive class (the model's "
                   "probability is of it) for the outcome metrics (default: 1 for a 0/1 or "
                   "true/false label; otherwise the model's classes_[1], what its "
                   "predict_proba column 1 means, when it has classes_ matching the label's "
                   "values; else the audit asks for it)")
    a.add_argument("--features", nargs="+", metavar="COLUMN", default=None,
                   help="the model's input columns, in the model's order (default: every "
                   "column except --protected and --label; for a model that stores the names "
                   "of the columns it was fitted on, those, read by name in any order). "
                   "One-hot columns named 'feature=value' are grouped in the feature ranking")
    a.add_argument("--out", metavar="DIR", default=None,
                   help="output folder (default outputs/audit/<data file name>): new, empty, "
                   "or an earlier audit's output, whose files are replaced only once the "
                   "audit completes (see 'where it writes' below)")
    a.add_argument("--force", action="store_true",
                   help="write into an --out folder that holds other files, beside them "
                   "(they are never replaced, renamed or deleted)")
    torch_only = sorted(set(audit_methods()) - set(audit_methods(differentiable=False)))
    a.add_argument("--methods", nargs="+", default=list(default_methods()),
                   choices=audit_methods(),
                   help=f"scorers, one score column each (default: {' '.join(default_methods())});"
                   " the first decides who is flagged"
                   + (f". {' and '.join(torch_only)} need{'s' if len(torch_only) == 1 else ''}"
                      " a torch model" if torch_only else ""))
    a.add_argument("--model-version", metavar="TEXT", default=D.model_version,
                   help="the model's own version (a version number, a commit, a registry "
                   "tag), recorded in summary.json's provenance and shown in the report")
    a.add_argument("--trust-pickle", action="store_true",
                   help="allow pickle/joblib/torch.save model files: loading them runs code "
                   "from the file, so only for files you trust")
    a.add_argument("--trust-type", action="append", default=[], metavar="TYPE",
                   help="a type a .skops file may instantiate beyond skops' default trust list "
                   "(e.g. lightgbm.sklearn.LGBMClassifier); repeat for each type")


def _add_verdict(a) -> None:
    """What flags a row: the verdict, the thresholds and the gates."""
    from faux.audit.scores.methods import thresholds_text
    from faux.audit.settings import COUNTERFACTUALS
    from faux.audit.settings import DEFAULTS as D
    from faux.audit.verdict.rule import VERDICTS

    a.add_argument("--alpha", type=float, default=D.alpha, metavar="A",
                   help="calibrated thresholds (the default rule): flag a row when its "
                   "first-method score exceeds the (1 - A) quantile of the scores under aux "
                   "models trained on a randomly permuted protected attribute, so that about "
                   f"A x rows are flagged for a model that ignores it (default {D.alpha:g}; "
                   "above 0 and below 1)")
    a.add_argument("--null-permutations", type=int, default=D.null_permutations, metavar="N",
                   help="aux models trained on a permuted protected attribute for the null "
                   f"distribution, each scoring the --sample rows (default {D.null_permutations})")
    a.add_argument("--fdr", action="store_true",
                   help="flag by Benjamini-Hochberg over the rows at false discovery rate "
                   "--alpha (p-values from the null scores) instead of the null quantile")
    a.add_argument("--no-exact", action="store_true",
                   help="score a scikit-learn linear model, MLP or scaler pipeline as a black "
                   "box (finite differences) instead of by autograd through its checked torch "
                   "conversion")
    a.add_argument("--verdict", choices=VERDICTS, default=D.verdict,
                   help="what flags a row: 'effect', its decision changes at its "
                   "counterfactual under every aux model; 'score', the first method's score "
                   f"above its threshold (the audit's earlier rule) (default {D.verdict})")
    a.add_argument("--counterfactual", choices=COUNTERFACTUALS, default=D.counterfactual,
                   help="how each row's counterfactual is built for the effect verdict: "
                   "'transport', what the protected attribute does not change held fixed and "
                   "the rest carried to the other group keeping the person's rank; 'aux', "
                   "what the aux models read the attribute from moved to the other group's "
                   f"values (default {D.counterfactual})")
    a.add_argument("--hold", nargs="+", metavar="COLUMN", default=list(D.hold),
                   help="with --counterfactual transport: feature columns the protected "
                   "attribute cannot cause, held fixed whatever the data say (default: those "
                   "whose distribution does not depend on it, by a test)")
    a.add_argument("--max-excess-flags", type=_number, default=D.max_excess_flags,
                   metavar="R", help="gate (exit 1): an attribute's flags exceed the upper "
                   "end of the 95 %% interval of what chance flags (the null transports) by "
                   "more than this share of the rows; 0 fails on any excess (default: none)")
    a.add_argument("--direct-only", action="store_true",
                   help="for a model that reads the protected column itself: flip that column "
                   "alone (the classic flip test), not what the attribute causes with it")
    a.add_argument("--null-transports", type=_int, default=D.null_transports, metavar="N",
                   help="with --counterfactual transport: transports fitted with the "
                   "attribute permuted, which give the expected false flags and the "
                   f"model-level test (default {D.null_transports})")
    a.add_argument("--decision-threshold", type=_number, default=D.decision_threshold,
                   metavar="T", help="a classifier's decision threshold on its probability, "
                   f"above 0 and below 1 (default {D.decision_threshold:g})")
    a.add_argument("--materiality", type=_number, default=D.materiality, metavar="D",
                   help="flag a row when its probability moves by at least D (in (0, 1], one "
                   "sign under every aux model) instead of when its decision changes; for a "
                   "regressor (needed): when its predicted value moves by at least D, in the "
                   "output's own units")
    a.add_argument("--steps", type=_int, default=D.steps, metavar="K",
                   help="first-order steps of the path to each counterfactual (default "
                   f"{D.steps}; at least 1)")
    a.add_argument("--threshold", type=_nonneg_float, default=D.threshold, metavar="DELTA",
                   help="manual score threshold instead of the calibrated one: under "
                   "--verdict score flag rows whose first-method score exceeds DELTA (other "
                   f"methods then report rows above {thresholds_text()}); no effect on the "
                   "exit code")
    a.add_argument("--fail-above", type=_nonneg_float, default=D.fail_above, metavar="DELTA",
                   help="gate under --verdict score only: flag rows scoring above DELTA and "
                   "exit 1 if any row is flagged (or, with --max-flagged-rate, if more than "
                   "that fraction is)")
    a.add_argument("--max-flagged-rate", type=float, default=D.max_flagged_rate, metavar="R",
                   help="gate: exit 1 when the fraction of flagged rows exceeds R (0..1)")


def _add_aux(a) -> None:
    """The aux models, the views, the sample, the batches and the progress."""
    from faux.audit.settings import DEFAULTS as D
    from faux.audit.settings import (
        FD_SCORES,
        FD_STEP_LOW_WARN,
        FD_STEP_MAX,
        FD_STEP_WARN,
        PROTECTED_TYPES,
    )

    a.add_argument("--aux", choices=["mlp", "adel"], default=D.aux,
                   help="aux model of the protected attribute: mlp, an MLP, or adel, the Adel "
                   f"et al. aux kept from reading the label (needs --label) (default {D.aux})")
    a.add_argument("--protected-type", choices=PROTECTED_TYPES, nargs="+",
                   default=[D.protected_type], help="how to read the protected column(s), one "
                   f"type for all or one per --protected column (default {D.protected_type}: "
                   "auto reads 2 values as binary, "
                   "up to 20 categorical, more numeric values continuous)")
    a.add_argument("--aux-seeds", type=int, default=D.aux_seeds, metavar="N",
                   help="aux models per view, trained with different seeds: under --verdict "
                   "effect each gives every row a counterfactual and a row is flagged only when "
                   "they all agree (1 + N model calls per row for a binary attribute); they "
                   "also score the --sample rows for the intervals over seeds (default "
                   f"{D.aux_seeds}; at least 1)")
    a.add_argument("--min-cell", type=int, default=D.min_cell, metavar="N",
                   help="intersection cells with fewer --sample rows than N are merged into "
                   f"one cell 'other' (default {D.min_cell}; 0 merges none)")
    a.add_argument("--no-intersection", action="store_true",
                   help="no intersection view of several categorical --protected columns")
    a.add_argument("--sample", type=_positive_int, default=D.sample, metavar="N",
                   help="rows drawn uniformly to train the aux model (80%%) and measure its "
                   f"quality (20%%) (default {D.sample})")
    a.add_argument("--batch-size", type=_positive_int, default=D.batch_size, metavar="N",
                   help=f"rows read and scored per batch; bounds memory (default {D.batch_size})")
    a.add_argument("--aux-epochs", type=_positive_int, default=D.aux_epochs, metavar="N",
                   help="maximum aux training epochs, early stopping on the held-out rows "
                   f"(default {D.aux_epochs})")
    a.add_argument("--fd-step", type=float, default=D.fd_step, metavar="H",
                   help="black-box models: central finite-difference step, in standard "
                   f"deviations of the features (default {D.fd_step:g}); must be above 0 and at most "
                   f"{FD_STEP_MAX:g}, with a warning above {FD_STEP_WARN:g} (coarse) or below "
                   f"{FD_STEP_LOW_WARN:g} (float32 rounding)")
    a.add_argument("--fd-scores", choices=list(FD_SCORES), default=D.fd_scores,
                   help="black-box models under --verdict effect: finite-difference scores "
                   "(diagnostics, 2k + 2d model calls per row) of the --sample rows only "
                   f"(NaN for the others) or of all rows (default {D.fd_scores})")
    a.add_argument("--seed", type=int, default=D.seed,
                   help=f"seed of the sample and the aux model (default {D.seed})")
    a.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or lines (elsewhere, every 10 s)")


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
    _add_verdict(a)
    _add_aux(a)
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
    from faux.audit.interrupts import Terminated

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
    from faux.audit.core import audit
    from faux.audit.interrupts import Terminated

    try:
        protected = args.protected[0] if len(args.protected) == 1 else args.protected
        with _warnings_as_lines():
            res = audit(args.model, data=args.data, protected=protected, label=args.label,
                        features=args.features, methods=args.methods, aux=args.aux,
                        aux_epochs=args.aux_epochs, sample=args.sample, batch_size=args.batch_size,
                        threshold=args.threshold, fail_above=args.fail_above,
                        max_flagged_rate=args.max_flagged_rate,
                        protected_type=(args.protected_type[0] if len(args.protected_type) == 1
                                        else args.protected_type),
                        fd_step=args.fd_step, fd_scores=args.fd_scores, seed=args.seed,
                        out_dir=args.out, trust_pickle=args.trust_pickle,
                        trusted_types=args.trust_type, force=args.force,
                        progress=False if args.no_progress else None, alpha=args.alpha,
                        null_permutations=args.null_permutations, fdr=args.fdr,
                        aux_seeds=args.aux_seeds, min_cell=args.min_cell,
                        intersection=not args.no_intersection, exact=not args.no_exact,
                        verdict=args.verdict, decision_threshold=args.decision_threshold,
                        materiality=args.materiality, steps=args.steps, task=args.task,
                        positive_label=args.positive_label, counterfactual=args.counterfactual,
                        hold=args.hold, null_transports=args.null_transports,
                        direct_only=args.direct_only,
                        max_excess_flags=args.max_excess_flags,
                        model_version=args.model_version)
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
