"""Reading the resolved config (plain dicts): the config keys every study shares.

Each study's ``Settings.from_config(cfg)`` reads its own keys and calls these for the
shared ones; no other code reads config keys (the studies' ``run`` functions take settings).
Where the methods' settings sit in the config tree is written here and nowhere else: the
gradient tests' options under ``synthetic.options``, a method's own block under
``synthetic.methods.<name>`` (``own_params``; the real-data study's under
``real_study.methods.<name>``), the GAN under ``model.gan``, and the keys of each need
(:func:`foreign_keys`, for the config hash of a one-method job). Loaded without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faux.methods import registry
from faux.methods.builtin import FTALinMethod, LicUBMethod
from faux.methods.options import ScoreOptions
from faux.methods.protocol import MethodConfig

if TYPE_CHECKING:
    from faux.studies.column import ColumnSettings

#: the config node of the gradient tests' options (ScoreOptions fields) in synthetic studies
OPTIONS_NODE = "synthetic.options"
#: the config node holding a method's own settings block, ``<node>.<method name>``
PARAMS_NODE = "synthetic.methods"
#: config keys read only where a method has the need (a job for a method without the need
#: leaves them out of its config hash)
NEED_KEYS = {"aux": ("model.aux", "synthetic.aux_trainer"), "gan": ("model.gan", "profile.gan_steps")}


def method_keys(method: registry.Method) -> tuple[str, ...]:
    """The dotted config keys only ``method`` reads: its own options and settings block."""
    keys = [f"{OPTIONS_NODE}.{o}" for o in method.own_options]
    return (f"{PARAMS_NODE}.{method.name}", *keys) if method.own_params else tuple(keys)


def foreign_keys(name: str) -> tuple[str, ...]:
    """The dotted config keys a one-method job of ``name`` does not read: other methods' own
    keys and the keys of needs it lacks. ``faux.run.config_hash`` leaves them out, so a rerun
    that changes one method's option finds every other method's jobs finished."""
    m = registry.get(name)
    own = set(method_keys(m)) | {k for need in m.needs for k in NEED_KEYS.get(need, ())}
    other = {k for o in registry.methods() if o.name != name for k in method_keys(o)}
    other |= {k for need, keys in NEED_KEYS.items() if need not in m.needs for k in keys}
    return tuple(sorted(other - own))


def node_kwargs(node: dict) -> dict:
    """A ``_target_`` node's fields as keyword arguments."""
    return {k: v for k, v in node.items() if k != "_target_"}


def accelerator(cfg: dict) -> str:
    """``trainer.accelerator`` (``faux.models.settings.TrainerSettings``)."""
    from hydra.utils import instantiate

    return instantiate(cfg["trainer"]).accelerator


def column_settings(cfg: dict, sizes: dict | None = None, **reading) -> ColumnSettings:
    """``profile.synth`` (or ``sizes``), ``synthetic.*`` and the paths of a synthetic study;
    ``reading``: the fields the reading sets (``faux.studies.readings.synth_settings``, the
    one place a reading is applied: CVAE decoding, IFS output, scorer options, ...)."""
    from faux.studies.column import ColumnSettings

    p, st = cfg["profile"], cfg["synthetic"]
    own = dict(
        sizes=dict(sizes if sizes is not None else p["synth"]),
        gen_study=dict(st.get("generators") or {}), gen_profile=dict(p.get("generators") or {}),
        cache_dir=cfg["paths"]["cache_dir"], data_dir=cfg["paths"]["data_dir"],
        accelerator=accelerator(cfg), aux_trainer=str(st["aux_trainer"]))
    return ColumnSettings(**{**own, **reading})


def own_blocks(node: dict | None, where: str) -> dict[str, dict]:
    """The ``methods`` node under ``node`` (``where`` names ``node`` in messages): each
    method's own settings block by its name, checked against the registry
    (``registry.own_blocks``)."""
    return registry.own_blocks((node or {}).get("methods"), f"{where}.methods")


def synthetic_params(target_output: str, lic_ub: dict, synthetic: dict | None = None) -> dict:
    """The settings blocks of a synthetic study's methods (``MethodConfig.params``): the
    ``synthetic`` node's ``methods`` blocks (:func:`own_blocks`), with FTA + lin. aux on the
    reading's target output and LIC-UB on the reading's ``lic_ub``
    (``readings.lic_ub_params``)."""
    out = own_blocks(synthetic, "synthetic")
    fta_lin = {**out.get(FTALinMethod.name, {}), "output": target_output}
    return {**out, FTALinMethod.name: fta_lin, LicUBMethod.name: lic_ub}


def method_config(cfg: dict, options, params: dict | None = None) -> MethodConfig:
    """Every method's settings: ``options`` (ScoreOptions or a dict of its fields), the GAN
    node (``model.gan``) as the parameters of each method that needs a GAN, and ``params``
    for the others (:func:`synthetic_params`)."""
    gan = {m.name: node_kwargs(cfg["model"]["gan"]) for m in registry.methods(requires=("gan",))}
    return MethodConfig(ScoreOptions.of(options), {**gan, **(params or {})}, accelerator(cfg))
