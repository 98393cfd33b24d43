"""What the driver sends the workers, as bytes: the fitted state of the pass (the model, the
aux models, the scalers, the transports, the thresholds, the settings), pickled once by
cloudpickle (the views' group functions are closures) and put in Ray's object store. A
TorchScript module travels as ``torch.jit.save``'s bytes (it does not pickle), and a
scorer's gradient memo (a cache of this process's results, held by weak references) as an
empty one."""

from __future__ import annotations

import io


def load_script(data: bytes):
    """A TorchScript module from ``torch.jit.save``'s bytes, on the CPU."""
    import torch

    return torch.jit.load(io.BytesIO(data), map_location="cpu")


def _pickler_class():
    import torch
    from ray import cloudpickle

    from faux.audit.scores.scoring import GradientMemo

    class Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, torch.jit.ScriptModule):
                buf = io.BytesIO()
                torch.jit.save(obj, buf)
                return load_script, (buf.getvalue(),)
            if isinstance(obj, GradientMemo):
                return GradientMemo, ()
            return super().reducer_override(obj)

    return Pickler


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _pickler_class()(buf, protocol=5).dump(obj)
    return buf.getvalue()


def loads(data: bytes):
    import pickle

    return pickle.loads(data)
