"""Exact gradients for ONNX models: the ONNX -> torch interpreter reproduces onnxruntime on
torch exports and skl2onnx conversions, its autograd gradient is the derivative of the
model, unsupported graphs stay black boxes, a conversion that disagrees with onnxruntime
falls back with one warning, and an ONNX model is audited exactly end to end."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr
from torch import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")

from onnx import TensorProto, helper  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import faux  # noqa: E402
from faux.audit.loaders import onnx_ops, onnx_torch  # noqa: E402
from faux.audit.loaders.exact import TOLERANCE, twin_outputs  # noqa: E402
from faux.audit.loaders.models import load_model  # noqa: E402


def _data(n=300, seed=0):
    """Columns of different scales and offsets, a label that depends on two of them."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * [1, 3, 0.5, 1, 2] + [0, 2, 0, -1, 0]
    y = (X[:, 0] + X[:, 1] / 3 + rng.normal(size=n) > 0.5).astype(int)
    return X, y


def _fit(est, X, y):
    with warnings.catch_warnings():  # small MLPs stop before converging
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _save_skl(est, X, path, **options):
    onx = skl2onnx.to_onnx(est, X[:1].astype(np.float32), options=options or None)
    path.write_bytes(onx.SerializeToString())
    return path


def _export_torch(net, d, path, dtype=torch.float32, output="prob"):
    net = net.to(dtype).eval()
    torch.onnx.export(net, (torch.zeros(2, d, dtype=dtype),), str(path), dynamo=False,
                      input_names=["x"], output_names=[output],
                      dynamic_axes={"x": {0: "n"}, output: {0: "n"}})
    return path


def _rows(X):
    """The data and rows beyond its range."""
    return np.concatenate([X, 3 * X])


class Mlp(nn.Module):
    def __init__(self, d, head="sigmoid", leaky=True):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(),
                                  nn.Linear(8, 8), nn.LeakyReLU(0.1) if leaky else nn.Tanh())
        self.head = head
        self.out = nn.Linear(8, 2 if head == "softmax" else 1)

    def forward(self, x):
        z = self.out(self.body(x))
        if self.head == "sigmoid":
            return torch.sigmoid(z)
        if self.head == "softmax":  # P(class 1) selected out of a two-class softmax
            return torch.softmax(z, dim=1)[:, 1:2].reshape(-1)
        return z  # the raw output


@pytest.mark.parametrize("head", ["sigmoid", "softmax", "raw"])
def test_torch_export_converts_and_matches_onnxruntime(tmp_path, head):
    X, _ = _data()
    path = _export_torch(Mlp(X.shape[1], head), X.shape[1], tmp_path / "mlp.onnx",
                         output="prob" if head != "raw" else "score")
    tm = load_model(path, X.shape[1])
    assert tm.differentiable and tm.exact_from.startswith("ONNX graph (")
    assert "Gemm" in tm.exact_from and "LeakyRelu" in tm.exact_from
    assert tm.scoring_mode == f"autograd (exact, converted from {tm.exact_from})"
    assert tm.provenance()["loader"] == "onnxruntime"
    # a sigmoid or a two-class softmax: the module returns the logit before it
    assert tm.output == ("value" if head == "raw" else "logit")
    x = _rows(X)
    np.testing.assert_allclose(twin_outputs(tm.twin, x), tm.proba_fn(x), rtol=0,
                               atol=TOLERANCE)
    with torch.no_grad():  # what the audit differentiates: float32 in, (n,) float32 out
        z = tm.module(torch.as_tensor(x, dtype=torch.float32))
    assert z.dtype == torch.float32 and z.shape == (len(x),)


