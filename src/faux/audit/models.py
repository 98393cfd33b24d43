"""Loading a user's model safely, and one interface over every kind: ``TargetModel``.

A ``TargetModel`` maps raw feature rows ``x`` (numpy float, ``(n, d)``) to the model's
probability of the positive class (``proba``); a differentiable one also exposes ``module``,
an ``nn.Module`` mapping a float tensor to logits ``(n,)``, which the audit scores with
autograd through ``faux.score``: PyTorch models; scikit-learn linear models, MLPs and
scaler pipelines, converted to an equivalent torch module (``faux.audit.exact``) that is
checked against the estimator's own outputs; and ONNX graphs of supported operators,
evaluated as a torch module (``faux.audit.onnx_torch``) checked against onnxruntime
(``exact_from`` names what was converted).
Everything else is a black box scored by finite differences (``faux.audit.scoring``).

Formats, by content (not only by extension):

- TorchScript archives (``torch.jit.save``): ``torch.jit.load``; no Python code runs (the
  TorchScript interpreter runs the model's compiled graph); one whose code reads or writes
  files by name (``torch.save``, ``torch.from_file``) only with ``trust_pickle=True``
  (``faux.audit.torchscript_file``).
- ``torch.export`` programs (``torch.export.save``, ``.pt2``): the archive is checked first
  (``faux.audit.export_file``): pickled weights, constants or sample inputs, opaque
  objects, native libraries, Python guard code, symbolic shapes that are not plain sympy
  and graph calls to anything but torch operators are refused unless
  ``trust_pickle=True``; a program exported with a static batch size is called in chunks
  of that size (padded).
- skops files (``.skops``): ``skops.io.load`` after its trusted-types check; types outside
  skops' default trust list are refused unless named with ``trusted_types``.
- LightGBM text model files (``Booster.save_model``): checked for shape, then parsed by
  LightGBM (``faux.audit.lightgbm_file``); no code runs.
- ONNX (``.onnx``): ``onnxruntime``; the output named like ``prob*`` (or the last float
  output) is read, column 1 of a two-column output. The graph is also read with ``onnx``
  and, when every node behind that output converts, scored by autograd.
- pickle / joblib / ``torch.save``-d modules: only with ``trust_pickle=True`` (unpickling runs
  code from the file); loading one prints a one-line warning on stderr naming the file and
  its sha256.

A model loaded from a file records its provenance (``TargetModel.provenance``): the file's
path, its sha256, the loader, and for pickles and skops files the class of the object.

The model must output for a binary target: a logit (torch, ``(n,)``/``(n, 1)``; two logits
``(n, 2)`` are read as ``z1 - z0``), ``predict_proba`` (sklearn-like, column 1), or a
probability output (ONNX).
"""

from __future__ import annotations

import hashlib
import os
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from faux.errors import ConfigError, DataError

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav")


def _one_line(err: BaseException) -> str:
    """The error's last non-empty line (TorchScript puts its traceback first), shortened."""
    lines = [ln for ln in str(err).splitlines() if ln.strip()] or [type(err).__name__]
    return " ".join(lines[-1].split())[:200]


