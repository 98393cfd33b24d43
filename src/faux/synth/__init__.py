"""Synthetic biased data with per-individual ground truth (paper Section 4.1.2, Appendix A.7)."""

from faux.synth.bias import mutual_information, p_bias, p_max, p_min
from faux.synth.fusion import fuse, projections
from faux.synth.ground_truth import ifs, ifs_labels, ifs_threshold, positive_rate
from faux.synth.sampler import (
    SyntheticGenerator,
    SyntheticSet,
    build_dataset_generator,
    generator_config,
)

__all__ = [
    "SyntheticGenerator", "SyntheticSet", "build_dataset_generator", "generator_config",
    "fuse", "projections", "p_min", "p_max", "p_bias", "mutual_information",
    "ifs", "ifs_threshold", "ifs_labels", "positive_rate",
]