def test_batch_norm_and_dropout_at_inference_convert(tmp_path):
    X, _ = _data()
    d = X.shape[1]
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(d, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.2),
                        nn.Linear(8, 1), nn.Sigmoid())
    with torch.no_grad():  # running statistics away from (0, 1)
        for _ in range(5):
            net(torch.as_tensor(3 * X + 1, dtype=torch.float32))
    tm = load_model(_export_torch(net, d, tmp_path / "bn.onnx"), d)
    assert tm.differentiable and "BatchNormalization" in tm.exact_from
    x = _rows(X)
    np.testing.assert_allclose(twin_outputs(tm.twin, x), tm.proba_fn(x), rtol=0,
                               atol=TOLERANCE)
    # a Dropout node (kept by other exporters) is the identity at inference
    nodes = [helper.make_node("Dropout", ["X", "r"], ["h"]),
             helper.make_node("Sigmoid", ["h"], ["Z"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                     [None, 1])],
                          [helper.make_tensor_value_info("Z", TensorProto.FLOAT, [None, 1])],
                          initializer=[helper.make_tensor("r", TensorProto.FLOAT, [], [0.5])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    twin = onnx_torch.convert(model, "Z")
    assert twin.output == "logit" and twin.label == "ONNX graph (Dropout, Sigmoid)"
    np.testing.assert_allclose(twin_outputs(twin, X[:, :1]),
                               _run_ort(model, X[:, :1], "Z").reshape(-1), atol=1e-7)


def test_autograd_gradient_equals_finite_differences_of_onnxruntime(tmp_path):
    X, _ = _data(40)
    d = X.shape[1]
    # a float64 export: onnxruntime computes in float64, its central differences are exact
    # to ~1e-9 with this step (onnxruntime has no float64 LeakyRelu)
    path = _export_torch(Mlp(d, leaky=False), d, tmp_path / "mlp64.onnx", dtype=torch.float64)
    tm = load_model(path, d)
    assert tm.output == "logit" and tm.twin.tolerance == TOLERANCE  # a float64 graph
    x = torch.tensor(X, requires_grad=True)
    torch.sigmoid(tm.module(x)).sum().backward()
    h = 1e-5
    fd = np.stack([(tm.proba_fn(X + h * e) - tm.proba_fn(X - h * e)) / (2 * h)
                   for e in np.eye(d)], axis=1)
    assert np.abs(fd).max() > 1e-2  # the gradient is not trivially zero
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-8)


SKLEARN = {
    "logistic": lambda: LogisticRegression(max_iter=2000),
    "pipe_std_logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression()),
    **{f"mlp_{a}": (lambda a=a: MLPClassifier(hidden_layer_sizes=(8, 4), activation=a,
                                              max_iter=200, random_state=0))
       for a in ("relu", "tanh", "logistic", "identity")},
}


@pytest.mark.parametrize("zipmap", [True, False])
@pytest.mark.parametrize("name", sorted(SKLEARN))
def test_skl2onnx_models_convert_and_match_onnxruntime(tmp_path, name, zipmap):
    X, y = _data()
    est = _fit(SKLEARN[name](), X, y)
    path = _save_skl(est, X, tmp_path / "m.onnx", **({} if zipmap else {"zipmap": False}))
    tm = load_model(path, X.shape[1])
    assert tm.differentiable and tm.output == "logit", tm.scoring_mode
    assert tm.exact_from.startswith("ONNX graph (")
    assert ("ZipMap" in tm.exact_from) == zipmap
    x = _rows(X)
    np.testing.assert_allclose(twin_outputs(tm.twin, x), tm.proba_fn(x), rtol=0,
                               atol=TOLERANCE)
    np.testing.assert_allclose(tm.proba_fn(x), est.predict_proba(x)[:, 1], atol=1e-5)


@pytest.mark.parametrize("name", ["logistic", "mlp_relu"])
def test_string_class_labels_convert(tmp_path, name):
    """skl2onnx stores string labels as a string constant beside the graph's arithmetic."""
    X, y = _data()
    est = _fit(SKLEARN[name](), X, np.where(y == 1, "yes", "no"))
    tm = load_model(_save_skl(est, X, tmp_path / "m.onnx"), X.shape[1])
    assert tm.differentiable and tm.output == "logit", tm.scoring_mode
    x = _rows(X)
    np.testing.assert_allclose(twin_outputs(tm.twin, x), est.predict_proba(x)[:, 1],
                               atol=1e-5)


def test_onnx_logistic_logit_and_gradient_are_the_coefficients(tmp_path):
    X, y = _data()
    lr = _fit(LogisticRegression(max_iter=2000), X, y)
    tm = load_model(_save_skl(lr, X, tmp_path / "lr.onnx"), X.shape[1])
    assert tm.exact_from == "ONNX graph (LinearClassifier, ZipMap)"
    w = lr.coef_[0].astype(np.float32).astype(np.float64)  # ONNX stores float32 weights
    b = np.float64(np.float32(lr.intercept_[0]))
    x32 = X.astype(np.float32).astype(np.float64)  # a float32 graph rounds its input
    with torch.no_grad():
        z = tm.twin.module(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(z, x32 @ w + b, rtol=1e-12, atol=1e-12)
    x = torch.tensor(X[:10], requires_grad=True)
    tm.twin.module(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(w, (10, 1)), rtol=1e-12)


def test_a_wide_float32_mlp_converts_closer_to_sklearn_than_onnxruntime(tmp_path):
    """onnxruntime computes a float32 graph in float32; the float64 conversion is closer to
    scikit-learn's float64 predict_proba than onnxruntime is, and within the float32
    tolerance of onnxruntime (an MLP on Adult's 97 columns)."""
    from faux.data.real import load_real

    d = load_real("adult", seed=0)
    X, y = d.X_train[:1500].astype(np.float64), d.y_train[:1500]
    est = _fit(make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=(32, 16), max_iter=100, random_state=0)), X, y)
    tm = load_model(_save_skl(est, X, tmp_path / "adult_mlp.onnx"), X.shape[1])
    assert tm.differentiable and tm.twin.tolerance == onnx_torch.FLOAT32_TOLERANCE
    assert tm.verify_exact(X)
    p = est.predict_proba(X)[:, 1]
    twin_err = np.abs(twin_outputs(tm.twin, X) - p).max()
    ort_err = np.abs(tm.proba_fn(X) - p).max()
    assert twin_err < ort_err and twin_err <= TOLERANCE
    assert np.abs(twin_outputs(tm.twin, X) - tm.proba_fn(X)).max() <= tm.twin.tolerance


