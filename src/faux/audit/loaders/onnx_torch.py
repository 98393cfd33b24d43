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

The module returns what ``faux.audit.loaders.models`` reads from the output (column 1 of two
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

The op translation table is ``faux.audit.loaders.onnx_ops``; this module walks the graph: it keeps the
nodes behind the output, builds each one, and runs them in order as an ``nn.Module``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from faux.audit.loaders.exact import PROBE_ROWS, TOLERANCE, Twin
from faux.audit.loaders.onnx_ops import FLOAT_TYPES, INT_TYPES, Unsupported, node_builder

#: the largest accepted difference from onnxruntime for a graph with a float32 input:
#: onnxruntime then computes in float32, and its own rounding reaches TOLERANCE on wide
#: layers (an MLP on Adult's 97 columns differs by about 1e-6 from scikit-learn in float64)
FLOAT32_TOLERANCE = 1e-5


@dataclass
class OnnxTwin(Twin):
    """A converted ONNX graph; ``tolerance``: the largest accepted difference from
    onnxruntime (``TOLERANCE``, ``FLOAT32_TOLERANCE`` for a float32 graph)."""

    tolerance: float = TOLERANCE


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
        if node.op_type == "Cast" and int(a.get("to", 0)) not in FLOAT_TYPES:
            src = types.get(node.input[0])
            if src not in INT_TYPES or int(a["to"]) not in INT_TYPES:  # float to integer
                raise Unsupported("Cast to a non-float type")
        fn = node_builder(node.op_type, node.domain, a, list(node.input), consts, opset)
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