class TwoLogits(nn.Module):
    """A module returning ``(n, 2)`` class logits, read as one logit ``z1 - z0``."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        out = self.inner(x)
        return out[:, 1] - out[:, 0]


class StaticBatch(nn.Module):
    """Calls a program exported with a fixed batch size ``b`` in chunks of ``b`` rows (the
    last chunk padded with copies of its first row; the padding's outputs are dropped)."""

    def __init__(self, inner: nn.Module, b: int):
        super().__init__()
        self.inner = inner
        self.b = int(b)

    def forward(self, x):
        outs = []
        for s in range(0, x.shape[0], self.b):
            xc = x[s:s + self.b]
            m = xc.shape[0]
            if m < self.b:
                xc = torch.cat([xc, xc[:1].expand(self.b - m, -1)], dim=0)
            outs.append(self.inner(xc)[:m])
        return torch.cat(outs, dim=0)


@dataclass
class TargetModel:
    """The model under audit. ``proba(x)``: probability of the positive class, ``(n,)``.

    ``module`` is set for differentiable models: logits ``(n,)`` of float32 input (with
    ``output="value"``: the audited output itself, a regressor's prediction, not a logit).
    ``exact_from`` names the scikit-learn model or ONNX graph a ``module`` was converted from
    (``"sklearn LogisticRegression"``, ``"ONNX graph (Gemm, Relu, Sigmoid)"``), None for a
    torch model or a black box; ``scoring_mode`` says
    how the audit scores it, in words.
    ``n_features`` is the input width when the model states it (else None). ``kind`` and
    ``source`` describe it for the report. A model loaded from a file also has ``file``
    (absolute path), ``sha256`` (of the file's bytes), ``loader`` (``torch.jit``,
    ``torch.export``, ``skops``, ``onnxruntime``, ``lightgbm`` or ``pickle``) and, for
    pickles and skops files, ``obj_class`` (the loaded object's class).
    """

    proba_fn: Callable[[np.ndarray], np.ndarray]
    kind: str
    source: str
    module: nn.Module | None = None
    n_features: int | None = None
    file: str | None = None
    sha256: str | None = None
    loader: str | None = None
    obj_class: str | None = None
    exact_from: str | None = None
    output: str = "logit"
    twin: object | None = None  # the faux.audit.exact.Twin behind a converted module
    estimator: object | None = None  # the scikit-learn-like object behind ``proba_fn``

    @property
    def differentiable(self) -> bool:
        return self.module is not None

    @property
    def scoring_mode(self) -> str:
        """``"autograd"`` (a torch model), ``"autograd (exact, converted from sklearn
        LogisticRegression)"`` or ``"finite differences"``."""
        if self.module is None:
            return "finite differences"
        if self.exact_from:
            return f"autograd (exact, converted from {self.exact_from})"
        return "autograd"

    def provenance(self) -> dict:
        """``{"class", "file", "sha256", "loader"}`` for a model read from a file (the keys
        that are known), and ``exact_from`` for a converted scikit-learn model; else
        ``{}``."""
        out = {"class": self.obj_class, "file": self.file, "sha256": self.sha256,
               "loader": self.loader, "exact_from": self.exact_from}
        return {k: v for k, v in out.items() if v is not None}

    def verify_exact(self, x: np.ndarray, what: str = "the data sample") -> bool:
        """Check a converted module against the model's own outputs on rows ``x``; on a
        mismatch drop it (finite differences from then on) with one warning line. True
        when the model is scored exactly afterwards."""
        if self.twin is None:
            return self.differentiable
        from faux.audit.exact import mismatch

        err = _safe_mismatch(mismatch, self.twin, self.proba_fn(x), x)
        if _twin_ok(self.twin, err, what):
            return True
        self.module, self.twin, self.exact_from, self.output = None, None, None, "logit"
        return False

    def proba(self, x: np.ndarray) -> np.ndarray:
        p = np.asarray(self.proba_fn(x), dtype=np.float64).reshape(-1)
        if p.shape[0] != x.shape[0]:
            raise DataError(f"the model returned {p.shape[0]} outputs for {x.shape[0]} rows; "
                            "it must return one probability (or logit) per row")
        bad = ~np.isfinite(p)
        if bad.any():
            raise DataError(f"the model's output is not finite on {int(bad.sum())} of "
                            f"{x.shape[0]} rows (first row {int(np.flatnonzero(bad)[0])} of the "
                            "batch); check the model and the features it is given")
        return p


# --------------------------------------------------------------------------- wrappers


def _logit_module(module: nn.Module, d: int | None) -> nn.Module:
    """Probe ``module`` with 2 rows and wrap it so that it returns logits ``(n,)``."""
    try:
        module.eval()
    except NotImplementedError:  # torch.export programs have no train/eval switch
        pass
    if d is None:
        return module
    with torch.no_grad():
        try:
            out = module(torch.zeros(2, d))
        except Exception as err:
            raise DataError(f"the torch model fails on rows of {d} features "
                            f"({_one_line(err)}); pass the features it was trained on, in its "
                            "column order (--features)") from err
    if not isinstance(out, torch.Tensor):
        raise DataError(f"the torch model returned {type(out).__name__}; it must return a tensor "
                        "of logits (n,) or (n, 1)")
    if out.ndim == 2 and out.shape[1] == 2:
        return TwoLogits(module)
    if not (out.ndim == 1 or (out.ndim == 2 and out.shape[1] == 1)):
        raise DataError(f"the torch model returned shape {tuple(out.shape)} for 2 rows; audit "
                        "needs one logit per row (n,) or (n, 1) (or two class logits (n, 2))")
    return module


def _module_width(module: nn.Module) -> int | None:
    for m in module.modules():
        if isinstance(m, nn.Linear):
            return int(m.in_features)
    if isinstance(module, torch.jit.ScriptModule):
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.ndim == 2:
                return int(p.shape[1])
    return None


def from_torch(module: nn.Module, source: str = "torch module", d: int | None = None
               ) -> TargetModel:
    """A torch module returning logits; ``d`` (the data's width) is used to probe it."""
    width = _module_width(module)
    if width is not None and d is not None and width != d:
        raise DataError(f"the model reads {width} features but the data has {d}; pass the "
                        "features it was trained on, in its column order (--features)")
    mod = _logit_module(module, d if d is not None else width)
    for p in mod.parameters():
        p.requires_grad_(False)

    def proba(x):
        with torch.no_grad():
            z = mod(torch.as_tensor(np.asarray(x, dtype=np.float32)))
        return torch.sigmoid(z.reshape(-1)).double().numpy()

    return TargetModel(proba, "torch", source, module=mod, n_features=width)


def _twin_ok(twin, err: float, what: str) -> bool:
    from faux.audit.exact import TOLERANCE

    tol = getattr(twin, "tolerance", TOLERANCE)  # an ONNX graph's depends on its precision
    if err <= tol:
        return True
    ref = "predict_proba" if twin.output == "logit" else "predict"
    if twin.label.startswith("ONNX"):
        ref = "onnxruntime output"
    print(f"faux audit: warning: the torch conversion of {twin.label} differs from its {ref} "
          f"by {err:.2g} on {what} (more than {tol:g}); scoring it by finite "
          "differences", file=sys.stderr)
    return False


def _attach_twin(tm: TargetModel, est) -> None:
    """Score ``est`` exactly when it converts to torch and the conversion reproduces its
    outputs on probe rows (``faux.audit.exact``); else ``tm`` stays a black box."""
    from faux.audit.exact import convert, mismatch, probe

    twin = convert(est)
    if twin is None or tm.n_features is None:
        return
    x = probe(est, tm.n_features)
    try:
        ref = tm.proba_fn(x)
    except Exception:  # the estimator itself fails on the probe: leave it to the audit
        return
    if _twin_ok(twin, mismatch(twin, ref, x), "probe rows"):
        tm.module, tm.output, tm.exact_from, tm.twin = (twin.module, twin.output, twin.label,
                                                        twin)


def from_estimator(est, source: str = "estimator", exact: bool = True) -> TargetModel:
    """A scikit-learn-like classifier (``predict_proba``) or regressor (``predict``);
    ``exact``: scored by autograd through its torch conversion where there is one
    (``faux.audit.exact``), else (or with ``exact=False``) a black box."""
    width = getattr(est, "n_features_in_", None)
    if width is None and hasattr(est, "num_feature"):  # a LightGBM Booster
        width = int(est.num_feature())
    if hasattr(est, "predict_proba"):
        classes = getattr(est, "classes_", None)
        if classes is not None and len(classes) != 2:
            raise ConfigError(f"the model has {len(classes)} classes; audit tests binary "
                              "classifiers (or regressors)")

        def proba(x):
            return np.asarray(est.predict_proba(x))[:, 1]
        kind = "classifier"
    elif hasattr(est, "predict"):
        def proba(x):
            return np.asarray(est.predict(x)).reshape(-1)
        kind = "regressor" if not hasattr(est, "num_feature") else "lightgbm booster"
    else:
        raise ConfigError(f"{type(est).__name__} has neither predict_proba nor predict; pass a "
                          "fitted classifier, a torch module or a model file")
    tm = TargetModel(proba, f"{type(est).__module__.split('.')[0]} {kind}", source,
                     n_features=None if width is None else int(width), estimator=est)
    if exact:
        _attach_twin(tm, est)
    return tm


def from_callable(fn: Callable, source: str = "function") -> TargetModel:
    """A plain function ``x -> probability (n,)`` (black box)."""
    return TargetModel(fn, "function", source)


def as_target(model, d: int | None = None, exact: bool = True) -> TargetModel:
    """Whatever the user passed (path, module, estimator, function) as a ``TargetModel``;
    ``exact=False`` keeps a convertible scikit-learn model a black box."""
    if isinstance(model, TargetModel):
        return model
    if isinstance(model, str | Path):
        return load_model(model, d=d, exact=exact)
    if isinstance(model, nn.Module | torch.jit.ScriptModule):
        return from_torch(model, type(model).__name__, d)
    if hasattr(model, "predict_proba") or hasattr(model, "predict"):
        return from_estimator(model, type(model).__name__, exact)
    if callable(model):
        return from_callable(model, getattr(model, "__name__", "function"))
    raise ConfigError(f"cannot audit a {type(model).__name__}: pass a torch module, a fitted "
                      "estimator, a function x -> probability, or a model file path")


# --------------------------------------------------------------------------- loading


def _zip_names(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as z:
            return z.namelist()
    except (zipfile.BadZipFile, OSError):
        return []


def _read_export(path: Path, trust_pickle: bool, sha: str):
    """The file's ``ExportedProgram``, loaded only when nothing in it can run code
    (``faux.audit.export_file``), or when the user trusts it with ``--trust-pickle``."""
    import io

    from faux.audit.export_file import Unreadable, check_archive, load_checked

    data = path.read_bytes()
    try:
        hazards = check_archive(data)
    except Unreadable as err:
        raise DataError(f"cannot read the torch.export file {path.name}: {err}; save it "
                        "again with torch.export.save") from err
    if not hazards:
        return load_checked(data)
    more = f" (and {len(hazards) - 1} more such items)" if len(hazards) > 1 else ""
    if not trust_pickle:
        raise ConfigError(f"{path.name} holds {hazards[0]}{more}: loading it runs code from "
                          "the file. Export the model again with torch.export.save (plain "
                          "tensors), or pass --trust-pickle if you trust its author")
    print(f"faux audit: warning: loading the torch.export file {os.path.abspath(path)} "
          f"(sha256 {sha}) runs code from the file ({hazards[0]}{more}); trusted by "
          "--trust-pickle", file=sys.stderr)
    return torch.export.load(io.BytesIO(data))


def _load_export(path: Path, d: int | None, trust_pickle: bool = False,
                 sha: str = "") -> TargetModel:
    ep = _read_export(path, trust_pickle, sha)
    module = ep.module()
    static = None
    user = set(ep.graph_signature.user_inputs)
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in user:
            val = node.meta.get("val")
            if val is not None and isinstance(val.shape[0], int):
                static = int(val.shape[0])
            break
    if static is not None and static > 0:
        try:  # dynamic after all?
            with torch.no_grad():
                module(torch.zeros(static + 1, d or val.shape[1]))
            static = None
        except Exception:
            module = StaticBatch(module, static)
    return from_torch(module, f"torch.export program {path.name}", d)


def _read_torchscript(path: Path, trust: bool, sha: str):
    """TorchScript whose code touches files by name only with ``--trust-pickle``
    (``faux.audit.torchscript_file``)."""
    from faux.audit.torchscript_file import load_checked

    def warn(what):
        print(f"faux audit: warning: the TorchScript {os.path.abspath(path)} (sha256 {sha}) "
              f"reads or writes files by name ({what}); trusted by --trust-pickle",
              file=sys.stderr)

    return load_checked(path.read_bytes(), path.name, trust, warn)


def _refuse_pickle(path: Path) -> None:
    raise ConfigError(f"{path.name} is a pickle: loading it runs code from the file. Save the "
                      "model with skops (skops.io.dump), ONNX, TorchScript or torch.export, or "
                      "pass --trust-pickle if you trust its author")


#: scikit-learn's own classes that hold a fitted estimator's state and that skops does not
#: trust by default; trusted here (an MLP's optimiser, a tree, a histogram-boosting
#: predictor). Any other type still needs ``trusted_types``/``--trust-type``.
SKLEARN_STATE_TYPES = frozenset({
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
})


def _load_skops(path: Path, trusted_types, exact: bool = True) -> TargetModel:
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(file=str(path))
    except Exception as err:
        raise DataError(f"cannot read the skops file {path}: {_one_line(err)}") from err
    missing = [t for t in untrusted
               if t not in set(trusted_types or ()) and t not in SKLEARN_STATE_TYPES]
    if missing:
        flags = " ".join(f"--trust-type {t}" for t in missing)
        raise ConfigError(f"{path.name} holds types skops does not trust by default: "
                          f"{', '.join(missing)}; check them and pass {flags}")
    est = sio.load(str(path), trusted=list(untrusted))
    tm = from_estimator(est, f"skops file {path.name}", exact)
    tm.obj_class = _class_name(est)
    return tm


def _load_onnx(path: Path, d: int | None = None, exact: bool = True) -> TargetModel:
    import onnxruntime as ort

    try:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as err:
        raise DataError(f"cannot read the ONNX model {path}: {_one_line(err)}") from err
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
        _attach_onnx_twin(tm, path, name, width or d)
    return tm


def _attach_onnx_twin(tm: TargetModel, path: Path, output: str, d: int | None) -> None:
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
    if _twin_ok(twin, _safe_mismatch(mismatch, twin, ref, x), "probe rows"):
        tm.module, tm.output, tm.exact_from, tm.twin = (twin.module, twin.output, twin.label,
                                                        twin)


def _safe_mismatch(mismatch, twin, ref, x) -> float:
    """``mismatch``, inf when the converted module fails on the rows."""
    try:
        return mismatch(twin, ref, x)
    except Exception:
        return float("inf")


def _is_lightgbm_text(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head.startswith(b"tree\n") or head.startswith(b"tree\r\n")


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _class_name(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def load_model(path, d: int | None = None, *, trust_pickle: bool = False,
               trusted_types=(), exact: bool = True) -> TargetModel:
    """Load a model file safely (see the module docstring for the formats); the returned
    model records the file, its sha256 and the loader. ``exact=False`` keeps a convertible
    scikit-learn model (skops, pickle) or ONNX graph a black box."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"model file {path} not found; pass --model with an existing file")
    if path.stat().st_size == 0:
        raise DataError(f"model file {path} is empty; save the model again")
    sha = file_sha256(path)
    tm = _load_by_format(path, d, trust_pickle=trust_pickle, trusted_types=trusted_types,
                         sha=sha, exact=exact)
    tm.file, tm.sha256 = os.path.abspath(path), sha
    return tm


def _loaded_by(tm: TargetModel, loader: str) -> TargetModel:
    tm.loader = loader
    return tm


def _load_by_format(path: Path, d, *, trust_pickle, trusted_types, sha,
                    exact=True) -> TargetModel:
    suffix = path.suffix.lower()
    names = _zip_names(path)
    try:
        if suffix == ".skops":
            return _loaded_by(_load_skops(path, trusted_types, exact), "skops")
        if suffix == ".onnx":
            return _loaded_by(_load_onnx(path, d, exact), "onnxruntime")
        if any(n.endswith("models/model.json") for n in names):
            return _loaded_by(_load_export(path, d, trust_pickle, sha), "torch.export")
        if any("/code/" in n for n in names):
            return _loaded_by(from_torch(_read_torchscript(path, trust_pickle, sha),
                                         f"TorchScript {path.name}", d), "torch.jit")
        if _is_lightgbm_text(path):
            from faux.audit.lightgbm_file import load_booster

            return _loaded_by(from_estimator(load_booster(path),
                                             f"LightGBM model {path.name}"), "lightgbm")
        if any(n.endswith("data.pkl") for n in names) or suffix in PICKLE_SUFFIXES:
            if not trust_pickle:
                _refuse_pickle(path)
            return _load_pickle(path, names, d, sha, exact)
    except (DataError, ConfigError):
        raise
    except Exception as err:
        raise DataError(f"cannot load the model {path}: {_one_line(err)}; save it as "
                        "TorchScript, torch.export, skops, ONNX or a LightGBM text file") from err
    raise DataError(f"cannot tell the format of {path.name}; save the model as TorchScript "
                    "(.pt), torch.export (.pt2), skops (.skops), ONNX (.onnx), a LightGBM text "
                    "file, or pickle/joblib with --trust-pickle")


def _load_pickle(path: Path, names: list[str], d: int | None, sha: str,
                 exact: bool = True) -> TargetModel:
    print(f"faux audit: warning: loading the pickle {os.path.abspath(path)} (sha256 {sha}) "
          "runs code from the file; trusted by --trust-pickle", file=sys.stderr)
    if names:  # torch.save of a whole module
        obj = torch.load(str(path), map_location="cpu", weights_only=False)
    else:
        import joblib

        obj = joblib.load(path)
    tm = as_target(obj, d, exact)
    tm.loader, tm.obj_class = "pickle", _class_name(obj)
    return tm
