"""Stacked retraining: R seeds of one MLP recipe trained as one batched network equal the
seeds trained one by one (``train_mlp``), member by member, including early stopping.

At the shapes the studies train (inputs >= 16 wide, 2 x 64 hidden, one logit, batch 64) the
members equal the separately trained networks to float32 rounding: bit for bit on an AMD EPYC
(AVX2), within 5e-8 in the weights on an Intel Xeon, where MKL blocks the batched and the
single matmul differently even under the pinned kernels. At the toy shapes of the other tests
(3-6 inputs, odd batches, several labels) the kernels differ more, so those comparisons use
1e-4; see faux.models.stacked.
"""

import math

import pytest
import torch

from faux.errors import ConfigError, DataError
from faux.models.mlp import MLP, MLPSpec, train_mlp
from faux.models.stacked import StackedMLP, train_mlp_stack, train_mlps_stacked

TOL = dict(rtol=1e-4, atol=1e-4)


def _noisy(n, d, seed, k=None):
    """Labels that depend weakly on x (the same w for every ``seed`` of one shape): a net
    learns for a few epochs, then overfits and its validation loss turns up."""
    cols = 1 if k is None else k
    w = torch.randn(d, cols, generator=torch.Generator().manual_seed(1000 + d))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    t = (torch.sigmoid(0.7 * x @ w) > torch.rand(n, cols, generator=g)).float()
    return x, (t[:, 0] if k is None else t)


def _same(stacked, alone, x):
    (net, info), (ref, rinfo) = stacked, alone
    assert set(info) == set(rinfo)
    assert info["epochs"] == rinfo["epochs"] and info["best_epoch"] == rinfo["best_epoch"]
    assert info["n_params"] == rinfo["n_params"]
    if math.isnan(rinfo["best_val_loss"]):
        assert math.isnan(info["best_val_loss"])
    else:
        assert info["best_val_loss"] == pytest.approx(rinfo["best_val_loss"], rel=1e-4)
    assert info["accuracy"] == pytest.approx(rinfo["accuracy"], abs=1e-3)
    assert not net.training and net.state_dict().keys() == ref.state_dict().keys()
    for a, b in zip(net.state_dict().values(), ref.state_dict().values()):
        torch.testing.assert_close(a, b, **TOL)
    with torch.no_grad():
        torch.testing.assert_close(net(x), ref(x), **TOL)


def test_members_equal_separate_training_at_the_studies_shapes():
    """Table 1's aux recipe (2 x 64 ReLU, one logit, batch 64, Adam 1e-3) on 38 inputs with a
    partial last batch: the same epochs, and weights and logits equal to ``train_mlp``'s to a
    few float32 ulps (1e-6: a hundred times the largest difference measured on any CPU)."""
    x, t = _noisy(64 * 6 + 32, 38, 0)
    xv, tv = _noisy(200, 38, 1)
    kw = dict(width=64, depth=2, max_epochs=4, patience=1, batch_size=64, lr=1e-3)
    together = train_mlp_stack(x, t, xv, tv, seeds=[0, 1], accelerator="cpu", **kw)
    for s, (net, info) in zip([0, 1], together):
        ref, rinfo = train_mlp(x, t, xv, tv, seed=s, accelerator="cpu", **kw)
        assert (info["epochs"], info["best_epoch"]) == (rinfo["epochs"], rinfo["best_epoch"])
        for a, b in zip(net.state_dict().values(), ref.state_dict().values()):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
        with torch.no_grad():
            torch.testing.assert_close(net(xv), ref(xv), rtol=0, atol=1e-6)