def test_onnx_linear_regressor_converts_to_its_prediction(tmp_path):
    X, y = _data()
    r = X @ [1.0, 0.5, -2.0, 0.0, 0.3] + 4.0
    reg = LinearRegression().fit(X, r)
    tm = load_model(_save_skl(reg, X, tmp_path / "reg.onnx"), X.shape[1])
    assert tm.differentiable and tm.output == "value"
    assert "LinearRegressor" in tm.exact_from
    x = _rows(X)
    pred = tm.proba_fn(x)
    assert (np.abs(twin_outputs(tm.twin, x) - pred) / np.maximum(1, np.abs(pred))).max() \
        <= TOLERANCE


def _ml_graph(node, d, out_cols=None):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, d])
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [None, out_cols])
            for o in node.output if o]
    if node.op_type == "LinearClassifier":
        outs[0] = helper.make_tensor_value_info(node.output[0], TensorProto.INT64, [None])
    g = helper.make_graph([node], "g", [x], outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("ai.onnx.ml", 1)])


def _run_ort(model, x, output):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = sess.run([output], {"X": x.astype(np.float32)})
    return np.asarray(out)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_linear_classifier_follows_onnxruntime(k, post):
    """onnxruntime writes one score s as [1 - p, p] (p = sigmoid(s) for LOGISTIC, else s);
    two scores get the transform per row."""
    rng = np.random.default_rng(k)
    d = 3
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain="ai.onnx.ml",
                            coefficients=rng.normal(size=k * d).tolist(),
                            intercepts=rng.normal(size=k).tolist(), classlabels_ints=[0, 1],
                            post_transform=post)
    model = _ml_graph(node, d, 2)
    twin = onnx_torch.convert(model, "Z")
    x = rng.normal(size=(50, d))
    x[0] = 0.0  # an all-zero row: SOFTMAX_ZERO's special case when the intercepts are 0
    ref = _run_ort(model, x, "Z")[:, 1]
    np.testing.assert_allclose(twin_outputs(twin, x), ref, rtol=0, atol=TOLERANCE)
    logit = post == "LOGISTIC" or (post == "SOFTMAX" and k == 2)
    assert twin.output == ("logit" if logit else "value")


@pytest.mark.parametrize("norm", ["L1", "L2"])
def test_scaler_and_normalizer_follow_onnxruntime(norm):
    rng = np.random.default_rng(0)
    d = 4
    nodes = [helper.make_node("Scaler", ["X"], ["s"], domain="ai.onnx.ml",
                              offset=rng.normal(size=d).tolist(),
                              scale=rng.uniform(0.5, 2, d).tolist()),
             helper.make_node("Normalizer", ["s"], ["n"], domain="ai.onnx.ml", norm=norm),
             helper.make_node("ArrayFeatureExtractor", ["n", "idx"], ["Z"],
                              domain="ai.onnx.ml")]
    idx = helper.make_tensor("idx", TensorProto.INT64, [1], [2])
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                     [None, d])],
                          [helper.make_tensor_value_info("Z", TensorProto.FLOAT, [None, 1])],
                          initializer=[idx])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid("ai.onnx.ml", 1)])
    twin = onnx_torch.convert(model, "Z")
    assert twin.label == "ONNX graph (Scaler, Normalizer, ArrayFeatureExtractor)"
    x = rng.normal(size=(60, d)) * 2
    np.testing.assert_allclose(twin_outputs(twin, x), _run_ort(model, x, "Z").reshape(-1),
                               rtol=1e-6, atol=1e-7)


