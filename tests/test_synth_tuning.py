"""The A.7.3 CVAE search (faux.synth.tuning): the best of the candidates tried, Table 2's
ranges, deterministic in the seed, chance for a CVAE that ignores its label, the CLI."""

import json

import numpy as np
import pytest
import torch

from faux.errors import ConfigError
from faux.harness.cache import Cache
from faux.synth import tuning
from faux.synth.cvae import CVAE
from faux.synth.tuning import RANGES, check_candidates, condition_score, search

# small but inside Table 2's ranges (hidden >= 186, depth >= 1)
CANDS = [{"hidden": 186, "depth": 1, "latent_dim": 2, "beta": 1.0, "max_steps": 40},
         {"hidden": 186, "depth": 1, "latent_dim": 4, "beta": 0.2, "max_steps": 40},
         {"hidden": 186, "depth": 2, "latent_dim": 4, "beta": 0.2, "max_steps": 20}]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return search("backache", CANDS, seed=0, cache=Cache(tmp_path_factory.mktemp("tune")),
                  n=1000)


def test_search_returns_the_highest_score_among_those_tried(result):
    scores = [r["score"] for r in result["rows"]]
    assert len(scores) == len(CANDS)
    assert result["best"] == int(np.argmax(scores))
    assert [r["candidate"] for r in result["rows"]] == CANDS
    assert all(0.0 <= s <= 1.0 for s in scores) and len(set(scores)) > 1
    assert result["rows"][0]["n_heldout"] == 54              # 30 % of backache's 180 rows
    assert not any(r["cached"] for r in result["rows"])
    assert result["paper_model_score"] == 0.545 and result["role"] == "y"


def test_search_is_deterministic_in_the_seed_and_reuses_the_generator_cache(result, tmp_path):
    cache = Cache(tmp_path)
    again = search("backache", CANDS, seed=0, cache=cache, n=1000)
    keep = ("score", "accuracy", "auc", "kl_nats")
    assert ([{k: r[k] for k in keep} for r in again["rows"]]
            == [{k: r[k] for k in keep} for r in result["rows"]])
    assert cache.builds == len(CANDS)
    third = search("backache", CANDS[:1], seed=0, cache=cache, n=1000)
    assert third["rows"][0]["cached"] and cache.builds == len(CANDS)   # a cache hit
    assert third["rows"][0]["score"] == result["rows"][0]["score"]
    other = search("backache", CANDS[:1], seed=1, cache=cache, n=1000)
    assert not other["rows"][0]["cached"]                    # another seed, another CVAE


@pytest.mark.parametrize("key,value", [("hidden", 24), ("depth", 7), ("n_components", 9),
                                       ("beta", -0.1), ("latent_dim", True)])
def test_candidates_outside_the_ranges_are_refused_before_any_training(tmp_path, key, value):
    cache = Cache(tmp_path)
    with pytest.raises(ConfigError, match=f"{key}=.* is outside"):
        search("backache", [CANDS[0], {**CANDS[0], key: value}], cache=cache)
    assert cache.builds == 0


def test_every_budget_lies_inside_the_ranges():
    for budget in tuning.BUDGETS.values():
        for name in ("magic", "australian", "backache", "credit_g"):
            cands = budget(name)
            check_candidates(name, cands)
            for c in cands:
                for k, (lo, hi) in RANGES.items():
                    assert k not in c or lo <= c[k] <= hi
    assert len(tuning.quick_grid("magic")) <= 6
    assert tuning.quick_grid("magic")[0]["hidden"] == 624     # Table 2's width for magic


def _planted(seed=0):
    """A logit-bias CVAE whose label moves two blocks strongly, and 'real' rows drawn from it."""
    torch.manual_seed(seed)
    m = CVAE((3, 3, 2), hidden=8, depth=1, latent_dim=2, c_path="logit_bias").eval()
    with torch.no_grad():
        m.c_bias.copy_(torch.tensor([-2.0, 0.0, 2.0, 2.0, 0.0, -2.0, 0.0, 0.0]))
    g = torch.Generator().manual_seed(seed + 1)
    y = (torch.rand(3000, generator=g) < 0.3).long()
    with torch.no_grad():
        x = m.decode(torch.randn(3000, 2, generator=g), y.float())
    return m, x.numpy(), y.numpy()


