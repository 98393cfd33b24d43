"""The ONNX op translation table of ``faux.audit.loaders.onnx_torch``: per supported operator, a
builder that reads the node's attributes and constant inputs once and returns the function
evaluating the node on torch tensors (float64), ``fn(values, logits) -> (outputs, their
logits)``; ``node_builder`` picks it by domain and op type, or raises ``Unsupported``.

A logit travels beside a probability where the op keeps it exact (a sigmoid's input, a
two-class softmax's difference, ``1 - p``, and the ops that only move or select entries), so
that the converted module can return the logit of the probability the audit reads.
"""

from __future__ import annotations

import math

import numpy as np
import torch

FLOAT_TYPES = {1: torch.float32, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}
INT_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # uint8, int8, uint16, int16, int32, int64, uint32/64
UNARY_OPS = {"Relu": torch.relu, "Tanh": torch.tanh, "Neg": torch.neg, "Exp": torch.exp,
          "Log": torch.log, "Sqrt": torch.sqrt, "Abs": torch.abs, "Identity": lambda h: h}
BINARY_OPS = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul}
# ops that only move or select entries: a logit travels through them with the probability
CARRY_OPS = {"Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Gather", "Slice",
          "ArrayFeatureExtractor", "ZipMap", "Cast"}



class Unsupported(Exception):
    """A node the interpreter does not convert."""



def onnx_softmax(h, axis, opset):
    if opset >= 13:
        return torch.softmax(h, dim=axis)
    axis = axis % h.ndim  # before opset 13: softmax of the input flattened to 2-D at axis
    flat = h.reshape(math.prod(h.shape[:axis]), -1)
    return torch.softmax(flat, dim=1).reshape(h.shape)


def onnx_softmax_zero(s):
    """onnxruntime's SOFTMAX_ZERO: entries within 1e-7 of 0 stay (scaled) outside the sum."""
    live = s.abs() > 1e-7
    top = s.max(dim=1, keepdim=True).values
    e = torch.where(live, torch.exp(s - top), s * torch.exp(-top))
    return e / (e * live).sum(dim=1, keepdim=True)



def _const(consts, name, what):
    if name not in consts:
        raise Unsupported(f"{what} is not a constant")
    return np.asarray(consts[name])


def _ints(consts, name, what) -> list[int]:
    return [int(v) for v in _const(consts, name, what).reshape(-1)]


def _gemm(a, inputs, consts):
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    ta, tb = int(a.get("transA", 0)), int(a.get("transB", 0))

    def fn(v, _):
        A = v[0].T if ta else v[0]
        B = v[1].T if tb else v[1]
        y = alpha * (A @ B)
        if len(v) > 2 and v[2] is not None:
            y = y + beta * v[2]
        return [y], [None]
    return fn


def _softmax_node(a, inputs, consts, opset):
    axis = int(a.get("axis", -1 if opset >= 13 else 1))

    def fn(v, _):
        h = v[0]
        lg = None
        if h.ndim == 2 and axis in (1, -1) and h.shape[1] == 2:
            d = h[:, 1] - h[:, 0]
            lg = torch.stack([-d, d], dim=1)
        return [onnx_softmax(h, axis, opset)], [lg]
    return fn


def _linear_classifier(a, inputs, consts):
    coef = np.asarray(a["coefficients"], dtype=np.float64)
    labels = a.get("classlabels_ints") or a.get("classlabels_strings") or []
    k = len(a.get("intercepts", [])) or len(labels)
    post = a.get("post_transform", "NONE")
    if post not in ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO") or k < 1:
        raise Unsupported(f"LinearClassifier post_transform {post}")
    if k == 1 and len(labels) != 2:
        raise Unsupported("LinearClassifier with one score")
    w = torch.as_tensor(coef.reshape(k, -1).T.copy())
    b = torch.as_tensor(np.asarray(a.get("intercepts", np.zeros(k)), dtype=np.float64))

    def fn(v, _):
        s = v[0].to(torch.float64) @ w.to(v[0].device) + b.to(v[0].device)
        if k == 1:  # onnxruntime writes [1 - p, p], p the (transformed) score
            if post == "LOGISTIC":
                p = torch.sigmoid(s)
                return [None, torch.cat([1 - p, p], dim=1)], [None, torch.cat([-s, s], dim=1)]
            return [None, torch.cat([1 - s, s], dim=1)], [None, None]
        if post == "LOGISTIC":
            return [None, torch.sigmoid(s)], [None, s]
        if post == "SOFTMAX":
            lg = None
            if k == 2:
                d = s[:, 1:] - s[:, :1]
                lg = torch.cat([-d, d], dim=1)
            return [None, torch.softmax(s, dim=1)], [None, lg]
        if post == "SOFTMAX_ZERO":
            return [None, onnx_softmax_zero(s)], [None, None]
        return [None, s], [None, None]
    return fn


