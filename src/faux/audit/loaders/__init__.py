"""The model under audit: every file format of ``FORMATS`` (one row each: how a file is
recognised, its loader, its words) loaded safely, scikit-learn models converted to exact torch
twins, Pipelines that encode their own columns, and one interface over all of them,
``TargetModel``.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``encoder_steps``, ``encoders``, ``exact``, ``export_file``, ``formats``, ``lightgbm_file``, ``load_onnx``, ``load_skops``, ``load_torch``, ``missing``, ``models``, ``onnx_ops``, ``onnx_torch``, ``target``, ``task``, ``torchscript_file``, ``tree_check``.
"""

from faux.audit.face import lazy

#: name -> the module of this package that defines it
_WHERE = {
    "FORMATS": "formats",
    "load_model": "models",
    "as_target": "models",
    "TargetModel": "target",
    "EncodedSource": "encoders",
    "NanTarget": "missing",
    "convert": "exact",
    "TASKS": "task",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy(__name__, _WHERE)
