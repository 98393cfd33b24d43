"""Exact gradients for scikit-learn models: the torch conversion reproduces predict_proba /
predict of every supported type, unsupported models stay black boxes, a conversion that
does not reproduce its estimator falls back with one warning, exact and finite-difference
scores agree on a planted proxy, and a skops MLP is audited exactly end to end."""

import json
import warnings

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import (
    ElasticNet,
    HuberRegressor,
    Lasso,
    LinearRegression,
    LogisticRegression,
    Ridge,
    SGDClassifier,
    SGDRegressor,
)
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

import faux
from audit_world import proxy_world
from faux.audit.loaders.exact import TOLERANCE, convert, mismatch, twin_outputs
from faux.audit.loaders.models import load_model
from faux.audit.loaders.target import from_estimator
from faux.audit.scores.scoring import Scorer


def _data(n=300, seed=0):
    """Columns of very different scales and offsets (as raw tabular data has)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * [1, 10, 100, 0.1, 1] + [0, 5, 0, 0, 3]
    y = (X[:, 0] + X[:, 1] / 10 + rng.normal(size=n) > 0.5).astype(int)
    r = X @ [1.0, 0.2, 0.01, 3.0, 0.0] + rng.normal(size=n)
    return X, y, r


def _fit(est, X, target):
    with warnings.catch_warnings():  # small MLPs stop before converging
        warnings.simplefilter("ignore")
        return est.fit(X, target)


CLASSIFIERS = {
    "logistic": lambda: LogisticRegression(max_iter=2000),
    "sgd_log": lambda: SGDClassifier(loss="log_loss", random_state=0),
    **{f"mlp_{a}": (lambda a=a: MLPClassifier(hidden_layer_sizes=(8, 4), activation=a,
                                              max_iter=200, random_state=0))
       for a in ("identity", "logistic", "tanh", "relu")},
    "pipe_std_logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression()),
    "pipe_minmax_mlp": lambda: make_pipeline(MinMaxScaler(), "passthrough", MLPClassifier(
        hidden_layer_sizes=(6,), max_iter=200, random_state=0)),
    "pipe_maxabs_sgd": lambda: make_pipeline(MaxAbsScaler(), SGDClassifier(loss="log_loss")),
}
REGRESSORS = {
    "linear": LinearRegression, "ridge": Ridge, "lasso": Lasso, "elastic_net": ElasticNet,
    "huber": lambda: HuberRegressor(max_iter=1000),
    "sgd": lambda: make_pipeline(StandardScaler(), SGDRegressor(random_state=0)),
    "mlp_relu": lambda: MLPRegressor(hidden_layer_sizes=(8,), max_iter=200, random_state=0),
    "mlp_tanh": lambda: MLPRegressor(hidden_layer_sizes=(8, 8), activation="tanh",
                                     max_iter=200, random_state=0),
    "pipe_minmax_clip_ridge": lambda: make_pipeline(MinMaxScaler(clip=True), Ridge()),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_classifier_conversion_equals_predict_proba(name):
    X, y, _ = _data()
    est = _fit(CLASSIFIERS[name](), X, y)
    tm = from_estimator(est)
    assert tm.differentiable and tm.output == "logit"
    assert tm.exact_from.startswith("sklearn ") and tm.scoring_mode.startswith("autograd (exact")
    x = np.concatenate([X, 3 * X])  # also beyond the training range
    p = est.predict_proba(x)[:, 1]
    np.testing.assert_allclose(twin_outputs(tm.twin, x), p, rtol=0, atol=TOLERANCE)
    # the module the audit differentiates: float32 in, logit of the same probability out
    with torch.no_grad():
        z = tm.module(torch.as_tensor(x, dtype=torch.float32))
    assert z.dtype == torch.float32 and z.shape == (len(x),)
    np.testing.assert_allclose(torch.sigmoid(z.double()).numpy(), p, atol=1e-4)


def test_logistic_twin_is_the_closed_form_logit():
    X, y, _ = _data()
    lr = _fit(LogisticRegression(max_iter=2000), X, y)
    twin = convert(lr)
    with torch.no_grad():
        z = twin.module(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(z, X @ lr.coef_[0] + lr.intercept_[0], rtol=1e-12, atol=1e-12)
    # its gradient is the coefficient vector at every row
    x = torch.tensor(X[:10], requires_grad=True)
    twin.module(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(lr.coef_[0], (10, 1)), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_regressor_conversion_equals_predict(name):
    X, _, r = _data()
    est = _fit(REGRESSORS[name](), X, r)
    tm = from_estimator(est)
    assert tm.differentiable and tm.output == "value", tm.scoring_mode
    x = np.concatenate([X, 3 * X])
    pred = est.predict(x)
    got = twin_outputs(tm.twin, x)
    assert (np.abs(got - pred) / np.maximum(1, np.abs(pred))).max() <= TOLERANCE
    assert mismatch(tm.twin, pred, x) <= TOLERANCE


def test_unsupported_estimators_stay_black_boxes(capsys):
    X, y, r = _data()
    unsupported = [
        _fit(RandomForestClassifier(n_estimators=5, random_state=0), X, y),
        _fit(SGDClassifier(loss="modified_huber", random_state=0), X, y),  # not a sigmoid
        _fit(make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=3)), X, y),
        _fit(MLPRegressor(hidden_layer_sizes=(4,), max_iter=50), X, np.c_[r, r]),  # 2 outputs
    ]
    for est in unsupported:
        tm = from_estimator(est)
        assert not tm.differentiable and tm.exact_from is None
        assert tm.scoring_mode == "finite differences"
        assert "exact_from" not in tm.provenance()
    assert capsys.readouterr().err == ""  # unsupported is not a mismatch: no warning
    # a convertible model can be kept a black box on request
    lr = _fit(LogisticRegression(), X, y)
    assert not from_estimator(lr, exact=False).differentiable
    assert from_estimator(lr).provenance() == {"exact_from": "sklearn LogisticRegression"}


class TemperedLogistic(LogisticRegression):
    """A LogisticRegression whose predict_proba is sharpened: its converted logit (x·w + b)
    no longer reproduces it."""

    def predict_proba(self, X):
        z = 3.0 * self.decision_function(X)
        p = 1 / (1 + np.exp(-z))
        return np.c_[1 - p, p]


def test_a_conversion_that_does_not_reproduce_the_model_falls_back_with_one_warning(capsys):
    X, y, _ = _data()
    est = _fit(TemperedLogistic(max_iter=2000), X, y)
    assert convert(est) is not None  # the type converts ...
    tm = from_estimator(est)  # ... but the check on probe rows refuses it
    err = capsys.readouterr().err
    assert not tm.differentiable and tm.scoring_mode == "finite differences"
    assert err.count("\n") == 1 and err.startswith("faux audit: warning:"), err
    assert "TemperedLogistic" in err and "finite differences" in err
    # a twin that passed the probe but not the data sample is dropped the same way
    good = from_estimator(_fit(LogisticRegression(max_iter=2000), X, y))
    assert good.verify_exact(X) and good.differentiable
    good.proba_fn = lambda x: est.predict_proba(x)[:, 1]  # now it disagrees with its twin
    assert not good.verify_exact(X)
    assert not good.differentiable and good.exact_from is None
    assert capsys.readouterr().err.count("\n") == 1


def _proxy_world(n=800, seed=0):
    return proxy_world(n, seed, x2_scale=10.0)


def test_exact_and_finite_differences_agree_on_a_planted_proxy():
    from faux.audit.scores.aux import train_aux
    from faux.audit.sources.data_scan import standardisation
    from faux.audit.sources.protected import ProtectedInfo

    X, c = _proxy_world()
    rng = np.random.default_rng(1)
    y = (X.x1 + 2 * X.proxy + 0.1 * X.x2 + rng.normal(size=len(X)) > 1).astype(int)
    lr = LogisticRegression().fit(X.values, y)
    mean, scale = standardisation(X.values)
    aux, _ = train_aux((X.values - mean) / scale, c, ProtectedInfo("binary", [0, 1]), epochs=5)
    exact, box = from_estimator(lr), from_estimator(lr, exact=False)
    assert exact.differentiable and not box.differentiable
    methods = ["faux", "faux_ng", "fta"]
    x = X.values[:400]
    calls = []
    exact.proba_fn = lambda v: calls.append(len(v)) or lr.predict_proba(v)[:, 1]
    se = Scorer(exact, aux, mean, scale, methods).score(x)
    assert calls == []  # exact: the model is never called, its twin is differentiated
    sf = Scorer(box, aux, mean, scale, methods).score(x)
    for m in methods:
        assert spearmanr(se[m], sf[m])[0] >= 0.99, m
        np.testing.assert_allclose(se[m], sf[m], rtol=0.02, atol=1e-4)
    # eq. 9's per-feature terms agree as well
    ce = Scorer(exact, aux, mean, scale, ["faux"]).contributions(x[:20])
    cf = Scorer(box, aux, mean, scale, ["faux"]).contributions(x[:20])
    np.testing.assert_allclose(ce, cf, rtol=0.02, atol=1e-4)


def test_exact_regressor_differentiates_its_prediction_as_finite_differences_do():
    from faux.audit.scores.aux import train_aux
    from faux.audit.sources.data_scan import standardisation
    from faux.audit.sources.protected import ProtectedInfo

    X, c = _proxy_world(500, seed=2)
    ridge = Ridge().fit(X.values, X.x1 + 2 * X.proxy)  # predictions well outside (0, 1)
    mean, scale = standardisation(X.values)
    aux, _ = train_aux((X.values - mean) / scale, c, ProtectedInfo("binary", [0, 1]), epochs=3)
    x = X.values[:200]
    se = Scorer(from_estimator(ridge), aux, mean, scale, ["faux", "fta"]).score(x)
    sf = Scorer(from_estimator(ridge, exact=False), aux, mean, scale, ["faux", "fta"]).score(x)
    for m in ("faux", "fta"):  # a linear model: central differences are exact
        np.testing.assert_allclose(se[m], sf[m], rtol=1e-3, atol=1e-6)


def test_skops_mlp_is_audited_exactly_end_to_end(tmp_path):
    import skops.io as sio

    X, c = _proxy_world(600, seed=3)
    y = (X.x1 + X.proxy > 0.8).astype(int)
    mlp = _fit(make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=(16,), max_iter=300, random_state=0)), X.values, y)
    path = tmp_path / "mlp.skops"
    sio.dump(mlp, path)
    tm = load_model(path, X.shape[1], trusted_types=sio.get_untrusted_types(file=str(path)))
    assert tm.exact_from == "sklearn Pipeline(StandardScaler, MLPClassifier)"
    res = faux.audit(str(path), X, c, methods=["faux_ng", "faux", "faux_ig"], aux_epochs=5,
                     progress=False, out_dir=tmp_path / "out", threshold=0.5,
                     trusted_types=sio.get_untrusted_types(file=str(path)))
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["model"]["differentiable"] and s["scoring"]["mode"].startswith("autograd")
    assert s["model"]["exact_from"] == "sklearn Pipeline(StandardScaler, MLPClassifier)"
    assert s["scoring"]["model_calls_per_row"] == 0 and s["scoring"]["fd_step_std"] is None
    assert np.isfinite(res.scores[["faux_ng", "faux", "faux_ig"]].values).all()
    assert next(iter(res.feature_ranking)) == "proxy"
