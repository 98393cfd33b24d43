"""Synthetic biased data with per-individual ground truth (paper Section 4.1.2, Appendix A.7).

Names are imported lazily, so ``import faux.synth.fusion`` does not pull in Lightning.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "SyntheticGenerator": "sampler", "SyntheticSet": "sampler",
    "build_dataset_generator": "dataset_generator", "generator_config": "generator_settings",
    "generator_scores": "generator_quality",
    "fuse": "fusion", "projections": "fusion",
    "p_min": "bias", "p_max": "bias", "p_bias": "bias", "mutual_information": "bias",
    "ifs": "ground_truth", "ifs_threshold": "ground_truth", "ifs_labels": "ground_truth",
    "positive_rate": "ground_truth",
    "Projected": "reference", "train_mlp": "reference",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"faux.synth.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'faux.synth' has no attribute {name!r}")
