"""fit / TensorBatches / TabularModule: batching semantics, determinism, best-epoch restore."""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from faux.errors import DataError
from faux.models.mlp import MLP, BinaryClassifier
from faux.models.tensors import TensorBatches, as_binary, as_features
from faux.models.training import fit

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _training_bench():
    """bench/training.py (a script of the bench folder, not a module of faux)."""
    spec = importlib.util.spec_from_file_location("bench_training", BENCH / "training.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _data(n=300, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    t = (x[:, 0] - x[:, 1] > 0).float()
    return x, t


def test_grouped_batches_are_the_same_minibatches_in_the_same_order():
    x, t = _data(203)
    flat = list(TensorBatches((x, t), batch_size=16, seed=3))
    grouped = list(TensorBatches((x, t), batch_size=16, seed=3, group=5))
    assert len(grouped) == math.ceil(len(flat) / 5)
    unrolled = [mb for chunk in grouped for mb in chunk]
    assert len(unrolled) == len(flat) == 13
    for (a, b), (c, d) in zip(flat, unrolled):
        assert torch.equal(a, c) and torch.equal(b, d)
    # every row exactly once per pass
    rows = torch.cat([mb[0] for mb in unrolled])
    assert torch.equal(rows[rows[:, 0].argsort()], x[x[:, 0].argsort()])


def _train(group, seed=0, epochs=3):
    x, t = _data()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = MLP(4, 8, 2)
    module = BinaryClassifier(net)
    module.group = group
    fit(module, (x, t), None, max_epochs=epochs, patience=None, batch_size=32, seed=seed,
        accelerator="cpu")
    return net


def test_grouping_does_not_change_the_updates():
    a, b = _train(group=1), _train(group=8)
    for p, q in zip(a.state_dict().values(), b.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_fit_is_deterministic_and_seed_matters():
    a, b, c = _train(8, seed=0), _train(8, seed=0), _train(8, seed=1)
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.head.weight, c.head.weight)


def test_fit_restores_the_best_validation_epoch_and_returns_eval_cpu():
    # random labels + a wide net: the validation loss rises once it memorises
    g = torch.Generator().manual_seed(0)
    x, xv = torch.randn(64, 6, generator=g), torch.randn(200, 6, generator=g)
    t = (torch.rand(64, generator=g) < 0.5).float()
    tv = (torch.rand(200, generator=g) < 0.5).float()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = MLP(6, 128, 2)
    module = BinaryClassifier(net, lr=1e-2)
    det_before = torch.are_deterministic_algorithms_enabled()
    out = fit(module, (x, t), (xv, tv), max_epochs=40, patience=None, batch_size=16,
              accelerator="cpu")
    assert torch.are_deterministic_algorithms_enabled() == det_before
    assert out["epochs"] == 40 and out["best_epoch"] < 39
    assert not module.training and next(module.parameters()).device.type == "cpu"
    with torch.no_grad():
        val = float(F.binary_cross_entropy_with_logits(net(xv), tv))
    assert val == pytest.approx(out["best_val_loss"], rel=1e-5)


def test_early_stopping_stops_before_max_epochs():
    g = torch.Generator().manual_seed(1)
    x, xv = torch.randn(64, 6, generator=g), torch.randn(200, 6, generator=g)
    t, tv = (torch.rand(64, generator=g) < 0.5).float(), (torch.rand(200, generator=g) < 0.5).float()
    module = BinaryClassifier(MLP(6, 128, 2), lr=1e-2)
    out = fit(module, (x, t), (xv, tv), max_epochs=200, patience=3, batch_size=16,
              accelerator="cpu")
    assert out["epochs"] < 200 and out["epochs"] >= out["best_epoch"] + 3


def test_input_checks():
    with pytest.raises(DataError, match="NaN"):
        as_features(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(DataError, match="2-D"):
        as_features(torch.zeros(5))
    with pytest.raises(DataError, match="3 features but 2"):
        as_features(torch.zeros(4, 3), d=2)
    with pytest.raises(DataError, match="single value"):
        as_binary(torch.ones(5), 5, "c")
    with pytest.raises(DataError, match="binary"):
        as_binary(torch.tensor([0.0, 1.0, 2.0]), 3, "c")
    with pytest.raises(DataError, match="rows"):
        as_binary(torch.tensor([0.0, 1.0]), 3, "c")
    assert as_features([[1, 2], [3, 4]]).dtype == torch.float32


@pytest.mark.slow
def test_lightning_epoch_is_close_to_a_plain_loop():
    lightning_epoch_over_plain_loop = _training_bench().lightning_epoch_over_plain_loop

    # goal 1.5 (measured ~1.1-1.3 on 2 shared cores); 2.0 leaves room for a loaded machine,
    # while the unoptimised loop (per-step self.log, automatic optimisation) measured 2.4
    assert lightning_epoch_over_plain_loop() < 2.0


def test_training_bench_times_both_loops():
    r = _training_bench().epoch_timings(n_rows=256, d=4, width=8, depth=1, repeats=1)
    assert set(r) == {"plain_s", "lightning_s", "ratio"} and r["plain_s"] > 0 < r["ratio"]


def test_scorer_bench_finds_the_training_bench_beside_it():
    r = subprocess.run([sys.executable, str(BENCH / "scorers.py"), "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_warmup_epochs_delay_early_stopping():
    g = torch.Generator().manual_seed(1)
    x, xv = torch.randn(64, 6, generator=g), torch.randn(200, 6, generator=g)
    t, tv = (torch.rand(64, generator=g) < 0.5).float(), (torch.rand(200, generator=g) < 0.5).float()
    runs = {}
    for warm in (0, 25):
        torch.manual_seed(0)
        module = BinaryClassifier(MLP(6, 128, 2), lr=1e-2)
        runs[warm] = fit(module, (x, t), (xv, tv), max_epochs=200, patience=3, batch_size=16,
                         accelerator="cpu", warmup_epochs=warm)
    assert runs[0]["epochs"] < 25 <= runs[25]["epochs"] - 3
