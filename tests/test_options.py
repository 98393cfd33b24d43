"""The typed options of the fairness tests: one default each, unknown names refused in one
line naming the known ones, and the same scores whichever way the options are given."""

import dataclasses

import pytest
import torch

from faux.errors import ConfigError
from faux.methods.options import LicUBOptions, ScoreOptions
from faux.methods.protocol import Batch, MethodConfig, TrainData
from faux.methods.registry import get


def test_unknown_option_fails_in_one_line_naming_the_known_ones():
    with pytest.raises(ConfigError) as e:
        ScoreOptions.of({"ig_step": 3})
    msg = str(e.value)
    assert "\n" not in msg and "'ig_step'" in msg
    assert all(f.name in msg for f in dataclasses.fields(ScoreOptions))
    with pytest.raises(ConfigError, match="known: at, output"):
        LicUBOptions.of(where="mixed")
    with pytest.raises(ConfigError, match="unknown option"):
        MethodConfig(options={"nope": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        ScoreOptions().ig_steps = 3


def test_options_merge_and_defaults():
    o = ScoreOptions.of({"ng": "sample"}, ig_steps=8)
    assert (o.ng, o.ig_steps, o.output) == ("sample", 8, ScoreOptions().output)
    assert o.replace(ng="feature") == ScoreOptions(ig_steps=8)
    assert ScoreOptions.of(o) is not o and ScoreOptions.of(o) == o
    assert MethodConfig(options={"ig_steps": 8}).options == ScoreOptions(ig_steps=8)


def test_a_method_scores_alike_from_options_keywords_and_config():
    from faux.methods.gradients import score

    torch.manual_seed(0)
    tar, aux = torch.nn.Linear(3, 1), torch.nn.Linear(3, 1)
    x = torch.randn(20, 3)
    a = score("faux_ig", tar, aux, x, ScoreOptions(ig_steps=7, output="logit"))
    b = score("faux_ig", tar, aux, x, ig_steps=7, output="logit")
    c = score("faux_ig", tar, aux, x, {"ig_steps": 7}, output="logit")
    m = get("faux_ig").build(MethodConfig(options={"ig_steps": 7, "output": "logit"}))
    d = m.fit(TrainData(None, None, aux=lambda s: (aux, {"accuracy": 1.0, "n_params": 4})),
              0).score(tar, Batch(x))
    for s in (b, c, d):
        assert torch.equal(a, s)
    with pytest.raises(ConfigError, match="unknown option"):
        score("faux", tar, aux, x, ig_stepz=7)
