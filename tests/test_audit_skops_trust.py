"""skops files of scikit-learn's own estimators load without --trust-type; other types do not."""

import numpy as np
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.neural_network import MLPClassifier

from faux.audit.loaders.load_skops import SKLEARN_STATE_TYPES
from faux.audit.loaders.models import load_model
from faux.errors import ConfigError


@pytest.mark.parametrize("est", [MLPClassifier((8,), max_iter=30, random_state=0),
                                 HistGradientBoostingClassifier(max_iter=5),
                                 RandomForestClassifier(5, random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_sklearn_estimators_load_without_trust_type(est, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    est.fit(X, (X[:, 0] > 0).astype(int))
    path = tmp_path / "m.skops"
    sio.dump(est, path)
    assert set(sio.get_untrusted_types(file=str(path))) <= SKLEARN_STATE_TYPES
    tm = load_model(path, 4, exact=False)
    np.testing.assert_allclose(tm.proba(X[:20]), est.predict_proba(X[:20])[:, 1])


def test_a_type_outside_scikit_learn_still_needs_trust_type(tmp_path):
    import operator

    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    model = make_pipeline(FunctionTransformer(operator.neg), LogisticRegression())
    model.fit(X, (X[:, 0] > 0).astype(int))
    path = tmp_path / "f.skops"
    sio.dump(model, path)
    with pytest.raises(ConfigError, match="--trust-type _operator.neg"):
        load_model(path, 3)
