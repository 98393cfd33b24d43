"""A black box's finite-difference scores cost 2k + 2d model calls per row. Two things make
them cheaper without changing a number: the model's gradient at a set of rows is computed
once and served to every scorer of the audit (the aux, its null models, its other seeds,
FTA), from a memo that is the audit's own; and under the effect verdict (where the scores
are diagnostics) ``fd_scores="sample"`` (the default) scores the sample rows only. The
flags, the effects and the sample rows' scores are those of scoring every row."""

import gc
import sys
import weakref

import numpy as np
import pytest
import torch

import faux
from audit_world import proxy_world
from faux.audit.loaders.target import from_callable, from_torch
from faux.audit.scores.aux import train_aux
from faux.audit.scores.scoring import GradientMemo, Scorer
from faux.audit.sources.data_scan import standardisation
from faux.audit.sources.protected import ProtectedInfo
from faux.errors import ConfigError

EPOCHS = 4


class Proxy(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x[:, 0] + 4.0 * torch.sigmoid(8 * x[:, 1]) * (x[:, 3] - 0.5)


class Counted:
    """A black box counting the rows it is called on."""

    def __init__(self):
        self.tm, self.rows = from_torch(torch.jit.script(Proxy()), "proxy", 4), 0

    def __call__(self, x):
        self.rows += len(x)
        return self.tm.proba(x)


def _auxes(X, c, seeds=(0, 1)):
    mean, scale = standardisation(X.values)
    z = (X.values - mean) / scale
    info = ProtectedInfo("binary", [0, 1])
    return mean, scale, [train_aux(z, c, info, epochs=EPOCHS, seed=s)[0] for s in seeds]


def test_the_gradient_is_computed_once_for_every_aux_and_equals_a_fresh_one():
    X, c = proxy_world(300, seed=1)
    mean, scale, (a0, a1) = _auxes(X, c)
    f = Counted()
    box = from_callable(f)
    x, d = X.values, X.shape[1]
    first = Scorer(box, a0, mean, scale, ["faux_ng", "faux"])
    s0 = first.score(x)
    assert f.rows == len(x) * (2 * d + 2)  # fAux+NG's gradient and fAux's 2k, k = 1
    s1 = first.like(a1).score(x)  # another aux, the same memo
    assert f.rows == len(x) * (2 * d + 2) + len(x) * 2  # the gradient served, fAux's 2k only
    n = f.rows
    fresh = Scorer(box, a1, mean, scale, ["faux_ng", "faux"]).score(x)  # a memo of its own
    assert f.rows == n + len(x) * (2 * d + 2)
    for m in s1:
        assert np.array_equal(s1[m], fresh[m])  # bit for bit
    assert not np.array_equal(s0["faux_ng"], s1["faux_ng"])  # another aux, other scores
    # other rows, another step or another standardisation are not served from the memo
    n = f.rows
    Scorer(box, a1, mean, scale, ["faux_ng"], fd_step=0.05, memo=first.memo).score(x)
    assert f.rows == n + len(x) * 2 * d


class CountedTrees:
    """A scikit-learn gradient-boosted model as a black box, counting the rows it is
    called on."""

    def __init__(self, X, y):
        from sklearn.ensemble import HistGradientBoostingClassifier

        self.model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
        self.rows = 0

    def __call__(self, x):
        self.rows += len(x)
        return self.model.predict_proba(x)[:, 1]


def test_two_audits_in_one_process_share_no_gradient_memo(monkeypatch):
    """Each audit memoises its black box's gradients in a memo of its own, which goes with
    it: a second audit of the same model on the same rows computes every gradient again
    (the same model calls as the first) and gets the first's results, and nothing of the
    process holds the first audit's memo once it has returned."""
    X, c = proxy_world(600, seed=4)
    y = (X.x1 + X.proxy > 0.5).to_numpy().astype(int)
    trees = CountedTrees(X.values, y)
    memos = []
    made = GradientMemo.__init__

    def init(self):
        made(self)
        memos.append(weakref.ref(self))

    monkeypatch.setattr(GradientMemo, "__init__", init)
    kw = dict(aux_epochs=2, sample=300, batch_size=128, null_permutations=2, aux_seeds=2,
              verdict="score", fd_scores="all", methods=["faux_ng", "faux"],
              progress=False, seed=5)
    box = from_callable(trees)
    first = faux.audit(box, X.values, c, **kw)
    rows_first, trees.rows = trees.rows, 0
    gc.collect()
    assert len(memos) == 1 and memos[0]() is None  # the first audit's memo went with it
    second = faux.audit(box, X.values, c, **kw)
    assert len(memos) == 2  # a memo of its own
    assert trees.rows == rows_first > 0  # no gradient served from the first audit
    assert second.scores.equals(first.scores)
    for key in ("flagged", "thresholds", "calibration", "groups", "baselines"):
        assert second.summary[key] == first.summary[key], key
    gc.collect()
    assert memos[1]() is None
    held = [f"{name}.{k}" for name, mod in list(sys.modules.items())
            if name.startswith("faux") and mod is not None
            for k, v in vars(mod).items() if isinstance(v, GradientMemo)]
    assert held == []


def _audit(model, X, c, **kw):
    return faux.audit(model, X, c, aux_epochs=EPOCHS, null_permutations=2, aux_seeds=2,
                      progress=False, report=False, seed=3, **kw)


def test_sample_scores_leave_flags_and_effects_as_scoring_every_row():
    X, c = proxy_world(900, seed=2)
    f_all, f_sample = Counted(), Counted()
    every = _audit(from_callable(f_all), X, c, sample=400, fd_scores="all")
    some = _audit(from_callable(f_sample), X, c, sample=400)  # the default
    a, s = every.scores, some.scores
    assert a.columns.tolist() == s.columns.tolist()
    for col in a.columns:
        if col not in ("faux_ng", "faux"):
            assert a[col].equals(s[col]), col  # flags, effects, p-values: unchanged
    scored = s["faux_ng"].notna().to_numpy()
    assert scored.sum() == 400 == some.summary["scoring"]["rows_scored"]
    assert some.summary["scoring"]["rows_scored_are"] == "sample"
    assert every.summary["scoring"]["rows_scored"] == 900
    for m in ("faux_ng", "faux"):
        assert s[m].isna().sum() == 500
        assert np.array_equal(a[m].to_numpy()[scored], s[m].to_numpy()[scored])
    assert some.summary["flagged"] == every.summary["flagged"]
    assert some.summary["effects"] == every.summary["effects"]
    # rows above each threshold: counted over the rows scored, their rate over those rows
    above = (s["faux_ng"] > some.summary["thresholds"]["faux_ng"]["threshold"]).sum()
    assert some.summary["thresholds"]["faux_ng"]["rows_above"] == above
    assert some.summary["thresholds"]["faux_ng"]["rate_above"] == pytest.approx(above / 400)
    assert all(np.isfinite(t["score"]) for t in some.top_flagged.to_dict("records"))
    # the pass over the 900 rows called the model 2k + 2d = 10 times per row fewer on the
    # 500 rows outside the sample
    d = X.shape[1]
    assert f_all.rows - f_sample.rows >= 500 * (2 + 2 * d)


def test_every_row_is_scored_where_the_scores_decide_or_cost_no_model_calls():
    X, c = proxy_world(700, seed=4)
    box = from_callable(Counted())
    score = _audit(box, X, c, sample=300, verdict="score")
    assert score.scores["faux_ng"].notna().all()
    assert score.summary["scoring"]["rows_scored_are"] == "all"
    exact = _audit(torch.jit.script(Proxy()), X, c, sample=300)
    assert exact.scores["faux_ng"].notna().all()
    assert exact.summary["scoring"]["rows_scored"] == 700


def test_a_bad_fd_scores_is_refused_in_one_line():
    X, c = proxy_world(100)
    with pytest.raises(ConfigError, match=r"^fd_scores must be one of sample, all"):
        _audit(from_callable(Counted()), X, c, fd_scores="some")


def test_the_primary_views_aux_null_models_and_seeds_train_as_one_stack(monkeypatch):
    """1 aux + 2 null models + 1 more seed: one stacked network of 4 members (the effect
    verdict's null models are the calibration's, not trained again)."""
    import faux.audit.scores.aux_family as fam_mod

    calls = []
    real = fam_mod.train_members
    monkeypatch.setattr(fam_mod, "train_members",
                        lambda members, **k: calls.append(len(members)) or real(members, **k))
    X, c = proxy_world(300, seed=5)
    _audit(torch.jit.script(Proxy()), X, c)
    assert calls == [4]


@pytest.mark.parametrize("c", [np.array([1, 0, 1, 2]), np.array([1.0, 0.0, -0.0, 2.5, np.nan, 1.0]),
                               np.array(["a", "b", "a"], dtype=object), [0, 1, 1],
                               np.array([True, False]), np.array([], dtype=float),
                               np.array([3, 1], dtype=np.int8)])
def test_group_labels_and_level_indices_read_each_distinct_value_once(c):
    """A batch's group names and level indices from its distinct values equal reading every
    row: ``value_key`` per row, its string, its level's position (-1: none)."""
    from faux.audit.sources.protected import value_key

    info = ProtectedInfo("categorical", levels=[0, 1, 2, "a", 2.5, True])
    rows = [value_key(v) for v in c]
    lookup = {v: i for i, v in enumerate(info.levels)}
    labels = info.group_labels(c)
    assert labels.dtype == object and list(labels) == [str(k) for k in rows]
    assert info.index(c).tolist() == [lookup.get(k, -1) for k in rows]


def test_counterfactuals_computed_in_chunks_are_those_of_the_whole_batch(monkeypatch):
    """The effect verdict computes a batch's counterfactuals ``EFFECT_ROWS`` rows at a time
    (bounded memory): the same effects, flags and p-values as in one go."""
    import faux.audit.counterfactual.effect_pass as ep

    X, c = proxy_world(500, seed=6)
    whole = _audit(torch.jit.script(Proxy()), X, c, sample=300)
    monkeypatch.setattr(ep, "EFFECT_ROWS", 64)
    chunked = _audit(torch.jit.script(Proxy()), X, c, sample=300)
    assert whole.scores.equals(chunked.scores)
    assert whole.summary["effects"] == chunked.summary["effects"]


@pytest.mark.filterwarnings("ignore:d. the aux model barely predicts")
def test_several_attributes_a_views_scores_follow_what_flags_it():
    """Two categorical attributes of a black box: each attribute's view (flagged by its
    effects) has the sample rows' scores, the intersection (flagged by its score) every
    row's; the flags equal scoring every row."""
    import pandas as pd

    X, c = proxy_world(700, seed=7)
    rng = np.random.default_rng(8)
    cs = pd.DataFrame({"c": c, "d": rng.integers(0, 2, len(c))})
    kw = dict(sample=300, methods=["faux_ng"])
    some = _audit(from_callable(Counted()), X, cs, **kw)
    every = _audit(from_callable(Counted()), X, cs, fd_scores="all", **kw)
    s, a = some.scores, every.scores
    inter = [col for col in s.columns if col.startswith("faux_ng:") and col != "faux_ng:d"]
    assert len(inter) == 1 and s[inter[0]].notna().all()  # the intersection: every row
    assert s["faux_ng:d"].isna().sum() == 400 == s["faux_ng"].isna().sum()
    for col in ("flagged", "flagged:d", inter[0]):
        assert s[col].equals(a[col]), col
    assert some.summary["groups"]["views"][inter[0].split(":")[1]] == \
        every.summary["groups"]["views"][inter[0].split(":")[1]]