def test_unsupported_graphs_stay_black_boxes_without_a_warning(tmp_path, capsys):
    X, y = _data()
    for i, est in enumerate([RandomForestClassifier(n_estimators=5, random_state=0),
                             GradientBoostingClassifier(n_estimators=5, random_state=0)]):
        path = _save_skl(_fit(est, X, y), X, tmp_path / f"trees{i}.onnx")
        tm = load_model(path, X.shape[1])
        assert not tm.differentiable and tm.exact_from is None
        assert tm.scoring_mode == "finite differences"
        assert np.isfinite(tm.proba(X[:5])).all()
    assert capsys.readouterr().err == ""
    # a convertible model is kept a black box on request
    path = _save_skl(_fit(LogisticRegression(), X, y), X, tmp_path / "lr.onnx")
    assert not load_model(path, X.shape[1], exact=False).differentiable
    assert load_model(path, X.shape[1]).differentiable


def test_a_conversion_that_differs_from_onnxruntime_falls_back_with_one_warning(
        tmp_path, capsys, monkeypatch):
    X, y = _data()
    mlp = _fit(MLPClassifier(hidden_layer_sizes=(8,), max_iter=200, random_state=0), X, y)
    path = _save_skl(mlp, X, tmp_path / "mlp.onnx")
    monkeypatch.setitem(onnx_ops.UNARY_OPS, "Relu", torch.tanh)  # a wrong Relu
    tm = load_model(path, X.shape[1])
    err = capsys.readouterr().err
    assert not tm.differentiable and tm.scoring_mode == "finite differences"
    assert err.count("\n") == 1 and err.startswith("faux audit: warning:"), err
    assert "ONNX graph (" in err and "onnxruntime output" in err
    assert "finite differences" in err


def test_onnx_logistic_is_audited_exactly_and_agrees_with_skops(tmp_path):
    import skops.io as sio

    rng = np.random.default_rng(3)
    n = 600
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": 10 * rng.normal(size=n),
                      "x3": rng.normal(size=n), "proxy": c + 0.3 * rng.normal(size=n)})
    y = (X.x1 + 2 * X.proxy + 0.1 * X.x2 + rng.normal(size=n) > 1).astype(int)
    lr = LogisticRegression().fit(X.values, y)
    _save_skl(lr, X.values, tmp_path / "lr.onnx")
    sio.dump(lr, tmp_path / "lr.skops")
    kw = dict(methods=["faux", "faux_ng"], aux_epochs=5, progress=False, threshold=0.5)
    res_o = faux.audit(str(tmp_path / "lr.onnx"), X, c, out_dir=tmp_path / "out_onnx", **kw)
    res_s = faux.audit(str(tmp_path / "lr.skops"), X, c, out_dir=tmp_path / "out_skops", **kw)
    s = json.loads((tmp_path / "out_onnx" / "summary.json").read_text())
    assert s["model"]["differentiable"] and s["model"]["exact_from"].startswith("ONNX graph")
    assert s["scoring"]["mode"] == ("autograd (exact, converted from ONNX graph "
                                    "(LinearClassifier, ZipMap))")
    assert s["scoring"]["model_calls_per_row"] == 0 and s["scoring"]["fd_step_std"] is None
    assert res_s.summary["model"]["exact_from"] == "sklearn LogisticRegression"
    for m in ("faux", "faux_ng"):
        assert spearmanr(res_o.scores[m], res_s.scores[m])[0] >= 0.99, m
    assert next(iter(res_o.feature_ranking)) == "proxy"


def test_zipmap_reads_the_class_that_sorts_last(tmp_path):
    """Labels listed as [1, 0]: the audit reads label 1's probability, the first column."""
    rng = np.random.default_rng(4)
    d = 3
    nodes = [helper.make_node("LinearClassifier", ["X"], ["Y", "P"], domain="ai.onnx.ml",
                              coefficients=rng.normal(size=2 * d).tolist(),
                              intercepts=[0.3, -0.2], classlabels_ints=[1, 0],
                              post_transform="LOGISTIC"),
             helper.make_node("ZipMap", ["P"], ["probabilities"], domain="ai.onnx.ml",
                              classlabels_int64s=[1, 0])]
    seq = helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                     [None, d])],
                          [helper.make_tensor_value_info("Y", TensorProto.INT64, [None]),
                           helper.make_tensor_value_info("P", TensorProto.FLOAT, [None, 2]),
                           helper.make_value_info("probabilities", seq)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid("ai.onnx.ml", 1)])
    (tmp_path / "flip.onnx").write_bytes(model.SerializeToString())
    tm = load_model(tmp_path / "flip.onnx", d)
    assert tm.differentiable and tm.output == "logit"
    x = rng.normal(size=(40, d))
    ref = tm.proba_fn(x)
    assert np.abs(ref - _run_ort(model, x, "P")[:, 0]).max() < 1e-7  # label 1 is column 0
    np.testing.assert_allclose(twin_outputs(tm.twin, x), ref, rtol=0, atol=TOLERANCE)
