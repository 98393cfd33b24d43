"""docs/add_method.md's steps for a fairness test with options of its own, followed on a toy:
its module (file 1) and its ``register`` line (file 2, here ``registry.register``) are all
it takes for ``faux.score``, the registry's readers, both studies' settings and the config
hash to see it and its option."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch

import faux
from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.gradients import gradient_methods
from faux.methods.protocol import Batch, MethodConfig, TrainData

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "add_method.md"
NAME = "toy_power"

#: file 1 of the doc's steps: the test's module
MODULE = f'''
"""fAux (eq. 9) raised to a power of its own (``power``, default 1)."""

from faux.methods.builtin import Gradient


class ToyPowerMethod(Gradient):
    name, label = "{NAME}", "Toy power"
    needs = frozenset({{"target", "aux"}})
    own_params = True

    @staticmethod
    def combine(g_t, w_t, g_a, w_a, o):
        from faux.methods.alignment import faux_scores

        return faux_scores(g_t, w_t, g_a, w_a, o.eps)

    def score(self, target, batch, options=None):
        power = float(self.config.of(self.name).get("power", 1.0))
        return super().score(target, batch, options) ** power
'''


def _import(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def toy(tmp_path):
    """The doc's steps: the module (written where ``src/faux/methods/<name>.py`` would be)
    and its registration; ``needed`` lists the files they touched."""
    path = tmp_path / "methods" / f"{NAME}.py"
    path.parent.mkdir()
    path.write_text(MODULE)
    cls = registry.register(_import(path).ToyPowerMethod)      # registry.py's one line
    needed = [f"src/faux/methods/{NAME}.py", "src/faux/methods/registry.py"]
    yield cls, needed
    registry.unregister(NAME)


def _models(seed=0, d=4):
    g = torch.Generator().manual_seed(seed)
    target = torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    aux = torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    for p in [*target.parameters(), *aux.parameters()]:
        p.data = torch.randn(p.shape, generator=g)
    return target, aux, torch.randn(30, d, generator=g)


def test_the_doc_names_as_many_files_as_the_steps_needed(toy):
    _, needed = toy
    text = DOC.read_text()
    count = re.search(r"\*\*a fairness test, with options of its own\*\* \((\d+) files\)", text)
    assert count and int(count.group(1)) == len(needed)
    step = text[count.end():text.index("- **a model format**")]
    for path in needed:
        assert f"`{path.replace(NAME, '<name>')}`" in step, path


def test_faux_score_and_the_registry_readers_see_a_test_registered_later(toy):
    from faux.studies.real_settings import methods as real_methods

    target, aux, x = _models()
    torch.testing.assert_close(faux.score(NAME, target, aux, x), faux.score("faux", target, aux, x))
    assert NAME in registry.names() and NAME in gradient_methods()
    assert NAME in registry.readings_methods() and NAME in real_methods()
    assert registry.label(NAME) == "Toy power"


def test_its_own_option_reaches_it_from_either_study_with_no_other_edit(toy):
    from faux.studies.config import foreign_keys, method_keys, synthetic_params
    from faux.studies.real_settings import RealSettings

    cls, _ = toy
    target, aux, x = _models()
    params = synthetic_params("prob", {}, {"methods": {NAME: {"power": 2.0}}})
    assert params[NAME] == {"power": 2.0}
    fitted = cls.build(MethodConfig(params=params)).fit(
        TrainData(x, None, aux=lambda seed: (aux, {"accuracy": 1.0, "n_params": 1})), 0)
    torch.testing.assert_close(fitted.score(target, Batch(x)),
                               faux.score("faux", target, aux, x) ** 2)
    assert RealSettings(methods={NAME: {"power": 3}}).methods == {NAME: {"power": 3}}
    # a one-method job of another test does not hash the toy's block, the toy's own does
    assert method_keys(cls) == (f"synthetic.methods.{NAME}",)
    assert f"synthetic.methods.{NAME}" in foreign_keys("faux")
    assert f"synthetic.methods.{NAME}" not in foreign_keys(NAME)


def test_its_option_composes_from_the_command_line_into_a_table1_cell(toy):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    import faux.run  # noqa: F401  (registers the config's resolvers)
    from faux.studies import table1

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[
            "experiment=table1", "profile=tiny", "column=Synthetic-2", f"method={NAME}",
            f"+synthetic.methods.{NAME}.power=2", "paths.output_dir=."])
    s = table1.Settings.from_config(OmegaConf.to_container(cfg, resolve=True))
    assert s.method == NAME and s.methods.of(NAME) == {"power": 2}


def test_a_block_for_a_method_without_options_of_its_own_is_refused(toy):
    from faux.studies.config import synthetic_params
    from faux.studies.real_settings import RealSettings

    with pytest.raises(ConfigError, match=r"synthetic\.methods\.faux: not a method with "
                                          rf"settings of its own; choose from .*{NAME}"):
        synthetic_params("prob", {}, {"methods": {"faux": {"eps": 1}}})
    with pytest.raises(ConfigError, match=r"real_study\.methods\.nosuch"):
        RealSettings(methods={"nosuch": {}})
    with pytest.raises(ConfigError, match="must map option names to values"):
        RealSettings(methods={NAME: 3})


def test_unregistering_removes_it_from_every_reader(toy):
    registry.unregister(NAME)
    assert NAME not in registry.names() and NAME not in registry.readings_methods()
    assert NAME not in gradient_methods()
    registry.register(toy[0])      # the fixture unregisters it again
    assert NAME in registry.readings_methods()