def test_members_stopping_at_different_epochs_equal_separate_training():
    x, t = _noisy(240, 6, 0)
    xv, tv = _noisy(200, 6, 1)
    seeds = [0, 1, 2, 3, 4]
    kw = dict(width=32, depth=2, max_epochs=60, patience=3, batch_size=32, lr=3e-3)
    together = train_mlp_stack(x, t, xv, tv, seeds=seeds, accelerator="cpu", **kw)
    alone = [train_mlp(x, t, xv, tv, seed=s, accelerator="cpu", **kw) for s in seeds]
    for st, al in zip(together, alone):
        _same(st, al, xv)
    epochs = [info["epochs"] for _, info in together]
    assert len(set(epochs)) >= 2 and max(epochs) < 60       # early stops, at different epochs
    # members that stopped are not the same network (distinct seeds, distinct results)
    assert not torch.allclose(together[0][0](xv), together[1][0](xv))


def test_without_validation_all_epochs_run_and_the_last_weights_are_kept():
    x, t = _noisy(150, 4, 2)
    kw = dict(width=8, depth=1, max_epochs=5, patience=2, batch_size=16)
    together = train_mlp_stack(x, t, seeds=[3, 7], accelerator="cpu", **kw)
    for (net, info), s in zip(together, [3, 7]):
        ref = train_mlp(x, t, seed=s, accelerator="cpu", **kw)
        _same((net, info), ref, x)
        assert info["epochs"] == 5 and info["best_epoch"] == 4


def test_patience_none_restores_each_members_best_epoch():
    x, t = _noisy(120, 5, 3)
    xv, tv = _noisy(100, 5, 4)
    kw = dict(width=48, depth=2, max_epochs=25, patience=None, batch_size=16, lr=1e-2)
    together = train_mlp_stack(x, t, xv, tv, seeds=[0, 5], accelerator="cpu", **kw)
    for (net, info), s in zip(together, [0, 5]):
        _same((net, info), train_mlp(x, t, xv, tv, seed=s, accelerator="cpu", **kw), xv)
        assert info["epochs"] == 25 and info["best_epoch"] < 24
        with torch.no_grad():
            loss = float(torch.nn.functional.binary_cross_entropy_with_logits(net(xv), tv))
        assert loss == pytest.approx(info["best_val_loss"], rel=1e-5)


def test_several_label_columns_depth_zero_and_projection():
    x, t = _noisy(160, 5, 5, k=3)
    xv, tv = _noisy(80, 5, 6, k=3)
    kw = dict(width=16, depth=1, max_epochs=30, patience=2, batch_size=32, lr=1e-2)
    for s, res in zip([1, 2], train_mlp_stack(x, t, xv, tv, seeds=[1, 2], accelerator="cpu", **kw)):
        _same(res, train_mlp(x, t, xv, tv, seed=s, accelerator="cpu", **kw), xv)
    P = torch.randn(2, 5, generator=torch.Generator().manual_seed(0))
    kw = dict(width=4, depth=0, max_epochs=6, patience=2, batch_size=32, projection=P)
    for s, res in zip([4, 9], train_mlp_stack(x, t[:, 0], xv, tv[:, 0], seeds=[4, 9],
                                              accelerator="cpu", **kw)):
        net = res[0]
        assert torch.equal(net.projection, P) and net.d_in == 5
        _same(res, train_mlp(x, t[:, 0], xv, tv[:, 0], seed=s, accelerator="cpu", **kw), xv)


def test_spec_api_matches_spec_train_and_leaves_global_rng_alone():
    x, t = _noisy(100, 3, 7)
    xv, tv = _noisy(60, 3, 8)
    spec = MLPSpec(width=8, depth=2, max_epochs=4, patience=2, batch_size=32)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    together = train_mlps_stacked(spec, x, t, xv, tv, seeds=[0, 1], accelerator="cpu")
    assert torch.equal(torch.get_rng_state(), state)
    via_spec = train_mlps_stacked(spec, x, t, xv, tv, seeds=[0, 1], accelerator="cpu", width=6)
    for s, res, res6 in zip([0, 1], together, via_spec):
        _same(res, spec.train(x, t, xv, tv, seed=s, accelerator="cpu"), xv)
        _same(res6, spec.train(x, t, xv, tv, seed=s, accelerator="cpu", width=6), xv)
        assert res6[0].width == 6


