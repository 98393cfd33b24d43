"""The effect verdict in words (``faux.audit.verdict.rule``): what moved at a row's counterfactual,
the row's sentence, and each attribute's headline for summary.json and report.html."""

from __future__ import annotations

import numpy as np

from faux.audit.verdict.rule import criterion

MIN_MOVE = 1e-3  # a continuous feature named as moved: at least this many standard deviations


def _num(v: float, sign: bool = False) -> str:
    return f"{float(v):+.4g}" if sign else f"{float(v):.4g}"


def tidy(v: float) -> float:
    """A value computed back into the user's units, without its float noise (53.00000000000017
    -> 53.0): ten significant digits."""
    return float(f"{float(v):.10g}")


def moved_word(change: dict) -> str:
    """``relationship: Husband → Wife``; ``age: 38 → 41.2`` (enough digits to see a move)."""
    a, b = change["from"], change["to"]
    if isinstance(a, str) or isinstance(b, str):
        return f"{change['feature']}: {a} → {b}"
    old, new = _num(a), _num(b)
    if old == new:  # a small move: enough digits to see it
        old, new = f"{float(a):.7g}", f"{float(b):.7g}"
    return f"{change['feature']}: {old} → {new}"


def moved_counts(pairs) -> dict:
    """``{feature: flagged rows whose counterfactual moved it}``, the most moved first (a
    feature named twice, e.g. a user's column read twice by a Pipeline, adds up)."""
    out: dict[str, int] = {}
    for name, k in pairs:
        out[name] = out.get(name, 0) + int(k)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _continuous_name(layout, feats, j: int) -> str:
    u = layout.units_of(j)
    return feats[j] if u is None else u.name


def moved_changes(layout, feats, x, z_cf, moved, mean, scale, n_continuous: int) -> list[dict]:
    """``{"feature", "from", "to"}`` for each categorical block that swapped level, then for
    the ``n_continuous`` continuous features that moved most (in standard deviations), in
    raw units (``x = mean + scale * z``), the user's where known (``Layout.units``)."""
    out = []
    for bi, block in enumerate(layout.blocks):
        new = int(moved[bi])
        if new < 0:
            continue
        old = block.level_of(np.asarray(x)[list(block.columns)])
        out.append({"feature": block.name, "from": block.levels[old],
                    "to": block.levels[new]})
    cont = np.asarray(layout.continuous, dtype=np.int64)
    if cont.size:
        z = (np.asarray(x, dtype=np.float64) - mean) / scale
        dz = np.abs(np.asarray(z_cf, dtype=np.float64)[cont] - z[cont])
        x_cf = mean + scale * np.asarray(z_cf, dtype=np.float64)
        for j in cont[np.argsort(-dz, kind="stable")][:n_continuous]:
            if abs(z_cf[j] - z[j]) >= MIN_MOVE:
                u = layout.units_of(j)
                a, b = (float(x[j]), float(x_cf[j])) if u is None else (u.raw(x[j]),
                                                                        u.raw(x_cf[j]))
                out.append({"feature": _continuous_name(layout, feats, j), "from": tidy(a),
                            "to": tidy(b)})
    return out


def moved_features(layout, feats, x, z_cf, moved, mean, scale, n_continuous: int) -> list[str]:
    """``relationship: Husband → Wife`` for each categorical block that swapped level, then
    ``age: 38 → 41.2`` for the ``n_continuous`` continuous features that moved most (in
    standard deviations), in raw units (the user's where known)."""
    return [moved_word(c) for c in moved_changes(layout, feats, x, z_cf, moved, mean, scale,
                                                  n_continuous)]


def moved_per_feature(layout, feats, z, z_cf, moved, rows) -> list[tuple[str, int]]:
    """Per feature, how many of ``rows`` (a mask) had it moved by their counterfactual: a
    block when its level swapped, a continuous feature by at least ``MIN_MOVE`` standard
    deviations."""
    rows = np.asarray(rows, dtype=bool)
    out = [(b.name, int((np.asarray(moved)[rows, bi] >= 0).sum()))
           for bi, b in enumerate(layout.blocks)]
    for j in layout.continuous:
        d = np.abs(np.asarray(z_cf)[rows, j] - np.asarray(z)[rows, j])
        out.append((_continuous_name(layout, feats, j), int((d >= MIN_MOVE).sum())))
    return out


