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

The formats, and how each is recognised and loaded: ``faux.audit.loaders.formats.FORMATS``
(by content, not only by extension). A pickle, joblib or ``torch.save`` file loads only with
``trust_pickle=True`` (unpickling runs code from the file).

A model loaded from a file records its provenance (``TargetModel.provenance``): the file's
path, its sha256, the loader, and for pickles and skops files the class of the object.

The model must output for a binary target: a logit (torch, ``(n,)``/``(n, 1)``; two logits
``(n, 2)`` are read as ``z1 - z0``), ``predict_proba`` (sklearn-like, column 1), or a
probability output (ONNX).

The pieces, by job: ``faux.audit.loaders.formats`` (the table of formats and their loaders),
``faux.audit.loaders.target`` (``TargetModel``, and in-memory models made into one),
``faux.audit.loaders.load_torch`` (torch.export, TorchScript), ``faux.audit.loaders.load_skops``,
``faux.audit.loaders.load_onnx``, ``faux.audit.loaders.lightgbm_file``; the file checks and the
choice of loader are here.
"""

from __future__ import annotations

import os
from pathlib import Path

from faux.audit.loaders.formats import LoadRequest, Probe, detect, save_as, unknown_format
from faux.audit.loaders.target import TargetModel, from_object, one_line
from faux.errors import ConfigError, DataError
from faux.harness.files import file_sha256, path_kind


def load_model(path, d: int | None = None, *, trust_pickle: bool = False,
               trusted_types=(), exact: bool = True) -> TargetModel:
    """Load a model file safely (the formats: ``faux.audit.loaders.formats.FORMATS``); the
    returned model records the file, its sha256 and the loader. ``exact=False`` keeps a
    convertible scikit-learn model (skops, pickle) or ONNX graph a black box."""
    path = Path(path)
    kind = path_kind(path)
    if kind != "a file":
        raise DataError(f"model file {path}{' ' if kind == 'not found' else ' is '}{kind}; pass --model with an existing file")
    if path.stat().st_size == 0:
        raise DataError(f"model file {path} is empty; save the model again")
    sha = file_sha256(path)
    probe = Probe.of(path)
    fmt = detect(probe)
    if fmt is None:
        raise DataError(unknown_format(path.name))
    request = LoadRequest(d=d, trust_pickle=trust_pickle, trusted_types=tuple(trusted_types or ()),
                          sha=sha, exact=exact)
    try:
        tm = fmt.load(probe, request)
    except (DataError, ConfigError):
        raise
    except Exception as err:
        raise DataError(f"cannot load the model {path}: {one_line(err)}; save it as "
                        f"{save_as('or')}") from err
    tm.loader = fmt.name
    tm.file, tm.sha256 = os.path.abspath(path), sha
    return tm


def as_target(model, d: int | None = None, exact: bool = True) -> TargetModel:
    """Whatever the user passed (path, module, estimator, function) as a ``TargetModel``;
    ``exact=False`` keeps a convertible scikit-learn model a black box."""
    if isinstance(model, str | Path):
        return load_model(model, d=d, exact=exact)
    return from_object(model, d, exact)