def _linear_regressor(a, inputs, consts):
    if a.get("post_transform", "NONE") != "NONE":
        raise Unsupported("LinearRegressor post_transform")
    t = int(a.get("targets", 1))
    w = torch.as_tensor(np.asarray(a["coefficients"], dtype=np.float64).reshape(t, -1).T.copy())
    b = torch.as_tensor(np.asarray(a.get("intercepts", np.zeros(t)), dtype=np.float64))

    def fn(v, _):
        return [v[0].to(torch.float64) @ w.to(v[0].device) + b.to(v[0].device)], [None]
    return fn


def _scaler(a, inputs, consts):
    off = torch.as_tensor(np.asarray(a.get("offset", [0.0]), dtype=np.float64))
    scale = torch.as_tensor(np.asarray(a.get("scale", [1.0]), dtype=np.float64))

    def fn(v, _):
        h = v[0].to(torch.float64)
        return [(h - off.to(h.device)) * scale.to(h.device)], [None]
    return fn


def _normalizer(a, inputs, consts):
    norm = a.get("norm", "MAX")
    if norm not in ("L1", "L2"):
        raise Unsupported(f"Normalizer {norm}")

    def fn(v, _):
        h = v[0].to(torch.float64)
        div = h.abs().sum(dim=1, keepdim=True) if norm == "L1" else h.norm(dim=1, keepdim=True)
        return [h / div], [None]
    return fn


def _batch_norm(a, inputs, consts):
    """Inference mode: ``scale * (x - mean) / sqrt(var + epsilon) + B`` along axis 1."""
    if int(a.get("training_mode", 0)):
        raise Unsupported("BatchNormalization in training mode")
    for name in inputs[1:5]:
        _const(consts, name, "BatchNormalization's statistics")
    eps = float(a.get("epsilon", 1e-5))

    def fn(v, _):
        h = v[0]
        shape = (1, -1) + (1,) * (h.ndim - 2)
        scale, bias, mean, var = (t.reshape(shape) for t in v[1:5])
        return [scale * (h - mean) / torch.sqrt(var + eps) + bias], [None]
    return fn


def _dropout(a, inputs, consts):
    """Identity at inference (no ``training_mode`` input, or a constant false one)."""
    if len(inputs) > 2 and inputs[2] and (inputs[2] not in consts
                                          or bool(np.asarray(consts[inputs[2]]).any())):
        raise Unsupported("Dropout in training mode")
    return lambda v, lg: ([v[0], None], [lg[0], None])


def _select(fn_one):
    """An op that moves entries: applied alike to the value and to its logit."""
    def fn(v, lg):
        return [fn_one(v[0])], [None if lg[0] is None else fn_one(lg[0])]
    return fn


def _reshape(a, inputs, consts):
    shape = _ints(consts, inputs[1], "Reshape's shape")
    allowzero = int(a.get("allowzero", 0))

    def one(h):
        s = [h.shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(shape)]
        return h.reshape(s)
    return _select(one)


def _flatten(a, inputs, consts):
    axis = int(a.get("axis", 1))

    def one(h):
        ax = axis % h.ndim if h.ndim else 0
        return h.reshape(math.prod(h.shape[:ax]), -1)
    return _select(one)


def _axes(a, inputs, consts, opset, op):
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    if len(inputs) > 1 and inputs[1]:
        return _ints(consts, inputs[1], f"{op}'s axes")
    return None


def _squeeze(a, inputs, consts, opset):
    axes = _axes(a, inputs, consts, opset, "Squeeze")

    def one(h):
        if axes is None:
            return h.squeeze()
        return h.squeeze(tuple(ax % h.ndim for ax in axes))
    return _select(one)


def _unsqueeze(a, inputs, consts, opset):
    axes = _axes(a, inputs, consts, opset, "Unsqueeze")
    if axes is None:
        raise Unsupported("Unsqueeze without axes")

    def one(h):
        rank = h.ndim + len(axes)
        for ax in sorted(ax % rank for ax in axes):
            h = h.unsqueeze(ax)
        return h
    return _select(one)


def _gather(a, inputs, consts):
    idx = _const(consts, inputs[1], "Gather's indices").astype(np.int64)
    axis = int(a.get("axis", 0))

    def one(h):
        ax = axis % h.ndim
        i = torch.as_tensor(idx.reshape(-1) % h.shape[ax], device=h.device)
        out = torch.index_select(h, ax, i)
        return out.reshape(*h.shape[:ax], *idx.shape, *h.shape[ax + 1:])
    return _select(one)


