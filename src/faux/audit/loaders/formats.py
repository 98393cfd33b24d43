"""The model file formats the audit loads: one row each in :data:`FORMATS`.

A row says how a file is recognised (``sniff``: by its suffix or its content, read once
into a :class:`Probe`), which function loads it (``load``), the name recorded as the
model's loader (``summary.json``'s ``model.loader``), the words of the messages (``label``)
and one line for ``faux audit --help`` and docs/audit.md (``help``). ``load_model``
(``faux.audit.loaders.models``) tries the rows in order and loads the file with the first
whose ``sniff`` says yes; the message for a file no row recognises, the CLI's ``--model``
help and docs/audit.md's table of formats are read from the same rows.

The loaders, by format (their modules hold the checks):

- skops (``.skops``): ``skops.io.load`` after its trusted-types check; types outside skops'
  default trust list are refused unless named with ``trusted_types``; every tree of the
  loaded object is checked before anything predicts (``load_skops``, ``tree_check``).
- ONNX (``.onnx``): onnxruntime; the output named like ``prob*`` (or the last float output)
  is read, column 1 of a two-column output. The graph is also read with ``onnx`` and, when
  every node behind that output converts, scored by autograd (``load_onnx``, ``onnx_torch``).
- ``torch.export`` programs (``torch.export.save``, ``.pt2``): the archive is checked first
  (``export_file``): pickled weights, constants or sample inputs, opaque objects, native
  libraries, Python guard code, symbolic shapes that are not plain sympy and graph calls to
  anything but torch operators are refused unless ``trust_pickle``; a program exported with
  a static batch size is called in chunks of that size, padded (``load_torch``).
- TorchScript archives (``torch.jit.save``): ``torch.jit.load``; no Python code runs; one
  whose code calls operators that read or write files, leave the process or belong to a
  library other than torch, by its sources before loading and by its compiled graphs before
  the first call, only with ``trust_pickle`` (``torchscript_file``).
- LightGBM text model files (``Booster.save_model``): checked for shape, each tree through
  ``tree_check``, then parsed by LightGBM (``lightgbm_file``); no code runs.
- pickle / joblib / ``torch.save``-d modules: only with ``trust_pickle`` (unpickling runs
  code from the file); loading one prints a one-line warning on stderr naming the file and
  its sha256.

Loaded without torch: each loader imports its module when it runs.
"""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from faux.errors import ConfigError

if TYPE_CHECKING:
    from faux.audit.loaders.target import TargetModel

#: suffixes of a pickle or joblib file
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav")
#: bytes of a file's start that a sniff may read
HEAD_BYTES = 64


@dataclass(frozen=True)
class Probe:
    """What detection reads of a model file, once: its path, its suffix (lower case), the
    names inside it when it is a zip archive (else empty) and its first bytes."""

    path: Path
    suffix: str
    names: tuple[str, ...]
    head: bytes

    @classmethod
    def of(cls, path: Path) -> Probe:
        try:
            with zipfile.ZipFile(path) as z:
                names = tuple(z.namelist())
        except (zipfile.BadZipFile, OSError):
            names = ()
        try:
            with open(path, "rb") as f:
                head = f.read(HEAD_BYTES)
        except OSError:
            head = b""
        return cls(path, path.suffix.lower(), names, head)


@dataclass(frozen=True)
class LoadRequest:
    """What the caller of ``load_model`` allows: the data's width ``d`` (None: unknown),
    whether code from the file may run (``trust_pickle``), the extra types a skops file may
    hold, the file's sha256 (for warnings) and whether a convertible model is made exact."""

    d: int | None = None
    trust_pickle: bool = False
    trusted_types: tuple[str, ...] = ()
    sha: str = ""
    exact: bool = True


@dataclass(frozen=True)
class ModelFormat:
    """One model file format: ``name`` is recorded as the model's loader, ``label`` names it
    in messages, ``help`` is its line in ``--model``'s help and docs/audit.md's table;
    ``sniff(probe)`` says whether a file is of it and ``load(probe, request)`` loads one.
    ``trusted_only``: the format runs code from the file, so it loads only with
    ``--trust-pickle`` (and is never suggested as the format to save a model in)."""

    name: str
    label: str
    help: str
    sniff: Callable[[Probe], bool]
    load: Callable[[Probe, LoadRequest], TargetModel]
    trusted_only: bool = False


# --------------------------------------------------------------------------- the loaders


def load_skops(p: Probe, r: LoadRequest) -> TargetModel:
    from faux.audit.loaders.load_skops import load_skops_file

    return load_skops_file(p.path, r.trusted_types, r.exact)


