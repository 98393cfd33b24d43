"""Exact gradients for ONNX models: a small interpreter that evaluates an ONNX graph as a
torch module in float64, so that the audit differentiates it by autograd.

``convert(model, output)`` keeps the nodes the chosen output depends on and converts them
when every one of them is supported, else returns None (the model stays a black box):

- ``ai.onnx``: Gemm, MatMul, Add, Sub, Mul, Div, Neg, Exp, Log, Sqrt, Abs, Relu, LeakyRelu,
  Sigmoid, Tanh, Softmax, Identity, Flatten, Cast (between numeric types; float to integer
  is not converted), Reshape (constant shape), Concat, Squeeze, Unsqueeze (constant axes),
  Gather (constant indices), Slice (constant bounds, positive steps), Constant, and at
  inference BatchNormalization and Dropout;
- ``ai.onnx.ml`` (what skl2onnx writes for scikit-learn): LinearClassifier (post_transform
  NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, as onnxruntime computes it), LinearRegressor
  (NONE), Scaler, Normalizer (L1, L2), ArrayFeatureExtractor (constant indices), ZipMap
  (the probability tensor passes through), Cast.

The module returns what ``faux.audit.models`` reads from the output (column 1 of two
columns, else the single column), for ``(n, d)`` input, ``(n,)``. Where that probability
is a sigmoid or a two-class softmax (``Sigmoid``, ``LinearClassifier`` with ``LOGISTIC``,
``Softmax`` over two columns, also through ``1 - p``, ``Concat``, ``ZipMap``, reshapes and
column selections) the module returns the logit before it (``output="logit"``): the
probability is then the sigmoid of an exact logit, and its gradient does not vanish in
rounding where the probability is close to 0 or 1. Any other output is returned as it is
(``output="value"``) and differentiated as it is, as finite differences of the black box
would. A graph with a float32 input rounds its input to float32 first, as onnxruntime
receives it; everything after that is float64. The conversion is checked against
onnxruntime's output like a scikit-learn twin, within ``TOLERANCE`` for a float64 graph
and ``FLOAT32_TOLERANCE`` for a float32 one (onnxruntime's own float32 rounding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from faux.audit.exact import PROBE_ROWS, TOLERANCE, Twin

#: the largest accepted difference from onnxruntime for a graph with a float32 input:
#: onnxruntime then computes in float32, and its own rounding reaches TOLERANCE on wide
#: layers (an MLP on Adult's 97 columns differs by about 1e-6 from scikit-learn in float64)
FLOAT32_TOLERANCE = 1e-5

_FLOAT_TYPES = {1: torch.float32, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}
_INT_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # uint8, int8, uint16, int16, int32, int64, uint32/64
_UNARY = {"Relu": torch.relu, "Tanh": torch.tanh, "Neg": torch.neg, "Exp": torch.exp,
          "Log": torch.log, "Sqrt": torch.sqrt, "Abs": torch.abs, "Identity": lambda h: h}
_BINARY = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul}
# ops that only move or select entries: a logit travels through them with the probability
_CARRY = {"Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Gather", "Slice",
          "ArrayFeatureExtractor", "ZipMap", "Cast"}


@dataclass
class OnnxTwin(Twin):
    """A converted ONNX graph; ``tolerance``: the largest accepted difference from
    onnxruntime (``TOLERANCE``, ``FLOAT32_TOLERANCE`` for a float32 graph)."""

    tolerance: float = TOLERANCE


class Unsupported(Exception):
    """A node the interpreter does not convert."""


def _attrs(node) -> dict:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode() for s in v]
        out[a.name] = v
    return out


def _softmax(h, axis, opset):
    if opset >= 13:
        return torch.softmax(h, dim=axis)
    axis = axis % h.ndim  # before opset 13: softmax of the input flattened to 2-D at axis
    flat = h.reshape(math.prod(h.shape[:axis]), -1)
    return torch.softmax(flat, dim=1).reshape(h.shape)


def _softmax_zero(s):
    """onnxruntime's SOFTMAX_ZERO: entries within 1e-7 of 0 stay (scaled) outside the sum."""
    live = s.abs() > 1e-7
    top = s.max(dim=1, keepdim=True).values
    e = torch.where(live, torch.exp(s - top), s * torch.exp(-top))
    return e / (e * live).sum(dim=1, keepdim=True)