def _change(info, own, level) -> str:
    if info.kind == "continuous":
        return "by one standard deviation (the direction that moves the prediction most)"
    other = level if level is not None else next(
        (str(v) for v in info.levels if str(v) != str(own)), "?")
    return f"from {own} to {other}"


def row_text(attr: str, info, own, level, rec: dict, n_aux: int, st=None) -> str:
    """``changing sex (from Male to Female) through its proxies moves this person's predicted
    probability by -0.12 [-0.15, -0.08] (0.61 → 0.49); the decision changes``; a regressor's
    (``st.task == "regression"``): ``... moves this person's predicted value by +3.1
    [+2.9, +3.3] over 3 aux models (10.2 → 13.3); it moves by at least 1 under every aux
    model``."""
    lo, hi = rec["interval"]
    extra = "; off the data's support" if rec["off_support"] else ""
    if st is not None and st.regression:
        return (f"changing {attr} ({_change(info, own, level)}) through its proxies moves "
                f"this person's predicted value by {_num(rec['effect'], True)} "
                f"[{_num(lo, True)}, {_num(hi, True)}] over {n_aux} aux models "
                f"({_num(rec['p'])} → {_num(rec['p_cf'])}); it moves by at least {st.materiality:g} under every aux model{extra}")
    verdict = ("the decision changes" if rec["decision_changes"] else
               "the decision does not change under every aux model")
    return (f"changing {attr} ({_change(info, own, level)}) through its proxies moves this "
            f"person's predicted probability by {rec['effect']:+.2f} [{lo:+.2f}, {hi:+.2f}] "
            f"over {n_aux} aux models ({rec['p']:.2f} → {rec['p_cf']:.2f}); {verdict}{extra}")


def _criterion(st) -> str:
    return criterion(st)


def _p(p: float) -> str:
    """A p-value for people: ``p < 0.001`` below a thousandth."""
    return "p < 0.001" if p < 1e-3 else f"p = {p:.2g}"


def transport_headline(eff: dict, st) -> str:
    """One attribute's result under the transport counterfactual, in a sentence."""
    a, n, k = eff["attribute"], eff["rows_scored"], eff["flagged"]
    ef, test = eff["expected_false_flags"], eff["model_test"]
    lo, hi = ef["interval"]
    held = ", ".join(eff["held_fixed"]) or "nothing"
    tail = (f"{ef['count']:.0f} [{lo:.0f}, {hi:.0f}] expected by chance (c-blind "
            f"transports); model-level test {_p(test['p_value'])}; held fixed: {held}")
    m = eff["mean_abs_effect"]
    mean = _num(m) if getattr(st, "regression", False) else f"{m:.3f}"
    if k == 0:
        return (f"{a}: no row flagged: for none of the {n:,} rows does the same person in the "
                f"other {a} group (what {a} does not change held fixed) {_criterion(st)} "
                f"under every one of the {eff['fits']} fits; {tail}")
    return (f"{a}: {k:,} of {n:,} rows ({k / max(n, 1):.2%}) flagged: the same person in the "
            f"other {a} group (what {a} does not change held fixed) {_criterion(st)} under "
            f"every one of the {eff['fits']} fits (mean |effect| over all rows {mean}); "
            f"{tail}")


def headline(eff: dict, st) -> str:
    """One attribute's result in a sentence, with the model-level test."""
    if eff.get("counterfactual") == "transport":
        return transport_headline(eff, st)
    a, n, k = eff["attribute"], eff["rows_scored"], eff["flagged"]
    test = eff["model_test"]
    tail = (f"model-level test (outputs moving with {a} more than under a c-blind aux): "
            f"p = {test['p_value']:.3g} (resolution {test['resolution']:.3g}), Wilcoxon "
            f"p = {test['wilcoxon_p']:.3g}; about {eff['expected_false_flags']['count']:.1f} "
            "rows expected flagged by chance (measured under permuted-attribute aux models)")
    m = eff["mean_abs_effect"]
    mean = _num(m) if getattr(st, "regression", False) else f"{m:.3f}"
    if k == 0:
        return (f"{a}: no row flagged: changing {a} through its proxies {_criterion(st)} for "
                f"none of the {n:,} rows under all {eff['aux_models']} aux models; {tail}")
    return (f"{a}: {k:,} of {n:,} rows ({k / max(n, 1):.2%}) flagged: changing {a} through "
            f"its proxies {_criterion(st)} under every one of the {eff['aux_models']} aux "
            f"models (mean |effect| over all rows {mean}); {tail}")
