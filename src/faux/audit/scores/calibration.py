"""Calibrated thresholds of the audit: every method's scores of the sample rows under aux
models trained on a randomly permuted protected attribute (the null distribution), their
quantiles, the Benjamini-Hochberg cut over the rows, and summary.json's statement of the
rule. A Ctrl-C while a null aux trains surfaces as an interrupt (or, on the Lightning path,
as Lightning's ``SystemExit``, which the caller turns into one)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SEED_MAX = 2**32 - 1  # numpy and Lightning take seeds in [0, 2**32)


def bh_cut(hist: np.ndarray, n: int, alpha: float) -> int:
    """Benjamini-Hochberg over ``n`` rows whose p-values are ``(1 + e) / (M + 1)``, ``hist[e]``
    rows having ``e`` null scores at or above theirs: the largest ``e`` flagged, or -1."""
    m = len(hist) - 1
    p = (1 + np.arange(m + 1)) / (m + 1)
    ok = np.flatnonzero(p <= alpha * np.cumsum(hist) / n)
    return int(ok[-1]) if ok.size else -1


@dataclass(frozen=True)
class NullSettings:
    """How an audit's null aux models are trained: as its aux models are (``aux``,
    ``aux_width``, ``aux_depth``, ``aux_epochs``), ``n_perm`` of them, on the permutations
    of the protected attribute that ``seed`` draws (``null_targets``)."""

    aux: str
    aux_width: int
    aux_depth: int
    aux_epochs: int
    n_perm: int
    seed: int


def null_scores(scorer, aux_z, sc, z_sample, null: NullSettings, bar, nets=None) -> dict:
    """Every method's scores of the sample rows under ``null.n_perm`` aux models trained, as
    the aux was, on a random permutation of the protected attribute (which breaks its link to
    the features), by scorers like ``scorer`` (the aux ``aux_z``'s: its model, methods,
    standardisation, step, batches and gradient memo). A null aux's logit has no unit of its
    own, so at every row it is steepened to the aux's gradient norm there (``Steepened``): a
    score that divides by the aux's gradient (fAux) then compares only the direction the aux
    found with directions noise led to; scale-free scores (fAux+NG) are unchanged. ``nets``:
    the null aux models when they are already trained (on ``null_targets``' permutations,
    together with the view's other aux models), else they are trained here."""
    from faux.audit.scores.aux import Steepened

    methods, batch_size = scorer.methods, scorer.batch_size
    pooled: dict[str, list] = {m: [] for m in methods}
    advance = bar.start("null models", null.n_perm * len(sc.x))
    if nets is None:
        nets = list(null_auxes(z_sample, sc.c, sc.protected, sc.y, null))
    for net in nets:
        steep = scorer.like(Steepened(net, aux_z))
        for s in range(0, len(sc.x), batch_size):
            out = steep.score(sc.x[s:s + batch_size])
            for m in methods:
                pooled[m].append(out[m])
            advance(len(out[methods[0]]))
    scores = {}
    for m, parts in pooled.items():
        v = np.concatenate(parts)
        scores[m] = np.sort(v[np.isfinite(v)])
    return {"scores": scores, "rows": int(len(sc.x)), "nets": nets}


def null_targets(c, n_perm: int, seed: int) -> list:
    """``(permuted c, seed)`` of each of the ``n_perm`` null aux models of an audit."""
    rng = np.random.default_rng([seed, 1])
    return [(c[rng.permutation(len(c))], (seed + 1 + p) % (SEED_MAX + 1))
            for p in range(n_perm)]


def null_auxes(z_sample, c, info, y, null: NullSettings):
    """The ``null.n_perm`` aux models trained, as the aux was, on random permutations of the
    protected attribute ``c`` (the same ones whatever uses them), trained together
    (``train_aux_family``)."""
    from faux.audit.scores.aux import train_aux_family

    for net, _ in train_aux_family(z_sample, null_targets(c, null.n_perm, null.seed), info, y,
                                   kind=null.aux, width=null.aux_width, depth=null.aux_depth,
                                   epochs=null.aux_epochs):
        yield net


def null_quantile(null: np.ndarray, alpha: float) -> float:
    """The (1 - alpha) quantile of a method's null scores (the next null score above it)."""
    if null.size == 0:
        return math.inf
    return float(np.quantile(null, 1 - alpha, method="higher"))


def calibration_statement(rule, alpha, n_perm, null, methods, thresholds, n_rows, n_flag,
                          fdr, verdict: str = "score") -> dict:
    """summary.json's statement of how the threshold was set. Under the effect verdict the
    scores are diagnostics: the text says how many rows exceed the threshold by chance, and
    ``expected_false_flags`` is left to the effect verdict (``faux.audit.verdict.rule``)."""
    out = _score_calibration(rule, alpha, n_perm, null, methods, thresholds, n_rows, n_flag,
                             fdr)
    if verdict == "effect":
        out["expected_rows_above_by_chance"] = out.pop("expected_false_flags")
        out["expected_false_flags"] = None
        out["text"] = ("Diagnostic scores (they do not decide who is flagged; the effect "
                       "verdict does): " + out["text"].replace(" flagged by chance",
                                                               " above it by chance"))
    return out


def _score_calibration(rule, alpha, n_perm, null, methods, thresholds, n_rows, n_flag,
                       fdr) -> dict:
    if null is None:
        return {"rule": rule, "alpha": None, "null_permutations": 0, "null_quantiles": None,
                "expected_false_flags": None,
                "text": f"manual threshold: {methods[0]} > {thresholds[methods[0]]:g}"}
    quant = {m: {"50%": null_quantile(v, 0.5), "90%": null_quantile(v, 0.1),
                 "99%": null_quantile(v, 0.01), f"{1 - alpha:.4g}": null_quantile(v, alpha)}
             for m, v in null["scores"].items()}
    if fdr:
        expected = alpha * n_flag
        text = (f"Benjamini-Hochberg at false discovery rate {alpha:g} over the {n_rows:,} rows, "
                f"p-values from {n_perm} permuted-c aux models x {null['rows']:,} rows: "
                f"{methods[0]} > {thresholds[methods[0]]:.4g}; at most {expected:.1f} of the "
                f"{n_flag:,} flagged rows expected false")
    else:
        expected = alpha * n_rows
        text = (f"{methods[0]} above the {1 - alpha:.4g} quantile of its scores under {n_perm} "
                f"permuted-c aux models x {null['rows']:,} rows ({thresholds[methods[0]]:.4g}); "
                f"about {expected:.1f} of {n_rows:,} rows flagged by chance for a model that "
                "ignores the protected attribute")
    return {"rule": rule, "alpha": alpha, "fdr": fdr, "null_permutations": n_perm,
            "null_rows_per_permutation": null["rows"],
            "null_quantiles": quant, "expected_false_flags": expected, "text": text}