def _slice(a, inputs, consts, opset):
    if opset < 10:
        starts, ends = list(a["starts"]), list(a["ends"])
        axes = list(a.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = _ints(consts, inputs[1], "Slice's starts")
        ends = _ints(consts, inputs[2], "Slice's ends")
        axes = (_ints(consts, inputs[3], "Slice's axes") if len(inputs) > 3 and inputs[3]
                else list(range(len(starts))))
        steps = (_ints(consts, inputs[4], "Slice's steps") if len(inputs) > 4 and inputs[4]
                 else [1] * len(starts))
    if any(s <= 0 for s in steps):
        raise Unsupported("Slice with a negative step")

    def one(h):
        sl = [slice(None)] * h.ndim
        for st, en, ax, sp in zip(starts, ends, axes, steps, strict=True):
            sl[ax % h.ndim] = slice(st, en, sp)
        return h[tuple(sl)]
    return _select(one)


def _array_feature_extractor(a, inputs, consts):
    idx = _const(consts, inputs[1], "ArrayFeatureExtractor's indices").astype(np.int64)
    cols = torch.as_tensor(idx.reshape(-1))

    def one(h):
        out = h[..., cols.to(h.device)]
        return out.reshape(1, -1) if h.ndim == 1 else out

    def fn(v, lg):
        return [one(v[0])], [None if lg[0] is None else one(lg[0])]
    return fn


def _zipmap(a, inputs, consts):
    """The probabilities pass through; the audit reads the class whose label sorts last
    (``faux.audit.loaders.models``), so two columns are put in that order."""
    labels = list(a.get("classlabels_int64s") or a.get("classlabels_strings") or [])
    flip = len(labels) == 2 and labels[0] > labels[1]
    return _select(lambda h: h.flip(-1) if flip else h)


def _cast(a, inputs, consts):
    to = int(a["to"])

    def fn(v, lg):
        h = v[0]
        if to in FLOAT_TYPES:
            return [h.to(torch.float64)], [lg[0]]
        if to in INT_TYPES and not h.is_floating_point():
            return [h.to(torch.int64)], [None]
        raise Unsupported("Cast to a non-float type")  # at conversion time, see _check_cast
    return fn


def _concat(a, inputs, consts):
    axis = int(a["axis"])

    def fn(v, lg):
        lgs = lg if all(x is not None for x in lg) else None
        return ([torch.cat(v, dim=axis)],
                [None if lgs is None else torch.cat(lgs, dim=axis)])
    return fn


def _sub(a, inputs, consts):
    one_minus = (inputs[0] in consts and np.all(np.asarray(consts[inputs[0]]) == 1))

    def fn(v, lg):  # 1 - sigmoid(z) = sigmoid(-z)
        return [v[0] - v[1]], [-lg[1] if one_minus and lg[1] is not None else None]
    return fn


def _div(a, inputs, consts):
    def fn(v, _):
        if v[0].is_floating_point() or v[1].is_floating_point():
            return [v[0] / v[1]], [None]
        return [torch.div(v[0], v[1], rounding_mode="trunc")], [None]
    return fn


def node_builder(op: str, domain: str, a: dict, inputs, consts, opset: int):
    """The function evaluating one node, or Unsupported."""
    if domain in ("", "ai.onnx"):
        if op in UNARY_OPS:
            f = UNARY_OPS[op]
            return lambda v, lg: ([f(v[0])], [lg[0] if op == "Identity" else None])
        if op == "Sub":
            return _sub(a, inputs, consts)
        if op in BINARY_OPS:
            f = BINARY_OPS[op]
            return lambda v, lg: ([f(v[0], v[1])], [None])
        if op == "Div":
            return _div(a, inputs, consts)
        if op == "MatMul":
            return lambda v, lg: ([torch.matmul(v[0], v[1])], [None])
        if op == "Sigmoid":
            return lambda v, lg: ([torch.sigmoid(v[0])], [v[0]])
        if op == "LeakyRelu":
            alpha = float(a.get("alpha", 0.01))
            return lambda v, lg: ([torch.nn.functional.leaky_relu(v[0], alpha)], [None])
        simple = {"Gemm": _gemm, "Reshape": _reshape, "Flatten": _flatten, "Gather": _gather,
                  "Cast": _cast, "Concat": _concat, "BatchNormalization": _batch_norm,
                  "Dropout": _dropout}
        if op in simple:
            return simple[op](a, inputs, consts)
        with_opset = {"Softmax": _softmax_node, "Squeeze": _squeeze,
                      "Unsqueeze": _unsqueeze, "Slice": _slice}
        if op in with_opset:
            return with_opset[op](a, inputs, consts, opset)
    if domain == "ai.onnx.ml":
        ml = {"LinearClassifier": _linear_classifier, "LinearRegressor": _linear_regressor,
              "Scaler": _scaler, "Normalizer": _normalizer,
              "ArrayFeatureExtractor": _array_feature_extractor, "Cast": _cast}
        if op in ml:
            return ml[op](a, inputs, consts)
        if op == "ZipMap":
            return _zipmap(a, inputs, consts)
    raise Unsupported(f"{domain or 'ai.onnx'}.{op}")
