"""Loading a skops file: ``skops.io.load`` after its trusted-types check; a type outside
skops' default trust list (and scikit-learn's own state types below) is refused until the
user names it (``trusted_types`` / ``--trust-type``)."""

from __future__ import annotations

from pathlib import Path

from faux.audit.target import TargetModel, class_name, from_estimator, one_line
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


def load_skops_file(path: Path, trusted_types, exact: bool = True) -> TargetModel:
    import skops.io as sio

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
    est = sio.load(str(path), trusted=list(untrusted))
    tm = from_estimator(est, f"skops file {path.name}", exact)
    tm.obj_class = class_name(est)
    return tm
