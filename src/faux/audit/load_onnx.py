"""Loading an ONNX model: onnxruntime computes its output (the ``prob*`` output, column 1),
and where every node behind that output converts (``faux.audit.onnx_torch``) and the
conversion reproduces onnxruntime's output on probe rows, the model is scored by autograd."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from faux.audit.target import TargetModel, one_line, safe_mismatch, twin_ok
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
    return tm


def attach_onnx_twin(tm: TargetModel, path: Path, output: str, d: int | None) -> None:
    """Score the ONNX model exactly when its graph converts to torch
    (``faux.audit.onnx_torch``) and the conversion reproduces onnxruntime's output on probe
    rows; else ``tm`` stays a black box."""
    try:
        import onnx
    except ImportError:
        return
    from faux.audit.exact import mismatch
    from faux.audit.onnx_torch import convert, probe_rows

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
