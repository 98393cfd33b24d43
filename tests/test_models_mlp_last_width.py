"""``MLP(last_width=...)``: a narrow last hidden layer after wide ones (the Adel model's option)."""

from dataclasses import replace

import pytest
import torch

from faux.errors import ConfigError
from faux.models.adel import GUARDS, train_adel
from faux.models.mlp import MLP


def test_last_width_sets_only_the_last_hidden_layer():
    net = MLP(5, width=16, depth=3, last_width=4)
    widths = [m.out_features for m in net.body if isinstance(m, torch.nn.Linear)]
    assert widths == [16, 16, 4]
    assert net.hidden_width == 4 and net.head.in_features == 4
    assert net.hidden(torch.randn(7, 5)).shape == (7, 4)
    assert MLP(5, width=16, depth=2).hidden_width == 16
    with pytest.raises(ConfigError, match="last_width"):
        MLP(5, width=16, depth=2, last_width=0)


def test_adel_model_with_a_narrow_last_layer_trains_and_its_adversary_reads_it():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 5, generator=g)
    y, c = (x[:, 0] > 0).float(), (x[:, 1] > 0).float()
    spec = replace(GUARDS, width=16, depth=2, last_width=4, mmd=1.0, decor=1.0,
                   decor_momentum=0.9, max_epochs=2)
    model, info = train_adel(spec, x, y, c, x, y, c, accelerator="cpu")
    assert model.hidden(x).shape == (300, 4)
    assert model.adversary_logits(x).shape == (300,)
    assert 0.0 <= info["accuracy"] <= 1.0
