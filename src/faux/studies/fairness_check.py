"""A fairness check of a trained classifier that does not depend on any fairness test.

Before Fig. 4 compares how the tests score an unfair and a fair model, the fair model must
be fair by a measure none of the compared tests uses. :func:`fairness_check`
returns, for one model:

* ``probe_auroc``: a *fresh probe*. The model is frozen; a logistic regression and a small
  MLP are trained on its last hidden layer (``model.hidden(x)``) to predict the probed
  attribute (c by default) on the training rows, the MLP early-stopped on the validation
  rows, and both are scored on the held-out test rows. The larger of the two test AUROCs is
  reported (``probe_auroc_lr``, ``probe_auroc_mlp`` beside it). 0.5: the hidden layer says
  nothing about the attribute that either probe can read. AUROC, not accuracy, because
  Bank's c is 97 % one class.
* ``proxy_swap_mean_abs_dprob``: a *counterfactual proxy swap*. For each declared edit
  ``(a, b)``, a pair of one-hot columns of the same categorical feature, every test row
  holding ``a`` or ``b`` gets the other one; the mean ``|p(x') - p(x)|`` over all edited
  rows (pooled over the edits; ``proxy_swap_n`` rows). The edits are declared per dataset
  in :data:`PROXY_EDITS` (see :func:`proxy_edits`) and change only what a record says
  about c.
* ``dp_gap``: ``|P(yhat = 1 | a = 1) - P(yhat = 1 | a = 0)|`` on the test rows, and
  ``accuracy`` of the model's own label on the test rows.

The declared edits (:data:`PROXY_EDITS`, measured on Adult and Bank's training split,
seed 0; ``P(c = 1 | column)`` against the base rate):

* ``adult`` (c = sex, 1 = male, base rate 0.675): ``relationship=Husband`` <-> ``relationship
  =Wife``. These two levels *are* sex-coded: P(male | Husband) = 1.000, P(male | Wife) =
  0.001, and they differ in nothing else (both are the spouse of the householder). No other
  category of the 97 encoded columns encodes sex by definition: marital status (Married-civ-
  spouse 0.894, Widowed 0.183), occupation (Priv-house-serv 0.064, Craft-repair 0.947) and
  relationship=Unmarried (0.232) correlate with sex but also describe a different life, so
  swapping them would change more than what the record says about c.
* ``bank`` (c = age >= 25, base rate 0.972; age itself is not a column): ``job=student``
  <-> ``job=retired``. Age decides these two levels: a student is young (P(age >= 25 |
  student) = 0.544, the only level where c = 0 is common) and a retiree old (0.999). The
  swap also changes the employment status the record states, so it is a proxy edit in the
  sense of "what a record says about age", not a pure one; no pure one exists in Bank's
  encoded features (every other level has P(c = 1) between 0.92 and 1.00).

Functions of a model, arrays and plain arguments; the metrics themselves are the pure array
functions of :mod:`faux.metrics.fairness`. The real-data study calls :func:`fairness_check`
per model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from faux.errors import ConfigError, DataError
from faux.metrics.fairness import (
    demographic_parity_gap,
    logistic_probe_auroc,
    mean_abs_change,
    swapped_rows,
)
from faux.metrics.ranking import auroc

#: per dataset, pairs of one-hot columns swapped by the counterfactual proxy edit
PROXY_EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "adult": (("relationship=Husband", "relationship=Wife"),),
    "bank": (("job=student", "job=retired"),),
}


#: the targets for a fair model, against the unfair model of the same data and seed
TARGETS = {"probe_max": 0.60, "swap_ratio": 0.5, "accuracy_drop": 0.02}


def verdict(unfair: dict, fair: dict, targets: dict | None = None) -> dict:
    """A fair model's check against :data:`TARGETS`, given both models' checks.

    ``unfair`` and ``fair`` are :func:`fairness_check` outputs (or their means over seeds;
    missing or NaN values count as not measured). ``probe``: the fair model's probe AUROC ≤
    ``probe_max``; ``swap``: its proxy-swap |Δp| ≤ ``swap_ratio`` × the unfair model's (None
    when either swap was not measured, e.g. no declared edit); ``accuracy``: at most
    ``accuracy_drop`` below the unfair model's. ``pass``: every check that could be made
    holds; ``fails``: one short line per failed check (measured against required).
    """
    t = {**TARGETS, **(targets or {})}

    def val(d, k):
        v = d.get(k)
        return None if v is None or not np.isfinite(v) else float(v)

    checks, fails = {}, []
    pr = val(fair, "probe_auroc")
    checks["probe"] = pr is not None and pr <= t["probe_max"]
    if not checks["probe"]:
        fails.append(f"probe AUROC {_num(pr)} > {t['probe_max']:.2f}")
    su, sf = val(unfair, "proxy_swap_mean_abs_dprob"), val(fair, "proxy_swap_mean_abs_dprob")
    if su is None or sf is None:
        checks["swap"] = None
    else:
        checks["swap"] = sf <= t["swap_ratio"] * su
        if not checks["swap"]:
            fails.append(f"swap {_num(sf)} > {_num(t['swap_ratio'] * su)}")
    au, af = val(unfair, "accuracy"), val(fair, "accuracy")
    checks["accuracy"] = au is not None and af is not None and af >= au - t["accuracy_drop"]
    if not checks["accuracy"]:
        need = None if au is None else au - t["accuracy_drop"]
        fails.append(f"accuracy {_num(af)} < {_num(need)}")
    return {"checks": checks, "pass": not fails, "fails": fails, "targets": t}


def _num(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def proxy_edits(dataset: str) -> tuple[tuple[str, str], ...]:
    """The declared proxy edits of a dataset (column-name pairs; empty when none are declared).

    See the module docstring for the list and the reason for each edit.
    """
    return PROXY_EDITS.get(str(dataset), ())


def edit_columns(edits: Sequence, feature_names: Sequence[str] | None = None
                 ) -> list[tuple[int, int]]:
    """Edits as column-index pairs: name pairs are looked up in ``feature_names``."""
    out = []
    for pair in edits:
        if len(pair) != 2:
            raise ConfigError(f"a proxy edit is a pair of columns (a, b); got {pair!r}")
        a, b = pair
        if isinstance(a, str) or isinstance(b, str):
            if feature_names is None:
                raise ConfigError(f"proxy edit {pair!r} names columns; pass feature_names")
            names = list(feature_names)
            missing = [p for p in (a, b) if p not in names]
            if missing:
                raise DataError(f"proxy edit {pair!r}: no column {missing[0]!r} in the "
                                f"features; pass the dataset's encoded feature names")
            a, b = names.index(a), names.index(b)
        out.append((int(a), int(b)))
    return out


def _as_tensor(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float32))


def _logits(model: torch.nn.Module, x) -> np.ndarray:
    with torch.no_grad():
        return model(_as_tensor(x)).reshape(len(x), -1)[:, 0].double().numpy()


def _prob(model: torch.nn.Module, x) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-_logits(model, x)))


def _hidden(model: torch.nn.Module, x) -> np.ndarray:
    if not hasattr(model, "hidden"):
        raise ConfigError(f"{type(model).__name__} has no hidden(x) method; the probe reads "
                          "the last hidden layer (faux.models.mlp.MLP, faux.models.adel.AdelNet)")
    with torch.no_grad():
        return model.hidden(_as_tensor(x)).double().numpy()


def proxy_swap(model: torch.nn.Module, x, edits: Sequence[tuple[int, int]]) -> tuple[float, int]:
    """Mean |p(x') - p(x)| over the rows of ``x`` that hold a column of an edit, and their count.

    ``x'`` exchanges the two columns of the edit. Rows holding neither column are left out;
    ``(nan, 0)`` when no row is edited.
    """
    pairs = swapped_rows(x, edits)
    return mean_abs_change([_prob(model, a) for a, _ in pairs],
                           [_prob(model, b) for _, b in pairs])


def probe_auroc(model: torch.nn.Module, x_train, t_train, x_val, t_val, x_test, t_test, *,
                seed: int = 0, width: int = 32, depth: int = 1, max_epochs: int = 30,
                patience: int | None = 5, accelerator: str = "cpu") -> dict:
    """Fresh probes of ``t`` on the frozen hidden layer: held-out (test) AUROC of each, and the max.

    Logistic regression (scikit-learn, L2, C = 1, on the standardised hidden layer) and an
    MLP (``width`` x ``depth``, Adam, early stopping on the validation rows).
    """
    from faux.models.mlp import train_mlp

    h, hv, ht = (_hidden(model, a) for a in (x_train, x_val, x_test))
    t, tv, tt = (np.asarray(a).reshape(-1).astype(np.int64) for a in (t_train, t_val, t_test))
    for name, a in (("training", t), ("validation", tv), ("test", tt)):
        if np.unique(a).size < 2:
            raise DataError(f"the probed attribute takes one value in the {name} rows; "
                            "both groups are needed for a probe")
    auc_lr = logistic_probe_auroc(h, t, ht, tt)
    net, _ = train_mlp(h, t, hv, tv, width=width, depth=depth, max_epochs=max_epochs,
                       patience=patience, seed=seed, accelerator=accelerator)
    auc_mlp = auroc(tt, _logits(net, ht))
    return {"probe_auroc": max(auc_lr, auc_mlp), "probe_auroc_lr": auc_lr,
            "probe_auroc_mlp": auc_mlp}


def fairness_check(model: torch.nn.Module, x_train, c_train, x_val, c_val, x_test, c_test,
                   y_test, proxy_edits: Sequence = (), *, feature_names=None,
                   target: str = "c", y_train=None, y_val=None, seed: int = 0,
                   probe: dict | None = None) -> dict:
    """The check of one model: fresh probe, proxy swap, parity gap and accuracy (module doc).

    ``model(x)`` are logits of its label and ``model.hidden(x)`` its last hidden layer.
    ``target="c"`` (a target model of y): the probe reads c; ``accuracy`` is of y_test and
    ``dp_gap`` is across c. ``target="y"`` (the aux of A.11.2, a model of c kept from
    reading y): the probe reads y (pass ``y_train``, ``y_val``); ``accuracy`` is of c_test
    and ``dp_gap`` is across y. ``proxy_edits``: column-index pairs, or name pairs with
    ``feature_names`` (:func:`proxy_edits` gives a dataset's declared ones); empty: no swap
    (``proxy_swap_mean_abs_dprob`` is NaN). ``probe``: keyword overrides of
    :func:`probe_auroc` (width, depth, max_epochs, patience).
    """
    if target not in ("c", "y"):
        raise ConfigError(f"target must be 'c' (probe reads c) or 'y' (probe reads y); "
                          f"got {target!r}")
    c_test = np.asarray(c_test).reshape(-1)
    y_test = np.asarray(y_test).reshape(-1)
    if target == "c":
        pt, pv, label, group = c_train, c_val, y_test, c_test
    else:
        if y_train is None or y_val is None:
            raise ConfigError("target='y' probes y: pass y_train and y_val")
        pt, pv, label, group = y_train, y_val, c_test, y_test
    out = {"probe_target": target}
    out.update(probe_auroc(model, x_train, pt, x_val, pv, x_test, group, seed=seed,
                           **(probe or {})))
    cols = edit_columns(proxy_edits, feature_names)
    out["proxy_swap_mean_abs_dprob"], out["proxy_swap_n"] = proxy_swap(model, x_test, cols)
    yhat = _logits(model, x_test) > 0
    out["accuracy"] = float((yhat == label).mean())
    out["dp_gap"] = demographic_parity_gap(yhat, group)
    return out
