"""Reading the resolved config (plain dicts): the config keys every study shares.

Each study's ``Settings.from_config(cfg)`` reads its own keys and calls these for the
shared ones; no other code reads config keys (the studies' ``run`` functions take settings).
"""

from __future__ import annotations

from hydra.utils import instantiate

from faux.methods.protocol import MethodConfig
from faux.studies.column import ColumnSettings


def node_kwargs(node: dict) -> dict:
    """A ``_target_`` node's fields as keyword arguments."""
    return {k: v for k, v in node.items() if k != "_target_"}


def accelerator(cfg: dict) -> str:
    """``trainer.accelerator`` (``faux.models.settings.TrainerSettings``)."""
    return instantiate(cfg["trainer"]).accelerator


def column_settings(cfg: dict, sizes: dict | None = None) -> ColumnSettings:
    """``profile.synth`` (or ``sizes``), ``synthetic.*`` and the paths of a synthetic study."""
    p, st = cfg["profile"], cfg["synthetic"]
    return ColumnSettings(
        sizes=dict(sizes if sizes is not None else p["synth"]),
        gen_study=dict(st.get("generators") or {}), gen_profile=dict(p.get("generators") or {}),
        gen_opts=dict(st["generator_options"]), threshold_k=float(st["threshold_k"]),
        output=st["output"], options=dict(st["options"]),
        cache_dir=cfg["paths"]["cache_dir"], data_dir=cfg["paths"]["data_dir"],
        accelerator=accelerator(cfg), aux_trainer=str(st.get("aux_trainer", "single")))


def method_config(cfg: dict, options: dict, params: dict | None = None) -> MethodConfig:
    """Every method's settings: ``options`` (faux.score), the GAN node (``model.gan``) as
    FlipTest's parameters, and ``params`` for the others (``unfair_map``, ``fta_lin``)."""
    all_params = {"fliptest": node_kwargs(cfg["model"]["gan"]), **(params or {})}
    return MethodConfig(dict(options), all_params, accelerator(cfg))
