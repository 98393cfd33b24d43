"""Loading a user's model safely, and one interface over every kind: ``TargetModel``.

A ``TargetModel`` maps raw feature rows ``x`` (numpy float, ``(n, d)``) to the model's
probability of the positive class (``proba``); a differentiable one also exposes ``module``,
an ``nn.Module`` mapping a float tensor to logits ``(n,)``, which the audit scores with
autograd through ``faux.score``: PyTorch models; scikit-learn linear models, MLPs and
scaler pipelines, converted to an equivalent torch module (``faux.audit.loaders.exact``) that is
checked against the estimator's own outputs; and ONNX graphs of supported operators,
evaluated as a torch module (``faux.audit.loaders.onnx_torch``) checked against onnxruntime
(``exact_from`` names what was converted).
Everything else is a black box scored by finite differences (``faux.audit.scores.scoring``).

Formats, by content (not only by extension):

- TorchScript archives (``torch.jit.save``): ``torch.jit.load``; no Python code runs (the
  TorchScript interpreter runs the model's compiled graph); one whose code calls operators
  that read or write files (``aten::save``, ``aten::from_file``), leave the process or
  belong to a library other than torch, by its sources before loading and by its compiled
  graphs before the first call, only with ``trust_pickle=True``
  (``faux.audit.loaders.torchscript_file``).
- ``torch.export`` programs (``torch.export.save``, ``.pt2``): the archive is checked first
  (``faux.audit.loaders.export_file``): pickled weights, constants or sample inputs, opaque
  objects, native libraries, Python guard code, symbolic shapes that are not plain sympy
  and graph calls to anything but torch operators are refused unless
  ``trust_pickle=True``; a program exported with a static batch size is called in chunks
  of that size (padded).
- skops files (``.skops``): ``skops.io.load`` after its trusted-types check; types outside
  skops' default trust list are refused unless named with ``trusted_types``; every tree of
  the loaded object is checked before anything predicts (``faux.audit.loaders.tree_check``).
- LightGBM text model files (``Booster.save_model``): checked for shape (each tree through
  ``faux.audit.loaders.tree_check``), then parsed by LightGBM (``faux.audit.loaders.lightgbm_file``); no
  code runs.
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

The pieces, by job: ``faux.audit.loaders.target`` (``TargetModel``, and in-memory models made into
one), ``faux.audit.loaders.load_torch`` (torch.export, TorchScript), ``faux.audit.loaders.load_skops``,
``faux.audit.loaders.load_onnx``; pickles, LightGBM text files and the choice of loader are here.
Their public names are importable from here.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import torch
from torch import nn

from faux.audit.loaders.load_onnx import attach_onnx_twin, load_onnx_file  # noqa: F401 (re-exported)
from faux.audit.loaders.load_skops import SKLEARN_STATE_TYPES, load_skops_file  # noqa: F401
from faux.audit.loaders.load_torch import load_export, read_export, read_torchscript  # noqa: F401
from faux.audit.loaders.target import (  # noqa: F401 (re-exported)
    StaticBatch,
    TargetModel,
    TwoLogits,
    attach_twin,
    class_name,
    from_callable,
    from_estimator,
    from_torch,
    logit_module,
    module_width,
    one_line,
    safe_mismatch,
    twin_ok,
)
from faux.errors import ConfigError, DataError
from faux.harness.files import file_sha256, path_kind

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav")


def _zip_names(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as z:
            return z.namelist()
    except (zipfile.BadZipFile, OSError):
        return []


def _refuse_pickle(path: Path) -> None:
    raise ConfigError(f"{path.name} is a pickle: loading it runs code from the file. Save the "
                      "model with skops (skops.io.dump), ONNX, TorchScript or torch.export, or "
                      "pass --trust-pickle if you trust its author")


def _is_lightgbm_text(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head.startswith(b"tree\n") or head.startswith(b"tree\r\n")


def load_model(path, d: int | None = None, *, trust_pickle: bool = False,
               trusted_types=(), exact: bool = True) -> TargetModel:
    """Load a model file safely (see the module docstring for the formats); the returned
    model records the file, its sha256 and the loader. ``exact=False`` keeps a convertible
    scikit-learn model (skops, pickle) or ONNX graph a black box."""
    path = Path(path)
    kind = path_kind(path)
    if kind != "a file":
        raise DataError(f"model file {path}{' ' if kind == 'not found' else ' is '}{kind}; pass --model with an existing file")
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
            return _loaded_by(load_skops_file(path, trusted_types, exact), "skops")
        if suffix == ".onnx":
            return _loaded_by(load_onnx_file(path, d, exact), "onnxruntime")
        if any(n.endswith("models/model.json") for n in names):
            return _loaded_by(load_export(path, d, trust_pickle, sha), "torch.export")
        if any("/code/" in n for n in names):
            return _loaded_by(from_torch(read_torchscript(path, trust_pickle, sha),
                                         f"TorchScript {path.name}", d), "torch.jit")
        if _is_lightgbm_text(path):
            from faux.audit.loaders.lightgbm_file import load_booster

            return _loaded_by(from_estimator(load_booster(path),
                                             f"LightGBM model {path.name}"), "lightgbm")
        if any(n.endswith("data.pkl") for n in names) or suffix in PICKLE_SUFFIXES:
            if not trust_pickle:
                _refuse_pickle(path)
            return _load_pickle(path, names, d, sha, exact)
    except (DataError, ConfigError):
        raise
    except Exception as err:
        raise DataError(f"cannot load the model {path}: {one_line(err)}; save it as "
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
    tm.loader, tm.obj_class = "pickle", class_name(obj)
    return tm


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
