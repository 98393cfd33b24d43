"""Hydra imports every module of ``hydra_plugins`` when it starts (before the first
composition, in ``python -m faux.run`` and in ``hydra.compose`` alike): this one stores faux's
config schema (``faux.harness.schema``) in the ConfigStore, so conf/config.yaml can name it."""

from faux.harness.schema import register

register()