class Node:
    """One converted node: ``fn(values, logits) -> (outputs, their logits)``, lists in the
    order of the node's inputs and outputs (None where a tensor carries no logit)."""

    def __init__(self, op, inputs, outputs, fn):
        self.op, self.inputs, self.outputs, self.fn = op, inputs, outputs, fn


class OnnxModule(nn.Module):
    """The converted graph: float ``(n, d)`` -> ``(n,)`` (a logit or the output itself, see
    the module docstring) in the input's dtype. Constants are float64 buffers."""

    def __init__(self, consts, nodes, inp, out, float32_input, logit):
        super().__init__()
        self._names = {}
        for i, (name, arr) in enumerate(consts.items()):
            key = f"c{i}"
            self._names[name] = key
            dtype = torch.float64 if np.issubdtype(arr.dtype, np.floating) else torch.int64
            self.register_buffer(key, torch.as_tensor(np.array(arr), dtype=dtype))
        self.nodes, self.inp, self.out = nodes, inp, out
        self.float32_input, self.logit = float32_input, logit

    def run(self, x):
        """Every tensor of the graph on ``x``, and the logits that travel with some."""
        h = x.to(torch.float32) if self.float32_input else x
        vals = {name: getattr(self, key) for name, key in self._names.items()}
        vals[self.inp] = h.to(torch.float64)
        logits: dict = {}
        for node in self.nodes:
            outs, lgs = node.fn([vals.get(i) if i else None for i in node.inputs],
                                [logits.get(i) for i in node.inputs])
            for name, v, lg in zip(node.outputs, outs, lgs, strict=False):
                vals[name] = v
                if lg is not None:
                    logits[name] = lg
        return vals, logits

    def forward(self, x):
        vals, logits = self.run(x)
        y = logits[self.out] if self.logit else vals[self.out]
        if y.ndim == 2 and y.shape[1] == 2:
            y = y[:, 1]
        return y.reshape(-1).to(x.dtype)


