"""What a TorchScript archive's own code may do before the audit runs it.

``torch.jit.load`` unpickles with TorchScript's C++ unpickler (no Python class or function
can be named) and compiles the archive's ``code/`` sources; no Python runs. The compiled
TorchScript does run, at load (``__setstate__``) and at every call, and TorchScript can
reach the file system by name through two operators: ``torch.save`` (``aten::save``,
writes a file anywhere the user can) and ``torch.from_file`` (``aten::from_file``, reads
one, and writes it when shared). TorchScript has no ``eval`` or attribute lookup by string,
so a call to either must appear literally in the sources; ``file_calls`` finds them, read
through torch's own archive reader from the bytes that are then loaded.
"""

from __future__ import annotations

import io
import re

import torch

_FILE_CALL = re.compile(r"\b(save|from_file)\s*\(")


def file_calls(data: bytes) -> list[str]:
    """``["code/__torch__.py: save", ...]``: the calls in the archive's TorchScript sources
    that read or write files by name (empty: none). A record that cannot be read as text
    counts as such a call."""
    reader = torch._C.PyTorchFileReader(io.BytesIO(data))
    found = []
    for rec in reader.get_all_records():
        if not (rec.startswith("code/") or "/code/" in rec) or rec.endswith(".debug_pkl"):
            continue
        try:
            text = bytes(reader.get_record(rec)).decode("utf-8")
        except (UnicodeDecodeError, RuntimeError):
            found.append(f"{rec}: unreadable source")
            continue
        found += [f"{rec}: {m.group(1)}" for m in _FILE_CALL.finditer(text)]
    return found


def load_checked(data: bytes, name: str, trust: bool, warn) -> torch.jit.ScriptModule:
    """The TorchScript module in ``data``; one whose code touches files by name is refused
    (``ConfigError``) unless ``trust``, then loaded after ``warn(what)``."""
    from faux.errors import ConfigError

    calls = file_calls(data)
    if calls and not trust:
        raise ConfigError(f"{name} is TorchScript whose code reads or writes files by name "
                          f"({calls[0]}): loading or running it touches your files. Save "
                          "the model without those calls, or pass --trust-pickle if you "
                          "trust its author")
    if calls:
        warn(calls[0])
    return torch.jit.load(io.BytesIO(data), map_location="cpu")
