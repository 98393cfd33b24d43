"""Each gradient test is one class holding its formula: faux.score finds it in the registry
(no switch on names), a new class is scored without touching the scorer, and every option
choice is a Literal with one default."""

import inspect
import typing

import pytest
import torch
from torch import nn

import faux
from faux.errors import ConfigError
from faux.methods import builtin, registry
from faux.methods.alignment import fta_scores
from faux.methods.gradients import gradient_methods
from faux.methods.ig import integrated_gradients
from faux.methods.options import (
    AUX_KINDS,
    IG_METHODS,
    LIC_UB_AT,
    NG_READINGS,
    OUTPUTS,
    LicUBOptions,
    PathOptions,
    ScoreOptions,
)
from faux.methods.path import path_effect, support_box
from faux.methods.transparency import faux_report


def models(seed=0, d=4):
    torch.manual_seed(seed)
    tar = nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 1)).double()
    aux = nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 1)).double()
    x = torch.randn(30, d, dtype=torch.float64)
    return tar, aux, x


def test_the_gradient_tests_are_the_registered_gradient_classes():
    assert gradient_methods() == ("fta", "faux", "faux_ng", "faux_ig")
    for name in gradient_methods():
        cls = registry.get(name)
        assert cls.combine is not builtin.Gradient.combine, name


@pytest.mark.parametrize("name", ["fta", "faux", "faux_ng", "faux_ig"])
def test_faux_score_is_the_class_own_score(name):
    tar, aux, x = models()
    o = ScoreOptions(ig_steps=5)
    assert torch.equal(faux.score(name, tar, aux, x, o),
                       registry.get(name).scores(tar, aux, x, o))


def test_a_new_gradient_class_is_scored_without_touching_the_scorer():
    class FTAL1(builtin.FTAMethod):
        name, label, paper_row = "fta_l1_probe", "FTA (l1)", None

        @staticmethod
        def combine(g_t, w_t, g_a, w_a, o):
            return fta_scores(g_t, w_t, 1.0)

    tar, aux, x = models(1)
    registry.register(FTAL1)
    try:
        assert "fta_l1_probe" in gradient_methods()
        assert torch.equal(faux.score("fta_l1_probe", tar, None, x),
                           faux.score("fta", tar, None, x, p=1))
    finally:
        registry.unregister(FTAL1.name)
    with pytest.raises(ConfigError, match="unknown gradient method 'fta_l1_probe'"):
        faux.score("fta_l1_probe", tar, None, x)


def test_a_test_that_needs_an_aux_says_so_and_one_that_does_not_ignores_it():
    tar, aux, x = models(2)
    with pytest.raises(ConfigError, match="'faux' needs an aux model; pass one"):
        faux.score("faux", tar, None, x)
    assert torch.equal(faux.score("fta", tar, aux, x), faux.score("fta", tar, None, x))


def _choices(cls):
    hints = typing.get_type_hints(cls, localns={"torch": torch})
    out = {}
    for field, hint in hints.items():
        args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        lits = [v for a in [hint, *args] if typing.get_origin(a) is typing.Literal
                for v in typing.get_args(a)]
        if lits:
            out[field] = tuple(dict.fromkeys(lits))
    return out


def test_every_choice_is_a_literal_whose_default_is_one_of_its_values():
    found = {cls.__name__: _choices(cls) for cls in (ScoreOptions, LicUBOptions, PathOptions)}
    assert found["ScoreOptions"] == {"output": OUTPUTS, "aux_output": OUTPUTS,
                                     "ng": NG_READINGS, "ig_baseline": ("zeros", "mean"),
                                     "ig_method": IG_METHODS}
    assert found["LicUBOptions"] == {"at": LIC_UB_AT, "output": OUTPUTS}
    assert found["PathOptions"] == {"output": OUTPUTS, "aux_kind": AUX_KINDS}
    for cls in (ScoreOptions, LicUBOptions, PathOptions):
        for field, values in _choices(cls).items():
            default = getattr(cls(), field)
            assert default is None or default in values, (cls.__name__, field, default)


def test_the_functions_default_to_the_options_defaults():
    """A keyword that is an option defaults to the option's one default."""
    def defaults(fn):
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()
                if p.default is not inspect.Parameter.empty}

    s = ScoreOptions()
    assert {k: defaults(integrated_gradients)[k] for k in ("baseline", "steps", "method")} == {
        "baseline": s.ig_baseline, "steps": s.ig_steps, "method": s.ig_method}
    fr = defaults(faux_report)
    assert (fr["output"], fr["ig_steps"], fr["ig_baseline"], fr["ig_method"]) == (
        s.aux_output, s.ig_steps, s.ig_baseline, s.ig_method)
    pe, p = defaults(path_effect), PathOptions()
    assert (pe["steps"], pe["aux_kind"], pe["sd"], pe["output"]) == (
        p.steps, p.aux_kind, p.sd, s.output)
    assert defaults(support_box)["margin"] == p.margin