# --------------------------------------------------------------------------- node builders


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
        return [_softmax(h, axis, opset)], [lg]
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
            return [None, _softmax_zero(s)], [None, None]
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
    (``faux.audit.models``), so two columns are put in that order."""
    labels = list(a.get("classlabels_int64s") or a.get("classlabels_strings") or [])
    flip = len(labels) == 2 and labels[0] > labels[1]
    return _select(lambda h: h.flip(-1) if flip else h)


def _cast(a, inputs, consts):
    to = int(a["to"])

    def fn(v, lg):
        h = v[0]
        if to in _FLOAT_TYPES:
            return [h.to(torch.float64)], [lg[0]]
        if to in _INT_TYPES and not h.is_floating_point():
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


def _builder(op: str, domain: str, a: dict, inputs, consts, opset: int):
    """The function evaluating one node, or Unsupported."""
    if domain in ("", "ai.onnx"):
        if op in _UNARY:
            f = _UNARY[op]
            return lambda v, lg: ([f(v[0])], [lg[0] if op == "Identity" else None])
        if op == "Sub":
            return _sub(a, inputs, consts)
        if op in _BINARY:
            f = _BINARY[op]
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


# --------------------------------------------------------------------------- conversion


def _needed(graph, output: str) -> list:
    """The nodes ``output`` depends on, in graph order (ONNX graphs are sorted)."""
    producer = {o: i for i, n in enumerate(graph.node) for o in n.output if o}
    keep, todo = set(), [output]
    while todo:
        name = todo.pop()
        i = producer.get(name)
        if i is None or i in keep:
            continue
        keep.add(i)
        todo.extend(x for x in graph.node[i].input if x)
    return [graph.node[i] for i in sorted(keep)]


def _elem_types(graph) -> dict:
    """Element type of every tensor whose type the graph states (inputs, outputs,
    value_info, initializers)."""
    out = {v.name: v.type.tensor_type.elem_type
           for v in [*graph.input, *graph.output, *graph.value_info]
           if v.type.HasField("tensor_type")}
    out.update({t.name: t.data_type for t in graph.initializer})
    return out


def convert(model, output: str, d: int | None = None) -> OnnxTwin | None:
    """The torch module evaluating ``model`` (an ``onnx.ModelProto``) up to the graph
    output ``output``, or None when a node it needs is not supported (see the module
    docstring) or the graph has not exactly one non-constant input."""
    try:
        return _convert(model, output, d)
    except (Unsupported, KeyError, ValueError, TypeError, IndexError, AttributeError,
            RuntimeError):
        return None


def _convert(model, output: str, d: int | None) -> OnnxTwin | None:
    from onnx import numpy_helper

    graph = model.graph
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")],
                default=1)
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        return None
    inp = inputs[0]
    in_type = inp.type.tensor_type.elem_type
    if in_type not in (1, 11):  # float32 or float64 input
        return None
    types = _elem_types(graph)
    nodes, ops = [], []
    for node in _needed(graph, output):
        a = _attrs(node)
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            consts[node.output[0]] = _constant_value(a)
            continue
        if node.op_type == "Cast" and int(a.get("to", 0)) not in _FLOAT_TYPES:
            src = types.get(node.input[0])
            if src not in _INT_TYPES or int(a["to"]) not in _INT_TYPES:  # float to integer
                raise Unsupported("Cast to a non-float type")
        fn = _builder(node.op_type, node.domain, a, list(node.input), consts, opset)
        nodes.append(Node(node.op_type, list(node.input), list(node.output), fn))
        if node.op_type not in ops:
            ops.append(node.op_type)
    if not nodes:
        return None
    d = _width(inp) or d
    if d is None:
        return None
    used = {i for n in nodes for i in n.inputs}  # other initializers may be strings
    module = OnnxModule({k: v for k, v in consts.items() if k in used}, nodes, inp.name,
                        output, in_type == 1, False)
    logit = _has_logit(module, d)
    module.logit = logit
    return OnnxTwin(module, "logit" if logit else "value", f"ONNX graph ({', '.join(ops)})",
                    FLOAT32_TOLERANCE if in_type == 1 else TOLERANCE)


def _constant_value(a: dict) -> np.ndarray:
    from onnx import numpy_helper

    if "value" in a:
        return numpy_helper.to_array(a["value"])
    for key, dtype in (("value_float", np.float64), ("value_floats", np.float64),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype=dtype)
    raise Unsupported("Constant without a numeric value")


def _width(inp) -> int | None:
    dims = inp.type.tensor_type.shape.dim
    if len(dims) == 2 and dims[1].HasField("dim_value"):
        return int(dims[1].dim_value)
    return None


def _has_logit(module: OnnxModule, d: int) -> bool:
    """Whether the output carries a logit (found by running the graph on 2 rows)."""
    with torch.no_grad():
        _, logits = module.run(torch.zeros(2, d, dtype=torch.float64))
    return module.out in logits


def probe_rows(model, d: int, seed: int = 0) -> np.ndarray:
    """Rows to check a conversion on: standard normal rows at scales 0.1, 1 and 10, and
    for a graph whose input first goes through a ``Scaler`` (or a ``Sub`` of a constant),
    rows around the data it was fitted on."""
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    blocks = [s * rng.standard_normal((PROBE_ROWS, d)) for s in (0.1, 1.0, 10.0)]
    graph = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    names = [i.name for i in graph.input if i.name not in consts]
    first = next((n for n in graph.node if names and names[0] in n.input), None)
    if first is not None and first.op_type == "Scaler":
        a = _attrs(first)
        off = np.asarray(a.get("offset", [0.0]), dtype=np.float64)
        scale = np.asarray(a.get("scale", [1.0]), dtype=np.float64)
        spread = 1.0 / np.where(scale == 0, 1.0, np.abs(scale))
        blocks.append(off + spread * rng.standard_normal((PROBE_ROWS, d)))
    elif first is not None and first.op_type == "Sub" and first.input[1] in consts:
        off = np.asarray(consts[first.input[1]], dtype=np.float64).reshape(-1)
        if off.size in (1, d):
            blocks.append(off + rng.standard_normal((PROBE_ROWS, d)))
    return np.concatenate(blocks)