def load_onnx(p: Probe, r: LoadRequest) -> TargetModel:
    from faux.audit.loaders.load_onnx import load_onnx_file

    return load_onnx_file(p.path, r.d, r.exact)


def load_torch_export(p: Probe, r: LoadRequest) -> TargetModel:
    from faux.audit.loaders.load_torch import load_export

    return load_export(p.path, r.d, r.trust_pickle, r.sha)


def load_torchscript(p: Probe, r: LoadRequest) -> TargetModel:
    from faux.audit.loaders.load_torch import read_torchscript
    from faux.audit.loaders.target import from_torch

    return from_torch(read_torchscript(p.path, r.trust_pickle, r.sha),
                      f"TorchScript {p.path.name}", r.d)


def load_lightgbm(p: Probe, r: LoadRequest) -> TargetModel:
    from faux.audit.loaders.lightgbm_file import load_booster
    from faux.audit.loaders.target import from_estimator

    return from_estimator(load_booster(p.path), f"LightGBM model {p.path.name}")


def load_pickle(p: Probe, r: LoadRequest) -> TargetModel:
    """Refused (ConfigError naming the safe formats) unless ``trust_pickle``; then one warning
    line on stderr, before the file is unpickled."""
    if not r.trust_pickle:
        raise ConfigError(f"{p.path.name} is a pickle: loading it runs code from the file. "
                          f"Save the model as {save_as('or')}, or pass --trust-pickle if you "
                          "trust its author")
    import torch

    from faux.audit.loaders.target import class_name, from_object

    print(f"faux audit: warning: loading the pickle {os.path.abspath(p.path)} (sha256 "
          f"{r.sha}) runs code from the file; trusted by --trust-pickle", file=sys.stderr)
    if p.names:  # torch.save of a whole module
        obj = torch.load(str(p.path), map_location="cpu", weights_only=False)
    else:
        import joblib

        obj = joblib.load(p.path)
    tm = from_object(obj, r.d, r.exact)
    tm.obj_class = class_name(obj)
    return tm


# --------------------------------------------------------------------------- the table


def _is_lightgbm_text(p: Probe) -> bool:
    return p.head.startswith(b"tree\n") or p.head.startswith(b"tree\r\n")


def _is_pickle(p: Probe) -> bool:
    return any(n.endswith("data.pkl") for n in p.names) or p.suffix in PICKLE_SUFFIXES


#: every model file format, in the order detection tries them
FORMATS: tuple[ModelFormat, ...] = (
    ModelFormat("skops", "skops (.skops)",
                "scikit-learn/LightGBM via skops (.skops, skops.io.dump)",
                lambda p: p.suffix == ".skops", load_skops),
    ModelFormat("onnxruntime", "ONNX (.onnx)", "ONNX (.onnx)",
                lambda p: p.suffix == ".onnx", load_onnx),
    ModelFormat("torch.export", "torch.export (.pt2)", "torch.export (.pt2, torch.export.save)",
                lambda p: any(n.endswith("models/model.json") for n in p.names),
                load_torch_export),
    ModelFormat("torch.jit", "TorchScript (.pt)", "TorchScript (.pt, torch.jit.save)",
                lambda p: any("/code/" in n for n in p.names), load_torchscript),
    ModelFormat("lightgbm", "a LightGBM text file",
                "a LightGBM text model (booster.save_model)", _is_lightgbm_text, load_lightgbm),
    ModelFormat("pickle", "pickle/joblib with --trust-pickle",
                "pickle/joblib/torch.save (only with --trust-pickle)", _is_pickle, load_pickle,
                trusted_only=True),
)


def detect(probe: Probe) -> ModelFormat | None:
    """The first row of :data:`FORMATS` whose sniff recognises the file, or None."""
    return next((f for f in FORMATS if f.sniff(probe)), None)


def _listed(words: list[str], last: str) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])}, {last} {words[-1]}"


def save_as(last: str = "or") -> str:
    """The formats that run no code from the file, in words: what to save a model as."""
    return _listed([f.label for f in FORMATS if not f.trusted_only], last)


def unknown_format(name: str) -> str:
    """The message for a file no row of :data:`FORMATS` recognises."""
    return (f"cannot tell the format of {name}; save the model as "
            f"{_listed([f.label for f in FORMATS], 'or')}")


def model_help() -> str:
    """Every format's help line, for ``faux audit --model``."""
    return _listed([f.help for f in FORMATS], "or")