def test_a_cvae_that_ignores_its_condition_scores_chance():
    m, x, y = _planted()
    good = condition_score(m, x, y, n=2000)
    assert good["score"] > 0.8 and good["auc"] > 0.85
    with torch.no_grad():
        m.c_bias.zero_()                                      # c no longer reaches x
    blind = condition_score(m, x, y, n=2000)
    assert abs(blind["score"] - 0.5) < 0.02
    # thresholded, the blind classifier's noise direction splits the real classes by luck
    assert abs(blind["bal_accuracy"] - 0.5) > 0.1
    # same for c as a decoder input: its weights from c zeroed
    torch.manual_seed(0)
    d = CVAE((3, 3, 2), hidden=8, depth=1, latent_dim=2).eval()
    with torch.no_grad():
        d.decoder[0].weight[:, -1] = 0.0
    # (its samples lie elsewhere than the real rows, so the noise coefficients extrapolate:
    # a wider band, still far below the planted CVAE's)
    assert abs(condition_score(d, x, y, n=2000)["score"] - 0.5) < 0.07


def test_condition_score_is_deterministic_and_checks_its_options():
    m, x, y = _planted()
    assert condition_score(m, x, y, n=500, seed=3) == condition_score(m, x, y, n=500, seed=3)
    with pytest.raises(ConfigError, match="classifier must be one of logistic, mlp"):
        condition_score(m, x, y, classifier="svm")
    mlp = condition_score(m, x, y, n=1000, classifier="mlp")
    assert mlp["score"] > 0.7


def test_cli_writes_the_table_and_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(tuning.BUDGETS, "quick", lambda name: CANDS[:2])
    out = tmp_path / "res" / "t.json"
    assert tuning.main(["--dataset", "backache", "--n", "500", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "CVAE search, backache" in text and "Table 2's model score: 0.545" in text
    res = json.loads(out.read_text())
    assert len(res["rows"]) == 2 and res["budget"] == "quick" and res["wall_s"] > 0
    assert res["complete"] and res["argv"][:2] == ["--dataset", "backache"]
    # --max-steps caps every candidate
    assert tuning.main(["--dataset", "backache", "--n", "500", "--max-steps", "10", "--out",
                        str(out)]) == 0
    assert {r["candidate"]["max_steps"] for r in json.loads(out.read_text())["rows"]} == {10}


@pytest.mark.parametrize("argv,msg", [
    (["--dataset", "nope"], "unknown dataset 'nope'"),
    (["--dataset", "magic", "--budget", "huge"], "invalid choice: 'huge'"),
    (["--dataset", "magic", "--n", "10"], "--n must be >= 100"),
    (["--dataset", "magic", "--max-steps", "0"], "max_steps=0 is outside"),
    ([], "--dataset"),
])
def test_cli_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, argv, msg):
    out = tmp_path / "x.json"
    assert tuning.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error:") and msg in err
    assert not out.exists()


def test_winners_are_each_searchs_best_as_a_readings_generators_block(result, tmp_path, capsys):
    import yaml

    from faux.harness.schema import GENERATOR_KEYS, generators_refused

    other = {**result, "dataset": "credit_g", "best": 0}
    done = [{**result, "complete": True}, {**other, "complete": True}]
    best = result["rows"][result["best"]]["candidate"]
    want = {"backache": {"latent_dim": best["latent_dim"], "beta": best["beta"]},
            "credit_g": {"latent_dim": CANDS[0]["latent_dim"], "beta": CANDS[0]["beta"]}}
    assert tuning.winners(done) == want
    paths = []
    for i, res in enumerate(done):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(res))
    assert tuning.main(["--winners", *map(str, paths)]) == 0
    block = yaml.safe_load(capsys.readouterr().out)
    assert block == {"generators": want}
    assert all(isinstance(g["beta"], float) for g in block["generators"].values())
    # the block is what a reading's schema accepts, and the search's ranges are the schema's
    assert generators_refused({"generators": block["generators"]}) == []
    assert generators_refused({"generators": {"backache": {"latent_dim": 0}}}) != []
    assert all(RANGES[k] == (lo, hi) for k, (_, lo, hi) in GENERATOR_KEYS.items())
    with pytest.raises(ConfigError, match="is incomplete"):
        tuning.winners([{**result, "complete": False}])
    with pytest.raises(ConfigError, match="two searches of 'backache'"):
        tuning.winners([done[0], done[0]])
