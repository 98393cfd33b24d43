"""The settings of a dataset's generator (mode encoder + CVAE) and the checks of a synthetic
column's options.

:func:`generator_config` merges :data:`GENERATOR_DEFAULT`, the dataset's Table 2 values
(:data:`GENERATOR_CFGS`) and overrides; :func:`check_synthetic_options` checks a column's
options before anything is trained (a one-line ``ConfigError`` naming the fix).
"""

from __future__ import annotations

from faux.errors import ConfigError

#: how the c-side and y-side blocks are fused (faux.synth.fusion)
FUSIONS = ("concat", "outer")
#: how a CVAE decodes (faux.synth.cvae)
DECODINGS = ("gumbel", "softmax")
#: how the condition enters the CVAE's decoder (the first is the default; a CVAE saved without
#: the hyperparameter is a ``decoder_input`` one)
C_PATHS = ("decoder_input", "logit_bias")

#: defaults for any dataset; per-dataset values below (Table 2: components, hidden, depth)
GENERATOR_DEFAULT: dict = {
    "n_components": 3,
    "reg_covar": 1e-6,
    "on_excess": "reduce",
    "hidden": 256,
    "depth": 2,
    "latent_dim": 4,
    "beta": 0.2,
    "lr": 1e-3,
    "epochs": 300,
    "max_steps": 3000,
    "batch_size": 64,
    "patience": 30,
    "val_fraction": 0.1,
}

#: per-dataset overrides; mirrored by conf/generator/<name>.yaml (a test checks they agree)
GENERATOR_CFGS: dict[str, dict] = {
    "backache": {"n_components": 3, "hidden": 186, "depth": 6},
    "credit_g": {"n_components": 7, "hidden": 874, "depth": 3, "reg_covar": 1e-3},
    "australian": {"n_components": 5, "hidden": 977, "depth": 5},
    "wdbc": {"n_components": 4, "hidden": 367, "depth": 1},
    "magic": {"n_components": 2, "hidden": 624, "depth": 2, "batch_size": 256, "latent_dim": 8},
}

#: Table 2's model scores, for reports
PAPER_MODEL_SCORE = {"backache": 0.545, "credit_g": 0.657, "australian": 0.721, "wdbc": 0.815,
                     "magic": 0.987}


#: generator options besides GENERATOR_DEFAULT's that a config holds only when set to
#: something other than their default (so the default's cache key never names them)
GENERATOR_OPTIONAL: dict = {"c_path": C_PATHS[0]}


def generator_config(name: str, overrides: dict | None = None) -> dict:
    """Defaults, then the dataset's Table 2 values, then ``overrides`` (unknown keys rejected;
    an optional key at its default is dropped: :data:`GENERATOR_OPTIONAL`)."""
    cfg = {**GENERATOR_DEFAULT, **GENERATOR_CFGS.get(name, {})}
    for k, v in (overrides or {}).items():
        if k in GENERATOR_OPTIONAL:
            if v not in C_PATHS:
                raise ConfigError(f"generator option c_path for '{name}' must be one of "
                                  f"{', '.join(C_PATHS)}, got {v!r}")
            if v == GENERATOR_OPTIONAL[k]:
                cfg.pop(k, None)
                continue
        elif k not in GENERATOR_DEFAULT:
            raise ConfigError(f"unknown generator option {k!r} for '{name}'; known: "
                              f"{', '.join(sorted([*GENERATOR_DEFAULT, *GENERATOR_OPTIONAL]))}")
        cfg[k] = v
    return cfg


def check_synthetic_options(*, xc: str, xy: str, bias, fusion: str, decoding: str = "gumbel",
                            tau=0.3, dxdc_at: str = "mid", generator_cfgs: dict | None = None,
                            root=None) -> dict:
    """Validate a synthetic column's options before anything is trained (one-line
    ConfigError naming the fix); returns them normalised (bias and tau as floats, full
    generator configs per dataset)."""
    from faux.data.pmlb_data import KNOWN_PMLB, pmlb_path

    for role, name in (("xc", xc), ("xy", xy)):
        if not isinstance(name, str) or not name or "/" in name:
            raise ConfigError(f"{role} must be a PMLB dataset name, got {name!r}")
        if name not in KNOWN_PMLB and not pmlb_path(name, root).is_file():
            import pmlb

            if name not in pmlb.dataset_names:
                raise ConfigError(f"{role}: unknown dataset {name!r}; known: "
                                  f"{', '.join(KNOWN_PMLB)} (or any PMLB dataset name)")
    if isinstance(bias, bool) or not isinstance(bias, int | float) or not 0.0 <= bias <= 1.0:
        raise ConfigError(f"bias must be a number in [0, 1], got {bias!r}")
    if fusion not in FUSIONS:
        raise ConfigError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
    check_decoding(decoding)
    check_dxdc_at(dxdc_at)
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not tau > 0:
        raise ConfigError(f"tau must be a number > 0, got {tau!r}")
    cfgs = dict(generator_cfgs or {})
    unknown = set(cfgs) - {xc, xy}
    if unknown:
        raise ConfigError(f"generator_cfgs has entries {sorted(unknown)} that are not in the "
                          f"pair ({xc}, {xy}); remove them")
    full = {}
    for name in dict.fromkeys((xc, xy)):
        cfg = generator_config(name, cfgs.get(name))
        for k in ("n_components", "hidden", "latent_dim", "epochs", "batch_size"):
            if isinstance(cfg[k], bool) or not isinstance(cfg[k], int) or cfg[k] < 1:
                raise ConfigError(f"generator option {k} for '{name}' must be an integer >= 1, "
                                  f"got {cfg[k]!r}")
        if isinstance(cfg["depth"], bool) or not isinstance(cfg["depth"], int) or cfg["depth"] < 0:
            raise ConfigError(f"generator option depth for '{name}' must be an integer >= 0, "
                              f"got {cfg['depth']!r}")
        if cfg["on_excess"] not in ("reduce", "error"):
            raise ConfigError(f"generator option on_excess for '{name}' must be 'reduce' or "
                              f"'error', got {cfg['on_excess']!r}")
        full[name] = cfg
    return {"xc": xc, "xy": xy, "bias": float(bias), "fusion": fusion, "decoding": decoding,
            "tau": float(tau), "dxdc_at": dxdc_at, "generator_cfgs": full}


def check_decoding(decoding: str) -> str:
    if decoding not in DECODINGS:
        raise ConfigError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
    return decoding


def check_dxdc_at(v: str) -> str:
    if v not in ("mid", "observed"):
        raise ConfigError(f"dxdc_at must be 'mid' or 'observed', got {v!r}")
    return v