def test_stacked_mlp_shared_input_keep_and_members():
    torch.manual_seed(0)
    members = [MLP(4, 6, 2, d_out=2) for _ in range(3)]
    stack = StackedMLP(members)
    x = torch.randn(9, 4)
    with torch.no_grad():
        out = stack(x)                                   # 2-D input: shared by every member
        for e, net in enumerate(members):
            torch.testing.assert_close(out[e], net(x), rtol=1e-6, atol=1e-6)
        stack.keep(torch.tensor([2, 0]))
        assert len(stack) == 2
        torch.testing.assert_close(stack.member(0)(x), members[2](x), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(stack.member(1)(x), members[0](x), rtol=1e-6, atol=1e-6)
    with pytest.raises(ConfigError, match="share"):
        StackedMLP([MLP(4, 6, 2), MLP(4, 7, 2)])
    with pytest.raises(ConfigError, match="projection"):
        StackedMLP([MLP(4, 6, 2, projection=torch.randn(2, 4))])


def test_bad_inputs():
    x, t = _noisy(50, 3, 9)
    with pytest.raises(ConfigError, match="seed"):
        train_mlp_stack(x, t, seeds=[], accelerator="cpu")
    with pytest.raises(DataError, match="t_val"):
        train_mlp_stack(x, t, x, None, seeds=[0], accelerator="cpu")
    with pytest.raises(DataError, match="single value"):
        train_mlp_stack(x, torch.zeros(50), seeds=[0], accelerator="cpu")
    with pytest.raises(ConfigError, match="accelerator"):
        train_mlp_stack(x, t, seeds=[0], accelerator="tpu")


def test_cached_stack_trains_a_cells_seeds_once_each_as_it_would_alone(tmp_path, monkeypatch):
    """``synthetic.aux_trainer: stacked``: the first aux a cell asks for trains every seed of the
    cell in one stack and caches each under its own key (marked ``trainer: stacked``, apart
    from the one-by-one entries); later seeds load; each member equals ``cached_mlp``'s."""
    import faux.models.stacked as stacked_mod
    from faux.harness.cache import Cache
    from faux.studies.column import cached_mlp, cached_mlp_stacked

    x, t = _noisy(256, 6, 0)
    xv, tv = _noisy(128, 6, 1)
    spec = MLPSpec(width=12, depth=2, max_epochs=12, patience=2, batch_size=32, lr=1e-2)
    cache, seeds = Cache(tmp_path / "c"), [3, 1, 2]
    calls = []
    real = stacked_mod.train_mlps_stacked
    monkeypatch.setattr(stacked_mod, "train_mlps_stacked",
                        lambda *a, **k: calls.append(list(k["seeds"])) or real(*a, **k))
    got = {s: cached_mlp_stacked(cache, "aux", {"cell": 1}, spec, x, t, xv, tv, s, seeds,
                                 accelerator="cpu") for s in seeds}
    assert calls == [[1, 2, 3]]                      # one stack, all seeds, on the first miss
    assert (cache.builds, cache.hits) == (3, 3)      # three entries written, then each loaded
    for s in seeds:
        alone = cached_mlp(cache, "aux", {"cell": 1}, spec, x, t, xv, tv, s, accelerator="cpu")
        _same(got[s], alone, xv)
    assert cache.builds == 6                         # the one-by-one entries are other keys
    again = cached_mlp_stacked(cache, "aux", {"cell": 1}, spec, x, t, xv, tv, 2, seeds,
                               accelerator="cpu")
    assert calls == [[1, 2, 3]] and cache.builds == 6
    torch.testing.assert_close(again[0](xv), got[2][0](xv), rtol=0, atol=0)


def test_aux_trainer_is_checked():
    from faux.studies.column import ColumnSettings

    with pytest.raises(ConfigError, match="aux_trainer"):
        ColumnSettings({}, {}, {}, {}, 3.0, "prob", {}, "c", "d", aux_trainer="batched")
