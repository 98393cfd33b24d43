"""conf/model/fair/adel.yaml extends conf/model/aux/adel.yaml: the composed values of both."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[1] / "conf"

#: the aux's composed values (conf/model/aux/adel.yaml) but the profile's epochs and patience
AUX = {"_target_": "faux.models.adel.AdelSpec", "width": 64, "depth": 2, "last_width": None,
       "alpha": 100.0, "alpha_decay": 0.9, "alpha_min": 0.0, "n_adv": 3, "adv_width": 32,
       "adv_depth": 1, "pred_loss": "bce", "cap": True, "flip": True, "interleave": True,
       "adv_steps": 1, "reinit": False, "adv_norm": False, "decor": 0.0,
       "decor_momentum": 0.0, "pair": 0.0, "pair_on": "logit", "mmd": 0.0, "mmd_rows": 64,
       "mmd_on": "hidden", "hide_on": "hidden", "score_gap": 0.0, "decor_whiten": False,
       "probe_target": None, "probe_step": 1.25, "probe_kind": "logistic",
       "probe_select": False, "adv_lr": None, "batch_size": 64, "lr": 1e-3}
#: where the fair model's composed values differ from the aux's
FAIR = {"alpha_min": 1.0, "adv_norm": True, "decor": 1.0, "decor_momentum": 0.95, "pair": 1.0,
        "pair_on": "both", "mmd": 30.0}
PROFILES = {
    "paper": ({"max_epochs": 200, "patience": 10}, {}),
    "tiny": ({"max_epochs": 3, "patience": 2}, {}),
    "quick": ({"max_epochs": 30, "patience": 5},
              {"last_width": 8, "mmd": 3.0, "probe_target": 0.56, "probe_select": True}),
}


def _models(*overrides) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return {k: OmegaConf.to_container(cfg.model[k], resolve=True) for k in ("aux", "fair")}


@pytest.mark.parametrize("experiment", [None, "real"])
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_fair_and_aux_compose_to_their_recipes(profile, experiment):
    epochs, fair_profile = PROFILES[profile]
    ov = [f"profile={profile}", "model/aux=adel"]
    m = _models(*ov, *([f"experiment={experiment}"] if experiment else []))
    assert m["aux"] == {**AUX, **epochs}
    assert m["fair"] == {**AUX, **epochs, **FAIR, **fair_profile}


def test_the_fair_model_composes_beside_an_mlp_aux_and_overrides_stay_apart():
    m = _models("profile=paper", "model.fair.mmd=7.0")
    assert m["aux"]["_target_"] == "faux.models.mlp.MLPSpec"
    assert m["fair"] == {**AUX, **PROFILES["paper"][0], **FAIR, "mmd": 7.0}
    m = _models("profile=paper", "model/aux=adel", "model.aux.decor=2.0")
    assert m["aux"]["decor"] == 2.0 and m["fair"]["decor"] == 1.0


def test_the_composed_recipes_are_guards_and_the_spec_defaults():
    """conf/model/aux is faux.models.adel.GUARDS and conf/model/fair is AdelSpec() (at the
    paper's profile, up to its epochs and patience)."""
    from dataclasses import replace

    from hydra.utils import instantiate

    from faux.models.adel import GUARDS, AdelSpec

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["profile=paper", "model/aux=adel"])
    sizes = PROFILES["paper"][0]
    assert instantiate(cfg.model.aux) == replace(GUARDS, **sizes)
    assert instantiate(cfg.model.fair) == replace(AdelSpec(), **sizes)
