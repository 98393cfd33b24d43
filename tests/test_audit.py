"""faux audit on real models: torch (TorchScript / torch.export), LightGBM, scikit-learn, ONNX.

Small Adult subsample (the model never sees sex), few aux epochs. Properties checked:
finite-difference scores agree with autograd (Spearman >= 0.99), a black-box linear model
scores as its torch twin, a planted proxy tops the ranking and moves the flagged rows, the
outputs are complete and self-contained.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr

import faux
from audit_world import proxy_world
from faux.audit.loaders.models import load_model
from faux.audit.loaders.target import from_callable, from_estimator, from_torch
from faux.audit.scores.aux import train_aux
from faux.audit.scores.scoring import Scorer
from faux.audit.sources.data_scan import standardisation
from faux.audit.sources.protected import ProtectedInfo
from faux.errors import ConfigError

N = 1500
EPOCHS = 4


@pytest.fixture(scope="module")
def adult():
    from faux.data.real import load_real

    d = load_real("adult", seed=0)
    X = pd.DataFrame(d.X_train[:N].astype(np.float64), columns=list(d.feature_names))
    return X, d.c_train[:N].copy(), d.y_train[:N].copy()


@pytest.fixture(scope="module")
def torch_target(adult):
    from faux.models.mlp import train_mlp

    X, _, y = adult
    net, _ = train_mlp(X.values, y, max_epochs=3, patience=None, batch_size=128,
                       accelerator="cpu")
    return net.eval()


@pytest.fixture(scope="module")
def aux_setup(adult):
    X, c, _ = adult
    mean, scale = standardisation(X.values)
    aux, quality = train_aux((X.values - mean) / scale, c, ProtectedInfo("binary", [0, 1]),
                             epochs=EPOCHS)
    return aux, mean, scale, quality


def test_finite_differences_agree_with_autograd_on_a_torch_mlp(adult, torch_target, aux_setup):
    X, _, _ = adult
    aux, mean, scale, _ = aux_setup
    grad = from_torch(torch_target, "mlp", X.shape[1])
    box = from_callable(grad.proba)  # the same model, only called
    assert grad.differentiable and not box.differentiable
    x = X.values[:400]
    methods = ["faux", "faux_ng", "fta"]
    sa = Scorer(grad, aux, mean, scale, methods).score(x)
    sb = Scorer(box, aux, mean, scale, methods).score(x)
    for m in methods:
        assert spearmanr(sa[m], sb[m])[0] >= 0.99, m
    # with a small step (no ReLU kink crossed) the values agree too, not only the ranks
    sc = Scorer(box, aux, mean, scale, ["faux"], fd_step=1e-3).score(x)
    close = np.isclose(sc["faux"], sa["faux"], rtol=0.05, atol=1e-4)
    assert close.mean() >= 0.97, close.mean()
    # eq. 9's per-feature terms add up to the (signed) score
    contrib = Scorer(grad, aux, mean, scale, ["faux"]).contributions(x[:20])
    np.testing.assert_allclose(np.abs(contrib.sum(1)), sa["faux"][:20], rtol=1e-4, atol=1e-7)


def test_black_box_linear_model_scores_as_its_torch_twin(adult, aux_setup):
    from sklearn.linear_model import LogisticRegression

    X, _, y = adult
    aux, mean, scale, _ = aux_setup
    lr = LogisticRegression(max_iter=300).fit(X.values, y)
    twin = torch.nn.Linear(X.shape[1], 1)
    with torch.no_grad():
        twin.weight.copy_(torch.as_tensor(lr.coef_, dtype=torch.float32))
        twin.bias.copy_(torch.as_tensor(lr.intercept_, dtype=torch.float32))
    x = X.values[:300]
    sa = Scorer(from_torch(twin, "twin", X.shape[1]), aux, mean, scale, ["faux"]).score(x)
    sb = Scorer(from_estimator(lr), aux, mean, scale, ["faux"]).score(x)
    assert spearmanr(sa["faux"], sb["faux"])[0] >= 0.99
    np.testing.assert_allclose(sb["faux"], sa["faux"], rtol=0.05, atol=1e-4)


def _write(adult, path, n=None):
    X, c, y = adult
    df = X.iloc[:n].copy() if n else X.copy()
    df["sex"] = c[:len(df)]
    df["income"] = y[:len(df)]
    if str(path).endswith(".csv"):
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


def test_torchscript_file_end_to_end(adult, torch_target, tmp_path):
    from faux.audit.cli import main

    X, _, _ = adult
    model = tmp_path / "mlp.pt"
    with pytest.warns(torch.jit.TracerWarning):  # the MLP checks its input width
        traced = torch.jit.trace(torch_target, torch.zeros(2, X.shape[1]))
    torch.jit.save(traced, model)
    data = _write(adult, tmp_path / "adult.csv")
    out = tmp_path / "out"
    rc = main(["audit", "--model", str(model), "--data", str(data), "--protected", "sex",
               "--label", "income", "--out", str(out), "--aux-epochs", str(EPOCHS),
               "--batch-size", "512", "--no-progress"])
    assert rc == 0
    scores = pd.read_parquet(out / "scores.parquet")
    # the scores are diagnostics; the effect verdict (its columns after flagged) flags
    assert list(scores.columns) == ["row_id", "faux_ng", "faux", "flagged", "p", "p_cf",
                                    "effect", "effect_lo", "effect_hi", "decision_changes",
                                    "off_support", "unreachable", "p_value"]
    assert len(scores) == N and (scores.row_id.values == np.arange(N)).all()
    assert np.isfinite(scores[["faux", "faux_ng"]].values).all()
    assert ((scores.faux_ng >= 0) & (scores.faux_ng <= 1 + 1e-6)).all()
    summary = json.loads((out / "summary.json").read_text())
    assert (scores.flagged == scores.decision_changes).all()
    assert summary["effects"]["sex"]["flagged"] == int(scores.flagged.sum())
    assert summary["flagged"]["count"] == int(scores.flagged.sum())
    t_ng = summary["thresholds"]["faux_ng"]
    assert t_ng["rows_above"] == int((scores.faux_ng > t_ng["threshold"]).sum())
    assert summary["scoring"]["mode"] == "autograd"
    assert summary["data"]["features"] == list(X.columns)  # sex and income excluded
    assert summary["aux_quality"]["auroc"] > 0.7  # Adult's features carry sex
    top3 = {t["feature"] for t in summary["top_features"][:3]}
    assert top3 & {"relationship", "marital-status"}  # sex's proxies in Adult
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 2
    assert "http://" not in html and "https://" not in html  # self-contained
    # batch size does not change a row's score (per-sample NG reading)
    res = faux.audit(torch_target, X, adult[1], methods=["faux", "faux_ng"], aux_epochs=EPOCHS,
                     batch_size=4096, progress=False)
    np.testing.assert_allclose(res.scores.faux_ng.values, scores.faux_ng.values, rtol=1e-4,
                               atol=1e-6)


def test_torch_export_program_with_static_batch(adult, torch_target, tmp_path):
    X, _, _ = adult
    ep = torch.export.export(torch_target, (torch.zeros(64, X.shape[1]),))  # static batch 64
    path = tmp_path / "mlp.pt2"
    torch.export.save(ep, path)
    tm = load_model(path, X.shape[1])
    assert tm.differentiable
    x = torch.as_tensor(X.values[:100], dtype=torch.float32)  # not a multiple of 64
    with torch.no_grad():
        np.testing.assert_allclose(tm.module(x).numpy(), torch_target(x).numpy(), atol=1e-5)


@pytest.fixture(scope="module")
def lgbm(adult):
    import lightgbm as lgb

    X, _, y = adult
    # n_jobs=1: LightGBM's default thread count thrashes on a shared machine (11 s vs 0.2 s)
    model = lgb.LGBMClassifier(n_estimators=30, num_leaves=15, verbose=-1, n_jobs=1)
    return model.fit(X.values, y)


def test_lightgbm_skops_needs_its_types_trusted_and_text_file_loads(adult, lgbm, tmp_path):
    import skops.io as sio

    from faux.audit.cli import main

    X, c, _ = adult
    path = tmp_path / "lgbm.skops"
    sio.dump(lgbm, path)
    with pytest.raises(ConfigError, match="--trust-type lightgbm"):
        load_model(path, X.shape[1])
    trusted = sio.get_untrusted_types(file=str(path))
    tm = load_model(path, X.shape[1], trusted_types=trusted)
    np.testing.assert_allclose(tm.proba(X.values[:50]), lgbm.predict_proba(X.values[:50])[:, 1])
    text = tmp_path / "lgbm.txt"
    lgbm.booster_.save_model(text)
    tm2 = load_model(text, X.shape[1])
    np.testing.assert_allclose(tm2.proba(X.values[:50]), lgbm.predict_proba(X.values[:50])[:, 1],
                               rtol=1e-6)
    data = _write(adult, tmp_path / "adult.parquet", n=600)
    out = tmp_path / "out"
    args = ["audit", "--model", str(text), "--data", str(data), "--protected", "sex",
            "--label", "income", "--out", str(out), "--aux-epochs", str(EPOCHS), "--no-progress",
            "--sample", "600"]
    assert main(args) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["scoring"]["mode"] == "finite differences"
    assert s["scoring"]["model_calls_per_row"] == 2 + 2 * X.shape[1]  # fAux 2k, NG 2d
    assert s["scoring"]["fd_step_std"] == 0.1
    assert "finite differences, step 0.1" in (out / "report.html").read_text()


def test_sklearn_skops_and_onnx_agree(adult, tmp_path):
    import skops.io as sio
    from skl2onnx import to_onnx
    from sklearn.ensemble import RandomForestClassifier

    X, c, y = adult
    rf = RandomForestClassifier(n_estimators=20, max_depth=6, random_state=0).fit(X.values, y)
    sio.dump(rf, tmp_path / "rf.skops")
    onx = to_onnx(rf, X.values[:1].astype(np.float32), options={"zipmap": False})
    (tmp_path / "rf.onnx").write_bytes(onx.SerializeToString())
    a = load_model(tmp_path / "rf.skops", X.shape[1])  # scikit-learn's Tree is trusted
    b = load_model(tmp_path / "rf.onnx", X.shape[1])
    assert b.n_features == X.shape[1]
    x = X.values[:200]
    np.testing.assert_allclose(a.proba(x), b.proba(x), atol=1e-5)
    ra = faux.audit(a, X.iloc[:400], c[:400], methods=["faux"], aux_epochs=EPOCHS,
                    progress=False)
    rb = faux.audit(b, X.iloc[:400], c[:400], methods=["faux"], aux_epochs=EPOCHS,
                    progress=False)
    assert ra.summary["scoring"]["model_calls_per_row"] == 2
    assert spearmanr(ra.scores.faux, rb.scores.faux)[0] > 0.95


def _proxy_world(n=1200, seed=0):
    return proxy_world(n, seed)


class ProxyModel(torch.nn.Module):
    """Uses the proxy only for rows with x2 > 0 (smoothly gated)."""

    def forward(self, x):
        gate = torch.sigmoid(8 * x[:, 1])
        return 0.5 * x[:, 0] + 4.0 * gate * (x[:, 3] - 0.5)


@pytest.mark.parametrize("black_box", [False, True])
def test_planted_proxy_tops_ranking_and_flags_the_rows_it_moves(black_box):
    X, c = _proxy_world()
    model = torch.jit.script(ProxyModel())
    tm = from_torch(model, "proxy", 4)
    res = faux.audit(from_callable(tm.proba) if black_box else model, X, c, methods=["faux"],
                     aux_epochs=10, progress=False, threshold=0.02)
    assert next(iter(res.feature_ranking)) == "proxy"
    # ground truth: how much the prediction moves when the proxy moves as c flips
    flipped = X.values.copy()
    flipped[:, 3] += 1 - 2 * c
    moved = np.abs(tm.proba(flipped) - tm.proba(X.values))
    flagged = res.scores.flagged.values
    assert flagged.mean() > 0.1
    assert (moved[flagged] > 0.05).mean() >= 0.9  # flagged rows are moved by the proxy
    assert (X.x2.values[flagged] < -0.5).mean() <= 0.02  # not where the gate shuts it off
    assert spearmanr(res.scores.faux, moved)[0] >= 0.7
    top = res.top_flagged.top_features.iloc[0]
    assert top[0][0] == "proxy"  # each flagged row's top contributor is the proxy


def test_categorical_and_continuous_protected_attributes():
    X, c = _proxy_world(900, seed=1)
    model = torch.jit.script(ProxyModel())
    rng = np.random.default_rng(2)
    c3 = np.where(c == 1, rng.integers(1, 3, len(c)), 0)  # 3 groups; proxy separates 0 | 1,2
    res = faux.audit(model, X, np.array(["a", "b", "c"])[c3], methods=["faux", "faux_ng"],
                     aux_epochs=8, progress=False)
    assert res.summary["protected"]["kind"] == "categorical"
    assert res.summary["protected"]["levels"] == ["a", "b", "c"]
    assert res.summary["aux_quality"]["metric"] == "macro AUROC"
    assert set(res.summary["flagged"]["by_group"]) == {"a", "b", "c"}
    assert np.isfinite(res.scores[["faux", "faux_ng"]].values).all()
    cont = X.proxy.values * 10 + rng.normal(size=len(c))  # continuous, carried by the proxy
    Xc = X.assign(proxy=cont / 10 + 0.05 * rng.normal(size=len(c)))
    r2 = faux.audit(model, Xc, cont, methods=["faux"], aux_epochs=15, progress=False)
    assert r2.summary["protected"]["kind"] == "continuous"
    assert r2.summary["aux_quality"]["r2"] > 0.5
    assert r2.summary["aux_quality"]["warning"] is None
    assert next(iter(r2.feature_ranking)) == "proxy"


def test_near_chance_aux_is_warned_about():
    X, _ = _proxy_world(600, seed=3)
    noise = np.random.default_rng(4).integers(0, 2, len(X))  # unrelated to every feature
    res = faux.audit(torch.jit.script(ProxyModel()), X, noise, methods=["faux"], aux_epochs=3,
                     progress=False)
    assert res.summary["aux_quality"]["auroc"] < 0.6
    assert "near chance" in res.summary["aux_quality"]["warning"]


def test_adel_aux_needs_the_label_and_runs_with_it(adult, torch_target):
    X, c, y = adult
    with pytest.raises(ConfigError, match="needs label"):
        faux.audit(torch_target, X, c, aux="adel", aux_epochs=2, progress=False)
    res = faux.audit(torch_target, X.iloc[:500], c[:500], y=y[:500], aux="adel", aux_epochs=2,
                     methods=["faux"], progress=False)
    assert res.summary["aux_quality"]["kind"] == "adel"
    assert np.isfinite(res.scores.faux).all()


def test_finite_differences_along_k_pseudo_inverse_directions_match_autograd():
    """k = 3 aux outputs: 2k calls per row reproduce eq. 9's max over the pseudo-inverse."""
    X, c = _proxy_world(600, seed=5)
    rng = np.random.default_rng(6)
    X = X.assign(x3=X.x3 + (rng.random(len(c)) < 0.5))  # a second feature carrying a group
    c3 = c + (X.x3.values > 0.5)
    info = ProtectedInfo("categorical", [0, 1, 2])
    mean, scale = standardisation(X.values)
    aux, _ = train_aux((X.values - mean) / scale, c3, info, epochs=10)
    grad = from_torch(torch.jit.script(ProxyModel()), "proxy", 4)
    x = X.values[:300]
    sa = Scorer(grad, aux, mean, scale, ["faux"]).score(x)["faux"]
    box = Scorer(from_callable(grad.proba), aux, mean, scale, ["faux"], fd_step=1e-3)
    sb = box.score(x)["faux"]
    assert box.calls_per_row(3, 4) == 6
    assert spearmanr(sa, sb)[0] >= 0.99
    assert np.isclose(sa, sb, rtol=0.05, atol=1e-4).mean() >= 0.97
