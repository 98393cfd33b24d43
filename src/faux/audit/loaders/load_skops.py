"""Loading a skops file: ``skops.io.load`` after its trusted-types check; a type outside
skops' default trust list (and scikit-learn's own state types below) is refused until the
user names it (``trusted_types`` / ``--trust-type``).

Trusting a type says nothing of its content: scikit-learn's tree walkers and LightGBM follow
the stored child indices without bounds checks, so a forged file could hang the audit past
Ctrl-C or crash it. Every tree of the loaded object is therefore checked
(``faux.audit.loaders.tree_check.estimator_trees``) before anything predicts, and the model text of
a LightGBM booster is checked (``faux.audit.loaders.lightgbm_file.check_text``) before LightGBM's
parser sees it, as skops builds the booster."""

from __future__ import annotations

import contextlib
from pathlib import Path

from faux.audit.loaders.target import TargetModel, class_name, from_estimator, one_line
from faux.errors import ConfigError, DataError

#: scikit-learn's own classes that hold a fitted estimator's state and that skops does not
#: trust by default; trusted here (an MLP's optimiser, a tree, a histogram-boosting
#: predictor). Any other type still needs ``trusted_types``/``--trust-type``.
SKLEARN_STATE_TYPES = frozenset({
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
})


@contextlib.contextmanager
def _checked_boosters(path: Path, untrusted):
    """While skops builds the object: a LightGBM booster's model text (its state's
    ``_handle``/``handle``) is checked before ``Booster.__setstate__`` hands it to
    LightGBM's C++ parser (checked there, not in the file's schema: skops may resolve a
    node to another of the same ``__id__``)."""
    if not any(t.startswith("lightgbm.") for t in untrusted):
        yield
        return
    import lightgbm

    from faux.audit.loaders.lightgbm_file import Malformed, check_text

    original = lightgbm.Booster.__setstate__

    def setstate(booster, state):
        for key in ("_handle", "handle"):
            text = state.get(key) if isinstance(state, dict) else None
            try:
                if text is not None and not (isinstance(text, str)
                                             and check_text(text.encode()) == text):
                    raise Malformed("its model text is not a string as save_model writes it")
            except Malformed as err:
                raise DataError(f"{path.name} holds a LightGBM booster whose model is not "
                                f"well formed: {err}; save the model again with "
                                "skops.io.dump") from None
        original(booster, state)

    lightgbm.Booster.__setstate__ = setstate
    try:
        yield
    finally:
        lightgbm.Booster.__setstate__ = original


def load_skops_file(path: Path, trusted_types, exact: bool = True) -> TargetModel:
    import skops.io as sio

    from faux.audit.loaders.tree_check import TreeError, estimator_trees

    try:
        untrusted = sio.get_untrusted_types(file=str(path))
    except Exception as err:
        raise DataError(f"cannot read the skops file {path}: {one_line(err)}") from err
    missing = [t for t in untrusted
               if t not in set(trusted_types or ()) and t not in SKLEARN_STATE_TYPES]
    if missing:
        flags = " ".join(f"--trust-type {t}" for t in missing)
        raise ConfigError(f"{path.name} holds types skops does not trust by default: "
                          f"{', '.join(missing)}; check them and pass {flags}")
    with _checked_boosters(path, untrusted):
        est = sio.load(str(path), trusted=list(untrusted))
    try:  # before anything predicts (from_estimator probes the model)
        estimator_trees(est)
    except TreeError as err:
        raise DataError(f"{path.name} holds a malformed tree, refused before the model ran: "
                        f"{err}; save the model again with skops.io.dump") from None
    tm = from_estimator(est, f"skops file {path.name}", exact)
    tm.obj_class = class_name(est)
    return tm
