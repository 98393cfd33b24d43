"""Loading an ONNX model: onnxruntime computes its output (the ``prob*`` output, column 1),
and where every node behind that output converts (``faux.audit.loaders.onnx_torch``) and the
conversion reproduces onnxruntime's output on probe rows, the model is scored by autograd."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from faux.audit.loaders.target import TargetModel, one_line, safe_mismatch, twin_ok
from faux.errors import ConfigError, DataError


def load_onnx_file(path: Path, d: int | None = None, exact: bool = True) -> TargetModel:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only: they raise, and faux says them in one line
    try:
        sess = ort.InferenceSession(str(path), sess_options=opts,
                                    providers=["CPUExecutionProvider"])
    except Exception as err:
        raise DataError(f"cannot read the ONNX model {path}: {one_line(err)}") from err
    inp = sess.get_inputs()
    if len(inp) != 1:
        raise ConfigError(f"the ONNX model has {len(inp)} inputs; audit needs one input of "
                          "shape (n, d) (export with a single float tensor input)")
    dtype = np.float64 if inp[0].type == "tensor(double)" else np.float32
    width = inp[0].shape[1] if len(inp[0].shape) == 2 and isinstance(inp[0].shape[1], int) else None
    outs = sess.get_outputs()
    pick = [o for o in outs if "prob" in o.name.lower()] or [outs[-1]]
    name = pick[0].name

    def proba(x):
        (out,) = sess.run([name], {inp[0].name: np.ascontiguousarray(x, dtype=dtype)})
        if isinstance(out, list):  # skl2onnx's ZipMap: a list of {class: probability}
            keys = sorted(out[0])
            return np.array([row[keys[-1]] for row in out])
        out = np.asarray(out)
        if out.ndim == 2 and out.shape[1] == 2:
            return out[:, 1]
        if out.ndim == 2 and out.shape[1] > 2:
            raise ConfigError(f"the ONNX model's output {name!r} has {out.shape[1]} columns; "
                              "audit tests binary classifiers")
        return out.reshape(-1)

    tm = TargetModel(proba, "onnx", f"ONNX model {path.name}", n_features=width)
    if exact:
        attach_onnx_twin(tm, path, name, width or d)
    tm.task, tm.task_from = onnx_task(outs, pick[0], tm, _ops(path))
    tm.task_default = False
    return tm


def _ops(path: Path) -> set[str]:
    """The operator types of the ONNX graph at ``path`` (empty when onnx cannot read it)."""
    try:
        import onnx

        return {n.op_type for n in onnx.load(str(path)).graph.node}
    except Exception:
        return set()


def onnx_task(outs, read, tm: TargetModel, ops=()) -> tuple[str | None, str]:
    """``(task, how it is known)`` of an ONNX model from its outputs and operators: a
    class-label or class-probability output (a converted classifier's), an output named
    ``prob*``, two columns, a ``*Classifier`` operator, or a graph ending in a sigmoid or
    softmax (its twin returns a logit) make a classifier; a ``*Regressor`` operator
    (``LinearRegressor``, ``TreeEnsembleRegressor``, ...) a regressor; one plain float
    output says nothing (None)."""
    classifiers = sorted(o for o in ops if o.endswith("Classifier"))
    regressors = sorted(o for o in ops if o.endswith("Regressor"))
    if regressors and not classifiers:
        return "regression", f"its ONNX graph's {regressors[0]} operator"
    if classifiers:
        return "classification", f"its ONNX graph's {classifiers[0]} operator"
    labels = [o for o in outs if o.type not in ("tensor(float)", "tensor(double)")]
    if labels:
        return "classification", f"its ONNX outputs include {labels[0].name!r} ({labels[0].type})"
    if "prob" in read.name.lower():
        return "classification", f"its ONNX output {read.name!r} is a probability"
    shape = getattr(read, "shape", None) or []
    if len(shape) == 2 and shape[1] == 2:
        return "classification", f"its ONNX output {read.name!r} has two class columns"
    if tm.twin is not None and tm.output == "logit":
        return "classification", "its ONNX graph ends in a sigmoid or softmax"
    return None, f"the ONNX model has one plain output {read.name!r}"


def attach_onnx_twin(tm: TargetModel, path: Path, output: str, d: int | None) -> None:
    """Score the ONNX model exactly when its graph converts to torch
    (``faux.audit.loaders.onnx_torch``) and the conversion reproduces onnxruntime's output on probe
    rows; else ``tm`` stays a black box."""
    try:
        import onnx
    except ImportError:
        return
    from faux.audit.loaders.exact import mismatch
    from faux.audit.loaders.onnx_torch import convert, probe_rows

    try:
        model = onnx.load(str(path))
    except Exception:
        return
    twin = convert(model, output, d)
    if twin is None or d is None:
        return
    x = probe_rows(model, d)
    try:
        ref = tm.proba_fn(x)
    except Exception:  # onnxruntime fails on the probe: leave it to the audit
        return
    if twin_ok(twin, safe_mismatch(mismatch, twin, ref, x), "probe rows"):
        tm.module, tm.output, tm.exact_from, tm.twin = (twin.module, twin.output, twin.label,
                                                        twin)
