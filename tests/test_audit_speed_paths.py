"""The audit's fast paths change its speed, never its results: the aux models of a view (its
aux, its null models on permuted attributes, its other seeds) trained together as one
stacked network on one thread are bit for bit the models ``train_mlp`` gives each alone,
early stopping per member included; the audit's flags and thresholds are those of the
separate (Lightning) training; the caller's torch thread count comes back."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

import faux
import faux.audit.scores.aux as aux_mod
import faux.audit.scores.aux_family as fam_mod
from audit_world import proxy_world
from faux.audit.passes.groups import aux_seed
from faux.audit.scores.aux import train_aux, train_aux_family
from faux.audit.scores.calibration import null_targets
from faux.audit.sources.protected import ProtectedInfo

SIZES = dict(width=16, depth=2, epochs=12)


def _info(c, kind):
    if kind == "continuous":
        return ProtectedInfo(kind, mean=float(np.mean(c)), std=float(np.std(c)))
    return ProtectedInfo(kind, levels=sorted(np.unique(c).tolist()))


def _world(n=330, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 5)).astype(np.float32)
    c3 = np.digitize(z[:, 0] + 0.7 * rng.normal(size=n), [-0.5, 0.5])  # 3 levels
    return z, (c3 > 0).astype(int), c3, z[:, 1] + 0.5 * rng.normal(size=n)


def _separately(monkeypatch, z, targets, info, **kw):
    monkeypatch.setattr(aux_mod, "TRAINER", "separate")
    out = [train_aux(z, c, info, seed=s, **kw) for c, s in targets]
    monkeypatch.setattr(aux_mod, "TRAINER", "stacked")
    return out


def _assert_same_models(got, ref):
    assert len(got) == len(ref)
    for (net, q), (rnet, rq) in zip(got, ref):
        assert q == rq
        assert net.state_dict().keys() == rnet.state_dict().keys()
        for a, b in zip(net.state_dict().values(), rnet.state_dict().values()):
            assert torch.equal(a, b)  # bit for bit
        assert not net.training and not any(p.requires_grad for p in net.parameters())


@pytest.mark.parametrize("kind", ["binary", "categorical"])
def test_a_stack_of_aux_seeds_and_null_models_equals_training_each_alone(monkeypatch, kind):
    """The primary view's family as an audit trains it: its aux, 3 null models (permuted c:
    they stop early, at different epochs than the aux) and 2 more seeds, in one stack."""
    z, cb, c3, _ = _world()
    c = cb if kind == "binary" else c3
    info = _info(c, kind)
    targets = [(c, 0), *null_targets(c, 3, 0), (c, aux_seed(0, 1)), (c, aux_seed(0, 2))]
    calls = []
    real = fam_mod.train_members
    monkeypatch.setattr(fam_mod, "train_members",
                        lambda members, **k: calls.append(len(members)) or real(members, **k))
    got = train_aux_family(z, targets, info, **SIZES)
    assert calls == [6]                                  # one stacked network, six members
    _assert_same_models(got, _separately(monkeypatch, z, targets, info, **SIZES))


def test_members_stop_early_on_their_own_validation_loss(monkeypatch):
    """Members of one stack stop at different epochs (each as alone): the stacked run's
    per-epoch active counts shrink, and each member still equals its separate training."""
    z, cb, _, _ = _world(seed=1)
    info = _info(cb, "binary")
    targets = [(cb, 5), *null_targets(cb, 3, 5)]
    sizes = dict(width=16, depth=2, epochs=40)
    active = []
    real = fam_mod._val_losses
    monkeypatch.setattr(fam_mod, "_val_losses",
                        lambda stack, xv, *a: active.append(len(xv)) or real(stack, xv, *a))
    got = train_aux_family(z, targets, info, **sizes)
    assert active[0] == 4 and len(set(active)) >= 3   # members leave at different epochs
    _assert_same_models(got, _separately(monkeypatch, z, targets, info, **sizes))


def test_continuous_attribute_and_empty_family(monkeypatch):
    z, _, _, cc = _world(seed=2)
    info = _info(cc, "continuous")
    targets = [(cc, 0), (cc, 9)]
    _assert_same_models(train_aux_family(z, targets, info, **SIZES),
                        _separately(monkeypatch, z, targets, info, **SIZES))
    assert train_aux_family(z, [], info, **SIZES) == []


def test_training_runs_on_one_thread_and_restores_the_callers_count(monkeypatch):
    z, cb, _, _ = _world(seed=3)
    info = _info(cb, "binary")
    seen = []
    real = fam_mod._train
    monkeypatch.setattr(fam_mod, "_train",
                        lambda *a, **k: seen.append(torch.get_num_threads()) or real(*a, **k))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        train_aux_family(z, [(cb, 0), (cb, 1)], info, **SIZES)
        assert seen == [1] and torch.get_num_threads() == 3

        def interrupted(*a, **k):
            raise KeyboardInterrupt

        monkeypatch.setattr(fam_mod, "_train", interrupted)
        with pytest.raises(KeyboardInterrupt):      # Ctrl-C mid-training: restored too
            train_aux_family(z, [(cb, 0)], info, **SIZES)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("verdict", ["effect", "score"])
def test_audit_flags_equal_those_of_separate_training(monkeypatch, verdict):
    """One audit of the planted-proxy world, aux models trained stacked against trained one
    by one through Lightning: the same flags, thresholds, aux quality and group views."""
    X, c = proxy_world(700, seed=4)
    y = (X["x1"] + 1.5 * X["proxy"] > 0.7).astype(int)
    model = LogisticRegression(max_iter=1000).fit(X.to_numpy(), y)
    kw = dict(seed=3, progress=False, report=False, aux_epochs=6, verdict=verdict)
    runs = {}
    for trainer in ("separate", "stacked"):
        monkeypatch.setattr(aux_mod, "TRAINER", trainer)
        runs[trainer] = faux.audit(model, X, c, **kw)
    a, b = runs["separate"], runs["stacked"]
    np.testing.assert_array_equal(a.scores["flagged"].to_numpy(), b.scores["flagged"].to_numpy())
    for m in a.summary["settings"]["methods"]:
        np.testing.assert_array_equal(a.scores[m].to_numpy(), b.scores[m].to_numpy())
    for key in ("flagged", "thresholds", "aux_quality", "effects"):
        assert a.summary[key] == b.summary[key], key
    assert a.summary["groups"]["views"] == b.summary["groups"]["views"]
    if verdict == "effect":
        assert a.summary["flagged"]["count"] > 0        # the comparison has flags to compare
