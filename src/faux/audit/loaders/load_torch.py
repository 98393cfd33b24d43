"""Loading torch model files: ``torch.export`` programs (the archive checked by
``faux.audit.loaders.export_file`` before anything in it is loaded; a static batch size called in
chunks) and TorchScript archives (code that calls file, remote or foreign operators
refused by ``faux.audit.loaders.torchscript_file``). Either runs code from the file only with
``--trust-pickle``, after one warning line naming it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from faux.audit.loaders.target import StaticBatch, TargetModel, from_torch
from faux.errors import ConfigError, DataError


def read_export(path: Path, trust_pickle: bool, sha: str):
    """The file's ``ExportedProgram``, loaded only when nothing in it can run code
    (``faux.audit.loaders.export_file``), or when the user trusts it with ``--trust-pickle``."""
    import io

    from faux.audit.loaders.export_file import Unreadable, check_archive, load_checked

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


def load_export(path: Path, d: int | None, trust_pickle: bool = False,
                 sha: str = "") -> TargetModel:
    ep = read_export(path, trust_pickle, sha)
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


def read_torchscript(path: Path, trust: bool, sha: str):
    """TorchScript whose code calls file, remote or foreign operators only with
    ``--trust-pickle`` (``faux.audit.loaders.torchscript_file``)."""
    from faux.audit.loaders.torchscript_file import load_checked

    def warn(what):
        print(f"faux audit: warning: the TorchScript {os.path.abspath(path)} (sha256 {sha}) "
              f"calls operators that can touch files ({what}); trusted by --trust-pickle",
              file=sys.stderr)

    return load_checked(path.read_bytes(), path.name, trust, warn)
